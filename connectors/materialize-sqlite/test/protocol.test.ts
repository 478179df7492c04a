// End to end through the protocol: the real connector process, keyPacked/valuesPacked tuples as Flow sends
// them, a real SQLite file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { JsonObject, MaterializationSpec } from '@sluice/runtime';
import { checkpointFromText } from '@sluice/materialize-sql';
import { ALL_TYPES_VALUES, allTypesCollection, binding, materialization, matchSnapshot, twoKeyCollection } from './helpers/fixtures.ts';
import { ConnectorProcess, Runtime, checkpointOf, field, readThroughOf, unary } from './helpers/driver.ts';
import type { BindingModel, Txn } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-proto-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function specFor(path: string, extra: Record<string, unknown> = {}): MaterializationSpec {
  return materialization(path, [
    binding('all_types', allTypesCollection(), { keys: ['id'], values: ALL_TYPES_VALUES, document: 'flow_document' }),
    binding('events', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'] }, { delta: true }),
    binding('Events Std', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'], document: 'flow_document' }),
  ], extra);
}

const models: BindingModel[] = [
  {
    keys: [field('/id')],
    values: ['/_meta/op', '/arr', '/bigint', '/bin', '/bool', '/date', '/_meta/uuid', '/int', '/multi', '/num', '/obj', '/str', '/strInt', '/strNum', '/ts']
      // `bigint` beyond int64 travels as a BigInt tuple element (JSON carries it as a string here).
      .map((ptr) => (ptr === '/bigint' ? (doc: JsonObject) => (typeof doc.bigint === 'string' ? BigInt(doc.bigint) : field(ptr)(doc)) : field(ptr))),
    delta: false,
    document: true,
  },
  { keys: [field('/tenant'), field('/seq')], values: [field('/_meta/uuid'), field('/value')], delta: true, document: false },
  { keys: [field('/tenant'), field('/seq')], values: [field('/_meta/uuid'), field('/value')], delta: false, document: true },
];

function typesDoc(id: number, n: number, op = 'c'): JsonObject {
  return {
    _meta: { uuid: `2024-05-0${n}T10:00:00Z`, op },
    id, str: `s${id}-${n} it's "q"`, bool: (id + n) % 2 === 0, int: id * 1000 + n, num: id + n / 4,
    obj: { nested: { id, n } }, arr: [id, n, 'x'], multi: n % 2 === 0 ? `m${n}` : n,
    bin: Buffer.from(`bytes-${id}-${n}`).toString('base64'), date: '2024-05-01', ts: '2024-05-01T10:00:00.123456Z',
    strInt: String(2 ** 53 + id), strNum: n === 3 ? 'NaN' : `${id}.5`, bigint: id === 2 ? 18446744073709551615n as unknown as number : id,
  };
}

// bigint values: JSON cannot carry them; the model packs a BigInt for id 2's `bigint` field via the tuple.
function fixDoc(doc: JsonObject): JsonObject {
  if (typeof (doc.bigint as unknown) === 'bigint') return { ...doc, bigint: (doc.bigint as unknown as bigint).toString() };
  return doc;
}

const ev = (tenant: string, seq: number, value: number | null, n: number, op = 'c'): JsonObject => ({ _meta: { uuid: `2024-05-0${n}T11:00:00Z`, op }, tenant, seq, value });

const fixtureTxns: Txn[] = [
  { docs: [] },
  {
    docs: [
      ...[1, 2, 3, 4].map((id) => ({ binding: 0, doc: typesDoc(id, 1) })),
      { binding: 1, doc: ev('acme', 1, 1.5, 1) }, { binding: 1, doc: ev('acme', 1, 2.5, 1) }, { binding: 1, doc: ev("o'brien", 2, null, 1) },
      { binding: 2, doc: ev('acme', 1, 1, 1) }, { binding: 2, doc: ev('acme', 2, 2, 1) }, { binding: 2, doc: ev('zeta', 1, 3, 1) },
    ],
  },
  { docs: [] },
  {
    docs: [
      { binding: 0, doc: typesDoc(2, 2) }, // update
      { binding: 0, doc: { _meta: { uuid: '2024-05-02T00:00:00Z', op: 'd' }, id: 3, str: '', bool: false } }, // delete
      { binding: 0, doc: typesDoc(5, 2) }, { binding: 0, doc: typesDoc(5, 3) }, // insert then update in one txn
      { binding: 1, doc: ev('acme', 1, 9, 2, 'd') },
      { binding: 2, doc: ev('acme', 1, 10, 2) }, { binding: 2, doc: ev('acme', 2, 0, 2, 'd') },
      { binding: 2, doc: ev('new', 7, 7, 2, 'd') }, // a deletion of a key never stored
    ],
  },
];

const lastWins = (_b: number, _prev: JsonObject | undefined, next: JsonObject) => next;

function rows(path: string, sql: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const stmt = db.prepare(sql);
    stmt.setReadBigInts(true);
    const norm = (v: unknown) => (v instanceof Uint8Array ? `blob:${Buffer.from(v).toString()}` : typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : `bigint:${v}`) : v);
    return stmt.all().map((r) => Object.fromEntries(Object.entries(r as object).map(([k, v]) => [k, norm(v)])));
  } finally { db.close(); }
}

