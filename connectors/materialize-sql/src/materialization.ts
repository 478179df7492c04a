// A MaterializeConnector built from a SqlEndpoint: validate, apply and open are the same for every SQL
// database; the endpoint supplies the dialect, the client and how configs map to paths and options.
import type {
  ConnectorSpecInfo, Logger, MaterializationBindingSpec, MaterializationSpec, MaterializeConnector,
  MaterializeOpenedResponse, MaterializeValidatedBinding,
} from '@sluice/runtime';
import type { Client } from './client.ts';
import type { Dialect } from './dialect.ts';
import { buildTable } from './table.ts';
import { validateBinding } from './validate.ts';
import { describeTable, runApply } from './apply.ts';
import { installFence } from './fence.ts';
import { SqlTransactor } from './transactor.ts';

/** What a SQL connector supplies; everything else is shared. */
export interface SqlEndpoint<Config, Resource> extends ConnectorSpecInfo {
  /** Open the endpoint: a client, and the dialect (which may depend on the server, e.g. its collations). */
  connect(config: Config, log: Logger): Promise<{ dialect: Dialect; client: Client }>;
  /** The table path of a binding's resource config (`[table]`, `[schema, table]`). */
  resourcePath(resource: Resource, config: Config): string[];
  deltaUpdates(resource: Resource): boolean;
  /** Delete rows of deletion documents instead of storing them. */
  hardDelete(config: Config): boolean;
  /** Path of the checkpoints table. */
  checkpointsTable(config: Config): string[];
  /**
   * Upstream's `advanced.feature_flags`, parsed over the connector's defaults. Endpoints with flags get upstream's
   * rules: a new binding onto an existing table is refused unless `allow_existing_tables_for_new_bindings`, the
   * backfill flags shape Apply, and Opened asks the runtime to disable its load optimization when existing rows may
   * need merging. Without it (SQLite) existing tables are adopted and the load optimization stays on.
   */
  featureFlags?(config: Config): Readonly<Record<string, boolean>>;
  /** `advanced.no_flow_document`: the root document is optional for standard updates (loads rebuild it from columns). */
  noFlowDocument?(config: Config): boolean;
}

const FULL_RANGE_END = 0xffffffff;

function samePath(a: string[] | undefined, b: string[]): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The same resource path's binding in the last spec; a disabled (inactive) one counts too, as upstream. */
function lastBinding(last: MaterializationSpec | undefined, path: string[]): MaterializationBindingSpec | undefined {
  return last?.bindings?.find((b) => samePath(b.resourcePath, path))
    ?? (last?.inactiveBindings as MaterializationBindingSpec[] | undefined)?.find((b) => samePath(b?.resourcePath, path));
}

