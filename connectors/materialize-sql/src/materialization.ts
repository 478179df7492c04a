// A MaterializeConnector built from a SqlEndpoint: validate, apply and open are the same for every SQL
// database; the endpoint supplies the dialect, the client and how configs map to paths and options.
import type {
  ConnectorSpecInfo, Logger, MaterializationBindingSpec, MaterializationSpec, MaterializeConnector,
  MaterializeValidatedBinding,
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
}

const FULL_RANGE_END = 0xffffffff;

function samePath(a: string[] | undefined, b: string[]): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}

function lastBinding(last: MaterializationSpec | undefined, path: string[]): MaterializationBindingSpec | undefined {
  return last?.bindings?.find((b) => samePath(b.resourcePath, path));
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
          const constraints = validateBinding(dialect, {
            path, deltaUpdates, collection: b.collection, fieldConfig: b.fieldConfig, backfill: b.backfill,
            ...(existing === undefined ? {} : { existing }),
            ...(last === undefined ? {} : { last }),
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
        const statements = await runApply(conn, { dialect, checkpointsTable: ep.checkpointsTable(ctx.config), bindings }, ctx.dryRun);
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
      const storeConn = await client.connect();
      let loadConn;
      try {
        const fence = await installFence(storeConn, dialect, {
          path: ep.checkpointsTable(ctx.config),
          materialization: ctx.materialization.name,
          keyBegin: ctx.range.keyBegin ?? 0,
          keyEnd: ctx.range.keyEnd ?? FULL_RANGE_END,
        });
        loadConn = await client.connect();
        const transactor = new SqlTransactor({ dialect, loadConn, storeConn, tables, fence, hardDelete: ep.hardDelete(ctx.config) });
        const close = transactor.close.bind(transactor);
        transactor.close = async () => { await close(); await client.close?.(); };
        ctx.log.info('opened', { fence: fence.fence, recovered: fence.checkpoint !== undefined, bindings: tables.length });
        // Destination-authoritative: the checkpoint committed with our data is where the runtime resumes.
        // None (nothing committed yet) is `{}`: start from the beginning.
        return { transactor, opened: { runtimeCheckpoint: fence.checkpoint ?? {} } };
      } catch (err) {
        await storeConn.close().catch(() => undefined);
        await loadConn?.close().catch(() => undefined);
        await client.close?.().catch(() => undefined);
        throw err;
      }
    },
  };
  return connector;
}
