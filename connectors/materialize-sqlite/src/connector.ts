// materialize-sqlite: the embedded default materialization. The shared SQL core does validate, apply and
// the transactor; this file only says how configs map to the SQLite dialect and client.
import type { JsonSchema, MaterializeConnector } from '@sluice/runtime';
import { sqlMaterializeConnector } from '@sluice/materialize-sql';
import type { SqlEndpoint } from '@sluice/materialize-sql';
import { endpointSchema, resourceSchema } from './config.ts';
import type { EndpointConfig, ResourceConfig } from './config.ts';
import { sqliteDialect } from './sqlite-dialect.ts';
import { SqliteClient } from './sqlite-client.ts';
import { WriterThreadTransactor, useWriterThread } from './writer-thread.ts';

export const CHECKPOINTS_TABLE = 'flow_checkpoints_v1';

export const sqliteEndpoint: SqlEndpoint<EndpointConfig, ResourceConfig> = {
  configSchema: endpointSchema as unknown as JsonSchema,
  resourceConfigSchema: resourceSchema as unknown as JsonSchema,
  documentationUrl: 'https://github.com/sluice-dev/sluice/tree/main/connectors/materialize-sqlite',
  async connect(config) {
    return { dialect: sqliteDialect, client: new SqliteClient(config.path) };
  },
  resourcePath: (resource) => [resource.table],
  deltaUpdates: (resource) => resource.delta_updates === true,
  hardDelete: (config) => config.hardDelete === true,
  checkpointsTable: () => [CHECKPOINTS_TABLE],
};

const onThisThread = sqlMaterializeConnector(sqliteEndpoint);

/**
 * Sessions (open) run the SQL transactor on a writer thread (writer-thread.ts) unless
 * SLUICE_SQLITE_WRITER_THREAD=0; `:memory:` databases stay on this thread (another thread's would be another
 * database). Validate and apply run here.
 */
export const materializeSqlite: MaterializeConnector<EndpointConfig, ResourceConfig> = {
  ...onThisThread,
  open: (ctx) => (useWriterThread() && ctx.config.path !== ':memory:' ? WriterThreadTransactor.open(ctx) : onThisThread.open(ctx)),
};
