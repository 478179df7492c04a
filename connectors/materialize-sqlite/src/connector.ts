// materialize-sqlite: the embedded default materialization. The shared SQL core does validate, apply and
// the transactor; this file only says how configs map to the SQLite dialect and client.
import type { JsonSchema, MaterializeConnector } from '@sluice/runtime';
import { SqlConfigError, sqlMaterializeConnector } from '@sluice/materialize-sql';
import type { SqlEndpoint } from '@sluice/materialize-sql';
import { endpointSchema, resourceSchema } from './config.ts';
import type { EndpointConfig, ResourceConfig } from './config.ts';
import { sqliteDialect } from './sqlite-dialect.ts';
import { SqliteClient } from './sqlite-client.ts';

export const CHECKPOINTS_TABLE = 'flow_checkpoints_v1';

/**
 * When WAL checkpoints move to their thread (sqlite-client.ts, wal-checkpointer.ts): WAL bytes (`0`: from the
 * first commit, as the crash tests run it), or `off` (every checkpoint on the main thread). Unset: the default.
 */
export const CHECKPOINT_THREAD_ENV = 'SLUICE_SQLITE_CHECKPOINT_THREAD';

export function checkpointThreadSetting(value: string | undefined): number | false | undefined {
  const v = value?.trim() ?? '';
  if (v === '') return undefined;
  if (v.toLowerCase() === 'off') return false;
  if (/^\d+$/.test(v)) return Number(v);
  throw new SqlConfigError(`${CHECKPOINT_THREAD_ENV} is '${value}': set it to a number of WAL bytes after which checkpoints run on their own thread (0: from the first commit), or to 'off'; or unset it`);
}

export const sqliteEndpoint: SqlEndpoint<EndpointConfig, ResourceConfig> = {
  configSchema: endpointSchema as unknown as JsonSchema,
  resourceConfigSchema: resourceSchema as unknown as JsonSchema,
  documentationUrl: 'https://github.com/sluice-dev/sluice/tree/main/connectors/materialize-sqlite',
  async connect(config, log) {
    return { dialect: sqliteDialect, client: new SqliteClient(config.path, { log, checkpointThreadAfterBytes: checkpointThreadSetting(process.env[CHECKPOINT_THREAD_ENV]) }) };
  },
  resourcePath: (resource) => [resource.table],
  deltaUpdates: (resource) => resource.delta_updates === true,
  hardDelete: (config) => config.hardDelete === true,
  checkpointsTable: () => [CHECKPOINTS_TABLE],
};

/**
 * One thread: the runtime's protocol loop and node:sqlite's synchronous statements share it. A writer thread
 * was tried (stores handed over raw, tuples decoded and statements run there): in the plane's pipeline, where
 * the plane and the capture share the same two cores, it cost ~30% more CPU (the handoff) and ran slower.
 */
export const materializeSqlite: MaterializeConnector<EndpointConfig, ResourceConfig> = sqlMaterializeConnector(sqliteEndpoint);
