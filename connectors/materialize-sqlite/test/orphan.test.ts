// The reported failure: the process that started materialize-sqlite dies mid-transaction; the orphan must
// exit (not spin on EPIPE) so that its SQLite write lock is released and the next instance can commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64 } from '@sluice/runtime';
import type { JsonObject } from '@sluice/runtime';
import { Readable } from 'node:stream';
import { alive, until, within } from '@sluice/runtime/testing';
import { binding, materialization, twoKeyCollection } from './helpers/fixtures.ts';
import { BIN, ConnectorProcess, checkpointOf, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-orphan-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Whether another connection holds the database's write lock (a write transaction with the stores is open). */
function writeLocked(path: string): boolean {
  const db = new DatabaseSync(path, { timeout: 0 });
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return false;
  } catch (err) {
    if (/locked|busy/i.test((err as Error).message)) return true;
    throw err;
  } finally {
    db.close();
  }
}

// The parent: starts the connector with pipes, relays the requests from its own stdin, reports the
// connector's pid once it has answered `flushed` (a write transaction is open after the first store). The
// connector inherits the parent's fd 3, the write end of the test's lifeline pipe: the pipe ends once both
// have closed it, i.e. once the orphan has exited — an event the test awaits.
const PARENT = `
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, [process.argv[1]], { stdio: ['pipe', 'pipe', 'pipe', 3] });
child.stderr.resume();
let seen = '';
child.stdout.on('data', (d) => { seen += d; if (seen.includes('"flushed"')) { process.stdout.write(JSON.stringify({ pid: child.pid }) + '\\n'); seen = ''; } });
process.stdin.pipe(child.stdin);
`;

test('an orphaned connector exits mid-transaction and releases the database for the next instance', async () => {
  const path = join(dir, 'orphan.db');
  const spec = materialization(path, [binding('events', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'], document: 'flow_document' })]);
  await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });
  const parent = spawn(process.execPath, ['-e', PARENT, BIN], { stdio: ['pipe', 'pipe', 'inherit', 'pipe'] });
  const { stdin, stdout } = parent;
  const lifeline = parent.stdio[3];
  if (stdin === null || stdout === null || !(lifeline instanceof Readable)) throw new Error('the parent was spawned without its pipes');
  const exited = new Promise<void>((resolve) => lifeline.once('close', () => resolve()));
  lifeline.resume();
  const lines = createInterface({ input: stdout })[Symbol.asyncIterator]();
  const store = (seq: number) => ({ store: { keyPacked: packTupleBase64(['a', seq]), valuesPacked: packTupleBase64(['2024-05-01T00:00:00Z', seq]), doc: { tenant: 'a', seq, value: seq } } });
  const requests = [
    { open: { materialization: spec, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } },
    { acknowledge: {} }, { flush: {} }, store(1), store(2),
  ];
  stdin.write(requests.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const first = await lines.next();
  assert.equal(first.done, false, 'the parent reports the connector once it answered flushed');
  const pid = (JSON.parse(first.value as string) as { pid: number }).pid;
  // Once the connector holds the write lock with the stores, kill the parent.
  await until('the connector to hold the database\'s write lock with the stores', () => writeLocked(path));
  parent.kill('SIGKILL');
  await new Promise((resolve) => parent.once('close', resolve));
  await within(`the orphaned connector (pid ${pid}) to exit after its parent died`, exited, {
    ms: 20_000,
    onTimeout: () => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ } },
  });
  // Its files close during its exit, a moment before the kernel marks it a zombie.
  await until(`the orphan (pid ${pid}) to finish exiting`, () => !alive(pid));
  // The next instance commits a transaction: the lock is free, and the orphan's stores were rolled back.
  const p = new ConnectorProcess();
  p.send({ open: { materialization: spec as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } });
  assert.deepEqual(await p.expect('opened'), { runtimeCheckpoint: {} });
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  p.send({ flush: {} });
  await p.expect('flushed');
  p.send(store(3) as unknown as JsonObject);
  await p.commitAndAcknowledge(checkpointOf(1));
  assert.equal(await p.end(), 0, p.stderr);
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    assert.deepEqual(db.prepare('SELECT seq FROM events ORDER BY seq').all().map((r) => r.seq), [3]);
  } finally {
    db.close();
  }
});
