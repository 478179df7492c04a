// The writer thread (writer-thread.ts, writer-worker.ts): sessions give the same tables as on one thread; a
// failure on the writer thread (a statement, a malformed tuple) fails the transaction before any commit
// (nothing of it is written, the checkpoint does not move) with the same error; the thread ends on every
// way out of a session (end of input, errors, stop, a failed open).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64, serveMaterialize } from '@sluice/runtime';
import type { CollectionSpec, DecodedStore, JsonObject, MaterializationSpec } from '@sluice/runtime';
import { until } from '@sluice/runtime/testing';
import { EXPLICIT_ZERO_CHECKPOINT, SqlError, checkpointToText } from '@sluice/materialize-sql';
import type { ResourceConfig } from '../src/config.ts';
import { materializeSqlite } from '../src/connector.ts';
import { liveWriterThreads, terminateWriterThreads } from '../src/writer-thread.ts';
import { binding, materialization, proj } from './helpers/fixtures.ts';
import { unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-writer-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const users: CollectionSpec = {
  name: 'acmeCo/users',
  key: ['/id'],
  projections: [
    proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
    proj('id', '/id', { types: ['integer'], exists: 'MUST' }, { isPrimaryKey: true }),
    proj('v', '/v', { types: ['string'], exists: 'MUST' }),
  ],
};

function spec(path: string, delta = false): MaterializationSpec {
  return materialization(path, [
    binding('users', users, { keys: ['id'], values: ['v'], ...(delta ? {} : { document: 'flow_document' }) }, delta ? { delta: true } : {}),
  ]) as unknown as MaterializationSpec;
}

function stores(from: number, to: number, opts: { doc?: boolean; exists?: boolean } = {}): string[] {
  const out: string[] = [];
  for (let i = from; i < to; i++) {
    const doc = opts.doc === false ? '' : `,"doc":{"id":${i},"v":"v${i}", "n":1.50}`;
    out.push(`{"store":{"keyPacked":"${packTupleBase64([i])}","valuesPacked":"${packTupleBase64([`v${i}é`])}"${opts.exists ? ',"exists":true' : ''}${doc}}}`);
  }
  return out;
}

const commit = (n: number): string => JSON.stringify({ startCommit: { runtimeCheckpoint: { sources: { s: { readThrough: String(n) } } } } });
const checkpoint = (n: number): string => checkpointToText({ sources: { s: { readThrough: String(n) } } });

async function applied(name: string, delta = false): Promise<{ path: string; open: string }> {
  const path = join(dir, name);
  await unary({ apply: { materialization: spec(path, delta) as unknown as JsonObject, version: 'v1' } });
  return { path, open: JSON.stringify({ open: { materialization: spec(path, delta) } }) };
}

function state(path: string): { rows: number; checkpoint: string | null } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = Number((db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n);
    const cp = db.prepare('SELECT checkpoint FROM flow_checkpoints_v1').get() as { checkpoint: string | null } | undefined;
    return { rows, checkpoint: cp?.checkpoint ?? null };
  } finally { db.close(); }
}

function table(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const cols = (db.prepare('SELECT name FROM pragma_table_info(\'users\') ORDER BY cid').all() as { name: string }[]).map((c) => `"${c.name}"`);
    return db.prepare(`SELECT ${cols.join(', ')} FROM users ORDER BY rowid`).all().map((r) => ({ ...r }));
  } finally { db.close(); }
}

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void { this.text += chunk.toString(); cb(); }
}
const quietLog = { write: () => true };

async function serve(lines: AsyncIterable<string> | string[], env: Record<string, string> = {}, signal?: AbortSignal): Promise<{ out: string; error: Error | undefined }> {
  const output = new Sink();
  let error: Error | undefined;
  const input = Array.isArray(lines) ? lines.map((l) => `${l}\n`) : lines;
  const saved = process.env['SLUICE_SQLITE_WRITER_THREAD'];
  if (env['SLUICE_SQLITE_WRITER_THREAD'] !== undefined) process.env['SLUICE_SQLITE_WRITER_THREAD'] = env['SLUICE_SQLITE_WRITER_THREAD'];
  try {
    await serveMaterialize(materializeSqlite, { input, output, stderr: quietLog, env: {}, ...(signal ? { signal } : {}) });
  } catch (err) {
    error = err as Error;
  } finally {
    if (saved === undefined) delete process.env['SLUICE_SQLITE_WRITER_THREAD'];
    else process.env['SLUICE_SQLITE_WRITER_THREAD'] = saved;
  }
  return { out: output.text, error };
}

