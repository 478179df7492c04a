// Benchmark: materialize-sqlserver transactions against a real SQL Server (MSSQL_URL), in docs/s:
//  - insert-only: every key new → rows bulk-loaded into #flow_temp_store_0, then INSERT … SELECT, fence, commit
//  - merge: the same keys again (exists) → bulk load, then MERGE, fence, commit
//  - baseline: a plain TDS bulk insert of the same rows straight into a table with the same columns
// and the ratio of each against the baseline measured in the same run. Without MSSQL_URL it says it skipped.
//   MSSQL_URL='sqlserver://sa:Flow!Pass1234@127.0.0.1:1433/master' npx node bench/materialize-sqlserver.ts [docs]
import { randomBytes } from 'node:crypto';
import type { DecodedStore, JsonObject, Logger, MaterializationSpec, MaterializeBinding } from '@sluice/runtime';
import { createSqlServerConnector, parseEndpointConfig, SqlServerClient } from '@sluice/materialize-sqlserver';

const url = process.env.MSSQL_URL;
if (url === undefined || url === '') {
  console.log('materialize-sqlserver benchmark skipped: MSSQL_URL is not set (start SQL Server with docker compose -f docker/compose.sqlserver.yaml up -d, then MSSQL_URL=sqlserver://sa:Flow!Pass1234@127.0.0.1:1433/master)');
  process.exit(0);
}

const DOCS = Number(process.argv[2] ?? 50_000);
const u = new URL(url);
const schema = `flow_bench_${randomBytes(3).toString('hex')}`;
const config: JsonObject = {
  address: `${u.hostname}:${u.port === '' ? '1433' : u.port}`,
  user: decodeURIComponent(u.username),
  database: u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : 'master',
  schema,
  credentials: { auth_type: 'UserPassword', password: decodeURIComponent(u.password) },
};
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, status() {}, child() { return quiet; } };
const signal = new AbortController().signal;

const m: MaterializationSpec = {
  name: `bench/${schema}`,
  config,
  bindings: [{
    resourceConfig: { table: 'docs', schema },
    resourcePath: [schema, 'docs'],
    collection: {
      name: 'bench/docs', key: ['/id'], projections: [
        { field: 'id', ptr: '/id', inference: { types: ['integer'], exists: 'MUST' } },
        { field: 'name', ptr: '/name', inference: { types: ['string'] } },
        { field: 'score', ptr: '/score', inference: { types: ['number'] } },
        { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } },
      ],
    },
    fieldSelection: { keys: ['id'], values: ['name', 'score'], document: 'flow_document' },
  }],
};
const bindings: MaterializeBinding<JsonObject>[] = m.bindings!.map((spec, index) => ({ index, resource: spec.resourceConfig!, spec }));

function doc(i: number, round: number): JsonObject {
  return { id: i, name: `name ${i} round ${round}`, score: i / 7, payload: 'x'.repeat(200) };
}
async function* stores(round: number, exists: boolean): AsyncIterable<DecodedStore> {
  for (let i = 0; i < DOCS; i++) {
    const d = doc(i, round);
    yield { binding: 0, key: [i], values: [d.name as string, d.score as number], doc: d, keyPacked: '', exists, delete: false };
  }
}

const connector = createSqlServerConnector();
const client = new SqlServerClient(parseEndpointConfig(config));
try {
  await connector.apply({ config, log: quiet, signal, materialization: m, bindings, version: 'bench', state: {}, dryRun: false });
  const { transactor } = await connector.open({ config, log: quiet, signal, materialization: m, bindings, range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, version: 'bench', state: {} });
  const timed = async (fn: () => Promise<void>) => { const t0 = performance.now(); await fn(); return (performance.now() - t0) / 1000; };
  let insertSecs: number; let mergeSecs: number;
  try {
    await transactor.acknowledge();
    insertSecs = await timed(async () => { await transactor.store(stores(1, false)); await transactor.startCommit({ round: 1 }); });
    await transactor.acknowledge();
    mergeSecs = await timed(async () => { await transactor.store(stores(2, true)); await transactor.startCommit({ round: 2 }); });
  } finally { await transactor.close?.(); }

  // Baseline: one plain bulk insert of the same rows into a table of the same shape.
  const conn = await client.connect();
  let baseSecs: number;
  try {
    const coll = 'Latin1_General_100_BIN2_UTF8';
    await conn.exec(`CREATE TABLE "${schema}".baseline (id BIGINT NOT NULL, name varchar(MAX) COLLATE ${coll}, score DOUBLE PRECISION, flow_document varchar(MAX) COLLATE ${coll} NOT NULL, PRIMARY KEY (id));`);
    const target = {
      name: `[${schema}].[baseline]`, identifier: `"${schema}".baseline`,
      columns: [
        { name: 'id', identifier: 'id', ddl: 'BIGINT', nullable: false },
        { name: 'name', identifier: 'name', ddl: `varchar(MAX) COLLATE ${coll}`, nullable: true },
        { name: 'score', identifier: 'score', ddl: 'DOUBLE PRECISION', nullable: true },
        { name: 'flow_document', identifier: 'flow_document', ddl: `varchar(MAX) COLLATE ${coll}`, nullable: false },
      ],
    };
    async function* rows() { for (let i = 0; i < DOCS; i++) { const d = doc(i, 1); yield [i, d.name as string, d.score as number, JSON.stringify(d)]; } }
    baseSecs = await timed(async () => { await conn.bulkInsert(target, rows()); });
  } finally {
    await conn.exec(`DECLARE @t sysname; WHILE EXISTS (SELECT 1 FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = N'${schema}') BEGIN SELECT TOP 1 @t = TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = N'${schema}'; EXEC(N'DROP TABLE "${schema}".' + QUOTENAME(@t)); END; EXEC(N'DROP SCHEMA "${schema}"');`).catch(() => undefined);
    await conn.close();
  }
  const rate = (s: number) => DOCS / s;
  console.log(`materialize-sqlserver, ${DOCS} docs per transaction (~${JSON.stringify(doc(1, 1)).length} B each):`);
  console.log(`  baseline plain bulk insert : ${rate(baseSecs).toFixed(0)} docs/s`);
  console.log(`  insert-only transaction    : ${rate(insertSecs).toFixed(0)} docs/s  (ratio vs baseline ${(rate(insertSecs) / rate(baseSecs)).toFixed(2)})`);
  console.log(`  merge transaction          : ${rate(mergeSecs).toFixed(0)} docs/s  (ratio vs baseline ${(rate(mergeSecs) / rate(baseSecs)).toFixed(2)})`);
} finally {
  await client.close();
}
