// The transaction lifecycle over the T-SQL dialect, against a fake client built on the narrow Connection
// interface: which statements run on which session, in which order, with which bulk-loaded rows.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FencedError, SqlTransactor, buildTable, checkpointToText, installFence } from '@sluice/materialize-sql';
import type { BulkTarget, Connection, PreparedStatement, SqlParam, SqlRow, Table } from '@sluice/materialize-sql';
import type { DecodedLoad, DecodedStore, JsonObject } from '@sluice/runtime';
import { createSqlServerDialect } from '../src/sqlserver-dialect.ts';
import { bulkColumn } from '../src/sqlserver-client.ts';
import { FIXTURE } from './fixture.ts';

type Call = { op: string; sql?: string; target?: string; columns?: string[]; rows?: SqlParam[][] };

/** Records every call; answers queries from `answers` (first matching prefix). */
class FakeConnection implements Connection {
  readonly calls: Call[] = [];
  readonly answers: { match: RegExp; rows?: SqlRow[]; count?: number }[];
  constructor(answers: { match: RegExp; rows?: SqlRow[]; count?: number }[] = []) { this.answers = answers; }
  #answer(sql: string) { return this.answers.find((a) => a.match.test(sql)); }
  async exec(sql: string): Promise<number> { this.calls.push({ op: 'exec', sql }); return this.#answer(sql)?.count ?? 1; }
  async query(sql: string): Promise<SqlRow[]> { this.calls.push({ op: 'query', sql }); return this.#answer(sql)?.rows ?? []; }
  async *queryRows(sql: string): AsyncIterable<SqlRow> { this.calls.push({ op: 'queryRows', sql }); yield* this.#answer(sql)?.rows ?? []; }
  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    // A stream, never a materialized batch: the transactor feeds the bulk load as the runtime sends rows.
    assert.ok(!Array.isArray(rows) && typeof (rows as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function', `bulk rows for ${target.name} are not an async iterable`);
    const got: SqlParam[][] = [];
    for await (const r of rows) got.push([...r]);
    // Every row must convert through the driver mapping the real client uses.
    for (const r of got) r.forEach((v, i) => bulkColumn(target.columns[i]!.ddl, true).convert(v, target.columns[i]!.name));
    this.calls.push({ op: 'bulk', target: target.name, columns: target.columns.map((c) => c.name), rows: got });
    return got.length;
  }
  prepare(): PreparedStatement { throw new Error('not used by the staged flow'); }
  async begin() { this.calls.push({ op: 'begin' }); }
  async commit() { this.calls.push({ op: 'commit' }); }
  async rollback() { this.calls.push({ op: 'rollback' }); }
  async close() { this.calls.push({ op: 'close' }); }
  ops() { return this.calls.map((c) => (c.op === 'exec' || c.op === 'query' || c.op === 'queryRows' ? `${c.op}: ${c.sql!.split('\n')[0]}` : c.op === 'bulk' ? `bulk: ${c.target} (${c.rows!.length} rows)` : c.op)); }
}

const dialect = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8' });
const tables: Table[] = FIXTURE.bindings!.map((b, i) => buildTable(dialect, i, b.resourcePath!, b));
const FENCE = { path: ['dbo', 'flow_checkpoints_v1'], materialization: 'acmeCo/mat', keyBegin: 0, keyEnd: 4294967295, fence: 7, checkpoint: undefined };

async function* iter<T>(items: T[]): AsyncIterable<T> { for (const i of items) yield i; }

function kvValues(overrides: Record<string, unknown> = {}): unknown[] {
  return tables[0]!.values.map((c) => (c.field in overrides ? overrides[c.field] : c.field === 'flow_published_at' || c.field === 'dateTimeField' ? '2024-05-01T00:00:00.1234567Z' : c.field === 'number' ? 1.5 : null));
}

function store(binding: number, key: unknown[], values: unknown[], o: Partial<DecodedStore> = {}): DecodedStore {
  const s: DecodedStore = { binding, key: key as never, values: values as never, keyPacked: '', exists: false, delete: false, ...o };
  if (tables[binding]!.document !== undefined && s.doc === undefined) s.doc = { id: key[0] as number };
  return s;
}

function transactor(load: FakeConnection, st: FakeConnection, hardDelete = true) {
  return new SqlTransactor({ dialect, loadConn: load, storeConn: st, tables, fence: FENCE, hardDelete });
}

describe('SQL Server transactor (fake client)', () => {
  it('rejects a load for a delta-updates binding', async () => {
    const t = transactor(new FakeConnection(), new FakeConnection());
    await assert.rejects(t.load(iter<DecodedLoad>([{ binding: 1, key: ['k'], keyPacked: '' }]), async () => undefined), /cannot be loaded \(delta updates or no document\)/);
  });

  it('loads: creates the load temp tables once, bulk-loads keys, runs one UNION ALL query, truncates, commits', async () => {
    const loadConn = new FakeConnection([{ match: /^SELECT 0 AS binding/, rows: [{ binding: 0, doc: '{"id":1,"v":"stored"}' }, { binding: 2, doc: '{"id":"x"}' }] }]);
    const t = transactor(loadConn, new FakeConnection());
    const got: [number, JsonObject][] = [];
    const loads: DecodedLoad[] = [
      { binding: 0, key: [1, true, new Uint8Array([1, 2])], keyPacked: '' },
      { binding: 2, key: ['2024-05-01T00:00:00Z', 'x'], keyPacked: '' },
      { binding: 0, key: [2n ** 60n, false, new Uint8Array([3])], keyPacked: '' },
    ];
    await t.load(iter(loads), async (b, doc) => { got.push([b, doc]); });
    assert.deepEqual(got, [[0, { id: 1, v: 'stored' }], [2, { id: 'x' }]]);
    assert.deepEqual(loadConn.ops(), [
      'exec: CREATE TABLE #flow_temp_load_0 (',
      'exec: CREATE TABLE #flow_temp_load_2 (',
      'begin',
      'bulk: #flow_temp_load_0 (2 rows)',
      'bulk: #flow_temp_load_2 (1 rows)',
      `queryRows: ${dialect.templates.loadQuery(tables)!.split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_load_0;',
      'exec: TRUNCATE TABLE #flow_temp_load_2;',
      'commit',
    ]); // no load table for the delta binding (1) nor the keys-only binding without a document (3)
    const bulk0 = loadConn.calls.find((c) => c.target === '#flow_temp_load_0')!;
    assert.deepEqual(bulk0.columns, ['key1', 'key2', 'key!binary']);
    assert.deepEqual(bulk0.rows, [[1, true, new Uint8Array([1, 2])], [2n ** 60n, false, new Uint8Array([3])]]);
    // A second transaction reuses the temp tables.
    await t.load(iter([loads[0]!]), async () => undefined);
    assert.equal(loadConn.calls.filter((c) => c.sql?.startsWith('CREATE TABLE')).length, 2);
  });

  it('stores then commits: MERGE where keys existed or are deleted, INSERT…SELECT otherwise, then the fenced checkpoint, in one transaction', async () => {
    const storeConn = new FakeConnection();
    const t = transactor(new FakeConnection(), storeConn, true);
    await t.store(iter([
      store(0, [1, true, new Uint8Array([9])], kvValues({ string: 'updated' }), { exists: true }),
      store(0, [2, false, new Uint8Array([8])], kvValues(), { exists: true, delete: true }),
      store(0, [3, false, new Uint8Array([7])], kvValues(), { delete: true }), // never stored: skipped
      store(1, ['k'], [5, '2024-05-01T00:00:00Z']),
      store(1, ['k'], [6, '2024-05-01T00:00:01Z']),
      store(2, ['2024-05-01T00:00:00Z', 'id'], []),
    ]));
    await t.startCommit({ sources: { 'a/b': { readThrough: '12' } } });
    const tpl = dialect.templates;
    const checkpoint = tpl.checkpointUpdate(FENCE.path, FENCE.materialization, 0, 4294967295, 7, checkpointToText({ sources: { 'a/b': { readThrough: '12' } } }));
    assert.match(checkpoint, /SET "checkpoint" = N'CgkKA2EvYhICCAw='/, 'base64 protobuf, as upstream stores it');
    assert.deepEqual(storeConn.ops(), [
      ...tables.map((x) => `exec: ${tpl.createStoreTable!(x).split('\n')[0]}`),
      'begin',
      'bulk: #flow_temp_store_0 (2 rows)',
      'bulk: #flow_temp_store_1 (2 rows)',
      'bulk: #flow_temp_store_2 (1 rows)',
      `exec: ${tpl.mergeFromStore!(tables[0]!).split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_store_0;',
      `exec: ${tpl.copyFromStore!(tables[1]!).split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_store_1;',
      `exec: ${tpl.copyFromStore!(tables[2]!).split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_store_2;',
      `exec: ${checkpoint.split('\n')[0]}`,
      'commit',
    ]);
    assert.equal(storeConn.calls.find((c) => c.sql?.startsWith('MERGE'))!.sql, tpl.mergeFromStore!(tables[0]!));
    assert.equal(storeConn.calls.at(-2)!.sql, checkpoint);
    const kv = storeConn.calls.find((c) => c.target === '#flow_temp_store_0')!;
    assert.equal(kv.columns!.at(-1), '_flow_delete');
    assert.deepEqual(kv.rows!.map((r) => r.at(-1)), [false, true]);
    assert.deepEqual(kv.rows!.map((r) => r.at(-2)), ['{"id":1}', '{"id":2}']);
    assert.equal(kv.rows![0]![kv.columns!.indexOf('string')], 'updated');
  });

  it('the document column takes the document as its JSON text came (integers beyond 2^53 exact), the object only without it', async () => {
    const storeConn = new FakeConnection();
    const t = transactor(new FakeConnection(), storeConn, true);
    const docJson = '{"id":1,"big":123456789012345678901234567890,"i64":9007199254740993}';
    await t.store(iter([
      store(0, [1, true, new Uint8Array([9])], kvValues(), { docJson, doc: JSON.parse(docJson) as JsonObject }),
      store(0, [2, true, new Uint8Array([9])], kvValues(), { doc: { id: 2, big: 2n ** 64n } as unknown as JsonObject }),
    ]));
    const kv = storeConn.calls.find((c) => c.target === '#flow_temp_store_0')!;
    assert.deepEqual(kv.rows!.map((r) => r.at(-2)), [docJson, '{"id":2,"big":18446744073709551616}']);
  });

  it('interleaved bindings in one transaction: one bulk load per temp table, MERGE / INSERT…SELECT per binding, one commit', async () => {
    const storeConn = new FakeConnection();
    const t = transactor(new FakeConnection(), storeConn, true);
    const input: DecodedStore[] = [];
    for (let i = 0; i < 50; i++) {
      input.push(store(1, [`k${i}`], [i, '2024-05-01T00:00:00Z']));
      input.push(store(0, [i, i % 2 === 0, new Uint8Array([i])], kvValues({ string: `s${i}` }), { exists: i === 49, delete: i === 49 }));
      if (i % 10 === 0) input.push(store(2, ['2024-05-01T00:00:00Z', `id${i}`], []));
    }
    await t.store(iter(input));
    await t.startCommit({ sources: { interleaved: { readThrough: '1' } } });
    const tpl = dialect.templates;
    assert.deepEqual(storeConn.ops().slice(tables.length), [
      'begin',
      'bulk: #flow_temp_store_1 (50 rows)', // the first binding streams live
      'bulk: #flow_temp_store_0 (50 rows)', // the others were spilled meanwhile
      'bulk: #flow_temp_store_2 (5 rows)',
      `exec: ${tpl.copyFromStore!(tables[1]!).split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_store_1;',
      `exec: ${tpl.mergeFromStore!(tables[0]!).split('\n')[0]}`, // key 49 existed and is deleted
      'exec: TRUNCATE TABLE #flow_temp_store_0;',
      `exec: ${tpl.copyFromStore!(tables[2]!).split('\n')[0]}`,
      'exec: TRUNCATE TABLE #flow_temp_store_2;',
      `exec: ${tpl.checkpointUpdate(FENCE.path, FENCE.materialization, 0, 4294967295, 7, checkpointToText({ sources: { interleaved: { readThrough: '1' } } })).split('\n')[0]}`,
      'commit',
    ]);
    const kv = storeConn.calls.find((c) => c.target === '#flow_temp_store_0')!;
    assert.deepEqual(kv.rows!.map((r) => r[0]), Array.from({ length: 50 }, (_, i) => i));
    assert.deepEqual(kv.rows!.map((r) => r.at(-1)).filter((f) => f === true).length, 1);
    assert.equal(t.stagingStats.store!.bulkLoads, 3);
  });

  it('with soft deletes, a deletion is stored as a row (flag 0)', async () => {
    const storeConn = new FakeConnection();
    const t = transactor(new FakeConnection(), storeConn, false);
    await t.store(iter([store(0, [3, false, new Uint8Array([7])], kvValues({ '_meta/op': 'd' }), { delete: true })]));
    await t.startCommit({});
    const kv = storeConn.calls.find((c) => c.target === '#flow_temp_store_0')!;
    assert.deepEqual(kv.rows!.map((r) => r.at(-1)), [false]);
    assert.ok(storeConn.calls.some((c) => c.sql?.startsWith('INSERT INTO dbo.key_value')));
    assert.ok(!storeConn.calls.some((c) => c.sql?.startsWith('MERGE')));
  });

  it('a fenced-off commit fails, rolls back and commits nothing', async () => {
    const storeConn = new FakeConnection([{ match: /SET "checkpoint"/, count: 0 }]);
    const t = transactor(new FakeConnection(), storeConn);
    await t.store(iter([store(1, ['k'], [1, '2024-05-01T00:00:00Z'])]));
    await assert.rejects(t.startCommit({}), (err: Error) => err instanceof FencedError && /^This instance was fenced off by another/.test(err.message));
    assert.deepEqual(storeConn.ops().slice(-2), [`exec: ${dialect.templates.checkpointUpdate(FENCE.path, FENCE.materialization, 0, 4294967295, 7, '').split('\n')[0]}`, 'rollback']);
    assert.ok(!storeConn.ops().includes('commit'));
  });

  it('a value the column cannot hold fails the store with the field named', async () => {
    const t = transactor(new FakeConnection(), new FakeConnection());
    await assert.rejects(t.store(iter([store(1, ['k'], ['not a number', '2024-05-01T00:00:00Z'])])), /cannot write value field 'aValue' \(BIGINT\)/);
  });

  it('installs the fence: bump, select the narrowest covering row, insert our range when missing, in one transaction', async () => {
    const conn = new FakeConnection([{ match: /^SELECT TOP 1 fence/, rows: [{ fence: '4', key_begin: '0', key_end: '4294967295', checkpoint: '{"sources":{}}' }] }]);
    const fence = await installFence(conn, dialect, { path: FENCE.path, materialization: 'acmeCo/mat', keyBegin: 0, keyEnd: 2147483647 });
    assert.equal(fence.fence, 4);
    assert.deepEqual(fence.checkpoint, { sources: {} });
    const tpl = dialect.templates;
    assert.deepEqual(conn.calls.map((c) => c.sql ?? c.op), [
      'begin',
      tpl.fenceBump(FENCE.path, 'acmeCo/mat', 0, 2147483647),
      tpl.fenceSelect(FENCE.path, 'acmeCo/mat', 0, 2147483647),
      tpl.fenceInsert(FENCE.path, 'acmeCo/mat', 0, 2147483647, 4, '{"sources":{}}'),
      'commit',
    ]);
  });
});

describe('bulk column mapping (tedious types)', () => {
  it('staging tables declare exactly the types the bulk load sends, NOT NULL keys and a primary key as upstream', () => {
    for (const collation of ['Latin1_General_100_BIN2_UTF8', 'Latin1_General_100_BIN2']) {
      const d = createSqlServerDialect({ collation });
      for (const [i, b] of FIXTURE.bindings!.entries()) {
        const t = buildTable(d, i, b.resourcePath!, b);
        const staged = new Map<string, string>();
        for (const sql of [d.templates.createStoreTable!(t), d.templates.createLoadTable(t)]) {
          const pk = `\tPRIMARY KEY (${t.keys.map((k) => k.identifier).join(', ')})`;
          const lines = sql.split('\n').slice(1, -1);
          const isLoad = sql.startsWith('CREATE TABLE #flow_temp_load');
          assert.equal(lines.at(-1) === pk, isLoad || !t.deltaUpdates, `a primary key on load tables and standard tables' store tables: ${sql}`);
          for (const line of lines) {
            if (line === pk) continue;
            const m = /^\t(.+?) ([A-Za-z0-9]+(?: PRECISION)?(?:\((?:MAX|\d+)\))?)(?: COLLATE \S+)?( NOT NULL)?,?$/.exec(line);
            assert.ok(m !== null, `unparsed staging column line: ${line}`);
            staged.set(m[1]!, m[2]!.toLowerCase().replace('double precision', 'float'));
            assert.equal(m[3] !== undefined, t.keys.some((k) => k.identifier === m[1]), `NOT NULL exactly on key columns: ${line}`);
          }
        }
        for (const c of [...t.columns, { identifier: '_flow_delete', mapped: { ddl: 'boolean' } }]) {
          const ddl = (c.mapped as { stagingDdl?: string; ddl: string }).stagingDdl ?? c.mapped.ddl;
          const bc = bulkColumn(ddl, true);
          const declared = (bc.type as unknown as { declaration(p: object): string }).declaration({ length: bc.options.length, scale: bc.options.scale, precision: bc.options.precision });
          assert.equal(declared.toLowerCase().replace('(7)', '').replace(/, 0\)$/, ')'), staged.get(c.identifier), `${collation} ${t.path.join('.')} ${c.identifier} (${ddl})`);
        }
      }
    }
  });

  it('declares each DDL with the driver type and converts values', () => {
    assert.equal(bulkColumn('BIGINT', true).type.name, 'BigInt');
    assert.equal(bulkColumn('boolean', false).type.name, 'Bit');
    assert.equal(bulkColumn('DOUBLE PRECISION', true).type.name, 'Float');
    assert.equal(bulkColumn('VARBINARY(900)', true).options.length, 900);
    assert.equal(bulkColumn('VARBINARY(MAX)', true).options.length, Infinity);
    const s = bulkColumn('varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8', true);
    assert.equal(s.type.name, 'VarChar');
    assert.equal(s.needsCollation, true);
    assert.equal(bulkColumn('nvarchar(450) COLLATE Latin1_General_100_BIN2', true).type.name, 'NVarChar');
    assert.equal(s.options.length, Infinity);
    assert.equal(bulkColumn('varchar(64) COLLATE Latin1_General_100_BIN2_UTF8', true).options.length, 64);
    const dt = bulkColumn('DATETIME2', true).convert('2024-05-01T00:00:00.1234567Z', 'ts') as Date & { nanosecondDelta: number };
    assert.equal(dt.toISOString(), '2024-05-01T00:00:00.123Z');
    assert.equal(dt.nanosecondDelta.toFixed(7), '0.0004567');
    assert.equal(bulkColumn('DECIMAL(20)', true).convert(2n ** 64n - 1n, 'd'), 2n ** 64n - 1n);
    assert.equal(bulkColumn('DECIMAL(20, 2)', true).convert('12.345', 'd'), 1235n);
    assert.throws(() => bulkColumn('DATE', true).convert('yesterday', 'd'), /is not a date/);
  });
});