async function runFixture(hardDelete: boolean): Promise<string> {
  const path = join(dir, `fixture-${hardDelete}.db`);
  const spec = specFor(path, { hardDelete });
  const applied = await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });
  assert.ok(String((applied.applied as JsonObject).actionDescription).includes('CREATE TABLE'));
  const rt = new Runtime(models, lastWins);
  const p = new ConnectorProcess();
  const opened = await rt.open(p, spec);
  assert.deepEqual(opened, { runtimeCheckpoint: {} }, 'a fresh database recovers the empty checkpoint');
  for (const [i, txn] of fixtureTxns.entries()) {
    const docs = txn.docs.map((d) => ({ ...d, doc: fixDoc(d.doc) }));
    assert.equal(await rt.txn(p, { docs }, checkpointOf(i + 1)), 'committed');
  }
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  assert.equal(await p.end(), 0, p.stderr);
  const out = {
    all_types: rows(path, 'SELECT * FROM all_types ORDER BY id'),
    events: rows(path, 'SELECT * FROM events ORDER BY rowid'),
    events_std: rows(path, 'SELECT * FROM "Events Std" ORDER BY tenant, seq'),
    checkpoints: rows(path, 'SELECT * FROM flow_checkpoints_v1'),
  };
  return `${JSON.stringify(out, null, 1)}\n`;
}

test('spec: protocol number, schemas with titles, no resourcePathPointers', async () => {
  const out = await unary({ spec: { connectorType: 'LOCAL' } });
  const spec = out.spec as JsonObject;
  assert.equal(spec.protocol, 3032023);
  assert.equal(spec.resourcePathPointers, undefined);
  assert.equal((spec.configSchema as JsonObject).title, 'SQLite Database');
});

test('fixture transactions (soft deletes): inserts, updates, deletes, empty txns, three bindings, delta beside standard, every type', async () => {
  const snap = await runFixture(false);
  matchSnapshot('fixture-soft-delete.json', snap);
  const data = JSON.parse(snap) as { all_types: { id: number; '_meta/op': string; flow_document: string; bigint: string; strNum: number | null }[]; events: unknown[]; events_std: unknown[] };
  assert.deepEqual(data.all_types.map((r) => r.id), [1, 2, 3, 4, 5]);
  assert.equal(data.all_types.find((r) => r.id === 3)!['_meta/op'], 'd', 'soft delete keeps the row with op d');
  assert.equal(data.all_types.find((r) => r.id === 2)!.bigint, '18446744073709551615', 'integers beyond int64 map to TEXT exactly');
  assert.equal(JSON.parse(data.all_types.find((r) => r.id === 5)!.flow_document).str.startsWith('s5-3'), true, 'the last update within a transaction wins');
  assert.equal(data.events.length, 4, 'delta updates append every event (3 + 1)');
  assert.equal(data.events_std.length, 4, 'standard: 3 rows + a stored deletion of a never-stored key');
});

test('fixture transactions (hardDelete): deleted rows are gone, deletions of unknown keys are skipped, delta too (as upstream\'s connector)', async () => {
  const snap = await runFixture(true);
  matchSnapshot('fixture-hard-delete.json', snap);
  const data = JSON.parse(snap) as { all_types: { id: number }[]; events: unknown[]; events_std: { tenant: string; seq: number; value: number }[]; checkpoints: { checkpoint: string; fence: number }[] };
  assert.deepEqual(data.all_types.map((r) => r.id), [1, 2, 4, 5]);
  assert.deepEqual(data.events_std.map((r) => `${r.tenant}/${r.seq}=${r.value}`), ['acme/1=10', 'zeta/1=3']);
  // The delta binding keeps every event except the one the runtime flagged as a deletion (`delete` without
  // `exists`): upstream's store loop skips those with hardDelete, delta or not.
  assert.equal(data.events.length, 3);
  assert.equal(readThroughOf(checkpointFromText(data.checkpoints[0]!.checkpoint, 'flow_checkpoints_v1')), 4, 'the last runtime checkpoint is committed (base64 protobuf, as upstream)');
});

test('open after commits returns the committed runtime checkpoint verbatim; bad config fails with a clear last line', async () => {
  const path = join(dir, 'fixture-true.db');
  const p = new ConnectorProcess();
  const opened = await new Runtime(models, lastWins).open(p, specFor(path, { hardDelete: true }));
  assert.deepEqual(opened.runtimeCheckpoint, checkpointOf(4));
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  assert.equal(await p.end(), 0);

  const bad = new ConnectorProcess();
  bad.send({ open: { materialization: materialization('', []) as unknown as JsonObject } });
  bad.child.stdin.end();
  assert.equal(await bad.exited, 1);
  assert.match(bad.lastError(), /path/);
});

test('validate on the wire: the map form `constraints` per binding; apply with dryRun lists statements and executes none', async () => {
  const path = join(dir, 'wire.db');
  const out = await unary({ validate: { name: 'acmeCo/mat', config: { path }, bindings: [{ resourceConfig: { table: 'events', delta_updates: true }, collection: twoKeyCollection() as unknown as JsonObject }] } });
  const b = ((out.validated as JsonObject).bindings as JsonObject[])[0]!;
  assert.deepEqual(Object.keys(b).sort(), ['caseInsensitiveFields', 'constraints', 'deltaUpdates', 'resourcePath']);
  assert.deepEqual(b.resourcePath, ['events']);
  assert.deepEqual((b.constraints as JsonObject).value, { type: 'LOCATION_RECOMMENDED', reason: 'The projection has a single scalar type' });
  assert.equal(b.projectionConstraints, undefined, 'one encoding only');

  const spec = specFor(path);
  const dry = await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1', dryRun: true } });
  const statements = String((dry.applied as JsonObject).actionDescription);
  assert.match(statements, /^CREATE TABLE IF NOT EXISTS flow_checkpoints_v1 \(/);
  assert.equal((statements.match(/CREATE TABLE IF NOT EXISTS/g) ?? []).length, 4);
  const db = new DatabaseSync(path, { readOnly: true });
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
  db.close();
  assert.deepEqual(tables, [], 'a dry run executes nothing');
});
