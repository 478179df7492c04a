// The dialect: everything that differs between SQL databases when rendering SQL text. Every function here
// is pure (no I/O) so each statement can be snapshot-tested; a Client executes what a Dialect renders.
// No other code in a SQL connector builds identifiers or literals.
import type { JsonValue, TupleValue } from '@sluice/runtime';
import type { Column, ColumnInput, ExistingColumn, ExistingTable, Table } from './table.ts';
import type { SqlParam } from './client.ts';

/**
 * The column type a projection maps to, decided by the dialect from the projection's inference and the
 * user's field config. `ddl` never carries NOT NULL: nullability is a separate decision (Column.nullable).
 */
export interface MappedType {
  /** Column type as written in CREATE TABLE / ADD COLUMN, e.g. `BIGINT`, `varchar(900) COLLATE …`, `TEXT`. */
  ddl: string;
  /**
   * Convert one decoded value (a tuple element from keyPacked/valuesPacked, or the root document for the
   * document column) into the parameter bound for this column. Throws a SqlError for a value the column
   * cannot hold (e.g. a numeric string out of range).
   */
  toParam(value: TupleValue | JsonValue | undefined): SqlParam;
  /** True when the user gave an explicit DDL override (always treated as compatible with an existing column). */
  userDdl?: boolean;
  /**
   * The column's type in staging (temp) tables and in the bulk load that fills them, when it is not `ddl`:
   * a dialect that cannot bulk-load a (user-DDL) type exactly stages the column as text and lets the server
   * convert it into the target column.
   */
  stagingDdl?: string;
  /**
   * The document column only: the parameter for a document given as its JSON text (the store's `docJson`),
   * so it is not re-serialised. Without it, `toParam(doc)` is used.
   */
  fromJsonText?(json: string): SqlParam;
}

/** How an existing column relates to the type a selected field now maps to. */
export type ColumnCompatibility =
  | { kind: 'compatible' }
  /** The dialect can convert the column in place (rendered by `templates.alterColumns`). */
  | { kind: 'migratable' }
  | { kind: 'incompatible'; reason: string };

/** One change to an existing column, rendered by `templates.alterColumns`. */
export interface ColumnChange {
  /** The existing column, as described by the database. */
  existing: ExistingColumn;
  /** Drop NOT NULL (the field became nullable, or the column is no longer selected). */
  relaxNotNull: boolean;
  /** Convert the column to this field's mapped type (only when `compatibility` said `migratable`). */
  migrateTo?: Column;
}

/**
 * Statement templates. Each returns SQL text (one statement per string); callers execute the strings in
 * order and list them, joined by newlines, in Apply's `actionDescription`.
 *
 * Two store flows are supported, chosen by `Dialect.storeFlow`:
 * - `direct` (SQLite): each store runs `storeUpsert` / `storeInsert` / `storeDelete` with parameters,
 *   inside the store transaction that `checkpointUpdate` then commits.
 * - `staged` (SQL Server): rows are bulk-loaded (Connection.bulkInsert) into the session temp table
 *   `storeTable` with an extra `_flow_delete` flag column; at commit `mergeFromStore` (when any row may
 *   already exist, or deletes are present) or `copyFromStore` (all rows new) runs, then `truncateStore`.
 * Loads always bulk-load keys into the session temp table `loadTable`, run one `loadQuery` over every
 * binding (one round trip per flush), then `truncateLoad`.
 */
export interface StatementTemplates {
  /** Create a schema if it does not exist (databases without schemas return []). */
  createSchema(schema: string): string[];
  /** Create the target table if it does not exist: keys, values, document; PRIMARY KEY(keys) unless delta. */
  createTable(table: Table): string;
  /** Add columns (always nullable, whatever the field's nullability) to an existing table. */
  addColumns(table: Table, columns: Column[]): string[];
  /**
   * Relax NOT NULL and/or migrate column types of an existing table. `existing` is the whole table as
   * described, so dialects that must rebuild the table (SQLite) keep every column.
   */
  alterColumns(table: Table, existing: ExistingTable, changes: ColumnChange[]): string[];
  truncateTable(table: Table): string;
  dropTable(table: Table): string;
  /**
   * A query describing one table. It must return zero rows when the table does not exist, else one row per
   * column with these result columns (NULL where the database has no such notion): `column_name`,
   * `data_type` (base type, any case), `is_nullable` ('YES'|'NO'), `character_maximum_length`,
   * `numeric_precision`, `numeric_scale`, `datetime_precision`, `collation_name`, `is_primary_key` (0 = not in
   * the primary key, else the 1-based position in it).
   */
  describeTable(path: string[]): string;

  // --- load (keys staged per session, one join per flush) -----------------------------------------
  /** Raw and quoted name of the per-session temp table holding load keys of this binding. */
  loadTable(table: Table): { name: string; identifier: string };
  /** Create the load temp table (key columns with their mapped DDL); run once per session on the load connection. */
  createLoadTable(table: Table): string;
  /** Empty the load temp table after each flush. */
  truncateLoad(table: Table): string;
  /**
   * One query over the given standard tables, returning rows with the columns `binding` (the binding index) and
   * `doc` (the stored document's JSON text) for the staged keys that exist in the target (one arm per table joined
   * with UNION ALL). A table without a document column is only passed with `no_flow_document`; its arm rebuilds the
   * document from its root-level columns. Returns undefined when no table can be loaded from.
   */
  loadQuery(tables: Table[]): string | undefined;