export function sqlMaterializeConnector<Config, Resource>(ep: SqlEndpoint<Config, Resource>): MaterializeConnector<Config, Resource> {
  const pathOf = (spec: MaterializationBindingSpec, resource: Resource, config: Config) =>
    spec.resourcePath !== undefined && spec.resourcePath.length > 0 ? spec.resourcePath : ep.resourcePath(resource, config);

  const connector: MaterializeConnector<Config, Resource> = {
    configSchema: ep.configSchema,
    resourceConfigSchema: ep.resourceConfigSchema,
    documentationUrl: ep.documentationUrl,

    async validate(ctx) {
      const { dialect, client } = await ep.connect(ctx.config, ctx.log);
      const conn = client.connectReadOnly !== undefined ? await client.connectReadOnly() : await client.connect();
      try {
        const out: MaterializeValidatedBinding[] = [];
        for (const b of ctx.bindings) {
          const path = ep.resourcePath(b.resource, ctx.config);
          const deltaUpdates = ep.deltaUpdates(b.resource);
          const existing = conn === undefined ? undefined : await describeTable(conn, dialect, path);
          const last = lastBinding(ctx.lastMaterialization, path);
          const featureFlags = ep.featureFlags?.(ctx.config);
          const constraints = validateBinding(dialect, {
            path, deltaUpdates, collection: b.collection, fieldConfig: b.fieldConfig, backfill: b.backfill,
            ...(existing === undefined ? {} : { existing }),
            ...(last === undefined ? {} : { last }),
            ...(featureFlags === undefined ? {} : { featureFlags }),
            noFlowDocument: ep.noFlowDocument?.(ctx.config) === true,
          });
          const v: MaterializeValidatedBinding = { resourcePath: path, constraints, deltaUpdates };
          if (dialect.caseInsensitiveColumns) v.caseInsensitiveFields = true;
          out.push(v);
        }
        return out;
      } finally {
        await conn?.close();
        await client.close?.();
      }
    },

    async apply(ctx) {
      const { dialect, client } = await ep.connect(ctx.config, ctx.log);
      const conn = await client.connect();
      try {
        const bindings = ctx.bindings.map((b) => {
          const path = pathOf(b.spec, b.resource, ctx.config);
          const last = lastBinding(ctx.lastMaterialization, path);
          const table = buildTable(dialect, b.index, path, { ...b.spec, deltaUpdates: b.spec.deltaUpdates ?? ep.deltaUpdates(b.resource) });
          return last === undefined ? { table, spec: b.spec } : { table, spec: b.spec, last };
        });
        const featureFlags = ep.featureFlags?.(ctx.config);
        const statements = await runApply(conn, {
          dialect, checkpointsTable: ep.checkpointsTable(ctx.config), bindings, ...(featureFlags === undefined ? {} : { featureFlags }),
        }, ctx.dryRun);
        if (statements.length > 0) ctx.log.info(ctx.dryRun ? 'apply (dry run): statements not executed' : 'applied', { statements: statements.length });
        return { actionDescription: statements.join('\n') };
      } finally {
        await conn.close();
        await client.close?.();
      }
    },

    async open(ctx) {
      const { dialect, client } = await ep.connect(ctx.config, ctx.log);
      const tables = ctx.bindings.map((b) => buildTable(dialect, b.index, pathOf(b.spec, b.resource, ctx.config),
        { ...b.spec, deltaUpdates: b.spec.deltaUpdates ?? ep.deltaUpdates(b.resource) }));
      const hints = { keyed: tables.some((t) => !t.deltaUpdates) };
      const storeConn = await client.connect(hints);
      let loadConn;
      try {
        const fence = await installFence(storeConn, dialect, {
          path: ep.checkpointsTable(ctx.config),
          materialization: ctx.materialization.name,
          keyBegin: ctx.range.keyBegin ?? 0,
          keyEnd: ctx.range.keyEnd ?? FULL_RANGE_END,
        });
        loadConn = client.loadsOnStoreConnection === true ? storeConn : await client.connect(hints);
        const transactor = new SqlTransactor({
          dialect, loadConn, storeConn, tables, fence, hardDelete: ep.hardDelete(ctx.config), rebuildDocuments: ep.noFlowDocument?.(ctx.config) === true,
        });
        const close = transactor.close.bind(transactor);
        transactor.close = async () => { await close(); await client.close?.(); };
        ctx.log.info('opened', { fence: fence.fence, recovered: fence.checkpoint !== undefined, bindings: tables.length });
        // Destination-authoritative: the checkpoint committed with our data is where the runtime resumes.
        // None (nothing committed yet) is `{}`: start from the beginning.
        const opened: MaterializeOpenedResponse = { runtimeCheckpoint: fence.checkpoint ?? {} };
        // As upstream: tables adopted for new bindings, or kept through a backfill, hold rows the runtime's
        // load optimization does not know of; every key must be loaded so they are merged, not duplicated.
        const flags = ep.featureFlags?.(ctx.config);
        if (flags?.allow_existing_tables_for_new_bindings === true || flags?.retain_existing_data_on_backfill === true) opened.disableLoadOptimization = true;
        return { transactor, opened };
      } catch (err) {
        await storeConn.close().catch(() => undefined);
        if (loadConn !== storeConn) await loadConn?.close().catch(() => undefined);
        await client.close?.().catch(() => undefined);
        throw err;
      }
    },
  };
  return connector;
}
