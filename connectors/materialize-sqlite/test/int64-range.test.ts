// An INTEGER column holds i64 (#14.1): i64's minimum and maximum are stored exactly, and a u64 beyond i64
// (2^63 … 2^64 − 1, which Flow sends as a tuple integer) is a clear error naming the table, the field and
// the value and saying how to fix it — through the real bin and a real SQLite file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64 } from '@sluice/runtime';
import type { JsonObject, TupleValue } from '@sluice/runtime';
import { ALL_TYPES_VALUES, allTypesCollection, binding, materialization } from './helpers/fixtures.ts';
import { ConnectorProcess, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-int64-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Stores one document whose `int` field (an INTEGER column: no maximum in the schema) is `int`; commits. */
async function storeInt(path: string, id: number, int: bigint): Promise<{ p: ConnectorProcess; committed: boolean }> {
  const spec = materialization(path, [binding('all_types', allTypesCollection(), { keys: ['id'], values: ALL_TYPES_VALUES, document: 'flow_document' })]);
  await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });
  const p = new ConnectorProcess();
  p.send({ open: { materialization: spec as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } });
  await p.expect('opened');
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  p.send({ flush: {} });
  await p.expect('flushed');
  // Values in ALL_TYPES_VALUES order: `int` is the one that matters; the required ones get a value, the others are null.
  const required: Record<string, TupleValue> = { '_meta/op': 'c', bool: true, flow_published_at: '2024-05-01T10:00:00Z', str: 's', int };
  const values: TupleValue[] = ALL_TYPES_VALUES.map((f) => required[f] ?? null);
  const doc = `{"_meta":{"op":"c","uuid":"2024-05-01T10:00:00Z"},"id":${id},"bool":true,"str":"s","int":${int}}`;
  p.child.stdin.write(`{"store":{"keyPacked":"${packTupleBase64([id])}","valuesPacked":"${packTupleBase64(values)}","doc":${doc}}}\n`);
  p.send({ startCommit: { runtimeCheckpoint: { sources: {} } } });
  const reply = await p.read().catch(() => null);
  if (reply !== null && 'startedCommit' in reply) return { p, committed: true };
  await p.exited;
  return { p, committed: false };
}

test('INTEGER column: i64 min and max are exact', async () => {
  const path = join(dir, 'ok.db');
  for (const [id, v] of [[1, 9223372036854775807n], [2, -9223372036854775808n]] as const) {
    const { p, committed } = await storeInt(path, id, v);
    assert.ok(committed, p.stderr);
    p.send({ acknowledge: {} });
    await p.expect('acknowledged');
    assert.equal(await p.end(), 0, p.stderr);
  }
  const db = new DatabaseSync(path, { readOnly: true, readBigInts: true });
  try {
    assert.deepEqual(db.prepare('SELECT id, int FROM all_types ORDER BY id').all().map((r) => [r.id, r.int]), [[1n, 9223372036854775807n], [2n, -9223372036854775808n]]);
  } finally {
    db.close();
  }
});

test('INTEGER column: a u64 beyond i64 is an error naming the table, field and value, and the fix', async () => {
  for (const v of [9223372036854775808n, 18446744073709551615n]) {
    const { p, committed } = await storeInt(join(dir, `bad-${v}.db`), 3, v);
    assert.equal(committed, false, `${v} must not commit`);
    assert.notEqual(await p.exited, 0);
    assert.equal(p.lastError(), `all_types (collection acmeCo/all-types): cannot write value field 'int' (INTEGER) of the document with key [3]: ${v} is outside the 64-bit integer range of an INTEGER column; declare a maximum in the schema so the field maps to TEXT`);
    assert.doesNotMatch(p.stderr, /\n\s+at /, 'no stack trace for a data error');
  }
});
