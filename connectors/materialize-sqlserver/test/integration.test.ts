// Integration tests against a real SQL Server, when MSSQL_URL is set, e.g.
//   MSSQL_URL='sqlserver://sa:Flow!Pass1234@127.0.0.1:1433/master' (docker compose -f docker/compose.sqlserver.yaml up -d)
// They apply the fixture, run transactions through the connector (load, MERGE, INSERT…SELECT, hard delete),
// migrate column types, check the fence against a zombie, and connect through an SSH tunnel (real local sshd).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { FencedError, checkpointToText } from '@sluice/materialize-sql';
import type {
  DecodedLoad, DecodedStore, JsonObject, Logger, MaterializationBindingSpec, MaterializationSpec, MaterializeBinding, Projection,
} from '@sluice/runtime';
import { createSqlServerConnector, checkPrerequisites } from '../src/connector.ts';
import { parseEndpointConfig } from '../src/config.ts';
import { SqlServerClient } from '../src/sqlserver-client.ts';
import { FIXTURE } from './fixture.ts';
import { sshdUnavailable, startSshd } from './sshd.ts';

const URL_ENV = process.env.MSSQL_URL;
const skip = URL_ENV === undefined || URL_ENV === '' ? 'MSSQL_URL is not set (e.g. sqlserver://sa:Flow!Pass1234@127.0.0.1:1433/master; start one with docker compose -f docker/compose.sqlserver.yaml up -d)' : undefined;
if (skip !== undefined) console.log(`# SQL Server integration tests skipped: ${skip}`);

function endpointConfig(): JsonObject {
  const u = new URL(URL_ENV!);
  return {
    address: `${u.hostname}:${u.port === '' ? '1433' : u.port}`,
    user: decodeURIComponent(u.username),
    database: u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : 'master',
    hardDelete: true,
    credentials: { auth_type: 'UserPassword', password: decodeURIComponent(u.password) },
  };
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, status() {}, child() { return quiet; } };
const signal = new AbortController().signal;
const suffix = randomBytes(3).toString('hex');

function spec(name: string, bindings: MaterializationBindingSpec[], config: JsonObject): MaterializationSpec {
  return { name, config, bindings };
}
const bindingsOf = (m: MaterializationSpec): MaterializeBinding<JsonObject>[] =>
  m.bindings!.map((b, index) => ({ index, resource: b.resourceConfig!, spec: b }));

function simple(table: string, schema: string, projections: Projection[], values: string[], delta = false): MaterializationBindingSpec {
  const b: MaterializationBindingSpec = {
    resourceConfig: { table, schema, delta_updates: delta },
    resourcePath: [schema, table],
    collection: { name: `test/${table}`, key: ['/id'], projections: [{ field: 'id', ptr: '/id', inference: { types: ['integer'], exists: 'MUST' } }, ...projections, { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } }] },
    fieldSelection: { keys: ['id'], values },
  };
  if (delta) b.deltaUpdates = true; else b.fieldSelection!.document = 'flow_document';
  return b;
}

async function* iter<T>(items: T[]): AsyncIterable<T> { for (const i of items) yield i; }

