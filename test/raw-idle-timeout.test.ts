// `sluice raw` never waits forever: a connector that goes quiet is killed after --idle-timeout and the
// error names what sluice was waiting for.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const SLUICE = new URL('../plane/bin/sluice.js', import.meta.url).pathname;

function sluice(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SLUICE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdout.resume();
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('sluice raw: idle timeout', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-raw-idle-'));
  // Answers the build's validate, then never answers open. The limit leaves a loaded machine time to start
  // the fixture and answer validate (the idle timeout covers every response sluice awaits).
  const quiet = ['--', process.execPath, new URL('./fixtures/quiet-after-validate.ts', import.meta.url).pathname];
  it('capture: a connector that never answers "open"', async () => {
    const started = performance.now();
    const r = await sluice(['raw', 'capture', '--idle-timeout', '5', ...quiet]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr.trim().split('\n').at(-1)!, /^sluice raw: .*: no response for 5 s while awaiting "opened"; the connector was killed$/);
    assert.ok(performance.now() - started < 30_000);
  });
  it('materialize: a connector that never answers "open"', async () => {
    const fixture = join(dir, 'f.jsonl');
    const bindings = join(dir, 'b.yaml');
    writeFileSync(fixture, '["acme/users",{"id":1}]\n');
    writeFileSync(bindings, '- resource: {table: users}\n  collection: acme/users\n');
    const r = await sluice(['raw', 'materialize', '--protocol', 'materialize', '--bindings', bindings, '--fixture', fixture, '--idle-timeout', '5', ...quiet]);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr.trim().split('\n').at(-1)!, /^sluice raw: .*: no response for 5 s while awaiting "opened"; the connector was killed$/);
  });
  it('a bad --idle-timeout is a usage error', async () => {
    const r = await sluice(['raw', 'capture', '--idle-timeout', 'soon', ...quiet]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--idle-timeout must be a number of seconds \(0 for none\), got "soon"/);
  });
});
