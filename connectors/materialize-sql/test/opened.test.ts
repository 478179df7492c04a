// What Open answers, through sqlMaterializeConnector with a fake endpoint: the recovered checkpoint, and
// `disableLoadOptimization` exactly when upstream sends it (tables adopted for new bindings, or kept through
// backfills, hold rows the runtime's load optimization does not know of).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger, MaterializationSpec } from '@sluice/runtime';
import { makeQuoter, sqlMaterializeConnector } from '../src/index.ts';
import type { Client, Connection, Dialect, SqlEndpoint, SqlRow, StatementTemplates } from '../src/index.ts';

const quote = makeQuoter(new Set());
const templates = {
  createSchema: () => [], createTable: () => 'CREATE', addColumns: () => [], alterColumns: () => [], truncateTable: () => 'TRUNCATE',
  dropTable: () => 'DROP', describeTable: () => 'DESCRIBE', loadTable: () => ({ name: 'l', identifier: 'l' }), createLoadTable: () => 'CREATE l',
  truncateLoad: () => 'TRUNCATE l', loadQuery: () => undefined, createCheckpointsTable: () => 'CREATE ckpt', fenceBump: () => 'BUMP',
  fenceSelect: () => 'SELECT FENCE', fenceInsert: () => 'INSERT FENCE', checkpointUpdate: () => 'CHECKPOINT',
} satisfies StatementTemplates;
const dialect: Dialect = {
  name: 'fake', maxIdentifierLength: 64, caseInsensitiveColumns: false, storeFlow: 'direct', transactionalDdl: true,
  quoteIdentifier: quote, quotePath: (p) => p.map(quote).join('.'), literal: String, placeholder: (i) => `?${i + 1}`,
  mapType: () => ({ ddl: 'TEXT', toParam: (v) => (v === undefined ? null : JSON.stringify(v)) }),
  compatibility: () => ({ kind: 'compatible' }), templates,
};
const conn = (fenceRow: SqlRow | undefined): Connection => ({
  exec: async () => 1, query: async (sql) => (sql === 'SELECT FENCE' && fenceRow !== undefined ? [fenceRow] : []),
  queryRows: async function* () { /* no rows */ }, bulkInsert: async () => 0, prepare: () => ({ run: () => 1 }),
  begin: async () => undefined, commit: async () => undefined, rollback: async () => undefined, close: async () => undefined,
});
const log: Logger = { debug() {}, info() {}, warn() {}, error() {}, child() { return log; } } as unknown as Logger;

function endpoint(flags: Record<string, boolean> | undefined, fenceRow?: SqlRow): SqlEndpoint<{ flags?: string }, { table: string }> {
  const client: Client = { connect: async () => conn(fenceRow) };
  return {
    configSchema: {}, resourceConfigSchema: {}, documentationUrl: 'https://example.com',
    connect: async () => ({ dialect, client }),
    resourcePath: (r) => [r.table], deltaUpdates: () => false, hardDelete: () => false, checkpointsTable: () => ['ckpt'],
    ...(flags === undefined ? {} : { featureFlags: () => flags }),
  };
}

const materialization: MaterializationSpec = {
  name: 'acmeCo/mat', connectorType: 'IMAGE', config: {},
  bindings: [{
    resourceConfig: { table: 't' }, resourcePath: ['t'],
    collection: { name: 'acmeCo/c', key: ['/id'], projections: [{ field: 'id', ptr: '/id', inference: { types: ['integer'], exists: 'MUST' } }, { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } }] },
    fieldSelection: { keys: ['id'], values: [], document: 'flow_document' },
  }],
};

async function opened(flags: Record<string, boolean> | undefined, fenceRow?: SqlRow) {
  const c = sqlMaterializeConnector(endpoint(flags, fenceRow));
  const out = await c.open({
    config: {}, materialization, range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {}, version: 'v1', log,
    bindings: [{ index: 0, resource: { table: 't' }, spec: materialization.bindings![0]! }],
  } as never);
  await out.transactor.close?.();
  return out.opened;
}

test('Opened: the explicit zero checkpoint of a fresh row; disableLoadOptimization only with upstream\'s two flags', async () => {
  assert.deepEqual(await opened(undefined), { runtimeCheckpoint: {} }, 'SQLite-like endpoint without flags');
  assert.deepEqual(await opened({ allow_existing_tables_for_new_bindings: false, retain_existing_data_on_backfill: false }), { runtimeCheckpoint: {} });
  assert.deepEqual(await opened({ allow_existing_tables_for_new_bindings: true }), { runtimeCheckpoint: {}, disableLoadOptimization: true });
  assert.deepEqual(await opened({ retain_existing_data_on_backfill: true }), { runtimeCheckpoint: {}, disableLoadOptimization: true });
  assert.deepEqual(await opened({ always_drop_tables_on_backfill: true }), { runtimeCheckpoint: {} });
  assert.deepEqual(await opened(undefined, { fence: 3, key_begin: 0, key_end: 4294967295, checkpoint: 'CgcKAWoSAggI' }), { runtimeCheckpoint: { sources: { j: { readThrough: '8' } } } });
});

test('Open tells the client whether any table has a key index: keyed unless every binding has delta updates', async () => {
  const cases: [boolean[], boolean][] = [[[false], true], [[true], false], [[true, false], true], [[true, true], false]];
  for (const [delta, keyed] of cases) {
    const hints: unknown[] = [];
    const ep: SqlEndpoint<{ flags?: string }, { table: string }> = {
      ...endpoint(undefined),
      connect: async () => ({ dialect, client: { connect: async (h?: unknown) => { hints.push(h); return conn(undefined); } } }),
      deltaUpdates: (r) => delta[Number(r.table.slice(1))]!,
    };
    const bindings = delta.map((_d, i) => ({ ...materialization.bindings![0]!, resourceConfig: { table: `t${i}` }, resourcePath: [`t${i}`] }));
    const out = await sqlMaterializeConnector(ep).open({
      config: {}, materialization: { ...materialization, bindings }, range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {}, version: 'v1', log,
      bindings: bindings.map((spec, index) => ({ index, resource: { table: `t${index}` }, spec })),
    } as never);
    await out.transactor.close?.();
    assert.deepEqual(hints, [{ keyed }, { keyed }], `delta updates ${JSON.stringify(delta)}: the store and the load connection`);
  }
});

test('Open takes one connection for loads and stores when the client says so (Client.loadsOnStoreConnection), else two', async () => {
  for (const shared of [true, false, undefined]) {
    let connects = 0;
    let closes = 0;
    const client: Client = {
      connect: async () => { connects++; return { ...conn(undefined), close: async () => { closes++; } }; },
      ...(shared === undefined ? {} : { loadsOnStoreConnection: shared }),
    };
    const ep: SqlEndpoint<{ flags?: string }, { table: string }> = { ...endpoint(undefined), connect: async () => ({ dialect, client }) };
    const out = await sqlMaterializeConnector(ep).open({
      config: {}, materialization, range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {}, version: 'v1', log,
      bindings: [{ index: 0, resource: { table: 't' }, spec: materialization.bindings![0]! }],
    } as never);
    await out.transactor.close?.();
    const n = shared === true ? 1 : 2;
    assert.deepEqual({ connects, closes }, { connects: n, closes: n }, `loadsOnStoreConnection ${shared}`);
  }
});
