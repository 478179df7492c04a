// The T-SQL dialect: quoting, literals, placeholders, type mapping, compatibility/migrations and every statement
// template. Pure: no I/O. `sqlserver-client.ts` executes what this renders.
import { makeQuoter, SqlConfigError } from '@sluice/materialize-sql';
import type {
  Column, ColumnCompatibility, ColumnInput, Dialect, ExistingColumn, MappedType,
  StatementTemplates, Table,
} from '@sluice/materialize-sql';
import { RESERVED } from './reserved-words.ts';
import { stringBaseType } from './collation.ts';
import {
  jsonText, toBigInt, toBinary, toBit, toDecimalText, toDouble, toNumericText, toText,
} from './values.ts';

export const CHECKPOINTS_TABLE = 'flow_checkpoints_v1';
/** Flag column of the store temp table: 1 = delete the target row. */
export const DELETE_FLAG_COLUMN = '_flow_delete';
/** SQL Server's limit for an index key (and so a primary key), in bytes. */
export const MAX_KEY_BYTES = 900;
/** ±2^63: integers whose inferred bounds reach past these do not fit BIGINT. */
const INT64_MAX = 2 ** 63;
const INT64_MIN = -(2 ** 63);

export interface SqlServerDialectOptions {
  /** Collation of every string column (see collation.ts). */
  collation: string;
  /** Feature flags (config.ts parseFeatureFlags). */
  flags?: Readonly<Record<string, boolean>>;
}

/** The one quoting function: bare iff a simple lower-case name that is not reserved, else `"…"` with `"` doubled. */
export const quoteIdentifier: (name: string) => string = makeQuoter(RESERVED);

export function quotePath(path: readonly string[]): string {
  return path.map((p) => quoteIdentifier(p)).join('.');
}

/** N'…' literal, `'` doubled (N: names and checkpoints are Unicode whatever the database's code page). */
export function literal(value: string | number | bigint | boolean | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`cannot render ${value} as a T-SQL literal`);
    return String(value);
  }
  if (value.includes('\u0000')) throw new RangeError('a T-SQL string literal cannot hold a NUL character');
  return `N'${value.replaceAll("'", "''")}'`;
}

/**
 * A name as OBJECT_ID / sp_rename parse it, inside a string literal: each part in brackets with `]` doubled
 * (bracket quoting does not depend on QUOTED_IDENTIFIER), the whole rendered as an N'…' literal.
 */
export function objectNameLiteral(path: readonly string[]): string {
  return literal(path.map((p) => `[${p.replaceAll(']', ']]')}]`).join('.'));
}

/**
 * User-DDL base types staged with the user's very DDL: those the client's bulk load encodes exactly
 * (sqlserver-client.ts bulkColumn). Keep the two in step.
 */
export const USER_DDL_STAGED_AS_IS: ReadonlySet<string> = new Set([
  'bigint', 'int', 'smallint', 'tinyint', 'bit', 'float', 'real', 'decimal', 'numeric',
  'date', 'datetime2', 'time', 'datetime', 'smalldatetime', 'varchar', 'nvarchar', 'varbinary', 'uniqueidentifier',
]);
/** Character types: they carry a collation. */
const CHARACTER_TYPES: ReadonlySet<string> = new Set(['char', 'varchar', 'nchar', 'nvarchar']);
/** Fixed-length user-DDL types staged as their variable-length twins (same size and collation). */
const FIXED_TO_VARIABLE: Readonly<Record<string, string>> = { char: 'varchar', nchar: 'nvarchar', binary: 'varbinary' };

/** The value conversion for a user-DDL column, by its base type (what the staged type's bulk encoder takes). */
function userDdlParam(base: string, field: string): MappedType['toParam'] {
  switch (base) {
    case 'bigint': case 'int': case 'smallint': case 'tinyint': return (v) => toBigInt(v, field);
    case 'float': case 'real': return (v) => toDouble(v, field);
    case 'bit': return (v) => toBit(v, field);
    case 'decimal': case 'numeric': return (v) => toNumericText(v, field);
    case 'varbinary': case 'binary': return (v) => toBinary(v, field);
    default: return (v) => (typeof v === 'boolean' ? (v ? '1' : '0') : toDecimalText(v));
  }
}