test('the writer thread gives the same tables and responses as one thread (standard and delta)', async () => {
  for (const delta of [false, true]) {
    const results: { out: string; rows: unknown[] }[] = [];
    for (const thread of ['1', '0']) {
      const { path, open } = await applied(`same-${delta ? 'delta' : 'std'}-${thread}.db`, delta);
      const { out, error } = await serve([
        open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 1500, { doc: !delta }), commit(1),
        '{"acknowledge":{}}', '{"flush":{}}', ...stores(1000, 2600, { doc: !delta, exists: !delta }), commit(2),
        '{"acknowledge":{}}', '{"flush":{}}', commit(3), '{"acknowledge":{}}',
      ], { SLUICE_SQLITE_WRITER_THREAD: thread });
      assert.equal(error, undefined, String(error));
      assert.equal(state(path).checkpoint, checkpoint(3));
      results.push({ out, rows: table(path) });
    }
    assert.equal(results[0]!.out, results[1]!.out);
    assert.deepStrictEqual(results[0]!.rows, results[1]!.rows);
    assert.equal(results[0]!.rows.length, delta ? 3100 : 2600);
  }
});

test('a statement failing on the writer thread fails the session; that transaction is not committed', async () => {
  const { path, open } = await applied('trap.db');
  const db = new DatabaseSync(path);
  db.exec(`CREATE TRIGGER trap BEFORE INSERT ON users WHEN NEW.id = 11500 BEGIN SELECT RAISE(ABORT, 'trap sprung at 11500'); END;`);
  db.close();
  const before = liveWriterThreads();
  const { out, error } = await serve([
    open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 3000), commit(1),
    '{"acknowledge":{}}', '{"flush":{}}', ...stores(10000, 13000), commit(2),
    '{"acknowledge":{}}',
  ]);
  assert.ok(error instanceof SqlError, String(error));
  assert.match(error.message, /^trap sprung at 11500 \(in: INSERT INTO users /);
  assert.equal(out.split('\n').filter((l) => l.startsWith('{"startedCommit"')).length, 1, 'only the first commit started');
  assert.deepEqual(state(path), { rows: 3000, checkpoint: checkpoint(1) });
  assert.equal(liveWriterThreads(), before, 'the writer thread ended');
});

test('a malformed tuple (decoded on the writer thread) is the same ProtocolError; nothing is committed', async () => {
  const { path, open } = await applied('bad-tuple.db');
  const lines = [open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), '{"store":{"keyPacked":"FQE=","valuesPacked":"AmE=","doc":{"id":1}}}', ...stores(2000, 3000), commit(1)];
  const before = liveWriterThreads();
  const threaded = await serve(lines);
  const single = await serve(lines, { SLUICE_SQLITE_WRITER_THREAD: '0' });
  assert.equal(String(threaded.error), 'ProtocolError: "store" request (line 2004): invalid packed tuple: unterminated string at byte 1');
  assert.equal(String(threaded.error), String(single.error));
  assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
  assert.equal(liveWriterThreads(), before);
});

