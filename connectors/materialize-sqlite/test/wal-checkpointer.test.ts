// WAL checkpoints on their own thread (wal-checkpointer.ts): committed pages reach the database file without
// the committing thread checkpointing, closing the last connection ends the thread and leaves no WAL, a thread
// that dies leaves the client working (checkpoints fall back to the main connection), and a small WAL starts
// no thread. Exactly-once across kills with the thread on: exactly-once.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { until } from '@sluice/runtime/testing';
import { SqliteClient } from '../src/sqlite-client.ts';
import type { Connection } from '@sluice/materialize-sql';
import { killCheckpointThreads, liveCheckpointThreads } from '../src/wal-checkpointer.ts';
import { CHECKPOINT_THREAD_ENV, checkpointThreadSetting } from '../src/connector.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-ckpt-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const ROWS_PER_COMMIT = 200;
/** ~200 KiB per commit: pages the main connection's own automatic checkpoint (every ~156 MiB) never copies. */
async function commitRows(conn: Connection, commit: number): Promise<void> {
  await conn.begin();
  const insert = conn.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
  for (let i = 0; i < ROWS_PER_COMMIT; i++) insert.run([`k${commit}-${i}`, 'x'.repeat(1000)]);
  await conn.commit();
}

async function setUp(name: string, after: number | false, log?: { warn(msg: string, fields?: Record<string, unknown>): void }): Promise<{ path: string; client: SqliteClient; conn: Connection }> {
  const path = join(dir, name);
  const client = new SqliteClient(path, { checkpointThreadAfterBytes: after, ...(log === undefined ? {} : { log }) });
  const conn = await client.connect();
  await conn.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
  return { path, client, conn };
}

function rowCount(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n);
  } finally {
    db.close();
  }
}

test('with the thread, committed pages reach the database file while the committing connection never checkpoints', async () => {
  const { path, client, conn } = await setUp('thread.db', 0);
  const fileBefore = statSync(path).size;
  for (let c = 0; c < 5; c++) await commitRows(conn, c);
  const checkpointer = client.checkpointer;
  assert.ok(checkpointer !== undefined, 'the thread started at the first commit');
  // Everything in the WAL copied into the file, by the thread.
  await until('the checkpoint thread to copy the last commit into the database file', () =>
    checkpointer.last !== undefined && checkpointer.last.checkpointed === checkpointer.last.log && statSync(path).size > fileBefore + 5 * ROWS_PER_COMMIT * 1000);
  assert.equal(liveCheckpointThreads(), 1);
  await conn.close();
  assert.equal(liveCheckpointThreads(), 0, 'closing the last connection ended the thread');
  assert.equal(existsSync(`${path}-wal`), false, 'the WAL was checkpointed and deleted at close');
  assert.equal(rowCount(path), 5 * ROWS_PER_COMMIT);
});

test('without the thread the same commits stay in the WAL until the close (the test above can fail)', async () => {
  const { path, client, conn } = await setUp('no-thread.db', false);
  const fileBefore = statSync(path).size;
  for (let c = 0; c < 5; c++) await commitRows(conn, c);
  assert.equal(client.checkpointer, undefined);
  assert.equal(statSync(path).size, fileBefore, 'nothing was copied into the file');
  assert.ok(statSync(`${path}-wal`).size > 5 * ROWS_PER_COMMIT * 1000);
  await conn.close();
  assert.equal(existsSync(`${path}-wal`), false);
  assert.equal(rowCount(path), 5 * ROWS_PER_COMMIT);
});

test('a WAL below the threshold starts no thread; past it, one thread for all of the client\'s connections', async () => {
  const { path, client, conn } = await setUp('threshold.db', 1024 * 1024);
  const other = await client.connect();
  await commitRows(conn, 0);
  assert.equal(client.checkpointer, undefined, '~200 KiB of WAL: no thread');
  for (let c = 1; c < 8; c++) await commitRows(c % 2 === 0 ? conn : other, c);
  assert.ok(client.checkpointer !== undefined, 'over 1 MiB of WAL: the thread runs');
  assert.equal(liveCheckpointThreads(), 1);
  await conn.close();
  assert.equal(liveCheckpointThreads(), 1, 'another connection is still open');
  await other.close();
  assert.equal(liveCheckpointThreads(), 0);
  assert.equal(existsSync(`${path}-wal`), false);
  assert.equal(rowCount(path), 8 * ROWS_PER_COMMIT);
});

test('a checkpoint thread that dies is reported once; commits, the close and the WAL\'s removal go on without it', async () => {
  const warnings: string[] = [];
  const { path, client, conn } = await setUp('killed.db', 0, { warn: (msg, fields) => warnings.push(`${msg} ${JSON.stringify(fields)}`) });
  await commitRows(conn, 0);
  const checkpointer = client.checkpointer;
  assert.ok(checkpointer !== undefined);
  await until('the first checkpoint', () => checkpointer.checkpoints > 0);
  await killCheckpointThreads();
  await until('the thread\'s death to be reported', () => warnings.length > 0);
  for (let c = 1; c < 4; c++) await commitRows(conn, c);
  assert.equal(client.checkpointer?.running, false, 'the dead thread is not replaced');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0]!, /the WAL checkpoint thread failed; checkpoints run on the main thread from now on .*exited unexpectedly/);
  await conn.close();
  assert.equal(liveCheckpointThreads(), 0);
  assert.equal(existsSync(`${path}-wal`), false, 'the main connection, now the last, checkpointed and removed the WAL');
  assert.equal(rowCount(path), 4 * ROWS_PER_COMMIT);
});

test(`${CHECKPOINT_THREAD_ENV}: bytes, 0, off, unset; anything else is a clear error`, () => {
  assert.equal(checkpointThreadSetting(undefined), undefined);
  assert.equal(checkpointThreadSetting(' '), undefined);
  assert.equal(checkpointThreadSetting('0'), 0);
  assert.equal(checkpointThreadSetting('1048576'), 1048576);
  assert.equal(checkpointThreadSetting('OFF'), false);
  assert.throws(() => checkpointThreadSetting('16MiB'), { name: 'SqlConfigError', message: `${CHECKPOINT_THREAD_ENV} is '16MiB': set it to a number of WAL bytes after which checkpoints run on their own thread (0: from the first commit), or to 'off'; or unset it` });
});