/** The type part of a DDL (`DECIMAL(20, 2)` of `DECIMAL(20, 2) COLLATE …`), for CAST(… AS …). */
export function castType(ddl: string): string {
  const m = /^\s*[A-Za-z0-9_]+(?:\s+PRECISION)?\s*(?:\([^)]*\))?/i.exec(ddl);
  return (m?.[0] ?? ddl).trim();
}

/** The base type of a DDL string as INFORMATION_SCHEMA reports it, with its length (-1 = MAX). */
export function ddlBaseType(ddl: string): { type: string; length: number | null } {
  const m = /^\s*([A-Za-z0-9_]+(?:\s+PRECISION)?)\s*(?:\(\s*(MAX|\d+)\s*(?:,\s*\d+\s*)?\))?/i.exec(ddl);
  if (m === null) return { type: ddl.trim().toLowerCase(), length: null };
  let type = m[1]!.toLowerCase().replace(/\s+/g, ' ');
  if (type === 'double precision') type = 'float';
  const len = m[2] === undefined ? null : m[2].toUpperCase() === 'MAX' ? -1 : Number(m[2]);
  return { type, length: len };
}

function describeSchema(input: ColumnInput): string {
  const inf = input.projection.inference ?? {};
  const parts = [`type: [${(inf.types ?? []).join(', ')}]`];
  if (inf.string?.format !== undefined) parts.push(`format: ${inf.string.format}`);
  if (inf.string?.contentEncoding !== undefined) parts.push(`contentEncoding: ${inf.string.contentEncoding}`);
  if (inf.string?.maxLength !== undefined && inf.string.maxLength > 0) parts.push(`maxLength: ${inf.string.maxLength}`);
  return `{ ${parts.join(', ')} }`;
}

/** As upstream words it: the upper-cased base type, `(N)` only for a positive length (MAX reads as the bare type). */
function existingTypeText(c: ExistingColumn): string {
  const t = c.dataType.toUpperCase();
  if (c.charLength !== null && c.charLength > 0) return `${t}(${c.charLength})`;
  return t;
}

/** The column type of an existing column rebuilt from INFORMATION_SCHEMA (for ALTER COLUMN … NULL). */
export function existingColumnDdl(c: ExistingColumn): string {
  const t = c.dataType.toLowerCase();
  let ddl = t.toUpperCase();
  if (['decimal', 'numeric'].includes(t) && c.numericPrecision !== null) ddl += `(${c.numericPrecision}, ${c.numericScale ?? 0})`;
  else if (['time', 'datetime2', 'datetimeoffset'].includes(t) && c.datetimePrecision !== null) ddl += `(${c.datetimePrecision})`;
  else if (['char', 'varchar', 'nchar', 'nvarchar', 'binary', 'varbinary'].includes(t) && c.charLength !== null) {
    ddl += `(${c.charLength === -1 ? 'MAX' : c.charLength})`;
  }
  if (c.collation !== null && ['char', 'varchar', 'nchar', 'nvarchar', 'text', 'ntext'].includes(t)) ddl += ` COLLATE ${c.collation}`;
  return ddl;
}

/** How a migration converts an existing column: in place, or through a new column filled by an expression. */
type MigrationPath = { kind: 'direct' } | { kind: 'rename'; expr: (column: string) => string };

/** Base64 encode/decode through XQuery: `xs:base64Binary(sql:column("[name]"))` cast to `target`. */
function base64Cast(column: string, target: string): string {
  const ref = `[${column.replaceAll(']', ']]').replaceAll('"', '""')}]`;
  return `CAST(N'' AS XML).value(${literal(`xs:base64Binary(sql:column("${ref}"))`)}, '${target}')`;
}

/**
 * `advanced.no_flow_document`: a standard table without the document column serves loads with the document rebuilt
 * from its root-level columns (as upstream's loadQueryNoFlowDocument), each column turned back into its JSON form:
 * numeric strings as text, DATE/DATETIME2/TIME in their RFC 3339 forms (UTC, up to 7 fractional digits), VARBINARY as
 * base64. Object and array columns hold JSON text and are embedded as JSON (JSON_QUERY); upstream returns them as
 * strings. Nested and unselected fields are not in the rebuilt document.
 */
