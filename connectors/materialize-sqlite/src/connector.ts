// materialize-sqlite: the embedded default materialization. The shared SQL core does validate, apply and
// the transactor; this file only says how configs map to the SQLite dialect and client.
import type { JsonSchema, MaterializeConnector } from '@sluice/runtime';
import { sqlMaterializeConnector } from '@sluice/materialize-sql';
import type { SqlEndpoint } from '@sluice/materialize-sql';
import { endpointSchema, resourceSchema } from './config.ts';
import type { EndpointConfig, ResourceConfig } from './config.ts';
import { sqliteDialect } from './sqlite-dialect.ts';
import { SqliteClient } from './sqlite-client.ts';

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

/**
 * One thread: the runtime's protocol loop and node:sqlite's synchronous statements share it. A writer thread
 * was tried (stores handed over raw, tuples decoded and statements run there): in the plane's pipeline, where
 * the plane and the capture share the same two cores, it cost ~30% more CPU (the handoff) and ran slower.
 */
export const materializeSqlite: MaterializeConnector<EndpointConfig, ResourceConfig> = sqlMaterializeConnector(sqliteEndpoint);
