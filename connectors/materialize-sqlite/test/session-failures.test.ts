// A session's ways out: a failure mid-transaction (a statement, a malformed tuple, a protocol error) fails it
// before any commit (nothing of that transaction is written, the checkpoint does not move) with a named error;
// end of input, a stop and a failed open end it cleanly or with that error; a transactor closed mid-store
// writes nothing more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64, serveMaterialize } from '@sluice/runtime';
import type { CollectionSpec, DecodedStore, JsonObject, MaterializationSpec } from '@sluice/runtime';
import { EXPLICIT_ZERO_CHECKPOINT, SqlError, checkpointToText } from '@sluice/materialize-sql';
import type { ResourceConfig } from '../src/config.ts';
import { materializeSqlite } from '../src/connector.ts';
import { binding, materialization, proj } from './helpers/fixtures.ts';
import { unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-failures-'));
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

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void { this.text += chunk.toString(); cb(); }
}
const quietLog = { write: () => true };

async function serve(lines: AsyncIterable<string> | string[], signal?: AbortSignal): Promise<{ out: string; error: Error | undefined }> {
  const output = new Sink();
  let error: Error | undefined;
  const input = Array.isArray(lines) ? lines.map((l) => `${l}\n`) : lines;
  try {
    await serveMaterialize(materializeSqlite, { input, output, stderr: quietLog, env: {}, ...(signal ? { signal } : {}) });
  } catch (err) {
    error = err as Error;
  }
  return { out: output.text, error };
}

test('a statement failing mid-transaction fails the session; that transaction is not committed', async () => {
  const { path, open } = await applied('trap.db');
  const db = new DatabaseSync(path);
  db.exec(`CREATE TRIGGER trap BEFORE INSERT ON users WHEN NEW.id = 11500 BEGIN SELECT RAISE(ABORT, 'trap sprung at 11500'); END;`);
  db.close();
  const { out, error } = await serve([
    open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 3000), commit(1),
    '{"acknowledge":{}}', '{"flush":{}}', ...stores(10000, 13000), commit(2),
    '{"acknowledge":{}}',
  ]);
  assert.ok(error instanceof SqlError, String(error));
  assert.match(error.message, /^trap sprung at 11500 \(in: INSERT INTO users /);
  assert.equal(out.split('\n').filter((l) => l.startsWith('{"startedCommit"')).length, 1, 'only the first commit started');
  assert.deepEqual(state(path), { rows: 3000, checkpoint: checkpoint(1) });
});

test('a malformed tuple is a ProtocolError naming its line; nothing is committed', async () => {
  const { path, open } = await applied('bad-tuple.db');
  const lines = [open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), '{"store":{"keyPacked":"FQE=","valuesPacked":"AmE=","doc":{"id":1}}}', ...stores(2000, 3000), commit(1)];
  const { error } = await serve(lines);
  assert.equal(String(error), 'ProtocolError: "store" request (line 2004): invalid packed tuple: unterminated string at byte 1');
  assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
});

test('a session ends at end of input, on a protocol error mid-transaction, on stop, and when open fails', async () => {
  {
    const { path, open } = await applied('eof.db');
    const { error } = await serve([open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), commit(1), '{"acknowledge":{}}']);
    assert.equal(error, undefined);
    assert.equal(state(path).rows, 2000);
  }
  {
    const { path, open } = await applied('protocol-error.db');
    const { error } = await serve([open, '{"acknowledge":{}}', '{"flush":{}}', ...stores(0, 2000), '{"store":{"keyPacked":"FQE=","doc":{"id":1,}}}', commit(1)]);
    assert.match(String(error), /ProtocolError: stdin line 2004 is not valid JSON/);
    assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
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
    const served = serve(input(), controller.signal);
    await paused;
    controller.abort();
    const { error } = await served;
    assert.equal(error, undefined, 'a stop ends the session cleanly');
    assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT }, 'the open transaction was rolled back');
  }
  {
    const path = join(dir, 'a-directory');
    mkdirSync(path, { recursive: true });
    const { error } = await serve([JSON.stringify({ open: { materialization: spec(path) } })]);
    assert.match(String(error), /^SqlConfigError: cannot open SQLite database '.*a-directory': .+\. Check that 'path' names a writable file$/);
  }
});

test('transactor: a store loop still running when the transactor is closed writes nothing more', async () => {
  const { path } = await applied('closed-mid-store.db');
  const log = { debug() {}, info() {}, warn() {}, error() {}, status() {}, child() { return log; } };
  const s = spec(path);
  const bindings = s.bindings!.map((b, index) => ({ index, resource: b.resourceConfig as unknown as ResourceConfig, spec: b }));
  const config = { path, hardDelete: false };
  const { transactor } = await materializeSqlite.open({ config, log, signal: new AbortController().signal, materialization: s, bindings, range: {}, version: 'v1', state: {} });
  await transactor.acknowledge();
  const decoded = (i: number): DecodedStore => ({ binding: 0, key: [i], values: [`v${i}`], keyPacked: '', doc: { id: i, v: `v${i}` }, docJson: `{"id":${i},"v":"v${i}"}`, exists: false, delete: false });
  async function* storesThenClose(): AsyncGenerator<DecodedStore> {
    for (let i = 0; i < 100; i++) yield decoded(i);
    await transactor.close!();
    for (let i = 100; i < 2000; i++) yield decoded(i);
  }
  await assert.rejects(transactor.store(storesThenClose()), /the transactor was closed while storing/);
  assert.deepEqual(state(path), { rows: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
});
