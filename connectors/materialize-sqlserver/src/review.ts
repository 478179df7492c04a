// Offline review: every statement the connector would run for a materialization — schema and table DDL, the
// checkpoints table, the fence, the per-session temp tables, and each transaction's load, merge/insert and
// checkpoint update — rendered without connecting, as one T-SQL script a DBA can read (sections are comments).
// Without a server the collation cannot be read, so the script assumes SQL Server 2019+ (a UTF-8 collation,
// strings as varchar); on 2017 strings become nvarchar with Latin1_General_100_BIN2.
import { buildTable, planApply } from '@sluice/materialize-sql';
import type { Table } from '@sluice/materialize-sql';
import type { MaterializationSpec, MaterializeBinding } from '@sluice/runtime';
import { parseFeatureFlags, resourcePath } from './config.ts';
import type { EndpointConfig, ResourceConfig } from './config.ts';
import { FALLBACK_COLLATION } from './collation.ts';
import { checkpointsTablePath, createSqlServerDialect } from './sqlserver-dialect.ts';

const FULL_RANGE_END = 0xffffffff;

export interface ReviewInput {
  materialization: MaterializationSpec;
  config: EndpointConfig;
  bindings: MaterializeBinding<ResourceConfig>[];
  /** Defaults to the 2019+ UTF-8 collation. */
  collation?: string;
}

/** The review script, sections headed by `-- ` comments; each statement ends with `;`. */
export function reviewStatements(input: ReviewInput): string {
  const { config, materialization } = input;
  const collation = input.collation ?? FALLBACK_COLLATION;
  const dialect = createSqlServerDialect({ collation, flags: parseFeatureFlags(config.advanced?.feature_flags) });
  const t = dialect.templates;
  const notes: string[] = [];
  const tables: Table[] = input.bindings.map((b) => {
    // Like apply and open: the spec's resource path (what Validate returned) when present.
    const own = resourcePath(b.resource, config);
    const given = b.spec.resourcePath;
    const path = given !== undefined && given.length > 0 ? given : own;
    if (path.join('\u0000') !== own.join('\u0000')) {
      notes.push(`-- Note: binding ${b.index}'s resourcePath ${JSON.stringify(path)} differs from the path its resource config gives (${JSON.stringify(own)}); the connector uses the spec's resourcePath, as below.`);
    }
    return buildTable(dialect, b.index, path, { ...b.spec, deltaUpdates: b.spec.deltaUpdates ?? b.resource.delta_updates === true });
  });
  const ckpt = checkpointsTablePath(config.schema);
  const name = materialization.name;
  const sections: [string, string[]][] = [];

  sections.push([
    `Apply: schemas, the checkpoints table and every table, as for a new database (an existing table only gets the ADD/ALTER COLUMN statements it needs). Strings use collation ${collation}`,
    planApply({ dialect, checkpointsTable: ckpt, bindings: tables.map((table, i) => ({ table, spec: input.bindings[i]!.spec })) }, false),
  ]);
  sections.push([
    `Open: install the fence for ${name} (one transaction; the bumped fence value is then used by every commit)`,
    [t.fenceBump(ckpt, name, 0, FULL_RANGE_END), t.fenceSelect(ckpt, name, 0, FULL_RANGE_END), t.fenceInsert(ckpt, name, 0, FULL_RANGE_END, 0, '')],
  ]);
  const loadable = tables.filter((x) => !x.deltaUpdates && x.document !== undefined);
  sections.push(['Open: session temp tables on the load connection', loadable.map((x) => t.createLoadTable(x))]);
  sections.push(['Open: session temp tables on the store connection', tables.map((x) => t.createStoreTable!(x))]);

  const load = t.loadQuery(loadable);
  sections.push([
    'Each transaction, load connection: keys are bulk-loaded into #flow_temp_load_<n>, then one query returns the stored documents',
    [
      'BEGIN TRANSACTION;',
      ...(load === undefined ? [] : [load]),
      ...loadable.map((x) => t.truncateLoad(x)),
      'COMMIT TRANSACTION;',
    ],
  ]);
  const store: string[] = ['BEGIN TRANSACTION;'];
  for (const x of tables) {
    if (!x.deltaUpdates) store.push(`-- binding ${x.binding} (${x.path.join('.')}) when some stored key may already exist or is deleted:`, t.mergeFromStore!(x));
    store.push(`-- binding ${x.binding} (${x.path.join('.')})${x.deltaUpdates ? ' (delta updates)' : ' when every stored key is new'}:`, t.copyFromStore!(x), t.truncateStore!(x));
  }
  store.push(
    '-- the runtime checkpoint, under the fence (no row updated = fenced off by a newer instance: everything rolls back):',
    t.checkpointUpdate(ckpt, name, 0, FULL_RANGE_END, 0, '<runtime checkpoint JSON>'),
    'COMMIT TRANSACTION;',
  );
  sections.push(['Each transaction, store connection: rows are bulk-loaded into #flow_temp_store_<n> (with _flow_delete), then at commit', store]);

  const out = [
    `-- materialize-sqlserver offline review for ${name}: nothing was executed and no connection was made.`,
    `-- Database ${config.database} at ${config.address}, user ${config.user}${config.schema === undefined ? '' : `, schema ${config.schema}`}${config.hardDelete === true ? ', hard deletes' : ''}.`,
  ];
  out.push(...notes);
  for (const [title, stmts] of sections) {
    out.push('', `-- ${title}`);
    out.push(...stmts);
  }
  return `${out.join('\n')}\n`;
}
