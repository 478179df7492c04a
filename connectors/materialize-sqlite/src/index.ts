// @sluice/materialize-sqlite: the embedded default materialization (node:sqlite).
export { materializeSqlite, sqliteEndpoint, CHECKPOINTS_TABLE } from './connector.ts';
export { endpointSchema, resourceSchema } from './config.ts';
export type { EndpointConfig, ResourceConfig } from './config.ts';
export { sqliteDialect, mapSqliteType, SQLITE_RESERVED } from './sqlite-dialect.ts';
export { SqliteClient } from './sqlite-client.ts';
