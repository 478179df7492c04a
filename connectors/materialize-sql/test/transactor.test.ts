// The transactor's staged flow (the SQL Server shape: bulk rows into a temp table, MERGE or INSERT…SELECT
// at commit, `_flow_delete` for hard deletes) and the fence, against a fake connection that records calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DecodedLoad, DecodedStore } from '@sluice/runtime';
import { buildTable, checkpointToText, FencedError, installFence, makeQuoter, SqlTransactor } from '../src/index.ts';
import type { BulkTarget, Connection, Dialect, SqlParam, SqlRow, StatementTemplates, Table } from '../src/index.ts';

const quote = makeQuoter(new Set(['key']));
const name = (t: Table) => t.path.join('.');
const templates: StatementTemplates = {
  createSchema: () => [], createTable: (t) => `CREATE ${name(t)}`, addColumns: () => [], alterColumns: () => [],
  truncateTable: (t) => `TRUNCATE ${name(t)}`, dropTable: (t) => `DROP ${name(t)}`, describeTable: (p) => `DESCRIBE ${p.join('.')}`,
  loadTable: (t) => ({ name: `#load_${t.binding}`, identifier: `#load_${t.binding}` }),
  createLoadTable: (t) => `CREATE #load_${t.binding}`, truncateLoad: (t) => `TRUNCATE #load_${t.binding}`,
  loadQuery: (ts) => (ts.length === 0 ? undefined : `LOAD ${ts.map(name).join(',')}`),
  storeTable: (t) => ({ name: `#store_${t.binding}`, identifier: `#store_${t.binding}` }),
  createStoreTable: (t) => `CREATE #store_${t.binding}`, mergeFromStore: (t) => `MERGE ${name(t)}`,
  copyFromStore: (t) => `COPY ${name(t)}`, truncateStore: (t) => `TRUNCATE #store_${t.binding}`,
  createCheckpointsTable: () => 'CREATE ckpt', fenceBump: () => 'BUMP', fenceSelect: () => 'SELECT FENCE',
  fenceInsert: (_p, _m, b, e, f, c) => `INSERT FENCE ${b}-${e} ${f} ${c}`,
  checkpointUpdate: (_p, _m, _b, _e, f, c) => `CHECKPOINT ${f} ${c}`,
};
const dialect: Dialect = {
  name: 'fake', maxIdentifierLength: 128, caseInsensitiveColumns: true, storeFlow: 'staged', transactionalDdl: false,
  quoteIdentifier: quote, quotePath: (p) => p.map(quote).join('.'), literal: (v) => String(v), placeholder: (i) => `@p${i + 1}`,
  mapType: (input) => ({ ddl: input.flatType === 'integer' ? 'BIGINT' : 'TEXT', toParam: (v) => (typeof v === 'object' && v !== null && !(v instanceof Uint8Array) ? JSON.stringify(v) : v as SqlParam) }),
  compatibility: () => ({ kind: 'compatible' }),
  templates,
};

class FakeConnection implements Connection {
  calls: string[] = [];
  bulk: { target: string; rows: SqlParam[][] }[] = [];
  fenceRow: SqlRow | undefined;
  checkpointRows = 1;
  loadRows: SqlRow[] = [];
  async exec(sql: string): Promise<number> { this.calls.push(sql); return sql.startsWith('CHECKPOINT') ? this.checkpointRows : 1; }
  async query(sql: string): Promise<SqlRow[]> { this.calls.push(sql); return sql === 'SELECT FENCE' && this.fenceRow ? [this.fenceRow] : []; }
  async *queryRows(sql: string): AsyncIterable<SqlRow> { this.calls.push(sql); yield* this.loadRows; }
  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    const got: SqlParam[][] = [];
    for await (const r of rows as AsyncIterable<readonly SqlParam[]>) got.push([...r]);
    this.calls.push(`BULK ${target.name} (${target.columns.map((c) => c.name).join(',')}) ${got.length}`);
    this.bulk.push({ target: target.name, rows: got });
    return got.length;
  }
  prepare(): never { throw new Error('not used by the staged flow'); }
  async begin(): Promise<void> { this.calls.push('BEGIN'); }
  async commit(): Promise<void> { this.calls.push('COMMIT'); }
  async rollback(): Promise<void> { this.calls.push('ROLLBACK'); }
  async close(): Promise<void> { this.calls.push('CLOSE'); }
}

