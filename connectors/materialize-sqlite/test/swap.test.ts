// Swapping images on a live task (issue 15.9, SQL part), on a real database through the real connector bin:
// a checkpoints row as upstream's SQL materializations leave it (base64 protobuf consumer.Checkpoint, the
// explicit zero checkpoint on a fresh row) opens and resumes; what Sluice writes back decodes by upstream's
// rules (standard base64, then protobuf); a row of an earlier Sluice version (JSON text) opens too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { CollectionSpec, JsonObject, MaterializationSpec } from '@sluice/runtime';
import { EXPLICIT_ZERO_CHECKPOINT } from '@sluice/materialize-sql';
import { binding, materialization, proj } from './helpers/fixtures.ts';
import { ConnectorProcess, Runtime, field, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-swap-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const users: CollectionSpec = {
  name: 'acmeCo/users',
  key: ['/id'],
  projections: [
    proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
    proj('id', '/id', { types: ['integer'], exists: 'MUST' }, { isPrimaryKey: true }),
    proj('name', '/name', { types: ['string'], exists: 'MUST' }),
  ],
};
const NAME = 'acmeCo/mat';
const spec = (path: string): MaterializationSpec => materialization(path, [binding('users', users, { keys: ['id'], values: ['name'], document: 'flow_document' })], {}, NAME);
const JOURNAL = 'acmeCo/users/pivot=00;materialize/acmeCo/mat/users';

/** Upstream's decode rules for the column: Go's base64.StdEncoding (padded, standard alphabet), then protobuf. */
function upstreamDecode(text: string): Buffer {
  assert.match(text, /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'base64.StdEncoding accepts it');
  return Buffer.from(text, 'base64');
}

/** The bytes upstream's Go marshaller writes for {sources: {JOURNAL: {readThrough}}} (hand-encoded, no schema). */
function upstreamCheckpoint(readThrough: number): string {
  const varint = (n: number) => { const out = []; while (n > 0x7f) { out.push((n & 0x7f) | 0x80); n >>>= 7; } out.push(n); return out; };
  const source = [0x08, ...varint(readThrough)];
  const key = [...Buffer.from(JOURNAL)];
  const entry = [0x0a, ...varint(key.length), ...key, 0x12, ...varint(source.length), ...source];
  return Buffer.from([0x0a, ...varint(entry.length), ...entry]).toString('base64');
}

/** read_through of the one source in protobuf bytes, read with a plain wire walk (tags 1/1/1). */
function readThroughOfBytes(bytes: Buffer): number {
  let i = 0;
  const varint = (b: Buffer) => { let v = 0; let s = 0; for (;;) { const x = b[i++]!; v += (x & 0x7f) * 2 ** s; if ((x & 0x80) === 0) return v; s += 7; } };
  assert.equal(bytes[i++], 0x0a, 'field 1 (sources), length-delimited');
  const entryEnd = varint(bytes) + i;
  assert.equal(bytes[i++], 0x0a, 'map key');
  const keyLen = varint(bytes);
  assert.equal(bytes.subarray(i, i + keyLen).toString(), JOURNAL);
  i += keyLen;
  assert.equal(bytes[i++], 0x12, 'map value');
  varint(bytes);
  assert.equal(bytes[i++], 0x08, 'read_through = 1, varint');
  const n = varint(bytes);
  assert.equal(i, entryEnd);
  assert.equal(i, bytes.length, 'nothing else in the checkpoint');
  return n;
}

function checkpointRow(path: string): { fence: number; checkpoint: string } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare('SELECT fence, checkpoint FROM flow_checkpoints_v1').all() as { fence: number; checkpoint: string }[];
    assert.equal(rows.length, 1);
    return { fence: Number(rows[0]!.fence), checkpoint: String(rows[0]!.checkpoint) };
  } finally { db.close(); }
}

