// Streaming of the staged flow: ONE bulk load per binding per transaction, fed by an async iterable that pulls
// from the runtime's requests only as the driver consumes rows; interleaved bindings spill (memory budget, then a
// temp file) instead of buffering the transaction; the MERGE / INSERT…SELECT decision, hard deletes and the fenced
// checkpoint stay in one transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DecodedLoad, DecodedStore } from '@sluice/runtime';
import { buildTable, checkpointToText, estimateRowBytes, makeQuoter, SqlTransactor, stageByBinding } from '../src/index.ts';
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
  fenceInsert: () => 'INSERT FENCE', checkpointUpdate: (_p, _m, _b, _e, f, c) => `CHECKPOINT ${f} ${c}`,
};
const dialect: Dialect = {
  name: 'fake', maxIdentifierLength: 128, caseInsensitiveColumns: true, storeFlow: 'staged', transactionalDdl: false,
  quoteIdentifier: quote, quotePath: (p) => p.map(quote).join('.'), literal: (v) => String(v), placeholder: (i) => `@p${i + 1}`,
  mapType: (input) => ({
    ddl: input.flatType === 'integer' ? 'BIGINT' : 'TEXT',
    toParam: (v) => {
      if (input.flatType === 'integer' && typeof v !== 'number' && typeof v !== 'bigint' && v !== null) throw new Error(`not an integer: ${JSON.stringify(v)}`);
      return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) ? JSON.stringify(v) : v as SqlParam;
    },
  }),
  compatibility: () => ({ kind: 'compatible' }),
  templates,
};

/**
 * A session that consumes bulk rows one at a time, as a driver does, and records what it saw. `onRow` runs as
 * each row is consumed (before the next is pulled).
 */
