import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { builtinCommand, builtinConnector, builtinForImage, imageBaseName } from '../../src/registry.ts';
import { sluice } from './helpers.ts';

describe('sluice CLI dispatcher', () => {
  it('an unknown command prints usage and exits 2', async () => {
    const r = await sluice(['frobnicate']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderrLines[0], 'sluice: unknown command "frobnicate"');
    assert.ok(r.stderr.includes('usage: sluice <command> [options]'));
    for (const name of ['connectors', 'raw', 'preview', 'test', 'serve', 'start', 'token']) {
      assert.match(r.stderr, new RegExp(`^  ${name} +\\S`, 'm'), `usage lists ${name}`);
    }
  });
  it('no command: usage on stderr, exit 2; --help: usage on stdout, exit 0', async () => {
    const none = await sluice([]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^usage: sluice <command>/);
    const help = await sluice(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: sluice <command>/);
  });
});

describe('sluice connectors', () => {
  it('rejects unknown arguments', async () => {
    const r = await sluice(['connectors', '--yaml']);
    assert.equal(r.code, 2);
    assert.equal(r.stderrLines[0], 'sluice connectors: unknown argument "--yaml"');
  });
  it('lists the built-in connectors with their images', async () => {
    const r = await sluice(['connectors']);
    assert.equal(r.code, 0);
    assert.deepEqual(r.lines.map((l) => l.split(/ {2,}/).slice(0, 3)), [
      ['source-http-file', 'capture', 'ghcr.io/sluice-dev/source-http-file:dev'],
      ['materialize-sqlserver', 'materialize', 'ghcr.io/sluice-dev/materialize-sqlserver:v2'],
      ['materialize-sqlite', 'materialize', 'ghcr.io/sluice-dev/materialize-sqlite:v1'],
    ]);
  });
  it('--json', async () => {
    const r = await sluice(['connectors', '--json']);
    assert.equal(r.code, 0);
    const rows = r.lines.map((l) => JSON.parse(l));
    assert.deepEqual(rows.map((x) => [x.name, x.protocol, x.image]), [
      ['source-http-file', 'capture', 'ghcr.io/sluice-dev/source-http-file:dev'],
      ['materialize-sqlserver', 'materialize', 'ghcr.io/sluice-dev/materialize-sqlserver:v2'],
      ['materialize-sqlite', 'materialize', 'ghcr.io/sluice-dev/materialize-sqlite:v1'],
    ]);
    assert.ok(rows.every((x) => /\/connectors\/([^/]+)\/bin\/\1\.(ts|js)$/.test(x.bin) && x.bin.includes(`/connectors/${x.name}/`)));
  });
});

describe('registry', () => {
  it('maps catalog images to built-in connectors', () => {
    assert.equal(builtinForImage('ghcr.io/sluice-dev/source-http-file:dev')?.name, 'source-http-file');
    assert.equal(builtinForImage('ghcr.io/estuary/materialize-sqlserver:v1')?.name, 'materialize-sqlserver');
    assert.equal(builtinForImage('registry.local:5000/team/materialize-sqlite@sha256:abcdef0123')?.name, 'materialize-sqlite');
    assert.equal(builtinForImage('source-http-file:dev')?.name, 'source-http-file');
    assert.equal(builtinForImage('ghcr.io/estuary/source-http-file-v2:dev'), undefined);
    assert.equal(builtinForImage('ghcr.io/estuary/materialize-postgres:v4'), undefined);
    assert.equal(imageBaseName('localhost:5000/x/y:z'), 'y');
  });
  it('runs a built-in as a process with the current Node and the Node flags its package.json declares', () => {
    const c = builtinConnector('materialize-sqlite')!;
    assert.deepEqual(builtinCommand(c), { command: process.execPath, args: [c.bin] });
    const h = builtinConnector('source-http-file')!;
    assert.deepEqual(builtinCommand(h), { command: process.execPath, args: ['--max-semi-space-size=2', '--max-old-space-size=512', h.bin] });
  });
});
