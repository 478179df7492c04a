// SPEC, Versioning, through the data plane: a materialization on an older materialize-sqlserver tag
// runs that tag until its spec is edited; the edit's publication upgrades it (and says so), and the
// task is rebuilt, applied and run with the upgraded image. Containers run through a fake engine
// (fixtures/fake-engine.sh) that logs each launch; env values reach it without appearing in argv.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { containerArgs, type ContainerTarget } from '@sluice/runtime/host';
import { createControlPlane } from '../../src/control/index.ts';
import { statusResponse } from '../../src/control/status.ts';
import { LocalPlane } from '../../src/plane.ts';
import { Launcher } from '../../src/tasks/launcher.ts';
import { tempDir } from '../journals/helpers.ts';
import { until as untilEvent } from '@sluice/runtime/testing';

const FAKE_ENGINE = fileURLToPath(new URL('../fixtures/fake-engine.sh', import.meta.url));
const V1 = 'ghcr.io/sluice-dev/materialize-sqlserver:v1';
const V2 = 'ghcr.io/sluice-dev/materialize-sqlserver:v2';

function catalog(table: string): string {
  return `
collections:
  acmeCo/greetings:
    schema:
      type: object
      properties: {id: {type: string}, n: {type: integer}}
      required: [id, n]
    key: [/id]
materializations:
  acmeCo/to-mssql:
    endpoint:
      connector:
        image: ${V1}
        config: {prefix: dbo_}
    bindings:
      - source: acmeCo/greetings
        resource: {table: ${table}}
`;
}

interface Launch { argv: string[]; image: string; env: Record<string, string | null> }

test('launcher: a container gets env values through the engine environment, never in argv', () => {
  const target = new Launcher({ containerEngine: 'podman', env: { DB_PASSWORD: 'hunter2' } })
    .target({ kind: 'connector', image: V2, config: {} }, 'acmeCo/to-mssql') as ContainerTarget;
  assert.equal(target.engine, 'podman');
  assert.equal(target.image, V2);
  assert.deepEqual(target.env, { DB_PASSWORD: 'hunter2' });
  const argv = containerArgs(target);
  assert.deepEqual(argv, ['run', '--rm', '-i', '--network', 'host', '-e', 'DB_PASSWORD', '-e', 'FLOW_RUNTIME_CODEC', V2]);
  // materialize-sqlite in a container: its file's directory is mounted at the same path, so the tables
  // apply creates are there for open (each RPC is a fresh container); other images get no mounts.
  const sqlite = new Launcher({ containerEngine: 'podman' })
    .target({ kind: 'connector', image: 'ghcr.io/sluice-dev/materialize-sqlite:v1', config: { path: '/srv/data/out.db' } }, 'acmeCo/to-sqlite');
  assert.deepEqual(containerArgs(sqlite as ContainerTarget).slice(-3), ['-v', '/srv/data:/srv/data', 'ghcr.io/sluice-dev/materialize-sqlite:v1']);
  assert.equal((new Launcher({ containerEngine: 'podman' }).target({ kind: 'connector', image: V2, config: { path: '/srv/data/out.db' } }, 'x') as ContainerTarget).mounts, undefined);
  assert.equal((new Launcher({ containerEngine: 'podman' }).target({ kind: 'connector', image: 'materialize-sqlite:v1', config: { path: 'out.db' } }, 'x') as ContainerTarget).mounts, undefined, 'relative paths are the container\'s own');
  // Without an engine, a built-in image runs the connector's bin as a process, whatever its tag.
  const proc = new Launcher().target({ kind: 'connector', image: V1, config: {} }, 'acmeCo/to-mssql') as { command: string; args: string[] };
  assert.equal(proc.command, process.execPath);
  assert.match(proc.args[0] ?? '', /materialize-sqlserver\/bin\/materialize-sqlserver\.js$/);
});

test('versioning: editing a materialization on an older materialize-sqlserver tag upgrades it; the task then runs the new tag', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'flow.yaml');
  const launches = join(dir, 'launches.jsonl');
  const control = createControlPlane({ dataDir: join(dir, 'data') });
  const launcher = new Launcher({ containerEngine: FAKE_ENGINE, env: { FAKE_ENGINE_LOG: launches, DB_PASSWORD: 'hunter2' } });
  const plane = new LocalPlane({ catalogFile: file, dataDir: join(dir, 'data'), recorder: control.recorder, launcher });
  t.after(async () => { await plane.close(); control.close(); });
  const read = (): Launch[] => (existsSync(launches) ? readFileSync(launches, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Launch) : []);
  const status = () => statusResponse(control.store, control.store.get('acmeCo/to-mssql')!, { short: false }) as {
    summary: { status: string; message: string }; controller_status: { publications: { history: { id: string; detail: string }[] } };
  };
  const until = (what: string, fn: () => boolean) => untilEvent(what, fn, { detail: () => `status ${JSON.stringify(status().summary)}` });

  // Created on v1: no upgrade (only an edit upgrades); validate, apply and the session run v1.
  writeFileSync(file, catalog('greetings'));
  const first = await plane.publish();
  assert.equal(first.result, 'success', first.errors.join('\n'));
  assert.deepEqual(first.upgrades, []);
  await until('the v1 session to report', () => status().summary.message === `running ${V1}`);
  assert.deepEqual(read().map((l) => l.image), [V1, V1, V1]);

  // Edited: the publication upgrades the image and says so; the task is rebuilt, applied and restarted on v2.
  writeFileSync(file, catalog('greetings_v2'));
  const second = await plane.publish();
  assert.equal(second.result, 'success', second.errors.join('\n'));
  assert.deepEqual(second.upgrades, [{ catalogName: 'acmeCo/to-mssql', from: 'v1', to: 'v2' }]);
  assert.deepEqual(second.started, ['acmeCo/to-mssql']);
  const [latest] = status().controller_status.publications.history;
  assert.equal(latest?.id, second.pubId);
  assert.match(latest?.detail ?? '', /; upgraded materialize-sqlserver from v1 to v2$/);
  const pub = control.store.db.prepare('SELECT detail FROM publications WHERE id = ?').get(second.pubId!) as { detail: string };
  assert.match(pub.detail, /; upgraded acmeCo\/to-mssql from v1 to v2$/);
  await until('the v2 session to report', () => status().summary.message === `running ${V2}`);
  assert.deepEqual(status().summary, { status: 'ok', message: `running ${V2}` });
  // After the edit: the catalog as written is validated (v1), then validate, apply and the session use v2.
  assert.deepEqual(read().slice(3).map((l) => l.image), [V1, V2, V2, V2]);
  assert.equal(plane.runners.get('acmeCo/to-mssql')?.buildId, second.pubId);

  // A later publication that changes nothing keeps the upgraded image running: no restart.
  const third = await plane.publish();
  assert.deepEqual(third.upgrades, []);
  assert.deepEqual(third.unchanged, ['acmeCo/to-mssql']);
  assert.deepEqual(read().slice(7).map((l) => l.image), [V1, V2], 'validate only; no apply, no new session');
  assert.deepEqual(status().summary, { status: 'ok', message: `running ${V2}` });

  // Every launch got the secret through the engine's environment; no argv carried its value.
  for (const l of read()) {
    assert.equal(l.env.DB_PASSWORD, 'hunter2');
    assert.equal(l.env.FLOW_RUNTIME_CODEC, 'json');
    assert.ok(l.argv.includes('DB_PASSWORD') && !l.argv.some((a) => a.includes('hunter2')), JSON.stringify(l.argv));
  }
});
