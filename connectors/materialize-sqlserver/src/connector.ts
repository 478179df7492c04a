// materialize-sqlserver: the shared SQL core (validate, apply, fence, transactor) over the T-SQL dialect and the
// mssql client. This file adds what is specific to SQL Server: reading the server's collations and version at
// connect, the CREATE TABLE permission check in validate, and the offline review (apply with dryRun renders
// every statement without connecting).
import { sqlMaterializeConnector } from '@sluice/materialize-sql';
import type { SqlEndpoint } from '@sluice/materialize-sql';
import { ConfigError } from '@sluice/runtime';
import type { JsonObject, Logger, MaterializeConnector } from '@sluice/runtime';
import {
  CONFIG_KEYS_BEYOND_SCHEMA, CONFIG_SCHEMA, DOCUMENTATION_URL, RESOURCE_SCHEMA, parseFeatureFlags, resolveEndpointConfig, resolveResourceConfig,
  resourcePath,
} from './config.ts';
import type { EndpointConfig, EndpointConfigInput, ResourceConfig } from './config.ts';
import { COLLATIONS_QUERY, chooseCollation } from './collation.ts';
import { checkpointsTablePath, createSqlServerDialect } from './sqlserver-dialect.ts';
import { SqlServerClient } from './sqlserver-client.ts';
import type { ClientOptions, SqlServerConnection } from './sqlserver-client.ts';
import { missingCreateTableError } from './errors.ts';
import { defaultPortWarning, parseAddress } from './address.ts';
import { reviewStatements } from './review.ts';
import { DbtJobTriggerRunner, dbtTriggerEnabled } from './dbt-trigger.ts';
import type { DbtTriggerOptions } from './dbt-trigger.ts';

export const SERVER_INFO_QUERY = `SELECT CAST(SERVERPROPERTY('ProductMajorVersion') AS int) AS major, CAST(SERVERPROPERTY('EngineEdition') AS int) AS edition, SCHEMA_NAME() AS default_schema;`;
export const CREATE_TABLE_PERMISSION_QUERY = `SELECT HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'CREATE TABLE') AS can_create;`;

/** SQL Server 2017 is major version 14. Azure SQL Database (edition 5) and Managed Instance (8) report older numbers but are current. */
export function checkServerVersion(major: number | null, edition: number | null): void {
  if (edition === 5 || edition === 8) return;
  if (major !== null && major < 14) {
    throw new ConfigError(`SQL Server major version ${major} is not supported: the connector needs SQL Server 2017 (version 14) or later`);
  }
}

export interface ConnectorDeps {
  clientOptions?: Omit<ClientOptions, 'log'>;
  /** For tests: the dbt trigger's clock, scheduler and HTTP client. */
  dbt?: DbtTriggerOptions;
}

async function inspectServer(conn: SqlServerConnection): Promise<{ collation: string; defaultSchema: string | undefined }> {
  const [info] = await conn.query(SERVER_INFO_QUERY);
  checkServerVersion(info?.major === null || info?.major === undefined ? null : Number(info.major), info?.edition === null || info?.edition === undefined ? null : Number(info.edition));
  const names = (await conn.query(COLLATIONS_QUERY)).map((r) => String(r.name));
  const collation = chooseCollation(names);
  if (collation === undefined) {
    throw new ConfigError('the server offers no Latin1_General binary collation (sys.fn_helpcollations); SQL Server 2017 or later is required');
  }
  const ds = info?.default_schema;
  return { collation, defaultSchema: ds === null || ds === undefined ? undefined : String(ds) };
}

export function sqlServerEndpoint(deps: ConnectorDeps = {}): SqlEndpoint<EndpointConfig, ResourceConfig> {
  return {
    configSchema: CONFIG_SCHEMA,
    resourceConfigSchema: RESOURCE_SCHEMA,
    documentationUrl: DOCUMENTATION_URL,
    async connect(config: EndpointConfig, log: Logger) {
      const client = new SqlServerClient(config, { ...deps.clientOptions, log });
      try {
        const conn = await client.connect();
        try {
          const { collation, defaultSchema } = await inspectServer(conn);
          log.debug('connected to SQL Server', { collation, defaultSchema });
          const dialect = createSqlServerDialect({ collation, flags: parseFeatureFlags(config.advanced?.feature_flags) });
          return { dialect, client };
        } finally {
          await conn.close();
        }
      } catch (err) {
        await client.close();
        throw err;
      }
    },
    resourcePath: (resource, config) => resourcePath(resource, config),
    deltaUpdates: (resource) => resource.delta_updates === true,
    hardDelete: (config) => config.hardDelete === true,
    checkpointsTable: (config) => checkpointsTablePath(config.schema),
    featureFlags: (config) => parseFeatureFlags(config.advanced?.feature_flags),
    noFlowDocument: (config) => config.advanced?.no_flow_document === true,
  };
}

