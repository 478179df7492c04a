// Which connectors the plane sends keys and values as JSON (`key`/`values`): only this repo's own, run as processes,
// whose runtime reads that form exactly as the packed one. A container or a `local` command may be any program
// (upstream's images read only `keyPacked`/`valuesPacked`), so it gets what Flow's runtime sends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Launcher } from '../../src/tasks/launcher.ts';

test('keys and values go as JSON to built-in connectors run as processes, packed to anything else', () => {
  const processes = new Launcher();
  assert.equal(processes.runsBuiltin({ kind: 'sqlite', config: { path: 'x.db' } }), true);
  assert.equal(processes.runsBuiltin({ kind: 'connector', image: 'ghcr.io/estuary/materialize-sqlite:v1', config: {} }), true);
  assert.equal(processes.runsBuiltin({ kind: 'connector', image: 'ghcr.io/estuary/materialize-sqlserver:v2', config: {} }), true);
  assert.equal(processes.runsBuiltin({ kind: 'connector', image: 'ghcr.io/estuary/materialize-postgres:v3', config: {} }), false);
  assert.equal(processes.runsBuiltin({ kind: 'local', command: ['npx', 'materialize-sqlite'], config: {}, env: {} }), false);
  const containers = new Launcher({ containerEngine: 'podman' });
  assert.equal(containers.runsBuiltin({ kind: 'connector', image: 'ghcr.io/estuary/materialize-sqlite:v1', config: {} }), false);
  assert.equal(containers.runsBuiltin({ kind: 'connector', image: 'ghcr.io/estuary/materialize-sqlserver:v2', config: {} }), false);
});