function rebuiltDocument(t: Table): string {
  const cols = t.columns.filter((c) => /^\/[^/]+$/.test(c.projection.ptr ?? ''));
  const value = (c: Column): string => {
    const ref = `r.${c.identifier}`;
    const base = ddlBaseType(c.mapped.ddl).type;
    if (c.mapped.userDdl === true) return ref;
    if (c.flatType === 'string_integer' || c.flatType === 'string_number') return `CAST(${ref} AS NVARCHAR(MAX))`;
    if (c.flatType === 'object' || c.flatType === 'array') return `JSON_QUERY(${ref})`;
    if (base === 'date') return `FORMAT(${ref}, 'yyyy-MM-dd')`;
    if (base === 'datetime2') return `FORMAT(${ref} AT TIME ZONE 'UTC', 'yyyy-MM-ddTHH:mm:ss.FFFFFFF') + 'Z'`;
    if (base === 'time') return `FORMAT(${ref}, 'HH:mm:ss.FFFFFFF')`;
    if (base === 'varbinary') {
      const col = `r.[${c.field.replaceAll(']', ']]').replaceAll('"', '""')}]`;
      return `CAST(N'' AS XML).value(${literal(`xs:base64Binary(sql:column("${col}"))`)}, 'VARCHAR(MAX)')`;
    }
    return ref;
  };
  return `(SELECT ${cols.map((c) => `${value(c)} AS ${c.identifier}`).join(', ')} FOR JSON PATH, INCLUDE_NULL_VALUES, WITHOUT_ARRAY_WRAPPER)`;
}

export interface SqlServerDialect extends Dialect {
  collation: string;
  /** `varchar` with a UTF-8 collation, else `nvarchar`. */
  stringType: 'varchar' | 'nvarchar';
}

