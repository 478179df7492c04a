// @sluice/materialize-sqlserver: materialize Flow collections into SQL Server 2017+ tables.
export { createSqlServerConnector, sqlServerEndpoint, checkPrerequisites, checkServerVersion } from './connector.ts';
export type { ConnectorDeps } from './connector.ts';
export * from './config.ts';
export { parseAddress, defaultPortWarning } from './address.ts';
export { createSqlServerDialect, quoteIdentifier, quotePath, literal, checkpointsTablePath } from './sqlserver-dialect.ts';
export type { SqlServerDialect, SqlServerDialectOptions } from './sqlserver-dialect.ts';
export { SqlServerClient, SqlServerConnection, APP_NAME } from './sqlserver-client.ts';
export { chooseCollation, stringBaseType } from './collation.ts';
export { openTunnel, parseSshEndpoint } from './tunnel.ts';
export { reviewStatements } from './review.ts';
export { RESERVED_WORDS } from './reserved-words.ts';