const collection = {
  name: 'acmeCo/c', key: ['/id'],
  projections: [
    { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' as const } },
    { field: 'id', ptr: '/id', inference: { types: ['integer'], exists: 'MUST' as const } },
    { field: 'v', ptr: '/v', inference: { types: ['string'] } },
  ],
};
const std = buildTable(dialect, 0, ['std'], { collection, fieldSelection: { keys: ['id'], values: ['v'], document: 'flow_document' } });
const delta = buildTable(dialect, 1, ['delta'], { collection, deltaUpdates: true, fieldSelection: { keys: ['id'], values: ['v'] } });

async function* iter<T>(items: T[]): AsyncIterable<T> { yield* items; }
const store = (binding: number, id: number, v: string, flags: { exists?: boolean; delete?: boolean } = {}): DecodedStore => ({
  binding, key: [id], values: [v], keyPacked: '', exists: flags.exists === true, delete: flags.delete === true, ...(binding === 0 ? { doc: { id, v } } : {}),
});

async function setup(hardDelete: boolean, fenceRow?: SqlRow) {
  const loadConn = new FakeConnection();
  const storeConn = new FakeConnection();
  if (fenceRow) storeConn.fenceRow = fenceRow;
  const fence = await installFence(storeConn, dialect, { path: ['ckpt'], materialization: 'm', keyBegin: 0, keyEnd: 99 });
  storeConn.calls = [];
  return { loadConn, storeConn, fence, tx: new SqlTransactor({ dialect, loadConn, storeConn, tables: [std, delta], fence, hardDelete }) };
}

test('fence: no row → fence 0, a row inserted for our range holding the explicit zero checkpoint; a covering row → its fence and checkpoint', async () => {
  const conn = new FakeConnection();
  const f = await installFence(conn, dialect, { path: ['ckpt'], materialization: 'm', keyBegin: 0, keyEnd: 99 });
  assert.deepEqual([f.fence, f.checkpoint], [0, {}], 'the explicit zero checkpoint reads as the empty checkpoint: start from the beginning');
  assert.deepEqual(conn.calls, ['BEGIN', 'BUMP', 'SELECT FENCE', 'INSERT FENCE 0-99 0 +P///w8B', 'COMMIT']);
  const parent = checkpointToText({ sources: { 'a/b;m': { readThrough: '12' } } });
  const c2 = new FakeConnection();
  c2.fenceRow = { fence: 5, key_begin: 0, key_end: 4294967295, checkpoint: parent };
  const f2 = await installFence(c2, dialect, { path: ['ckpt'], materialization: 'm', keyBegin: 0, keyEnd: 99 });
  assert.deepEqual([f2.fence, f2.checkpoint], [5, { sources: { 'a/b;m': { readThrough: '12' } } }]);
  assert.equal(c2.calls[3], `INSERT FENCE 0-99 5 ${parent}`, 'a split child starts from its parent checkpoint');
  const c3 = new FakeConnection();
  c3.fenceRow = { fence: 1, key_begin: 0, key_end: 99, checkpoint: 'not json' };
  await assert.rejects(installFence(c3, dialect, { path: ['ckpt'], materialization: 'm', keyBegin: 0, keyEnd: 99 }), /checkpoints table ckpt holds a checkpoint that is neither base64 protobuf nor JSON/);
  assert.ok(c3.calls.includes('ROLLBACK'));
});

test('staged flow: new keys are copied, existing keys merged, deletes flagged, unknown deletes skipped (delta too), one transaction with the checkpoint', async () => {
  const { storeConn, tx } = await setup(true);
  await tx.store(iter([store(0, 1, 'a'), store(0, 2, 'b', { exists: true }), store(0, 3, 'c', { exists: true, delete: true }), store(0, 4, 'd', { delete: true }), store(1, 1, 'x'), store(1, 5, 'gone', { delete: true }), store(1, 1, 'y')]));
  await tx.startCommit({ sources: { j: { readThrough: '7' } } });
  assert.deepEqual(storeConn.calls, [
    'CREATE #store_0', 'CREATE #store_1', 'BEGIN',
    'BULK #store_0 (id,v,flow_document,_flow_delete) 3', 'BULK #store_1 (id,v,_flow_delete) 2',
    'MERGE std', 'TRUNCATE #store_0', 'COPY delta', 'TRUNCATE #store_1',
    `CHECKPOINT 0 ${checkpointToText({ sources: { j: { readThrough: '7' } } })}`, 'COMMIT',
  ]);
  assert.deepEqual(storeConn.bulk[0]!.rows.map((r) => [r[0], r[3]]), [[1, false], [2, false], [3, true]]);
  // Next transaction: only new keys → a direct copy, temp tables are not re-created.
  storeConn.calls = [];
  await tx.store(iter([store(0, 9, 'z')]));
  await tx.startCommit({});
  assert.deepEqual(storeConn.calls, ['BEGIN', 'BULK #store_0 (id,v,flow_document,_flow_delete) 1', 'COPY std', 'TRUNCATE #store_0', 'CHECKPOINT 0 ', 'COMMIT']);
  // An empty transaction still commits the checkpoint.
  storeConn.calls = [];
  await tx.store(iter([]));
  await tx.startCommit({ sources: { j: { readThrough: '8' } } });
  assert.deepEqual(storeConn.calls, ['BEGIN', 'CHECKPOINT 0 CgcKAWoSAggI', 'COMMIT']);
});

test('staged flow without hardDelete: deletions are stored like any document (soft delete), delta too', async () => {
  const { storeConn, tx } = await setup(false);
  await tx.store(iter([store(0, 4, 'd', { delete: true }), store(0, 3, 'c', { exists: true, delete: true }), store(1, 5, 'gone', { delete: true })]));
  await tx.startCommit({});
  assert.deepEqual(storeConn.bulk[0]!.rows.map((r) => [r[0], r[3]]), [[4, false], [3, false]]);
  assert.deepEqual(storeConn.bulk[1]!.rows.map((r) => [r[0], r[1], r[2]]), [[5, 'gone', false]]);
  assert.ok(storeConn.calls.includes('MERGE std'));
});

test('fenced: the checkpoint update matches no row → FencedError, rolled back, nothing committed', async () => {
  const { storeConn, tx } = await setup(false);
  storeConn.checkpointRows = 0;
  await tx.store(iter([store(0, 1, 'a')]));
  await assert.rejects(tx.startCommit({}), (e: Error) => e instanceof FencedError && /fenced off by another/.test(e.message));
  assert.equal(storeConn.calls.at(-1), 'ROLLBACK');
  assert.ok(!storeConn.calls.includes('COMMIT'));
});

test('loads: keys bulk-loaded per binding, one load query per flush, documents handed back, temp tables truncated', async () => {
  const { loadConn, tx } = await setup(false);
  loadConn.loadRows = [{ binding: 0, doc: '{"id":1,"v":"a"}' }];
  const got: unknown[] = [];
  const loads: DecodedLoad[] = [{ binding: 0, key: [1], keyPacked: '' }, { binding: 0, key: [2], keyPacked: '' }];
  await tx.load(iter(loads), async (b, doc) => { got.push([b, doc]); });
  assert.deepEqual(got, [[0, { id: 1, v: 'a' }]]);
  assert.deepEqual(loadConn.calls, ['CREATE #load_0', 'BEGIN', 'BULK #load_0 (id) 2', 'LOAD std', 'TRUNCATE #load_0', 'COMMIT']);
  await assert.rejects(tx.load(iter([{ binding: 1, key: [1], keyPacked: '' }]), async () => undefined), /cannot be loaded \(delta updates or no document\)/);
  // No loads at all: nothing runs.
  loadConn.calls = [];
  await tx.load(iter([]), async () => undefined);
  assert.deepEqual(loadConn.calls, []);
});
