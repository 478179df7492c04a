// Apply: bring the database in line with the materialization. Pure planning (planApply) then execution,
// so dry runs and snapshot tests see exactly the statements a real run executes.
import type { MaterializationBindingSpec } from '@sluice/runtime';
import type { Connection } from './client.ts';
import { inTransaction } from './client.ts';
import type { ColumnChange, Dialect } from './dialect.ts';
import type { ExistingTable, Table } from './table.ts';
import { parseExistingColumns } from './table.ts';
import { SqlConfigError } from './errors.ts';

export interface ApplyBinding {
  table: Table;
  spec: MaterializationBindingSpec;
  /** The same resource path's binding in the last materialization, if any. */
  last?: MaterializationBindingSpec;
  existing?: ExistingTable;
}

export interface ApplyPlanInput {
  dialect: Dialect;
  checkpointsTable: string[];
  bindings: ApplyBinding[];
  /**
   * Upstream's backfill flags: `always_drop_tables_on_backfill` drops and re-creates even a compatible table;
   * `retain_existing_data_on_backfill` keeps a compatible table's rows (no TRUNCATE) and refuses a backfill that
   * would have to re-create the table.
   */
  featureFlags?: Readonly<Record<string, boolean>>;
}

function sameName(dialect: Dialect, a: string, b: string): boolean {
  return dialect.caseInsensitiveColumns ? a.toLowerCase() === b.toLowerCase() : a === b;
}

function sameKey(a: string[] | undefined, b: string[] | undefined): boolean {
  return (a ?? []).length === (b ?? []).length && (a ?? []).every((k, i) => k === b?.[i]);
}

/** Statements for one binding's table. */
export function planTable(dialect: Dialect, b: ApplyBinding, featureFlags: Readonly<Record<string, boolean>> = {}): string[] {
  const t = dialect.templates;
  const { table, existing } = b;
  if (existing === undefined || existing.columns.length === 0) return [t.createTable(table)];
  const backfilled = b.last !== undefined && (b.spec.backfill ?? 0) !== (b.last.backfill ?? 0);

  const adds = [];
  const changes: ColumnChange[] = [];
  let needsRecreate: string | undefined;
  for (const col of table.columns) {
    const ex = existing.columns.find((c) => sameName(dialect, c.name, col.field));
    if (ex === undefined) {
      if (col.role === 'key' && !table.deltaUpdates) needsRecreate ??= `key field '${col.field}' has no column in the existing table`;
      adds.push(col);
      continue;
    }
    const compat = dialect.compatibility(ex, col);
    if (compat.kind === 'incompatible') {
      needsRecreate ??= compat.reason;
      continue;
    }
    if (compat.kind === 'migratable') {
      if (col.role === 'key') { needsRecreate ??= `key column ${ex.name} would need a type migration`; continue; }
      changes.push({ existing: ex, relaxNotNull: !ex.nullable && col.nullable, migrateTo: col });
    } else if (!ex.nullable && col.nullable) {
      changes.push({ existing: ex, relaxNotNull: true });
    }
  }
  if (!table.deltaUpdates) {
    const pk = existing.columns.filter((c) => c.primaryKey > 0).sort((x, y) => x.primaryKey - y.primaryKey).map((c) => c.name);
    const want = table.keys.map((k) => k.field);
    if (pk.length !== want.length || pk.some((n, i) => !sameName(dialect, n, want[i]!))) needsRecreate ??= `the table's primary key (${pk.join(', ')}) differs from the collection key fields (${want.join(', ')})`;
  }
  // Existing NOT NULL columns no longer selected must accept NULL now.
  for (const ex of existing.columns) {
    if (ex.nullable || ex.primaryKey > 0) continue;
    if (!table.columns.some((c) => sameName(dialect, ex.name, c.field))) changes.push({ existing: ex, relaxNotNull: true });
  }

  if (backfilled) {
    // As upstream: a changed collection key always re-creates; the flags force or forbid re-creating.
    if (!sameKey(b.last?.collection.key, b.spec.collection.key)) needsRecreate ??= `the collection key changed (${(b.last?.collection.key ?? []).join(', ')} → ${(b.spec.collection.key ?? []).join(', ')})`;
    if (featureFlags.always_drop_tables_on_backfill === true) needsRecreate ??= 'the always_drop_tables_on_backfill feature flag is set';
    if (needsRecreate !== undefined) {
      if (featureFlags.retain_existing_data_on_backfill === true) {
        throw new SqlConfigError(`backfill for binding ${JSON.stringify(table.path)} requires dropping and re-creating the table (${needsRecreate}), but the 'retain_existing_data_on_backfill' feature flag is enabled. Disable the feature flag by removing 'retain_existing_data_on_backfill' from 'advanced.feature_flags' in the endpoint configuration`);
      }
      return [t.dropTable(table), t.createTable(table)];
    }
    const out = featureFlags.retain_existing_data_on_backfill === true ? [] : [t.truncateTable(table)];
    if (changes.length > 0) out.push(...t.alterColumns(table, existing, changes));
    if (adds.length > 0) out.push(...t.addColumns(table, adds));
    return out;
  }
  if (needsRecreate !== undefined) {
    throw new SqlConfigError(`table ${table.path.join('.')} cannot be updated in place: ${needsRecreate}. Backfill the binding to re-create the table`);
  }
  // Alter before adding: a dialect that rebuilds the table (SQLite) rebuilds it from the described columns.
  const out: string[] = [];
  if (changes.length > 0) out.push(...t.alterColumns(table, existing, changes));
  if (adds.length > 0) out.push(...t.addColumns(table, adds));
  return out;
}

/** Every statement Apply runs, in order. */
export function planApply(input: ApplyPlanInput, checkpointsTableExists: boolean): string[] {
  const { dialect } = input;
  const t = dialect.templates;
  const out: string[] = [];
  const schemas = new Set<string>();
  for (const p of [input.checkpointsTable, ...input.bindings.map((b) => b.table.path)]) if (p.length > 1) schemas.add(p[0]!);
  for (const s of schemas) out.push(...t.createSchema(s));
  if (!checkpointsTableExists) out.push(t.createCheckpointsTable(input.checkpointsTable));
  for (const b of input.bindings) out.push(...planTable(dialect, b, input.featureFlags));
  return out;
}

/** Describe a table through the dialect's describeTable query; undefined when it does not exist. */
export async function describeTable(conn: Connection, dialect: Dialect, path: string[]): Promise<ExistingTable | undefined> {
  const rows = await conn.query(dialect.templates.describeTable(path));
  if (rows.length === 0) return undefined;
  return { path, columns: parseExistingColumns(rows) };
}

/** Plan and (unless dryRun) execute. Returns the statements (the action description lines). */
export async function runApply(conn: Connection, input: Omit<ApplyPlanInput, 'bindings'> & { bindings: Omit<ApplyBinding, 'existing'>[] }, dryRun: boolean): Promise<string[]> {
  const { dialect } = input;
  const bindings: ApplyBinding[] = [];
  for (const b of input.bindings) {
    const existing = await describeTable(conn, dialect, b.table.path);
    bindings.push(existing === undefined ? b : { ...b, existing });
  }
  const ckpt = await describeTable(conn, dialect, input.checkpointsTable);
  const statements = planApply({ ...input, bindings }, ckpt !== undefined);
  if (dryRun || statements.length === 0) return statements;
  const run = async () => { for (const s of statements) await conn.exec(s); };
  if (dialect.transactionalDdl) await inTransaction(conn, run);
  else await run();
  return statements;
}