async function applied(name: string, row?: { fence: number; checkpoint: string }): Promise<string> {
  const path = join(dir, name);
  await unary({ apply: { materialization: spec(path) as unknown as JsonObject, version: 'v1' } });
  if (row !== undefined) {
    const db = new DatabaseSync(path);
    try {
      db.prepare('INSERT INTO flow_checkpoints_v1 (materialization, key_begin, key_end, fence, checkpoint) VALUES (?, 0, 4294967295, ?, ?)').run(NAME, row.fence, row.checkpoint);
    } finally { db.close(); }
  }
  return path;
}

const rt = new Runtime([{ keys: [field('/id')], values: [field('/name')], delta: false, document: true }], (_b, _prev, next) => next);

async function resume(path: string, readThrough: number): Promise<JsonObject> {
  const p = new ConnectorProcess();
  const opened = await rt.open(p, spec(path));
  assert.equal(await rt.txn(p, { docs: [{ binding: 0, doc: { id: readThrough, name: `n${readThrough}` } }] }, { sources: { [JOURNAL]: { readThrough: String(readThrough + 1) } } }), 'committed');
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  assert.equal(await p.end(), 0, p.stderr);
  return opened;
}

test('upstream → Sluice: a fresh upstream row (explicit zero checkpoint) opens as "start from the beginning"', async () => {
  const path = await applied('fresh.db', { fence: 4, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
  const opened = await resume(path, 0);
  assert.deepEqual(opened, { runtimeCheckpoint: {} });
  const row = checkpointRow(path);
  assert.equal(row.fence, 5, 'the fence was bumped over upstream\'s');
  assert.equal(readThroughOfBytes(upstreamDecode(row.checkpoint)), 1);
});

test('upstream → Sluice → upstream: a committed upstream checkpoint is resumed and the next one is written in upstream\'s format', async () => {
  const path = await applied('resume.db', { fence: 9, checkpoint: upstreamCheckpoint(300) });
  const opened = await resume(path, 300);
  assert.deepEqual(opened, { runtimeCheckpoint: { sources: { [JOURNAL]: { readThrough: '300' } } } });
  const row = checkpointRow(path);
  assert.equal(row.fence, 10);
  assert.equal(row.checkpoint, upstreamCheckpoint(301), 'byte-identical to what upstream writes for the same checkpoint');
  assert.equal(readThroughOfBytes(upstreamDecode(row.checkpoint)), 301);
});

test('a Sluice-created row starts with the explicit zero checkpoint, as upstream\'s do', async () => {
  const path = await applied('new.db');
  const p = new ConnectorProcess();
  assert.deepEqual(await rt.open(p, spec(path)), { runtimeCheckpoint: {} });
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  assert.equal(await p.end(), 0, p.stderr);
  assert.deepEqual(checkpointRow(path), { fence: 0, checkpoint: EXPLICIT_ZERO_CHECKPOINT });
});

test('earlier Sluice → Sluice: a JSON-text row opens as that checkpoint and the next commit is written in upstream\'s format', async () => {
  const path = await applied('json.db', { fence: 2, checkpoint: JSON.stringify({ sources: { [JOURNAL]: { readThrough: '7' } }, ackIntents: {} }) });
  const opened = await resume(path, 7);
  assert.deepEqual(opened, { runtimeCheckpoint: { sources: { [JOURNAL]: { readThrough: '7' } }, ackIntents: {} } });
  assert.equal(readThroughOfBytes(upstreamDecode(checkpointRow(path).checkpoint)), 8);
});

test('a checkpoint column written by something else fails the open with a clear last line, and nothing is changed', async () => {
  const path = await applied('garbage.db', { fence: 1, checkpoint: 'hello world' });
  const p = new ConnectorProcess();
  p.send({ open: { materialization: spec(path) as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } });
  p.child.stdin.end();
  assert.equal(await p.exited, 1);
  assert.match(p.lastError(), /checkpoints table flow_checkpoints_v1 holds a checkpoint that is neither base64 protobuf nor JSON/);
  assert.deepEqual(checkpointRow(path), { fence: 1, checkpoint: 'hello world' }, 'the fence bump was rolled back');
});