test('the writer thread ends at end of input, on a protocol error mid-transaction, on stop, and when open fails', async () => {
  const before = liveWriterThreads();
  {
    const { path, open } = await applied('eof.db');
    const { error } = await serve([open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), commit(1), '{"acknowledge":{}}']);
    assert.equal(error, undefined);
    assert.equal(state(path).rows, 2000);
    assert.equal(liveWriterThreads(), before, 'after end of input');
  }
  {
    const { path, open } = await applied('protocol-error.db');
    const { error } = await serve([open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), '{"store":{"keyPacked":"FQE=","doc":{"id":1,}}}', commit(1)]);
    assert.match(String(error), /ProtocolError: stdin line 2004 is not valid JSON/);
    assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
    assert.equal(liveWriterThreads(), before, 'after a protocol error');
  }
  {
    const { path, open } = await applied('stopped.db');
    const controller = new AbortController();
    let reachedPause!: () => void;
    const paused = new Promise<void>((resolve) => { reachedPause = resolve; });
    async function* input(): AsyncGenerator<string> {
      yield [open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000)].map((l) => `${l}\n`).join('');
      reachedPause();
      await new Promise(() => undefined); // the runtime never sends startCommit
    }
    const served = serve(input(), {}, controller.signal);
    await paused;
    controller.abort();
    const { error } = await served;
    assert.equal(error, undefined, 'a stop ends the session cleanly');
    assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT }, 'the open transaction was rolled back');
    assert.equal(liveWriterThreads(), before, 'after a stop');
  }
  {
    const path = join(dir, 'a-directory');
    mkdirSync(path, { recursive: true });
    const { error } = await serve([JSON.stringify({ open: { materialization: spec(path) } })]);
    assert.match(String(error), /^SqlConfigError: cannot open SQLite database '.*a-directory': .+\. Check that 'path' names a writable file$/);
    assert.equal(liveWriterThreads(), before, 'after a failed open');
  }
});

test('transactor: a store loop still running when the transactor is closed writes nothing more', async () => {
  const { path } = await applied('closed-mid-store.db');
  const log = { debug() {}, info() {}, warn() {}, error() {}, status() {}, child() { return log; } };
  const s = spec(path);
  const bindings = s.bindings!.map((b, index) => ({ index, resource: b.resourceConfig as unknown as ResourceConfig, spec: b }));
  const config = { path, hardDelete: false };
  for (const thread of ['1', '0']) {
    process.env['SLUICE_SQLITE_WRITER_THREAD'] = thread;
    try {
      const { transactor } = await materializeSqlite.open({ config, log, signal: new AbortController().signal, materialization: s, bindings, range: {}, version: 'v1', state: {} });
      await transactor.acknowledge();
      const decoded = (i: number): DecodedStore => ({ binding: 0, key: [i], values: [`v${i}`], keyPacked: '', doc: { id: i, v: `v${i}` }, docJson: `{"id":${i},"v":"v${i}"}`, exists: false, delete: false });
      async function* storesThenClose(): AsyncGenerator<DecodedStore> {
        for (let i = 0; i < 100; i++) yield decoded(i);
        await transactor.close!();
        for (let i = 100; i < 2000; i++) yield decoded(i);
      }
      await assert.rejects(transactor.store(storesThenClose()), /the transactor was closed while storing|the session ended before this transaction was committed|writer thread is closed/);
      assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT }, `writer thread ${thread}`);
    } finally {
      delete process.env['SLUICE_SQLITE_WRITER_THREAD'];
    }
  }
});

test('a writer thread that dies mid-transaction fails the session with a named error; nothing of it is committed', async () => {
  const { path, open } = await applied('died.db');
  const before = liveWriterThreads();
  let reachedPause!: () => void;
  const paused = new Promise<void>((resolve) => { reachedPause = resolve; });
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => { resume = resolve; });
  async function* input(): AsyncGenerator<string> {
    yield [open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 1000), commit(1), '{"acknowledge":{}}', '{"flush":{}}', ...stores(1000, 3000)].map((l) => `${l}\n`).join('');
    reachedPause();
    await resumed;
    yield [...stores(3000, 4000), commit(2), '{"acknowledge":{}}'].map((l) => `${l}\n`).join('');
  }
  const served = serve(input());
  await paused;
  // Let the first commit finish and the second transaction's stores reach the thread, then kill it.
  await until('the first commit\'s 1000 rows in the database', () => state(path).rows >= 1000);
  await terminateWriterThreads();
  resume();
  const { out, error } = await served;
  assert.ok(error instanceof SqlError, String(error));
  assert.match(error.message, /writer thread exited/);
  assert.equal(out.split('\n').filter((l) => l.startsWith('{"startedCommit"')).length, 1, 'only the first commit started');
  assert.deepEqual(state(path), { rows: 1000, checkpoint: checkpoint(1) });
  assert.equal(liveWriterThreads(), before, 'no thread left');
});