class StreamingConnection implements Connection {
  calls: string[] = [];
  bulk: { target: string; rows: SqlParam[][] }[] = [];
  keepRows = true;
  onRow: ((target: string, row: readonly SqlParam[]) => void) | undefined;
  loadRows: SqlRow[] = [];
  async exec(sql: string): Promise<number> { this.calls.push(sql); return 1; }
  async query(sql: string): Promise<SqlRow[]> { this.calls.push(sql); return []; }
  async *queryRows(sql: string): AsyncIterable<SqlRow> { this.calls.push(sql); yield* this.loadRows; }
  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    // The transactor hands an async iterable (a stream), never a materialized array.
    assert.ok(!Array.isArray(rows), `bulk rows for ${target.name} arrived as an array`);
    assert.equal(typeof (rows as AsyncIterable<unknown>)[Symbol.asyncIterator], 'function', `bulk rows for ${target.name} are not an async iterable`);
    const got: SqlParam[][] = [];
    let n = 0;
    for await (const r of rows as AsyncIterable<readonly SqlParam[]>) {
      n++;
      this.onRow?.(target.name, r);
      if (this.keepRows) got.push([...r]);
    }
    this.calls.push(`BULK ${target.name} ${n}`);
    this.bulk.push({ target: target.name, rows: got });
    return n;
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
const tables = [
  buildTable(dialect, 0, ['std'], { collection, fieldSelection: { keys: ['id'], values: ['v'], document: 'flow_document' } }),
  buildTable(dialect, 1, ['delta'], { collection, deltaUpdates: true, fieldSelection: { keys: ['id'], values: ['v'] } }),
  buildTable(dialect, 2, ['other'], { collection, fieldSelection: { keys: ['id'], values: ['v'], document: 'flow_document' } }),
];
const FENCE = { path: ['ckpt'], materialization: 'm', keyBegin: 0, keyEnd: 99, fence: 3, checkpoint: undefined };

const store = (binding: number, id: number, v: string, flags: { exists?: boolean; delete?: boolean } = {}): DecodedStore => ({
  binding, key: [id], values: [v], keyPacked: '', exists: flags.exists === true, delete: flags.delete === true,
  ...(binding === 1 ? {} : { doc: { id, v } }),
});

function setup(opts: { hardDelete?: boolean; spillBytes?: number; spillDir?: string } = {}) {
  const loadConn = new StreamingConnection();
  const storeConn = new StreamingConnection();
  const spill = { ...(opts.spillBytes === undefined ? {} : { memoryBytes: opts.spillBytes }), ...(opts.spillDir === undefined ? {} : { dir: opts.spillDir }) };
  const tx = new SqlTransactor({ dialect, loadConn, storeConn, tables, fence: FENCE, hardDelete: opts.hardDelete ?? true, spill });
  return { loadConn, storeConn, tx };
}

/** Yields `count` stores from `make`; each may only be produced once the consumer has taken the previous one. */
async function* lockstep(count: number, make: (i: number) => DecodedStore, consumed: () => number, produced: number[]): AsyncIterable<DecodedStore> {
  for (let i = 0; i < count; i++) {
    if (i > 0 && consumed() < i) throw new Error(`producer ran ahead: asked for store ${i} while the bulk load had consumed ${consumed()}`);
    produced[0] = i + 1;
    yield make(i);
  }
}

test('one binding: the bulk load receives an async iterable and consumes each store before the next is produced', async () => {
  const { storeConn, tx } = setup();
  let consumed = 0;
  const produced = [0];
  const gaps: number[] = [];
  storeConn.onRow = () => { consumed++; gaps.push(produced[0]! - consumed); };
  await tx.store(lockstep(500, (i) => store(0, i, `v${i}`), () => consumed, produced));
  await tx.startCommit({ sources: { n: { readThrough: '1' } } });
  assert.equal(consumed, 500);
  assert.equal(Math.max(...gaps), 0, 'no store was produced before the previous one was consumed');
  assert.deepEqual(storeConn.calls, ['CREATE #store_0', 'CREATE #store_1', 'CREATE #store_2', 'BEGIN', 'BULK #store_0 500', 'COPY std', 'TRUNCATE #store_0', `CHECKPOINT 3 ${checkpointToText({ sources: { n: { readThrough: '1' } } })}`, 'COMMIT']);
  assert.equal(tx.stagingStats.store?.bulkLoads, 1);
  assert.equal(tx.stagingStats.store?.live, 0);
});

test('a large transaction streams: rows in flight stay constant and the heap does not grow with the transaction', async () => {
  const { storeConn, tx } = setup();
  storeConn.keepRows = false;
  const ROWS = 60_000;
  const payload = 'x'.repeat(2048); // 60k × ~4 KiB (UTF-16) ≈ 240 MiB if the transaction were held
  let consumed = 0;
  let produced = 0;
  let maxInFlight = 0;
  let peakHeap = 0;
  const base = process.memoryUsage().heapUsed;
  storeConn.onRow = (_t, row) => {
    consumed++;
    assert.equal((row[1] as string).length, payload.length + String(consumed - 1).length);
    maxInFlight = Math.max(maxInFlight, produced - consumed);
    if (consumed % 5000 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed - base);
  };
  async function* stores(): AsyncIterable<DecodedStore> {
    for (let i = 0; i < ROWS; i++) {
      produced++;
      // A fresh string per row (as decoded from the wire), not a shared constant.
      yield store(0, i, payload + String(i));
    }
  }
  await tx.store(stores());
  await tx.startCommit({});
  assert.equal(consumed, ROWS);
  assert.equal(maxInFlight, 0);
  assert.ok(peakHeap < 96 * 1024 * 1024, `heap grew by ${(peakHeap / 2 ** 20).toFixed(0)} MiB for a ${(ROWS * 4 / 1024).toFixed(0)} MiB transaction`);
});

test('interleaved bindings: ONE bulk load each, the first binding live, the others spilled to a file past the budget, decisions per binding', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'staged-test-'));
  try {
    const { storeConn, tx } = setup({ spillBytes: 4096, spillDir: dir });
    let consumed0 = 0;
    let spillFilesDuringLive = 0;
    storeConn.onRow = (target) => {
      if (target !== '#store_0') return;
      consumed0++;
      if (consumed0 === 300) spillFilesDuringLive = readdirSync(dir).length;
    };
    const input: DecodedStore[] = [];
    for (let i = 0; i < 400; i++) {
      input.push(store(0, i, `a${i}`, { exists: i === 7 }));
      input.push(store(1, i, `d${i}`));
      if (i % 2 === 0) input.push(store(2, i, `o${i}`));
    }
    input.push(store(2, 1000, 'gone', { exists: true, delete: true }), store(2, 1001, 'never', { delete: true }));
    async function* src() { yield* input; }
    await tx.store(src());
    await tx.startCommit({ sources: { t: { readThrough: '1' } } });
    assert.deepEqual(storeConn.calls.slice(3), [
      'BEGIN', 'BULK #store_0 400', 'BULK #store_1 400', 'BULK #store_2 201',
      'MERGE std', 'TRUNCATE #store_0', 'COPY delta', 'TRUNCATE #store_1', 'MERGE other', 'TRUNCATE #store_2',
      `CHECKPOINT 3 ${checkpointToText({ sources: { t: { readThrough: '1' } } })}`, 'COMMIT',
    ]);
    const rows = (t: string) => storeConn.bulk.find((b) => b.target === t)!.rows;
    assert.deepEqual(rows('#store_1').map((r) => r[1]), Array.from({ length: 400 }, (_, i) => `d${i}`), 'spilled rows come back whole and in order');
    assert.deepEqual(rows('#store_2').at(-1), [1000, 'gone', '{"id":1000,"v":"gone"}', true]);
    assert.ok(!rows('#store_2').some((r) => r[0] === 1001), 'a deletion of a never-stored key is skipped');
    const st = tx.stagingStats.store!;
    assert.equal(st.bulkLoads, 3);
    assert.deepEqual([...st.bindings.keys()], [0, 1, 2]);
    assert.equal(st.bindings.get(0)!.spilledRows, 0);
    assert.ok(st.bindings.get(1)!.spilledFileBytes > 0 && st.bindings.get(2)!.spilledFileBytes > 0, 'both spills went to files');
    assert.ok(st.peakSpillMemoryBytes <= 4096, `spill memory ${st.peakSpillMemoryBytes} exceeded its 4096-byte budget`);
    assert.ok(spillFilesDuringLive >= 1, 'spill files existed while the live binding streamed');
    assert.deepEqual(await readdir(dir), [], 'spill files are removed after the bulk loads');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the live binding is pulled as the driver consumes, even while other bindings spill in between', async () => {
  const { storeConn, tx } = setup();
  let consumed = 0;
  const produced = [0];
  storeConn.onRow = (t) => { if (t === '#store_2') consumed++; };
  // Binding 2 first (live), binding 0 interleaved: producing live row i needs live row i-1 consumed.
  let live = 0;
  async function* src(): AsyncIterable<DecodedStore> {
    for (let i = 0; i < 200; i++) {
      if (live > 0 && consumed < live) throw new Error(`producer ran ahead of the live bulk load (${live} produced, ${consumed} consumed)`);
      live++;
      produced[0] = live;
      yield store(2, i, `o${i}`);
      yield store(0, i, `a${i}`);
    }
  }
  await tx.store(src());
  await tx.startCommit({});
  assert.deepEqual(storeConn.calls.filter((c) => c.startsWith('BULK')), ['BULK #store_2 200', 'BULK #store_0 200']);
  assert.equal(tx.stagingStats.store!.bindings.get(0)!.spilledFileBytes, 0, 'a small spill stays in memory');
});