  // --- store, direct flow ---------------------------------------------------------------------
  /** Parameterized upsert of one row (all columns in Table.columns order). Standard tables. */
  storeUpsert?(table: Table): string;
  /** Parameterized insert of one row (all columns in Table.columns order). Delta tables and new keys. */
  storeInsert?(table: Table): string;
  /** Parameterized delete by key (key columns in order). Hard deletes. */
  storeDelete?(table: Table): string;

  // --- store, staged flow ---------------------------------------------------------------------
  /** Raw and quoted name of the per-session temp table holding staged rows (+ `_flow_delete`). */
  storeTable?(table: Table): { name: string; identifier: string };
  /** Create the store temp table: every target column with its DDL, then `_flow_delete` (boolean). */
  createStoreTable?(table: Table): string;
  /** Apply staged rows: update matched, insert unmatched, delete matched rows flagged `_flow_delete` (standard only). */
  mergeFromStore?(table: Table): string;
  /** Insert every staged row (delta tables, or standard tables whose keys are all new). */
  copyFromStore?(table: Table): string;
  truncateStore?(table: Table): string;

  // --- checkpoints table and fence (see fence.ts for the protocol) ------------------------------
  /** Create `flow_checkpoints_v1` (materialization, key_begin, key_end, fence, checkpoint) if missing. */
  createCheckpointsTable(path: string[]): string;
  /** Bump the fence of every row of `materialization` whose key range overlaps [keyBegin, keyEnd]. Literal values. */
  fenceBump(path: string[], materialization: string, keyBegin: number, keyEnd: number): string;
  /**
   * Select `fence, key_begin, key_end, checkpoint` of the narrowest row of `materialization` covering
   * [keyBegin, keyEnd] (at most one row).
   */
  fenceSelect(path: string[], materialization: string, keyBegin: number, keyEnd: number): string;
  /** Insert the row for exactly [keyBegin, keyEnd]. */
  fenceInsert(path: string[], materialization: string, keyBegin: number, keyEnd: number, fence: number, checkpoint: string): string;
  /**
   * Write the checkpoint for exactly [keyBegin, keyEnd] guarded by `fence`. The commit must fail when
   * this affects no row: another instance has bumped the fence.
   */
  checkpointUpdate(path: string[], materialization: string, keyBegin: number, keyEnd: number, fence: number, checkpoint: string): string;
}

/** A SQL dialect: identifiers, literals, placeholders, type mapping and statement templates. */
export interface Dialect {
  /** Short name used in messages (`sqlite`, `sqlserver`). */
  name: string;
  /** Longest identifier the database accepts (characters); longer field names are FIELD_FORBIDDEN. */
  maxIdentifierLength: number;
  /** True when columns differing only by case collide (reported as Validated.caseInsensitiveFields). */
  caseInsensitiveColumns: boolean;
  /** Which store flow the transactor uses (see StatementTemplates). */
  storeFlow: 'direct' | 'staged';
  /** True when DDL can run inside a transaction (Apply then commits all statements atomically). */
  transactionalDdl: boolean;
  /** Quote one identifier component when needed (reserved word, not a simple lower-case name); escape inner quotes. */
  quoteIdentifier(name: string): string;
  /** Quote a multi-part path (schema.table), each part through quoteIdentifier. */
  quotePath(path: string[]): string;
  /** Render a literal value. */
  literal(value: string | number | bigint | boolean | null): string;
  /** The placeholder of the parameter at `index` (0-based), e.g. `?1` or `@p1`. */
  placeholder(index: number): string;
  /** The column type for one field (keys, values and the document). */
  mapType(input: ColumnInput): MappedType;
  /** Compare an existing column with the type a selected field now needs. */
  compatibility(existing: ExistingColumn, desired: Column): ColumnCompatibility;
  /** Fold a field name to the destination's spelling when it would not round-trip (usually the identity). */
  foldField?(field: string): string;
  templates: StatementTemplates;
}

/** Build the usual quoting function: bare iff a simple lower-case name that is not reserved, else `"…"` with `"` doubled. */
export function makeQuoter(reserved: ReadonlySet<string>): (name: string) => string {
  const simple = /^[_\p{Ll}][_\p{Ll}\p{Nd}]*$/u;
  return (name: string): string => {
    if (name.includes('\u0000')) throw new RangeError(`identifier ${JSON.stringify(name)} contains a NUL character, which SQL identifiers cannot hold`);
    if (simple.test(name) && !reserved.has(name.toLowerCase())) return name;
    return `"${name.replaceAll('"', '""')}"`;
  };
}

/** Standard SQL string literal: single quotes, embedded `'` doubled. */
export function stringLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
