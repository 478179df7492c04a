// The SQLite dialect: quoting (with SQLite's keyword list), literals, `?N` placeholders, type mapping and
// every statement template. Pure: no I/O.
import type { JsonValue, TupleValue } from '@sluice/runtime';
import type {
  Column, ColumnCompatibility, ColumnChange, ColumnInput, Dialect, ExistingColumn, ExistingTable, MappedType,
  SqlParam, StatementTemplates, Table,
} from '@sluice/materialize-sql';
import { makeQuoter, SqlError, stringLiteral } from '@sluice/materialize-sql';

/** SQLite's keywords (sqlite.org/lang_keywords.html), plus names with special meaning to it. */
export const SQLITE_RESERVED: ReadonlySet<string> = new Set(`
abort action add after all alter always analyze and as asc attach autoincrement before begin between by cascade
case cast check collate column commit conflict constraint create cross current current_date current_time
current_timestamp database default deferrable deferred delete desc detach distinct do drop each else end escape
except exclude exclusive exists explain fail filter first following for foreign from full generated glob group
groups having if ignore immediate in index indexed initially inner insert instead intersect into is isnull join
key last left like limit match materialized natural no not nothing notnull null nulls of offset on or order
others outer over partition plan pragma preceding primary query raise range recursive references regexp reindex
release rename replace restrict returning right rollback row rows savepoint select set table temp temporary then
ties to transaction trigger unbounded union unique update using vacuum values view virtual when where window with
without true false rowid oid _rowid_ main
`.trim().split(/\s+/));

const quote = makeQuoter(SQLITE_RESERVED);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const utf8 = new TextDecoder('utf-8', { fatal: false });

type Value = TupleValue | JsonValue | undefined;

function isBytes(v: unknown): v is Uint8Array { return v instanceof Uint8Array; }

/** Any value as text: strings as-is, JSON bytes decoded, objects as JSON. */
function asText(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (isBytes(v)) return utf8.decode(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
}

/** Any value as JSON text (object/array/multiple-typed columns). Bytes already are JSON text. */
function asJsonText(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (isBytes(v)) return utf8.decode(v);
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}

function asInteger(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new RangeError(`${v} is not an integer`);
    return v;
  }
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw new RangeError(`${v} is outside the 64-bit integer range of an INTEGER column; declare a maximum in the schema so the field maps to TEXT`);
    return v;
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  throw new TypeError(`expected an integer, got ${typeof v}`);
}

/** A numeric string (`format: integer`) into an INTEGER column: exact, or an error. */
function stringToInteger(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') return asInteger(v);
  const m = /^\s*([+-]?\d+)(?:\.0*)?\s*$/.exec(v);
  if (m === null) throw new RangeError(`'${v}' is not an integer string`);
  const n = BigInt(m[1]!);
  if (n < INT64_MIN || n > INT64_MAX) throw new RangeError(`'${v}' is outside the 64-bit range of an INTEGER column; give the field a maxLength over 18 so it maps to TEXT`);
  return Number.isSafeInteger(Number(n)) ? Number(n) : n;
}

/** A numeric string (`format: number`) into a REAL column; NaN becomes NULL (SQLite cannot store it). */
function stringToNumber(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isNaN(v) ? null : v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'string') throw new TypeError(`expected a numeric string, got ${typeof v}`);
  const t = v.trim();
  if (t === 'NaN') return null;
  if (t === 'Infinity' || t === '+Infinity') return Infinity;
  if (t === '-Infinity') return -Infinity;
  const n = Number(t);
  if (t === '' || Number.isNaN(n)) throw new RangeError(`'${v}' is not a number string`);
  return n;
}

function asReal(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isNaN(v) ? null : v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  throw new TypeError(`expected a number, got ${typeof v}`);
}

function asBoolean(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  throw new TypeError(`expected a boolean, got ${typeof v}`);
}

function base64ToBlob(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (isBytes(v)) return v;
  if (typeof v !== 'string') throw new TypeError(`expected a base64 string, got ${typeof v}`);
  const b = Buffer.from(v, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Pass values through with only the conversions node:sqlite needs (user DDL: the user chose the type). */
function passThrough(v: Value): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || isBytes(v)) return isBytes(v) ? utf8.decode(v) : v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return asJsonText(v);
}