test('interleaved loads: one bulk load per binding, streamed, one load query, truncates, commit', async () => {
  const { loadConn, tx } = setup();
  loadConn.loadRows = [{ binding: 0, doc: '{"id":1}' }, { binding: 2, doc: '{"id":2}' }];
  let consumed = 0;
  loadConn.onRow = (t) => { if (t === '#load_2') consumed++; };
  async function* loads(): AsyncIterable<DecodedLoad> {
    for (let i = 0; i < 100; i++) {
      if (i > 0 && consumed < i) throw new Error('load keys were buffered instead of streamed');
      yield { binding: 2, key: [i], keyPacked: '' };
      yield { binding: 0, key: [i], keyPacked: '' };
    }
  }
  const got: unknown[] = [];
  await tx.load(loads(), async (b, doc) => { got.push([b, doc]); });
  assert.deepEqual(got, [[0, { id: 1 }], [2, { id: 2 }]]);
  assert.deepEqual(loadConn.calls, ['CREATE #load_0', 'CREATE #load_2', 'BEGIN', 'BULK #load_2 100', 'BULK #load_0 100', 'LOAD std,other', 'TRUNCATE #load_2', 'TRUNCATE #load_0', 'COMMIT']);
  assert.deepEqual(loadConn.bulk[1]!.rows.map((r) => r[0]), Array.from({ length: 100 }, (_, i) => i));
  // No loads: no transaction at all.
  loadConn.calls = [];
  await tx.load((async function* () {})(), async () => undefined);
  assert.deepEqual(loadConn.calls, []);
});

