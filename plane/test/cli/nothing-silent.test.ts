// Nothing fails in silence: preview says when the destination's checkpoint would skip its fixture (and --fresh
// previews into a temporary database); `sluice start` prints republish and failure lines once it is up, as
// `serve` does.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { SLUICE, sluice } from './helpers.ts';
import { until as untilEvent } from '@sluice/runtime/testing';

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-silent-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const CATALOG = `collections:
  acmeCo/things:
    schema: {type: object, properties: {id: {type: string}, n: {type: integer}}, required: [id]}
    key: [/id]
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/things
        resource: {table: things}
`;

test('preview: a destination already holding a checkpoint for the task is reported, not skipped in silence; --fresh previews into a temporary database', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'flow.yaml'), CATALOG);
  writeFileSync(join(dir, 'first.jsonl'), '["acmeCo/things", {"id": "a", "n": 1}]\n{"commit": true}\n');
  writeFileSync(join(dir, 'second.jsonl'), '["acmeCo/things", {"id": "b", "n": 2}]\n{"commit": true}\n');
  const rows = () => {
    const db = new DatabaseSync(join(dir, 'out.db'), { readOnly: true });
    try { return db.prepare('SELECT id, n FROM things ORDER BY id').all().map((r) => ({ ...r })); } finally { db.close(); }
  };

  const first = await sluice(['preview', '--catalog', 'flow.yaml', '--fixture', 'first.jsonl'], { cwd: dir });
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(rows(), [{ id: 'a', n: 1 }]);

  // out.db now holds preview's checkpoint: the next fixture's documents would be behind it.
  const second = await sluice(['preview', '--catalog', 'flow.yaml', '--fixture', 'second.jsonl'], { cwd: dir });
  assert.equal(second.code, 1, second.stderr);
  assert.equal(second.stderrLines.at(-1), `sluice: the SQLite database ${join(dir, 'out.db')} already holds a checkpoint for acmeCo/to-sqlite ` +
    '(read through 1 journal(s), from a plane run or an earlier preview): the fixture\'s documents would be behind it and skipped, so nothing was previewed. ' +
    'Pass --fresh to preview into a temporary SQLite database, or point the endpoint at an empty database');
  assert.deepEqual(rows(), [{ id: 'a', n: 1 }], 'the destination is untouched');

  const fresh = await sluice(['preview', '--catalog', 'flow.yaml', '--fixture', 'second.jsonl', '--fresh', '--output-state'], { cwd: dir });
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.match(fresh.stderr, /^sluice: previewing acmeCo\/to-sqlite into a temporary SQLite database \(.+preview\.db, removed afterwards\) instead of .+out\.db\n$/);
  assert.deepEqual(rows(), [{ id: 'a', n: 1 }], 'the endpoint database is not written');
});

test('sluice start, once up, prints republish and failure lines as serve does', async (t) => {
  const dir = tmp(t);
  const data = join(dir, 'data');
  const child = spawn(process.execPath, [SLUICE, 'start', '--data-dir', data, '--rows', '50', '--port', '0', '--ingest-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => { out += d; });
  child.stderr.on('data', (d: Buffer) => { err += d; });
  const until = (what: string, seconds: number, test: () => boolean) => untilEvent(what, () => {
    if (child.exitCode !== null) throw new Error(`${what}: sluice start exited ${child.exitCode}\nstdout:\n${out}\nstderr:\n${err}`);
    return test();
  }, { ms: seconds * 1000, detail: () => `stdout:\n${out}\nstderr:\n${err}` });
  await until('the quickstart up ("Press Ctrl-C")', 240, () => out.includes('Press Ctrl-C to stop.'));
  assert.equal(err, '', 'quiet while it fills up');

  // A YAML syntax error in the catalog copy: a failure line, the running tasks stay.
  const catalog = join(data, 'quickstart', 'flow.yaml');
  const good = readFileSync(catalog, 'utf8');
  writeFileSync(catalog, `${good}\ncollections: [unclosed\n`);
  await until('a failed republish line', 120, () => / publication [0-9a-f]{16} failed: /.test(err));
  assert.match(err, /Z .+flow\.yaml changed: republishing\n/);
  // Fixed again: a successful publication line.
  writeFileSync(catalog, good);
  await until('a successful republish line', 120, () => / publication [0-9a-f]{16}: 1 collection\(s\), 1 capture\(s\), 1 materialization\(s\)/.test(err));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, err);
});