describe('SQL Server integration', () => {
  const connector = createSqlServerConnector();
  let config: JsonObject;
  let client: SqlServerClient;
  const schema = `flow_it_${suffix}`;

  before(async () => {
    if (skip !== undefined) return;
    config = { ...endpointConfig(), schema };
    client = new SqlServerClient(parseEndpointConfig(config));
  });
  after(async () => {
    if (skip !== undefined) return;
    const conn = await client.connect();
    try {
      const rows = await conn.query(`SELECT TABLE_NAME AS t FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = N'${schema}';`);
      for (const r of rows) await conn.exec(`DROP TABLE "${schema}"."${String(r.t).replaceAll('"', '""')}";`);
      await conn.exec(`IF SCHEMA_ID(N'${schema}') IS NOT NULL EXEC(N'DROP SCHEMA "${schema}"');`);
    } finally { await conn.close(); await client.close(); }
  });

  it('checks prerequisites (the user may create tables)', { skip }, async () => {
    await checkPrerequisites(parseEndpointConfig(config), quiet);
  });

  it('applies the whole fixture (every type, hostile names, delta), then re-applies as a no-op', { skip }, async () => {
    const m: MaterializationSpec = { ...FIXTURE, config, bindings: FIXTURE.bindings!.map((b) => ({ ...b, resourceConfig: { ...b.resourceConfig, schema }, resourcePath: [schema, b.resourcePath!.at(-1)!] })) };
    const first = await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    assert.match(first.actionDescription ?? '', /CREATE TABLE/);
    const second = await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), lastMaterialization: m, version: 'v1', state: {}, dryRun: false });
    assert.equal(second.actionDescription ?? '', '');
    const conn = await client.connect();
    try {
      const cols = await conn.query(`SELECT COLUMN_NAME AS n, DATA_TYPE AS t, IS_NULLABLE AS nl FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = N'${schema}' AND TABLE_NAME = N'key_value' ORDER BY ORDINAL_POSITION;`);
      const byName = new Map(cols.map((c) => [String(c.n), `${String(c.t)} ${String(c.nl)}`]));
      assert.equal(byName.get('key1'), 'bigint NO');
      assert.equal(byName.get('key!binary'), 'varbinary NO');
      assert.equal(byName.get('a]b'), byName.get('string'));
      assert.equal(byName.get('number'), 'float NO');
      assert.equal(byName.get('dateTimeField'), 'datetime2 NO');
      assert.equal(byName.get('integerWithUserDDL'), 'decimal YES');
    } finally { await conn.close(); }
  });

  it('materializes: INSERT…SELECT for new keys, loads them back, MERGE with updates and hard deletes, delta rows appended', { skip }, async () => {
    const m = spec(`test/mat-${suffix}`, [
      simple('people', schema, [{ field: 'name', ptr: '/name', inference: { types: ['string'] } }, { field: 'big', ptr: '/big', inference: { types: ['integer'] } }], ['big', 'name']),
      simple('events', schema, [{ field: 'name', ptr: '/name', inference: { types: ['string'] } }], ['name'], true),
    ], config);
    await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    const open = async () => connector.open({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'v1', state: {} });
    let { transactor, opened } = await open();
    try {
      assert.deepEqual(opened.runtimeCheckpoint, {});
      const st = (binding: number, id: number, name: string, o: Partial<DecodedStore> = {}): DecodedStore => ({
        binding, key: [id], values: binding === 0 ? [2n ** 60n + BigInt(id), name] : [name], keyPacked: '', exists: false, delete: false,
        ...(binding === 0 ? { doc: { id, name } } : {}), ...o,
      });
      await transactor.acknowledge();
      await transactor.load(iter<DecodedLoad>([]), async () => undefined);
      await transactor.store(iter([st(0, 1, 'ada κόσμε'), st(0, 2, 'bob'), st(1, 1, 'created')]));
      await transactor.startCommit({ sources: { one: { readThrough: '1' } } });

      await transactor.acknowledge();
      const loaded: [number, JsonObject][] = [];
      await transactor.load(iter<DecodedLoad>([{ binding: 0, key: [1], keyPacked: '' }, { binding: 0, key: [3], keyPacked: '' }]), async (b, d) => { loaded.push([b, d]); });
      assert.deepEqual(loaded, [[0, { id: 1, name: 'ada κόσμε' }]]);
      await transactor.store(iter([st(0, 1, 'ada v2', { exists: true }), st(0, 2, 'bob', { exists: true, delete: true }), st(0, 3, 'cy'), st(1, 1, 'updated')]));
      await transactor.startCommit({ sources: { one: { readThrough: '2' } } });
    } finally { await transactor.close?.(); }

    const conn = await client.connect();
    try {
      const people = await conn.query(`SELECT id, big, name FROM "${schema}".people ORDER BY id;`);
      assert.deepEqual(people.map((r) => [String(r.id), String(r.big), r.name]), [['1', String(2n ** 60n + 1n), 'ada v2'], ['3', String(2n ** 60n + 3n), 'cy']]);
      const events = await conn.query(`SELECT id, name FROM "${schema}".events ORDER BY name;`);
      assert.deepEqual(events.map((r) => r.name), ['created', 'updated']);
    } finally { await conn.close(); }

    ({ transactor, opened } = await open());
    await transactor.close?.();
    assert.deepEqual(opened.runtimeCheckpoint, { sources: { one: { readThrough: '2' } } });
  });

  it('swap: a checkpoints row written by upstream (base64 protobuf) opens and resumes; the next commit is written in upstream\'s format', { skip }, async () => {
    const m = spec(`test/swap-${suffix}`, [simple('swapped', schema, [], [])], config);
    await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    const upstreamRow = checkpointToText({ sources: { j: { readThrough: '300' } } });
    const conn = await client.connect();
    try {
      await conn.exec(`INSERT INTO "${schema}".flow_checkpoints_v1 (materialization, key_begin, key_end, fence, "checkpoint") VALUES (N'${m.name}', 0, 4294967295, 7, N'${upstreamRow}');`);
    } finally { await conn.close(); }
    const { transactor, opened } = await connector.open({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'v1', state: {} });
    try {
      assert.deepEqual(opened.runtimeCheckpoint, { sources: { j: { readThrough: '300' } } });
      await transactor.acknowledge();
      await transactor.store(iter<DecodedStore>([]));
      await transactor.startCommit({ sources: { j: { readThrough: '301' } } });
    } finally { await transactor.close?.(); }
    const after = await client.connect();
    try {
      const rows = await after.query(`SELECT fence, "checkpoint" FROM "${schema}".flow_checkpoints_v1 WHERE materialization = N'${m.name}';`);
      assert.deepEqual(rows.map((r) => [Number(r.fence), r.checkpoint]), [[8, checkpointToText({ sources: { j: { readThrough: '301' } } })]]);
    } finally { await after.close(); }
  });

  it('materializes multi-binding transactions whose stores and loads interleave (one bulk load per binding, spilled past the memory budget)', { skip }, async () => {
    const name: Projection = { field: 'name', ptr: '/name', inference: { types: ['string'] } };
    const m = spec(`test/interleave-${suffix}`, [
      simple('il_a', schema, [name], ['name']),
      simple('il_b', schema, [name], ['name']),
      simple('il_log', schema, [name], ['name'], true),
    ], config);
    await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    const { transactor } = await connector.open({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'v1', state: {} });
    const N = 3000;
    const pad = 'x'.repeat(2000); // rows of ~8 KiB in memory: the two spilled bindings exceed the 16 MiB budget
    const st = (binding: number, id: number, tag: string, o: Partial<DecodedStore> = {}): DecodedStore => ({
      binding, key: [id], values: [`${tag}-${id}-${pad}`], keyPacked: '', exists: false, delete: false,
      ...(binding === 2 ? {} : { doc: { id, name: `${tag}-${id}-${pad}` } }), ...o,
    });
    try {
      await transactor.acknowledge();
      await transactor.load(iter<DecodedLoad>([]), async () => undefined);
      async function* first(): AsyncIterable<DecodedStore> {
        for (let i = 0; i < N; i++) { yield st(0, i, 'a1'); yield st(1, i, 'b1'); yield st(2, i, 'l1'); }
      }
      await transactor.store(first());
      await transactor.startCommit({ sources: { il: { readThrough: '1' } } });

      await transactor.acknowledge();
      const loaded = new Map<number, number>();
      async function* loads(): AsyncIterable<DecodedLoad> {
        for (let i = 0; i < N + 10; i += 2) { yield { binding: 1, key: [i], keyPacked: '' }; yield { binding: 0, key: [i], keyPacked: '' }; }
      }
      let sample: JsonObject | undefined;
      await transactor.load(loads(), async (b, d) => {
        loaded.set(b, (loaded.get(b) ?? 0) + 1);
        if (b === 1 && d.id === 4) sample = d;
      });
      assert.deepEqual([loaded.get(0), loaded.get(1)], [N / 2, N / 2]);
      assert.deepEqual(sample, { id: 4, name: `b1-4-${pad}` });
      async function* second(): AsyncIterable<DecodedStore> {
        for (let i = 0; i < N; i += 2) {
          yield st(1, i, 'b2', { exists: true, delete: i % 4 === 0 }); // binding 1 first: the live one this time
          yield st(0, i, 'a2', { exists: true });
          yield st(2, i, 'l2');
        }
        yield st(0, N, 'a2');
      }
      await transactor.store(second());
      await transactor.startCommit({ sources: { il: { readThrough: '2' } } });
    } finally { await transactor.close?.(); }

    const conn = await client.connect();
    try {
      const count = async (sql: string) => Number((await conn.query(sql))[0]!.n);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_a;`), N + 1);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_a WHERE name LIKE N'a2-%';`), N / 2 + 1);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_b;`), N - N / 4);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_b WHERE id % 4 = 0;`), 0);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_b WHERE name LIKE N'b2-%';`), N / 4);
      assert.equal(await count(`SELECT COUNT(*) AS n FROM "${schema}".il_log;`), N + N / 2);
      const [row] = await conn.query(`SELECT name FROM "${schema}".il_a WHERE id = 2;`);
      assert.equal(row!.name, `a2-2-${pad}`);
    } finally { await conn.close(); }
  });

  it('stages with the target\'s types: a non-ASCII string key loads and merges, user-DDL DECIMAL/NUMERIC/CHAR/MONEY values are exact', { skip }, async () => {
    const p = (field: string, types: string[], exists?: 'MUST'): Projection => ({ field, ptr: `/${field}`, inference: exists === undefined ? { types } : { types, exists } });
    const b: MaterializationBindingSpec = {
      resourceConfig: { table: 'staged_types', schema },
      resourcePath: [schema, 'staged_types'],
      collection: {
        name: 'test/staged_types', key: ['/k'],
        projections: [p('k', ['string'], 'MUST'), p('amount', ['integer']), p('ratio', ['string', 'number']), p('tag', ['string']), p('price', ['number']), { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } }],
      },
      fieldSelection: {
        keys: ['k'], values: ['amount', 'price', 'ratio', 'tag'], document: 'flow_document',
        fieldConfig: { amount: { DDL: 'DECIMAL(20)' }, ratio: { DDL: 'NUMERIC(38, 10)' }, tag: { DDL: 'CHAR(4)' }, price: { DDL: 'MONEY' } },
      },
    };
    const m = spec(`test/staged-${suffix}`, [b], config);
    await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    const { transactor } = await connector.open({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'v1', state: {} });
    const key = 'κλειδί-✓';
    const st = (amount: bigint, o: Partial<DecodedStore> = {}): DecodedStore => ({
      binding: 0, key: [key], values: [amount, 12.5, '-1234567890123456789012345678.1234567891', 'ab'], keyPacked: '', exists: false, delete: false,
      doc: { k: key, amount: amount.toString() }, ...o,
    });
    try {
      await transactor.acknowledge();
      await transactor.load(iter<DecodedLoad>([]), async () => undefined);
      await transactor.store(iter([st(18446744073709551615n)]));
      await transactor.startCommit({ sources: { s: { readThrough: '1' } } });
      await transactor.acknowledge();
      const loaded: JsonObject[] = [];
      await transactor.load(iter<DecodedLoad>([{ binding: 0, key: [key], keyPacked: '' }]), async (_b, d) => { loaded.push(d); });
      assert.equal(loaded.length, 1, 'the staged non-ASCII key joins the target row');
      await transactor.store(iter([st(18446744073709551614n, { exists: true })]));
      await transactor.startCommit({ sources: { s: { readThrough: '2' } } });
    } finally { await transactor.close?.(); }
    const conn = await client.connect();
    try {
      const rows = await conn.query(`SELECT k, CAST(amount AS varchar(40)) AS amount, CAST(ratio AS varchar(60)) AS ratio, tag, CAST(price AS varchar(40)) AS price FROM "${schema}".staged_types;`);
      assert.deepEqual(rows.map((r) => [r.k, r.amount, r.ratio, r.tag, r.price]), [[key, '18446744073709551614', '-1234567890123456789012345678.1234567891', 'ab  ', '12.50']]);
    } finally { await conn.close(); }
  });

  it('fences off a zombie: the older instance cannot commit after a newer one opened', { skip }, async () => {
    const m = spec(`test/fence-${suffix}`, [simple('fenced', schema, [], [])], config);
    await connector.apply({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), version: 'v1', state: {}, dryRun: false });
    const open = () => connector.open({ config, log: quiet, signal, materialization: m, bindings: bindingsOf(m), range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'v1', state: {} });
    const zombie = await open();
    const current = await open();
    try {
      await zombie.transactor.store(iter<DecodedStore>([{ binding: 0, key: [1], values: [], keyPacked: '', exists: false, delete: false, doc: { id: 1 } }]));
      await assert.rejects(zombie.transactor.startCommit({ sources: { zombie: { readThrough: '1' } } }), FencedError);
      await current.transactor.store(iter<DecodedStore>([{ binding: 0, key: [2], values: [], keyPacked: '', exists: false, delete: false, doc: { id: 2 } }]));
      await current.transactor.startCommit({ sources: { current: { readThrough: '1' } } });
    } finally {
      await zombie.transactor.close?.();
      await current.transactor.close?.();
    }
    const conn = await client.connect();
    try {
      const rows = await conn.query(`SELECT id FROM "${schema}".fenced;`);
      assert.deepEqual(rows.map((r) => String(r.id)), ['2']);
    } finally { await conn.close(); }
  });

  it('migrates column types in place (bigint → DOUBLE PRECISION, → text, datetime2 → text) keeping data', { skip }, async () => {
    const proj = (types: string[], format?: string): Projection[] => [
      { field: 'n', ptr: '/n', inference: { types } },
      { field: 'ts', ptr: '/ts', inference: format === undefined ? { types: ['string'] } : { types: ['string'], string: { format } } },
    ];
    const base = spec(`test/mig-${suffix}`, [simple('migrated', schema, proj(['integer'], 'date-time'), ['n', 'ts'])], config);
    await connector.apply({ config, log: quiet, signal, materialization: base, bindings: bindingsOf(base), version: 'v1', state: {}, dryRun: false });
    const conn = await client.connect();
    try {
      await conn.exec(`INSERT INTO "${schema}".migrated (id, n, ts, flow_document) VALUES (1, 42, '2024-05-01T10:00:00.1234567', N'{}');`);
      const after1 = spec(base.name, [simple('migrated', schema, proj(['number']), ['n', 'ts'])], config);
      const applied = await connector.apply({ config, log: quiet, signal, materialization: after1, bindings: bindingsOf(after1), lastMaterialization: base, version: 'v2', state: {}, dryRun: false });
      assert.match(applied.actionDescription ?? '', /ALTER COLUMN n DOUBLE PRECISION/);
      assert.match(applied.actionDescription ?? '', /sp_rename/);
      const [row] = await conn.query(`SELECT n, ts FROM "${schema}".migrated;`);
      assert.equal(row!.n, 42);
      assert.equal(row!.ts, '2024-05-01T10:00:00.1234567Z');
    } finally { await conn.close(); }
  });

  const sshSkip = sshdUnavailable();
  it('connects through an SSH tunnel (real local sshd forwarding to the server)', { skip: skip ?? sshSkip }, async () => {
    const sshd = await startSshd();
    try {
      const tunneled = parseEndpointConfig({ ...config, networkTunnel: { sshForwarding: { sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: sshd.privateKey } } });
      await checkPrerequisites(tunneled, quiet);
    } finally { await sshd.stop(); }
  });
});