export function createSqlServerDialect(options: SqlServerDialectOptions): SqlServerDialect {
  const { collation } = options;
  const flags = options.flags ?? {};
  const flag = (name: string, dflt: boolean) => flags[name] ?? dflt;
  const base = stringBaseType(collation);
  const maxChars = base === 'varchar' ? 8000 : 4000;
  const bytesPerChar = base === 'varchar' ? 4 : 2;
  const TEXT = `${base}(MAX) COLLATE ${collation}`;
  /** A key string: 900 bytes (nvarchar holds 2 bytes per character). */
  const PKTEXT = `${base}(${MAX_KEY_BYTES / (base === 'varchar' ? 1 : 2)}) COLLATE ${collation}`;

  const textType = (isKey: boolean): MappedType => ({ ddl: isKey ? PKTEXT : TEXT, toParam: toText });

  /**
   * A user's DDL (`fields.<f>.DDL`). Staged with that very type when the bulk load can encode it exactly
   * (USER_DDL_STAGED_AS_IS); a fixed-length char/nchar/binary as its variable-length twin of the same size and
   * collation (the bulk load sends variable-length data; the server pads on MERGE, and key joins cast back);
   * anything else (MONEY, DATETIMEOFFSET, XML, …) as the connector's text type, converted by the server on MERGE.
   * Values are converted for the staged type: exact integers, exact decimals (as text, scaled by the client),
   * base64-decoded bytes for binary types, text otherwise.
   */
  function userDdlType(ddl: string, input: ColumnInput): MappedType {
    const field = input.field;
    const base = ddlBaseType(ddl).type;
    const fixed = FIXED_TO_VARIABLE[base];
    const mapped: MappedType = { ddl, userDdl: true, toParam: userDdlParam(base, field) };
    if (fixed !== undefined) mapped.stagingDdl = ddl.replace(/^\s*[A-Za-z]+/, fixed);
    else if (!USER_DDL_STAGED_AS_IS.has(base)) mapped.stagingDdl = input.role === 'key' ? PKTEXT : TEXT;
    // A character column without COLLATE takes the database's default collation in the target, but tempdb's in a
    // #temp table: staging says DATABASE_DEFAULT (the current database's), so both sides compare and convert alike.
    if (CHARACTER_TYPES.has(base) && !/\bCOLLATE\b/i.test(ddl)) mapped.stagingDdl = `${mapped.stagingDdl ?? ddl} COLLATE DATABASE_DEFAULT`;
    return mapped;
  }

  /** Strings without a format: sized from maxLength when known (4 bytes per character for UTF-8). */
  const sizedText = (input: ColumnInput, isKey: boolean): MappedType => {
    const maxLength = input.projection.inference?.string?.maxLength ?? 0;
    const units = base === 'varchar' ? maxLength * bytesPerChar : maxLength;
    const keyLimit = MAX_KEY_BYTES / (base === 'varchar' ? 1 : 2);
    if (maxLength > 0 && units <= maxChars) {
      const size = isKey ? Math.min(units, keyLimit) : units;
      return { ddl: `${base}(${size}) COLLATE ${collation}`, toParam: toText };
    }
    return textType(isKey);
  };

  function mapType(input: ColumnInput): MappedType {
    const isKey = input.role === 'key';
    const field = input.field;
    const cfg = input.fieldConfig;
    if (typeof cfg.DDL === 'string' && cfg.DDL.trim() !== '') return userDdlType(cfg.DDL.trim(), input);
    // The document as the runtime sent it (exact digits, no re-serialisation); jsonText when only the object is at hand.
    if (input.role === 'document') return { ddl: TEXT, toParam: jsonText, fromJsonText: (json) => json };
    if (cfg.castToString === true) return { ...sizedText(input, isKey), toParam: toText };

    switch (input.flatType) {
      case 'integer': {
        const n = input.projection.inference?.numeric;
        const tooBig = (n?.hasMaximum === true && (n.maximum ?? 0) > INT64_MAX) || (n?.hasMinimum === true && (n.minimum ?? 0) < INT64_MIN);
        if (tooBig) return { ddl: isKey ? PKTEXT : TEXT, toParam: toDecimalText };
        return { ddl: 'BIGINT', toParam: (v) => toBigInt(v, field) };
      }
      case 'number':
        return { ddl: 'DOUBLE PRECISION', toParam: (v) => toDouble(v, field) };
      case 'boolean':
        return { ddl: 'BIT', toParam: (v) => toBit(v, field) };
      case 'object': case 'array': case 'multiple':
        return { ddl: isKey ? PKTEXT : TEXT, toParam: jsonText };
      case 'binary':
        if (flag('native_binary_column_type', true)) return { ddl: isKey ? `VARBINARY(${MAX_KEY_BYTES})` : 'VARBINARY(MAX)', toParam: (v) => toBinary(v, field) };
        return textType(isKey);
      case 'string_integer': {
        const maxLength = input.projection.inference?.string?.maxLength ?? 0;
        if (maxLength === 0 || maxLength <= 18) return { ddl: 'BIGINT', toParam: (v) => toBigInt(v, field) };
        return { ddl: TEXT, toParam: toText };
      }
      case 'string_number':
        return { ddl: 'DOUBLE PRECISION', toParam: (v) => toDouble(v, field) };
      case 'string': {
        const keysAsString = isKey && flag('datetime_keys_as_string', true);
        switch (input.format) {
          case 'date': return keysAsString ? textType(true) : { ddl: 'DATE', toParam: toText };
          case 'date-time': return keysAsString ? textType(true) : { ddl: 'DATETIME2', toParam: toText };
          case 'time': return keysAsString ? textType(true) : { ddl: 'TIME', toParam: toText };
          default: return sizedText(input, isKey);
        }
      }
      default:
        throw new SqlConfigError(`field '${field}' has no materializable type (its schema allows only null, or nothing)`);
    }
  }

  /** The migration from an existing column to a desired type, if SQL Server can do one. */
  function migration(existing: ExistingColumn, desired: Column): MigrationPath | undefined {
    const want = ddlBaseType(desired.mapped.ddl);
    const have = existing.dataType.toLowerCase();
    const wantString = want.type === 'varchar' || want.type === 'nvarchar';
    if (wantString && want.length === -1) {
      if (have === 'datetime2' || have === 'datetimeoffset' || have === 'datetime') {
        return { kind: 'rename', expr: (c) => `FORMAT(${quoteIdentifier(c)} AT TIME ZONE 'UTC', 'yyyy-MM-ddTHH:mm:ss.FFFFFFF') + 'Z'` };
      }
      if (have === 'varbinary' || have === 'binary') {
        return { kind: 'rename', expr: (c) => base64Cast(c, 'VARCHAR(MAX)') };
      }
      return { kind: 'direct' };
    }
    if (wantString && (have === 'varchar' || have === 'nvarchar') && want.length !== null) {
      if (existing.charLength === -1) return undefined; // MAX cannot shrink
      if (have === want.type && (existing.charLength ?? 0) <= want.length) return { kind: 'direct' };
      if (have === 'nvarchar' && want.type === 'varchar') return { kind: 'direct' };
      return undefined;
    }
    if (want.type === 'float' && have === 'bigint') return { kind: 'direct' };
    if (want.type === 'varbinary' && (have === 'varchar' || have === 'nvarchar')) {
      return { kind: 'rename', expr: (c) => base64Cast(c, 'VARBINARY(MAX)') };
    }
    return undefined;
  }

  function compatibility(existing: ExistingColumn, desired: Column): ColumnCompatibility {
    if (desired.mapped.userDdl === true) return { kind: 'compatible' };
    const want = ddlBaseType(desired.mapped.ddl);
    const have = existing.dataType.toLowerCase();
    if (have === want.type) {
      if (want.length === null || existing.charLength === -1) return { kind: 'compatible' };
      if (want.length !== -1 && existing.charLength !== null && existing.charLength >= want.length) return { kind: 'compatible' };
    }
    const path = desired.role === 'key' || existing.primaryKey > 0 ? undefined : migration(existing, desired);
    if (path !== undefined) return { kind: 'migratable' };
    return {
      kind: 'incompatible',
      reason: `Field '${desired.field}' is already being materialized as endpoint type '${existingTypeText(existing)}' but endpoint type `
        + `'${desired.mapped.ddl.replace(/\s+COLLATE\s+\S+$/i, '').toUpperCase()}' is required by its schema '${describeSchema(desired)}'`,
    };
  }

  const columnDef = (c: Column, notNull: boolean) => `${c.identifier} ${c.mapped.ddl}${notNull ? ' NOT NULL' : ''}`;
  const keyList = (t: Table) => t.keys.map((k) => k.identifier).join(', ');
  const loadName = (t: Table) => `#flow_temp_load_${t.binding}`;
  const storeName = (t: Table) => `#flow_temp_store_${t.binding}`;
  /**
   * Join a target table (alias `target`) with its staging table (alias `staged`) on the key. Staged keys have
   * the target's own types (same collation), so the comparison is between equal types and the target's primary
   * key index is seeked; a user-DDL key staged as another type (see userDdlType) is cast back to the target's.
   */
  const joinOn = (t: Table, target: string, staged: string) => t.keys.map((k) => {
    const side = `${staged}.${k.identifier}`;
    return `${target}.${k.identifier} = ${k.mapped.stagingDdl === undefined ? side : `CAST(${side} AS ${castType(k.mapped.ddl)})`}`;
  }).join(' AND ');
  /**
   * A staging (temp-table) column: the target's column type (or the user-DDL staging type), exactly what the
   * client declares to the TDS bulk load (sqlserver-client.ts bulkColumn). Keys are NOT NULL where the target's
   * are; values stay nullable, so a deletion's document that lacks a required value still stages (the row is
   * deleted, never written).
   */
  const stagedColumn = (t: Table, c: Column) => {
    const notNull = c.role === 'key' && (!c.nullable || !t.deltaUpdates);
    return `\t${c.identifier} ${c.mapped.stagingDdl ?? c.mapped.ddl}${notNull ? ' NOT NULL' : ''}`;
  };
  const checkpointsPath = (path: string[]) => quotePath(path);

  function createTableIfMissing(path: readonly string[], body: string): string {
    return `IF OBJECT_ID(${objectNameLiteral(path)}, N'U') IS NULL\nCREATE TABLE ${quotePath(path)} (\n${body}\n);`;
  }

  const templates: StatementTemplates = {
    createSchema(schema) {
      const create = `CREATE SCHEMA ${quoteIdentifier(schema)}`;
      return [`IF SCHEMA_ID(${literal(schema)}) IS NULL\nEXEC(${literal(create)});`];
    },
    createTable(table) {
      const lines = table.columns.map((c) => `\t${columnDef(c, !c.nullable || (c.role === 'key' && !table.deltaUpdates))}`);
      if (!table.deltaUpdates) lines.push(`\tPRIMARY KEY (${keyList(table)})`);
      return createTableIfMissing(table.path, lines.join(',\n'));
    },
    addColumns(table, columns) {
      if (columns.length === 0) return [];
      return [`ALTER TABLE ${table.identifier} ADD\n${columns.map((c) => `\t${columnDef(c, false)}`).join(',\n')};`];
    },
    alterColumns(table, existing, changes) {
      const out: string[] = [];
      const renames: string[] = [];
      const has = (name: string) => existing.columns.some((c) => c.name.toLowerCase() === name.toLowerCase());
      for (const ch of changes) {
        const col = quoteIdentifier(ch.existing.name);
        const target = ch.migrateTo;
        // A NOT NULL column stays NOT NULL through a migration unless the field became nullable.
        const keepNotNull = !ch.existing.nullable && !ch.relaxNotNull && target !== undefined && !target.nullable;
        if (target === undefined) {
          if (ch.relaxNotNull) out.push(`ALTER TABLE ${table.identifier} ALTER COLUMN ${col} ${existingColumnDdl(ch.existing)} NULL;`);
          continue;
        }
        const path = migration(ch.existing, target);
        if (path === undefined) throw new SqlConfigError(`column ${ch.existing.name} of ${table.path.join('.')} cannot be migrated to ${target.mapped.ddl}`);
        if (path.kind === 'direct') {
          out.push(`ALTER TABLE ${table.identifier} ALTER COLUMN ${col} ${target.mapped.ddl}${keepNotNull ? ' NOT NULL' : ' NULL'};`);
          continue;
        }
        // Through a new column: add, fill, drop the old one, rename the new one into place. Each step is
        // idempotent from where a crash could leave it (the temp column already exists → skip adding it).
        const tmpName = `${ch.existing.name}_flowtmp1`;
        const tmp = quoteIdentifier(tmpName);
        if (!has(tmpName)) renames.push(`ALTER TABLE ${table.identifier} ADD ${tmp} ${target.mapped.ddl};`);
        renames.push(`UPDATE ${table.identifier} SET ${tmp} = ${path.expr(ch.existing.name)};`);
        renames.push(`ALTER TABLE ${table.identifier} DROP COLUMN ${col};`);
        renames.push(`EXEC sp_rename ${objectNameLiteral([...table.path, tmpName])}, ${literal(ch.existing.name)}, N'COLUMN';`);
        if (keepNotNull) {
          renames.push(`ALTER TABLE ${table.identifier} ALTER COLUMN ${col} ${target.mapped.ddl} NOT NULL;`);
        }
      }
      return [...out, ...renames];
    },
    truncateTable: (table) => `TRUNCATE TABLE ${table.identifier};`,
    dropTable: (table) => `DROP TABLE ${table.identifier};`,
    describeTable(path) {
      const [schema, name] = path.length >= 2 ? [literal(path[path.length - 2]!), literal(path[path.length - 1]!)] : ['SCHEMA_NAME()', literal(path[0] ?? '')];
      return [
        'SELECT c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.IS_NULLABLE AS is_nullable,',
        '\tc.CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, c.NUMERIC_PRECISION AS numeric_precision,',
        '\tc.NUMERIC_SCALE AS numeric_scale, c.DATETIME_PRECISION AS datetime_precision, c.COLLATION_NAME AS collation_name,',
        '\tCOALESCE((SELECT TOP 1 k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS tc',
        '\t\tJOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME',
        "\t\tWHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME), 0) AS is_primary_key",
        'FROM INFORMATION_SCHEMA.COLUMNS AS c',
        `WHERE c.TABLE_SCHEMA = ${schema} AND c.TABLE_NAME = ${name}`,
        'ORDER BY c.ORDINAL_POSITION;',
      ].join('\n');
    },

    loadTable: (t) => ({ name: loadName(t), identifier: loadName(t) }),
    createLoadTable(t) {
      const cols = t.keys.map((k) => `\t${k.identifier} ${k.mapped.stagingDdl ?? k.mapped.ddl} NOT NULL`);
      cols.push(`\tPRIMARY KEY (${keyList(t)})`);
      return `CREATE TABLE ${loadName(t)} (\n${cols.join(',\n')}\n);`;
    },
    truncateLoad: (t) => `TRUNCATE TABLE ${loadName(t)};`,
    loadQuery(tables) {
      const arms = tables
        .filter((t) => !t.deltaUpdates)
        .map((t) => `SELECT ${t.binding} AS binding, ${t.document === undefined ? rebuiltDocument(t) : `r.${t.document.identifier}`} AS doc\n\tFROM ${loadName(t)} AS l\n\tJOIN ${t.identifier} AS r ON ${joinOn(t, 'r', 'l')}`);
      return arms.length === 0 ? undefined : `${arms.join('\nUNION ALL\n')};`;
    },

    storeTable: (t) => ({ name: storeName(t), identifier: storeName(t) }),
    createStoreTable(t) {
      const cols = t.columns.map((c) => stagedColumn(t, c));
      cols.push(`\t${DELETE_FLAG_COLUMN} BIT`);
      if (!t.deltaUpdates) cols.push(`\tPRIMARY KEY (${keyList(t)})`);
      return `CREATE TABLE ${storeName(t)} (\n${cols.join(',\n')}\n);`;
    },
    mergeFromStore(t) {
      const all = t.columns.map((c) => c.identifier);
      const nonKeys = t.columns.filter((c) => c.role !== 'key');
      const lines = [
        `MERGE INTO ${t.identifier} AS l`,
        `USING ${storeName(t)} AS r`,
        `ON ${joinOn(t, 'l', 'r')}`,
      ];
      if (!t.deltaUpdates) lines.push(`WHEN MATCHED AND r.${DELETE_FLAG_COLUMN} = 1 THEN DELETE`);
      if (nonKeys.length > 0) lines.push(`WHEN MATCHED THEN UPDATE SET ${nonKeys.map((c) => `l.${c.identifier} = r.${c.identifier}`).join(', ')}`);
      lines.push(`WHEN NOT MATCHED${t.deltaUpdates ? '' : ` AND r.${DELETE_FLAG_COLUMN} = 0`} THEN`);
      lines.push(`\tINSERT (${all.join(', ')})`);
      lines.push(`\tVALUES (${all.map((c) => `r.${c}`).join(', ')});`);
      return lines.join('\n');
    },
    copyFromStore(t) {
      const all = t.columns.map((c) => c.identifier).join(', ');
      return `INSERT INTO ${t.identifier} (${all})\nSELECT ${all} FROM ${storeName(t)}${t.deltaUpdates ? '' : `\nWHERE ${DELETE_FLAG_COLUMN} = 0`};`;
    },
    truncateStore: (t) => `TRUNCATE TABLE ${storeName(t)};`,

    createCheckpointsTable(path) {
      return createTableIfMissing(path, [
        `\tmaterialization ${PKTEXT} NOT NULL`,
        '\tkey_begin BIGINT NOT NULL',
        '\tkey_end BIGINT NOT NULL',
        '\tfence BIGINT NOT NULL',
        `\t${quoteIdentifier('checkpoint')} ${TEXT} NOT NULL`,
        '\tPRIMARY KEY (materialization, key_begin, key_end)',
      ].join(',\n'));
    },
    fenceBump(path, materialization, keyBegin, keyEnd) {
      return `UPDATE ${checkpointsPath(path)} SET fence = fence + 1\nWHERE materialization = ${literal(materialization)} AND key_end >= ${literal(keyBegin)} AND key_begin <= ${literal(keyEnd)};`;
    },
    fenceSelect(path, materialization, keyBegin, keyEnd) {
      return `SELECT TOP 1 fence, key_begin, key_end, ${quoteIdentifier('checkpoint')}\nFROM ${checkpointsPath(path)}\n`
        + `WHERE materialization = ${literal(materialization)} AND key_begin <= ${literal(keyBegin)} AND key_end >= ${literal(keyEnd)}\nORDER BY key_end - key_begin ASC;`;
    },
    fenceInsert(path, materialization, keyBegin, keyEnd, fence, checkpoint) {
      return `INSERT INTO ${checkpointsPath(path)} (materialization, key_begin, key_end, fence, ${quoteIdentifier('checkpoint')})\n`
        + `VALUES (${literal(materialization)}, ${literal(keyBegin)}, ${literal(keyEnd)}, ${literal(fence)}, ${literal(checkpoint)});`;
    },
    checkpointUpdate(path, materialization, keyBegin, keyEnd, fence, checkpoint) {
      return `UPDATE ${checkpointsPath(path)} SET ${quoteIdentifier('checkpoint')} = ${literal(checkpoint)}\n`
        + `WHERE materialization = ${literal(materialization)} AND key_begin = ${literal(keyBegin)} AND key_end = ${literal(keyEnd)} AND fence = ${literal(fence)};`;
    },
  };

  return {
    name: 'sqlserver',
    collation,
    stringType: base,
    maxIdentifierLength: 128,
    caseInsensitiveColumns: true,
    storeFlow: 'staged',
    transactionalDdl: true,
    quoteIdentifier,
    quotePath: (path) => quotePath(path),
    literal,
    placeholder: (index) => `@p${index + 1}`,
    mapType,
    compatibility,
    templates,
  };
}

/** The checkpoints table's path: in the endpoint schema when set, else unqualified (the user's default schema). */
export function checkpointsTablePath(schema: string | undefined): string[] {
  return schema === undefined ? [CHECKPOINTS_TABLE] : [schema, CHECKPOINTS_TABLE];
}