function documentText(v: Value): SqlParam {
  if (v === null || v === undefined) throw new TypeError('the document is missing');
  if (isBytes(v)) return utf8.decode(v);
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

function outsideInt64(input: ColumnInput): boolean {
  const n = input.projection.inference?.numeric;
  if (n === undefined) return false;
  return (n.hasMinimum === true && (n.minimum ?? 0) < -9.223372036854776e18) || (n.hasMaximum === true && (n.maximum ?? 0) > 9.223372036854776e18);
}

export function mapSqliteType(input: ColumnInput): MappedType {
  const cfg = input.fieldConfig;
  if (typeof cfg.DDL === 'string' && cfg.DDL.trim() !== '') return { ddl: cfg.DDL.trim(), toParam: passThrough, userDdl: true };
  if (input.role === 'document') return { ddl: 'TEXT', toParam: documentText, fromJsonText: (json) => json };
  if (cfg.castToString === true) return { ddl: 'TEXT', toParam: (v) => (isBytes(v) || typeof v === 'object' ? asJsonText(v) : asText(v)) };
  switch (input.flatType) {
    case 'integer': return outsideInt64(input) ? { ddl: 'TEXT', toParam: asText } : { ddl: 'INTEGER', toParam: asInteger };
    case 'number': return { ddl: 'REAL', toParam: asReal };
    case 'boolean': return { ddl: 'BOOLEAN', toParam: asBoolean };
    case 'binary': return { ddl: 'BLOB', toParam: base64ToBlob };
    case 'string_integer': {
      const max = input.projection.inference?.string?.maxLength ?? 0;
      return max > 18 ? { ddl: 'TEXT', toParam: asText } : { ddl: 'INTEGER', toParam: stringToInteger };
    }
    case 'string_number': return { ddl: 'REAL', toParam: stringToNumber };
    case 'string': return { ddl: 'TEXT', toParam: asText };
    case 'object': case 'array': case 'multiple': return { ddl: 'TEXT', toParam: asJsonText };
    case 'none': throw new SqlError(`field '${input.field}' has no type and cannot be materialized`);
  }
}

function compatibility(existing: ExistingColumn, desired: Column): ColumnCompatibility {
  if (desired.mapped.userDdl === true) return { kind: 'compatible' };
  const have = existing.dataType.trim().toUpperCase();
  const want = desired.mapped.ddl.toUpperCase();
  if (have === want) return { kind: 'compatible' };
  if (desired.role !== 'key') {
    if (want === 'TEXT' && ['INTEGER', 'REAL', 'BOOLEAN'].includes(have)) return { kind: 'migratable' };
    if (want === 'REAL' && have === 'INTEGER') return { kind: 'migratable' };
  }
  const types = (desired.projection.inference?.types ?? []).join(', ');
  return { kind: 'incompatible', reason: `Field '${desired.field}' is already being materialized as endpoint type '${have}' but endpoint type '${want}' is required by its schema '{ type: [${types}] }'` };
}

function literal(v: string | number | bigint | boolean | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new RangeError(`${v} has no SQLite literal`);
    return String(v);
  }
  if (typeof v === 'bigint') return v.toString();
  return stringLiteral(v);
}

const placeholder = (i: number) => `?${i + 1}`;
const quotePath = (path: string[]) => path.map(quote).join('.');
const cols = (columns: Column[]) => columns.map((c) => c.identifier).join(', ');
// Statements run once per row use anonymous `?` parameters, bound in order: node:sqlite binds numbered `?N`
// parameters ~7× slower (measured: 384 parameters, 1.2 s vs 0.16 s per 200k rows).
const params = (n: number) => Array.from({ length: n }, () => '?').join(', ');

