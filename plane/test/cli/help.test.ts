// `--help` of every command exits 0 on stdout and names every flag the command accepts (the local-plane
// commands check this themselves on every run; token, raw and connectors are listed here).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMANDS } from '../../src/cli/main.ts';
import { sluice } from './helpers.ts';

const FLAGS: Record<string, string[]> = {
  connectors: ['--json', '--help'],
  raw: ['--config', '--bindings', '--state', '--fixture', '--dry-run', '--name', '--protocol', '--timeout', '--idle-timeout', '--help'],
  preview: ['--catalog', '--name', '--fixture', '--sessions', '--fresh', '--output-state', '--output-apply', '--initial-state', '--timeout', '--container-engine', '--help'],
  test: ['--catalog', '--help'],
  serve: ['--catalog', '--data-dir', '--port', '--ingest-port', '--host', '--container-engine', '--quiet', '--allow-deletions', '--help'],
  start: ['--data-dir', '--rows', '--port', '--ingest-port', '--exit', '--quiet', '--allow-deletions', '--help'],
  token: ['--data-dir', '--prefix', '--multi-use', '--valid-for', '--subject', '--detail', '--port', '--init', '--help'],
};

test('every command has a --help naming each of its flags', async () => {
  assert.deepEqual(Object.keys(FLAGS).sort(), Object.keys(COMMANDS).sort(), 'a command without an entry here');
  await Promise.all(Object.entries(FLAGS).map(async ([name, flags]) => {
    const r = await sluice(name === 'token' ? ['token', 'create', '--help'] : [name, '--help']);
    assert.equal(r.code, 0, `${name} --help: ${r.stderr}`);
    assert.equal(r.stderr, '', `${name} --help writes to stdout only`);
    assert.match(r.stdout, new RegExp(`^usage: sluice ${name}`), name);
    for (const flag of flags) assert.ok(r.stdout.includes(flag), `sluice ${name} --help does not mention ${flag}:\n${r.stdout}`);
  }));
});