/** Validate's prerequisite: the user may create tables (apply creates them). */
export async function checkPrerequisites(config: EndpointConfig, log: Logger, deps: ConnectorDeps = {}): Promise<void> {
  const client = new SqlServerClient(config, { ...deps.clientOptions, log });
  try {
    const conn = await client.connect();
    try {
      const [row] = await conn.query(CREATE_TABLE_PERMISSION_QUERY);
      if (Number(row?.can_create ?? 0) !== 1) throw missingCreateTableError(client.target);
    } finally {
      await conn.close();
    }
  } finally {
    await client.close();
  }
}

/** The connector: configs are parsed (beyond the schema) before the shared core sees them. */
export function createSqlServerConnector(deps: ConnectorDeps = {}): MaterializeConnector<JsonObject, JsonObject> {
  const inner = sqlMaterializeConnector(sqlServerEndpoint(deps));
  // The runtime has validated the request's endpoint and resource configs against CONFIG_SCHEMA and RESOURCE_SCHEMA
  // (ConnectorSchemas: defaults, unknown keys refused, the declared keys beyond the schemas and a resource's `_meta`
  // kept); what remains are the checks a schema cannot express. (A second validation here refused the `_meta` the
  // runtime tolerates.)
  const endpoint = (config: JsonObject): EndpointConfig => resolveEndpointConfig(config as unknown as EndpointConfigInput);
  const resources = <B extends { resource: JsonObject }>(bindings: B[]) =>
    bindings.map((b, i) => ({ ...b, resource: resolveResourceConfig(b.resource as unknown as ResourceConfig, `resource config of binding ${i}`) }));
  return {
    configSchema: CONFIG_SCHEMA,
    resourceConfigSchema: RESOURCE_SCHEMA,
    configKeysBeyondSchema: CONFIG_KEYS_BEYOND_SCHEMA,
    documentationUrl: DOCUMENTATION_URL,
    async validate(ctx) {
      const config = endpoint(ctx.config);
      const bindings = resources(ctx.bindings);
      await checkPrerequisites(config, ctx.log, deps);
      return inner.validate({ ...ctx, config, bindings });
    },
    async apply(ctx) {
      const config = endpoint(ctx.config);
      const bindings = resources(ctx.bindings);
      if (ctx.dryRun) {
        const addr = parseAddress(config.address);
        if (addr.portDefaulted) ctx.log.warn(defaultPortWarning(addr));
        // Offline review: nothing connects; every statement the connector would run is listed.
        const actionDescription = reviewStatements({ materialization: ctx.materialization, config, bindings });
        ctx.log.info('apply (dry run): listed the statements without connecting', { bindings: bindings.length });
        return { actionDescription };
      }
      return inner.apply({ ...ctx, config, bindings });
    },
    async open(ctx) {
      const config = endpoint(ctx.config);
      const out = await inner.open({ ...ctx, config, bindings: resources(ctx.bindings) });
      const dbt = config.dbt_job_trigger;
      if (dbt === undefined) return out;
      if (!dbtTriggerEnabled(dbt)) {
        // Upstream silently ignores an incomplete trigger; say so once.
        ctx.log.warn('dbt_job_trigger has no access_url: no dbt job will be triggered (set dbt_job_trigger.access_url to enable it)');
        return out;
      }
      // After each acknowledgement (a committed transaction), as upstream: see dbt-trigger.ts.
      const trigger = new DbtJobTriggerRunner(dbt, ctx.log, deps.dbt);
      const { transactor } = out;
      const acknowledge = transactor.acknowledge.bind(transactor);
      const close = transactor.close?.bind(transactor);
      transactor.acknowledge = async () => {
        const state = await acknowledge();
        trigger.notify();
        return state;
      };
      transactor.close = async () => { trigger.close(); await close?.(); };
      return out;
    },
  };
}
