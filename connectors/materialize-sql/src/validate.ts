// Validate: per-field constraints for one binding, against the table as it exists (if it does).
// Constraints are emitted in the map form `constraints: {field: {type, reason}}` (see docs/architecture.md).
import type { CollectionSpec, Constraint, JsonValue, MaterializationBindingSpec, Projection } from '@sluice/runtime';
import type { Dialect } from './dialect.ts';
import type { ExistingTable, FieldConfig } from './table.ts';
import { buildColumn, flatTypeOf, isNullable } from './table.ts';
import { SqlConfigError } from './errors.ts';

export interface ValidateBindingInput {
  /** Resource path of the binding (`[table]`, `[schema, table]`). */
  path: string[];
  deltaUpdates: boolean;
  collection: CollectionSpec;
  fieldConfig: Record<string, JsonValue>;
  backfill: number;
  /** The table as it exists now, if it does. */
  existing?: ExistingTable;
  /** The same resource path's binding in the last published materialization, if any. */
  last?: MaterializationBindingSpec;
}

/** True for the root-document projection (empty or absent pointer). */
export function isRootProjection(p: Projection): boolean {
  return p.ptr === undefined || p.ptr === '';
}

/** Which root projection a standard binding should keep: the one already in use, else `flow_document`, else the first. */
export function chooseDocumentField(projections: Projection[], last?: MaterializationBindingSpec, existing?: ExistingTable): string | undefined {
  const roots = projections.filter(isRootProjection).map((p) => p.field);
  const lastDoc = last?.fieldSelection?.document;
  if (lastDoc !== undefined && roots.includes(lastDoc)) return lastDoc;
  const inTable = existing?.columns.find((c) => roots.includes(c.name));
  if (inTable !== undefined) return inTable.name;
  if (roots.includes('flow_document')) return 'flow_document';
  return roots[0];
}

function typesText(p: Projection): string {
  return `{ type: [${(p.inference?.types ?? []).join(', ')}] }`;
}

/** Constraints of one binding (map form). Throws SqlConfigError for bindings that cannot work at all. */
export function validateBinding(dialect: Dialect, input: ValidateBindingInput): Record<string, Constraint> {
  const { collection, path, deltaUpdates } = input;
  const where = `binding for collection '${collection.name}' (table ${path.join('.')})`;
  const projections = collection.projections ?? [];
  const keyPtrs = collection.key ?? [];
  const max = dialect.maxIdentifierLength;

  for (const part of path) {
    if ([...part].length > max) throw new SqlConfigError(`${where}: table name '${part}' is ${[...part].length} characters long; ${dialect.name} allows at most ${max}. Choose a shorter 'table' in the resource config`);
    if (part === '') throw new SqlConfigError(`${where}: the resource path has an empty component; set a non-empty 'table'`);
  }
  const last = input.last;
  const backfilled = last !== undefined && input.backfill > (last.backfill ?? 0);
  if (last !== undefined && last.deltaUpdates === true && !deltaUpdates && !backfilled && input.existing !== undefined) {
    throw new SqlConfigError(`${where}: cannot switch from delta updates to standard updates on an existing table: its rows are events, not one row per key. Backfill the binding (recreating the table) or use a new table name`);
  }
  // The existing table only matters if it will be kept: a backfill drops and re-creates incompatible tables.
  const existing = backfilled ? undefined : input.existing;
  const docField = deltaUpdates ? undefined : chooseDocumentField(projections, last, existing);

  const out: Record<string, Constraint> = {};
  for (const p of projections) {
    const field = p.field;
    const ptr = p.ptr ?? '';
    const keyIndex = keyPtrs.indexOf(ptr);
    const isKey = keyIndex >= 0 && ptr !== '';
    const length = [...field].length;
    if (length > max) {
      out[field] = { type: 'FIELD_FORBIDDEN', reason: `Field name is ${length} characters long; ${dialect.name} allows at most ${max}` };
      continue;
    }
    if (isRootProjection(p)) {
      if (deltaUpdates) out[field] = { type: 'LOCATION_RECOMMENDED', reason: 'The root document may be materialized with delta updates' };
      else if (field === docField) out[field] = { type: 'LOCATION_REQUIRED', reason: 'The root document is required for a standard updates materialization' };
      else out[field] = { type: 'FIELD_FORBIDDEN', reason: `Only one root document projection can be materialized for standard updates ('${docField ?? ''}' is used)` };
      continue;
    }
    const { flatType } = flatTypeOf(p, isKey);
    if (flatType === 'none') {
      out[field] = { type: 'FIELD_FORBIDDEN', reason: 'Cannot materialize a field with no types or only null' };
      continue;
    }
    if (isKey) {
      if (!deltaUpdates && isNullable(p) && p.inference?.default === undefined) {
        throw new SqlConfigError(`${where}: collection key field '${field}' may be null or absent and has no default; a table key cannot be null. Make '${ptr}' required and non-null in the collection schema, or give it a default`);
      }
      if (flatType === 'object' || flatType === 'array' || flatType === 'multiple') {
        out[field] = { type: 'FIELD_FORBIDDEN', reason: `Key field of type ${typesText(p)} cannot be a table key` };
        continue;
      }
    }
    let constraint: Constraint;
    if (isKey && keyIndex === 0 && !deltaUpdates) constraint = { type: 'LOCATION_REQUIRED', reason: 'The first collection key component is required to be included for standard updates' };
    else if (isKey) constraint = { type: 'LOCATION_RECOMMENDED', reason: 'All locations that are part of the collection key are recommended' };
    else if (field === '_meta/op') constraint = { type: 'LOCATION_RECOMMENDED', reason: 'The operation type should usually be materialized' };
    else if (field.startsWith('_meta/')) constraint = { type: 'FIELD_OPTIONAL', reason: 'Metadata fields are able to be materialized' };
    else if (flatType === 'object' || flatType === 'array' || flatType === 'multiple') constraint = { type: 'FIELD_OPTIONAL', reason: 'This field is able to be materialized as JSON text' };
    else constraint = { type: 'LOCATION_RECOMMENDED', reason: 'This location is part of the current schema' };

    // An existing column must be able to hold the new type.
    const col = existing?.columns.find((c) => (dialect.caseInsensitiveColumns ? c.name.toLowerCase() === field.toLowerCase() : c.name === field));
    if (col !== undefined) {
      const desired = buildColumn(dialect, p, isKey ? 'key' : 'value', (input.fieldConfig[field] ?? {}) as FieldConfig);
      const compat = dialect.compatibility(col, desired);
      if (compat.kind === 'incompatible') constraint = { type: 'INCOMPATIBLE', reason: compat.reason };
      else if (isKey && !deltaUpdates && col.primaryKey === 0) constraint = { type: 'INCOMPATIBLE', reason: `Field '${field}' is a collection key but column ${col.name} is not part of the table's primary key; backfill to re-create the table` };
    }
    out[field] = constraint;
  }
  // A required location must have at least one usable projection.
  if (!deltaUpdates) {
    const first = keyPtrs[0];
    if (first !== undefined && !projections.some((p) => p.ptr === first && out[p.field] !== undefined && out[p.field]?.type !== 'FIELD_FORBIDDEN')) {
      throw new SqlConfigError(`${where}: no projection of the first key location '${first}' can be materialized (name too long or unsupported type)`);
    }
    if (docField === undefined) throw new SqlConfigError(`${where}: the collection has no root document projection, which standard updates require`);
  }
  return out;
}