test('a bad value in a spilled binding fails the store before anything commits, and the spill is cleaned up', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'staged-test-'));
  try {
    const { storeConn, tx } = setup({ spillBytes: 0, spillDir: dir });
    async function* src(): AsyncIterable<DecodedStore> {
      yield store(0, 1, 'a');
      yield store(2, 2, 'b');
      yield { ...store(2, 3, 'c'), key: ['three'] };
      yield store(0, 4, 'd');
    }
    await assert.rejects(tx.store(src()), /^SqlError: other \(collection acmeCo\/c\): cannot write key field 'id' \(BIGINT\) of the document with key \["three"\]: not an integer: "three"$/);
    await tx.close();
    assert.ok(storeConn.calls.includes('ROLLBACK') && !storeConn.calls.includes('COMMIT'));
    assert.deepEqual(await readdir(dir), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an error from the runtime side of the stream fails the bulk load that is pulling', async () => {
  const { storeConn, tx } = setup();
  async function* src(): AsyncIterable<DecodedStore> {
    yield store(0, 1, 'a');
    throw new Error('stdin closed mid-transaction');
  }
  await assert.rejects(tx.store(src()), /stdin closed mid-transaction/);
  assert.ok(!storeConn.calls.some((c) => c.startsWith('BULK')), 'the failed bulk load did not complete');
});

test('spill files round-trip every parameter type exactly', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'staged-test-'));
  try {
    const rows: SqlParam[][] = [
      [1, null, true, false, 1.5, -0, 2n ** 70n, -(2n ** 63n), 'κόσμε 🚀', '', new Uint8Array([0, 255, 7])],
      [2, 'x'.repeat(300_000), new Uint8Array(0), Number.MAX_SAFE_INTEGER, NaN, Infinity, null, null, null, null, null],
    ];
    for (let i = 3; i < 2000; i++) rows.push([i, `row ${i}`, i % 2 === 0, i / 7, BigInt(i) * 2n ** 60n, null, null, null, null, null, null]);
    const got = new Map<number, SqlParam[][]>();
    async function* src() { for (const [i, r] of rows.entries()) yield { b: i === 0 ? 9 : 4, r }; }
    const stats = await stageByBinding(src(), (x) => ({ binding: x.b, row: x.r }), {
      spill: { memoryBytes: 0, dir },
      bulk: async (b, it) => {
        const out: SqlParam[][] = [];
        for await (const r of it) out.push([...r]);
        got.set(b, out);
        return out.length;
      },
    });
    assert.equal(stats.live, 9);
    assert.ok(stats.bindings.get(4)!.spilledFileBytes > 300_000);
    assert.deepEqual(got.get(9), [rows[0]]);
    assert.deepEqual(got.get(4), rows.slice(1));
    assert.deepEqual(await readdir(dir), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('estimateRowBytes grows with strings and binaries', () => {
  assert.ok(estimateRowBytes(['x'.repeat(1000)]) > 2000);
  assert.ok(estimateRowBytes([new Uint8Array(5000)]) > 5000);
  assert.ok(estimateRowBytes([1, null, true]) < 100);
});
