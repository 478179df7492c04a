// The table/column model: a resolved binding (collection projections + field selection) becomes a table
// with key, value and document columns, each with its projection, flat type, mapped type and nullability.
import type { JsonValue, MaterializationBindingSpec, Projection } from '@sluice/runtime';
import type { Dialect, MappedType } from './dialect.ts';
import { SqlConfigError } from './errors.ts';

/**
 * A projection's JSON types (minus null) reduced to one type. `binary` = base64 string content;
 * `string_integer` / `string_number` = non-key strings with `format: integer|number`.
 */
export type FlatType =
  | 'string' | 'binary' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'multiple'
  | 'string_integer' | 'string_number' | 'none';

export type ColumnRole = 'key' | 'value' | 'document';

/** User field config from `fields.include` (fieldSelection.fieldConfig): passed to the dialect. */
export interface FieldConfig {
  /** Literal column DDL override, e.g. `DECIMAL(20)`. */
  DDL?: string;
  /** Materialize the value as a string column whatever its type. */
  castToString?: boolean;
  [key: string]: JsonValue | undefined;
}

/** What the dialect's type mapping sees for one field. */
export interface ColumnInput {
  field: string;
  projection: Projection;
  role: ColumnRole;
  flatType: FlatType;
  /** `string.format` of the projection, when a string type. */
  format?: string;
  /** False only when the field must exist and cannot be null (NOT NULL). */
  nullable: boolean;
  fieldConfig: FieldConfig;
}

export interface Column extends ColumnInput {
  /** The column name, quoted by the dialect. */
  identifier: string;
  mapped: MappedType;
}

export interface Table {
  /** Index of the binding in the materialization. */
  binding: number;
  /** Resource path, e.g. `[table]` or `[schema, table]`. */
  path: string[];
  /** The collection the binding reads (named in errors about its documents). */
  collection?: string;
  /** Quoted path. */
  identifier: string;
  deltaUpdates: boolean;
  keys: Column[];
  values: Column[];
  document?: Column;
  /** keys, then values, then the document: the order of every column list in every statement. */
  columns: Column[];
}

/** A column as the database describes it (see StatementTemplates.describeTable). */
export interface ExistingColumn {
  name: string;
  /** Base type, lower-cased (`bigint`, `varchar`, `integer`, `text`…). For SQLite, the declared type. */
  dataType: string;
  nullable: boolean;
  charLength: number | null;
  numericPrecision: number | null;
  numericScale: number | null;
  datetimePrecision: number | null;
  collation: string | null;
  /** 0 when not part of the primary key, else the column's 1-based position in it. */
  primaryKey: number;
}

export interface ExistingTable {
  path: string[];
  columns: ExistingColumn[];
}

/** Reduce a projection's inference to one flat type. */
export function flatTypeOf(projection: Projection, isKey: boolean): { flatType: FlatType; format?: string } {
  const inf = projection.inference ?? {};
  const types = (inf.types ?? []).filter((t) => t !== 'null');
  const format = inf.string?.format;
  const withFormat = (flatType: FlatType) => (format === undefined ? { flatType } : { flatType, format });
  if (types.length === 0) return { flatType: 'none' };
  if (!isKey && format === 'integer' && types.every((t) => t === 'integer' || t === 'string')) return withFormat('string_integer');
  if (!isKey && format === 'number' && types.every((t) => t === 'number' || t === 'integer' || t === 'string')) return withFormat('string_number');
  // integer ⊂ number in JSON Schema: [integer, number] is a number.
  if (types.length === 2 && types.includes('integer') && types.includes('number')) return { flatType: 'number' };
  if (types.length > 1) return { flatType: 'multiple' };
  const t = types[0];
  switch (t) {
    case 'string': {
      const enc = inf.string?.contentEncoding;
      const media = inf.string?.contentType;
      if (enc === 'base64' && (media === undefined || media === '' || media === 'application/octet-stream')) return { flatType: 'binary' };
      return withFormat('string');
    }
    case 'integer': case 'number': case 'boolean': case 'object': case 'array':
      return { flatType: t };
    default:
      return { flatType: 'multiple' };
  }
}

/** NOT NULL only when the field must exist and cannot be null. */
export function isNullable(projection: Projection): boolean {
  const inf = projection.inference ?? {};
  return !(inf.exists === 'MUST' && !(inf.types ?? []).includes('null'));
}

function projectionFor(projections: Projection[], field: string, where: string): Projection {
  const p = projections.find((x) => x.field === field);
  if (p === undefined) throw new SqlConfigError(`${where}: selected field '${field}' has no projection in the collection; re-publish the materialization so its field selection matches the collection`);
  return p;
}

function fieldConfigOf(raw: JsonValue | undefined): FieldConfig {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new SqlConfigError(`field config must be an object, got ${JSON.stringify(raw)}`);
  return raw as FieldConfig;
}

/** Build the column of one field through the dialect. */
export function buildColumn(dialect: Dialect, projection: Projection, role: ColumnRole, fieldConfig: FieldConfig): Column {
  const { flatType, format } = role === 'document' ? { flatType: 'object' as FlatType, format: undefined } : flatTypeOf(projection, role === 'key');
  const input: ColumnInput = {
    field: projection.field,
    projection,
    role,
    flatType,
    nullable: role === 'document' ? false : isNullable(projection),
    fieldConfig,
  };
  if (format !== undefined) input.format = format;
  return { ...input, identifier: dialect.quoteIdentifier(projection.field), mapped: dialect.mapType(input) };
}

/** Resolve a materialization binding to its table. `path` is the binding's resource path. */
export function buildTable(dialect: Dialect, binding: number, path: string[], spec: MaterializationBindingSpec): Table {
  const projections = spec.collection.projections ?? [];
  const sel = spec.fieldSelection ?? {};
  const cfg = sel.fieldConfig ?? {};
  const where = `binding ${binding} (${path.join('.')})`;
  const keys = (sel.keys ?? []).map((f) => buildColumn(dialect, projectionFor(projections, f, where), 'key', fieldConfigOf(cfg[f])));
  const values = (sel.values ?? []).map((f) => buildColumn(dialect, projectionFor(projections, f, where), 'value', fieldConfigOf(cfg[f])));
  const table: Table = {
    binding,
    path,
    identifier: dialect.quotePath(path),
    deltaUpdates: spec.deltaUpdates === true,
    collection: spec.collection.name,
    keys,
    values,
    columns: [...keys, ...values],
  };
  if (sel.document !== undefined && sel.document !== '') {
    const doc = buildColumn(dialect, projectionFor(projections, sel.document, where), 'document', fieldConfigOf(cfg[sel.document]));
    table.document = doc;
    table.columns.push(doc);
  }
  if (keys.length === 0) throw new SqlConfigError(`${where}: no key fields are selected; a SQL table needs the collection key`);
  return table;
}

/** Parse describeTable result rows. */
export function parseExistingColumns(rows: Record<string, unknown>[]): ExistingColumn[] {
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    name: String(r.column_name),
    dataType: String(r.data_type ?? '').toLowerCase(),
    nullable: String(r.is_nullable).toUpperCase() !== 'NO',
    charLength: num(r.character_maximum_length),
    numericPrecision: num(r.numeric_precision),
    numericScale: num(r.numeric_scale),
    datetimePrecision: num(r.datetime_precision),
    collation: r.collation_name === null || r.collation_name === undefined ? null : String(r.collation_name),
    primaryKey: Number(r.is_primary_key ?? 0),
  }));
}