// Stores are single-row statements. Multi-row `INSERT … VALUES (…), (…)` statements (32 rows) were used until
// 2026-11-26: inside a transaction SQLite gives every statement that writes several rows and may abort a
// statement journal, a copy of each page it is about to change, so one failing row can undo its statement
// alone. With random keys a 32-row statement changes ~32 pages of the key index: a full page copied per row,
// which made page sizes above 4 KiB slower (64 KiB: 16.7 s of statement time for 500k rows instead of 3.3 s).
// A single-row statement needs no statement journal (`INSERT OR ROLLBACK` does not spare one: measured).
// At 4 KiB pages single-row statements cost about what 32-row ones did: on a recorded 500k-document pipeline
// session (random TEXT keys, 14 columns) connector CPU 11.6–13.4 s vs 11.5–13.6 s (load 6–8); with ascending
// keys (node:sqlite alone, the same rows) the two were within the noise of each other too.
function insertRow(t: Table): string {
  return `INSERT INTO ${t.identifier} (${cols(t.columns)}) VALUES (${params(t.columns.length)});`;
}

function upsertRow(t: Table): string {
  const sets = [...t.values, ...(t.document === undefined ? [] : [t.document])].map((c) => `${c.identifier} = excluded.${c.identifier}`);
  const action = sets.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${sets.join(', ')}`;
  return `INSERT INTO ${t.identifier} (${cols(t.columns)}) VALUES (${params(t.columns.length)}) ON CONFLICT (${cols(t.keys)}) ${action};`;
}
const colDef = (c: Column, forceNullable = false) => `${c.identifier} ${c.mapped.ddl}${!c.nullable && !forceNullable ? ' NOT NULL' : ''}`;
const loadTableName = (t: Table) => `flow_temp_load_${t.binding}`;
/** The target as seen from a connection that also holds temp tables: always qualified by `main`. */
const mainTable = (t: Table) => (t.path.length === 1 ? `main.${t.identifier}` : t.identifier);

function rebuildTable(table: Table, existing: ExistingTable, changes: ColumnChange[]): string[] {
  const name = table.path[table.path.length - 1]!;
  const tmp = quotePath([...table.path.slice(0, -1), `${name}_flowtmp`]);
  const byName = new Map(changes.map((c) => [c.existing.name, c]));
  const defs: string[] = [];
  const exprs: string[] = [];
  for (const ex of existing.columns) {
    const ch = byName.get(ex.name);
    const id = quote(ex.name);
    const type = ch?.migrateTo?.mapped.ddl ?? ex.dataType.toUpperCase();
    const notNull = !ex.nullable && ch?.relaxNotNull !== true && !(ch?.migrateTo?.nullable ?? false);
    defs.push(`\t${id}${type === '' ? '' : ` ${type}`}${notNull ? ' NOT NULL' : ''}`);
    if (ch?.migrateTo === undefined) exprs.push(id);
    else if (ex.dataType.toUpperCase() === 'BOOLEAN' && type === 'TEXT') exprs.push(`CASE WHEN ${id} IS NULL THEN NULL WHEN ${id} THEN 'true' ELSE 'false' END`);
    else exprs.push(`CAST(${id} AS ${type})`);
  }
  const pk = existing.columns.filter((c) => c.primaryKey > 0).sort((a, b) => a.primaryKey - b.primaryKey).map((c) => quote(c.name));
  if (pk.length > 0) defs.push(`\tPRIMARY KEY (${pk.join(', ')})`);
  return [
    `DROP TABLE IF EXISTS ${tmp};`,
    `CREATE TABLE ${tmp} (\n${defs.join(',\n')}\n);`,
    `INSERT INTO ${tmp} (${existing.columns.map((c) => quote(c.name)).join(', ')}) SELECT ${exprs.join(', ')} FROM ${table.identifier};`,
    `DROP TABLE ${table.identifier};`,
    `ALTER TABLE ${tmp} RENAME TO ${quote(name)};`,
  ];
}

const checkpointCols = `materialization, key_begin, key_end, fence, ${quote('checkpoint')}`;

const templates: StatementTemplates = {
  createSchema: () => [],
  createTable(t) {
    const defs = t.columns.map((c) => `\t${colDef(c)}`);
    if (!t.deltaUpdates) defs.push(`\tPRIMARY KEY (${cols(t.keys)})`);
    return `CREATE TABLE IF NOT EXISTS ${t.identifier} (\n${defs.join(',\n')}\n);`;
  },
  addColumns: (t, columns) => columns.map((c) => `ALTER TABLE ${t.identifier} ADD COLUMN ${colDef(c, true)};`),
  alterColumns: rebuildTable,
  truncateTable: (t) => `DELETE FROM ${t.identifier};`,
  dropTable: (t) => `DROP TABLE IF EXISTS ${t.identifier};`,
  describeTable(path) {
    const name = path[path.length - 1] ?? '';
    const schema = path.length > 1 ? path[0]! : 'main';
    return `SELECT name AS column_name, type AS data_type, CASE WHEN "notnull" = 1 THEN 'NO' ELSE 'YES' END AS is_nullable, NULL AS character_maximum_length, NULL AS numeric_precision, NULL AS numeric_scale, NULL AS datetime_precision, NULL AS collation_name, pk AS is_primary_key FROM pragma_table_info(${stringLiteral(name)}, ${stringLiteral(schema)}) ORDER BY cid;`;
  },

  loadTable: (t) => ({ name: loadTableName(t), identifier: `temp.${loadTableName(t)}` }),
  createLoadTable: (t) => `CREATE TEMP TABLE IF NOT EXISTS ${loadTableName(t)} (${t.keys.map((c) => `${c.identifier} ${c.mapped.ddl}`).join(', ')});`,
  truncateLoad: (t) => `DELETE FROM temp.${loadTableName(t)};`,
  loadQuery(tables) {
    const arms = tables.filter((t) => !t.deltaUpdates && t.document !== undefined).map((t) =>
      `SELECT ${t.binding} AS binding, r.${t.document!.identifier} AS doc FROM temp.${loadTableName(t)} AS l JOIN ${mainTable(t)} AS r ON ${t.keys.map((k) => `l.${k.identifier} = r.${k.identifier}`).join(' AND ')}`);
    return arms.length === 0 ? undefined : `${arms.join('\nUNION ALL\n')};`;
  },

  storeUpsert: upsertRow,
  storeInsert: insertRow,
  storeDelete: (t) => `DELETE FROM ${t.identifier} WHERE ${t.keys.map((k) => `${k.identifier} = ?`).join(' AND ')};`,

  createCheckpointsTable: (path) => `CREATE TABLE IF NOT EXISTS ${quotePath(path)} (\n\tmaterialization TEXT NOT NULL,\n\tkey_begin INTEGER NOT NULL,\n\tkey_end INTEGER NOT NULL,\n\tfence INTEGER NOT NULL,\n\t${quote('checkpoint')} TEXT NOT NULL,\n\tPRIMARY KEY (materialization, key_begin, key_end)\n);`,
  fenceBump: (path, m, b, e) => `UPDATE ${quotePath(path)} SET fence = fence + 1 WHERE materialization = ${literal(m)} AND key_end >= ${literal(b)} AND key_begin <= ${literal(e)};`,
  fenceSelect: (path, m, b, e) => `SELECT fence, key_begin, key_end, ${quote('checkpoint')} AS ${quote('checkpoint')} FROM ${quotePath(path)} WHERE materialization = ${literal(m)} AND key_begin <= ${literal(b)} AND key_end >= ${literal(e)} ORDER BY key_end - key_begin ASC LIMIT 1;`,
  fenceInsert: (path, m, b, e, fence, ckpt) => `INSERT INTO ${quotePath(path)} (${checkpointCols}) VALUES (${literal(m)}, ${literal(b)}, ${literal(e)}, ${literal(fence)}, ${literal(ckpt)});`,
  checkpointUpdate: (path, m, b, e, fence, ckpt) => `UPDATE ${quotePath(path)} SET ${quote('checkpoint')} = ${literal(ckpt)} WHERE materialization = ${literal(m)} AND key_begin = ${literal(b)} AND key_end = ${literal(e)} AND fence = ${literal(fence)};`,
};

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  // SQLite itself has no identifier limit; this bound keeps statements and error messages sane.
  maxIdentifierLength: 1024,
  caseInsensitiveColumns: true,
  storeFlow: 'direct',
  transactionalDdl: true,
  quoteIdentifier: quote,
  quotePath,
  literal,
  placeholder,
  mapType: mapSqliteType,
  compatibility,
  templates,
};
