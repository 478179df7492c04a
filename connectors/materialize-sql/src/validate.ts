// Validate: per-field constraints for one binding, against the table as it exists (if it does), following
// upstream's materialize-boilerplate: a new table gets the connector's opinion of each projection; an existing
// table that is kept gets FIELD_REQUIRED for its key and document and FIELD_OPTIONAL "part of the current
// materialization" for its other compatible columns, INCOMPATIBLE where a column cannot hold the new type.
// Constraints are emitted in the map form `constraints: {field: {type, reason}}` (see docs/architecture.md), so a
// field upstream gives two constraints (a requirement and an incompatibility) gets the incompatibility.
import type { CollectionSpec, Constraint, JsonValue, MaterializationBindingSpec, Projection } from '@sluice/runtime';
import type { Dialect } from './dialect.ts';
import type { ExistingColumn, ExistingTable, FieldConfig } from './table.ts';
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
  /**
   * Upstream's feature flags, for endpoints that have them: then a new binding onto a table that already exists is
   * refused unless `allow_existing_tables_for_new_bindings` is set. Without flags (SQLite) such tables are adopted.
   */
  featureFlags?: Readonly<Record<string, boolean>>;
  /** `advanced.no_flow_document`: the root document is optional and required root-level properties are required. */
  noFlowDocument?: boolean;
}

/** True for the root-document projection (empty or absent pointer). */
export function isRootProjection(p: Projection): boolean {
  return p.ptr === undefined || p.ptr === '';
}

/** Which root projection a standard binding keeps: the one the last spec selected, else the first root projection. */
export function chooseDocumentField(projections: Projection[], last?: MaterializationBindingSpec): string | undefined {
  const roots = projections.filter(isRootProjection).map((p) => p.field);
  const lastDoc = last?.fieldSelection?.document;
  if (lastDoc !== undefined && lastDoc !== '' && roots.includes(lastDoc)) return lastDoc;
  return roots[0];
}

function typesText(p: Projection): string {
  return `{ type: [${(p.inference?.types ?? []).join(', ')}] }`;
}

const SCALARS = new Set(['boolean', 'integer', 'number', 'string']);

/** The connector's opinion of a projection on its own (upstream's NewConstraint), Sluice's key-type check added. */
function newConstraint(p: Projection, isKey: boolean, deltaUpdates: boolean, noFlowDocument: boolean): Constraint {
  const types = p.inference?.types ?? [];
  const nonNull = types.filter((t) => t !== 'null');
  if (isKey) {
    const { flatType } = flatTypeOf(p, true);
    // Stricter than upstream, which recommends any key and then fails to create the table.
    if (flatType === 'object' || flatType === 'array' || flatType === 'multiple') return { type: 'FIELD_FORBIDDEN', reason: `Key field of type ${typesText(p)} cannot be a table key` };
    if (flatType !== 'none') return { type: 'LOCATION_RECOMMENDED', reason: 'All Locations that are part of the collections key are recommended' };
  }
  if (isRootProjection(p)) {
    if (noFlowDocument) return { type: 'FIELD_OPTIONAL', reason: 'Root document projection is optional when flow_document is disabled' };
    if (deltaUpdates) return { type: 'LOCATION_RECOMMENDED', reason: 'The root document should usually be materialized' };
    return { type: 'LOCATION_REQUIRED', reason: 'The root document must be materialized' };
  }
  if (types.length === 0) return { type: 'FIELD_FORBIDDEN', reason: 'Cannot materialize a field with no types' };
  if (nonNull.length === 0) return { type: 'FIELD_FORBIDDEN', reason: 'Cannot materialize a field where the only possible type is \'null\'' };
  const ptr = p.ptr ?? '';
  if (!deltaUpdates && noFlowDocument && ptr.split('/').length === 2 && p.inference?.exists === 'MUST') {
    return { type: 'LOCATION_REQUIRED', reason: 'Required root-level properties must be present when flow_document is disabled' };
  }
  if (p.field === '_meta/op') return { type: 'LOCATION_RECOMMENDED', reason: 'The operation type should usually be materialized' };
  if (p.field.startsWith('_meta/')) return { type: 'FIELD_OPTIONAL', reason: 'Metadata fields are able to be materialized' };
  const { flatType } = flatTypeOf(p, false);
  if ((nonNull.length === 1 && SCALARS.has(nonNull[0]!)) || flatType === 'string_integer' || flatType === 'string_number') {
    return { type: 'LOCATION_RECOMMENDED', reason: 'The projection has a single scalar type' };
  }
  if (nonNull.length === 1 && nonNull[0] === 'object') return { type: 'FIELD_OPTIONAL', reason: 'Object fields may be materialized' };
  // Arrays and fields of several types.
  return { type: 'LOCATION_RECOMMENDED', reason: 'This field is able to be materialized' };
}

const isOptional = (c: Constraint) => c.type === 'LOCATION_RECOMMENDED' || c.type === 'FIELD_OPTIONAL';
const isForbidden = (c: Constraint) => c.type === 'FIELD_FORBIDDEN' || c.type === 'INCOMPATIBLE' || c.type === 'UNSATISFIABLE';

/** Constraints of one binding (map form). Throws SqlConfigError for bindings that cannot work at all. */
export function validateBinding(dialect: Dialect, input: ValidateBindingInput): Record<string, Constraint> {
  const { collection, path, deltaUpdates } = input;
  const noFlowDocument = input.noFlowDocument === true;
  const where = `binding for collection '${collection.name}' (table ${path.join('.')})`;
  const projections = collection.projections ?? [];
  const keyPtrs = collection.key ?? [];
  const max = dialect.maxIdentifierLength;
  const isKey = (p: Projection) => p.ptr !== undefined && p.ptr !== '' && keyPtrs.includes(p.ptr);

  for (const part of path) {
    if ([...part].length > max) throw new SqlConfigError(`${where}: table name '${part}' is ${[...part].length} characters long; ${dialect.name} allows at most ${max}. Choose a shorter 'table' in the resource config`);
    if (part === '') throw new SqlConfigError(`${where}: the resource path has an empty component; set a non-empty 'table'`);
  }
  for (const p of projections) {
    if (isKey(p) && !deltaUpdates && isNullable(p) && p.inference?.default === undefined) {
      throw new SqlConfigError(`${where}: collection key field '${p.field}' may be null or absent and has no default; a table key cannot be null. Make '${p.ptr}' required and non-null in the collection schema, or give it a default`);
    }
  }
  const { last, existing } = input;
  if (last === undefined && existing !== undefined && input.featureFlags !== undefined && input.featureFlags.allow_existing_tables_for_new_bindings !== true) {
    throw new SqlConfigError(`${where}: table ${path.join('.')} already exists for this new binding. Drop the table (or choose another 'table') to continue; `
      + `the 'allow_existing_tables_for_new_bindings' feature flag (advanced.feature_flags) adopts it instead, with caveats: its rows are merged by key (loads read them), and rows of keys the collection never stores stay`);
  }

  const desired = (p: Projection) => buildColumn(dialect, p, isKey(p) ? 'key' : 'value', (input.fieldConfig[p.field] ?? {}) as FieldConfig);
  const existingColumn = (field: string): ExistingColumn | undefined =>
    existing?.columns.find((c) => (dialect.caseInsensitiveColumns ? c.name.toLowerCase() === field.toLowerCase() : c.name === field));
  /** Upstream's constraintForExistingField: a key or a value already in the table. */
  const forExisting = (p: Projection, col: ExistingColumn): Constraint => {
    const compat = dialect.compatibility(col, desired(p));
    if (compat.kind === 'incompatible') return { type: 'INCOMPATIBLE', reason: compat.reason };
    if (isKey(p)) {
      if (!deltaUpdates && col.primaryKey === 0) return { type: 'INCOMPATIBLE', reason: `Field '${p.field}' is a collection key but column ${col.name} is not part of the table's primary key; backfill to re-create the table` };
      return { type: 'FIELD_REQUIRED', reason: 'This field is a key in the current materialization' };
    }
    return { type: 'FIELD_OPTIONAL', reason: 'This location is part of the current materialization' };
  };

  const out: Record<string, Constraint> = {};
  const rebuilt = last !== undefined && input.backfill !== (last.backfill ?? 0);
  if (existing === undefined || rebuilt) {
    // A new table, or one a backfill will replace: nothing existing to be compatible with.
    let sawRoot = false;
    for (const p of projections) {
      let c = newConstraint(p, isKey(p), deltaUpdates, noFlowDocument);
      if (isRootProjection(p)) {
        if (sawRoot && !deltaUpdates) c = { type: 'FIELD_FORBIDDEN', reason: 'Only a single root document projection can be materialized for standard updates' };
        sawRoot = true;
      } else if (!deltaUpdates && p.ptr === keyPtrs[0] && isOptional(c)) {
        c = { type: 'LOCATION_REQUIRED', reason: 'The first collection key component is required to be included for standard updates' };
      }
      out[p.field] = c;
    }
  } else {
    if (last !== undefined && last.deltaUpdates === true && !deltaUpdates) {
      throw new SqlConfigError(`${where}: cannot switch from delta updates to standard updates on an existing table: its rows are events, not one row per key. Backfill the binding (recreating the table) or use a new table name`);
    }
    const docFields = projections.filter(isRootProjection).map((p) => p.field);
    if (!deltaUpdates && docFields.length === 0) throw new SqlConfigError(`${where}: the collection has no root document projection, which standard updates require`);
    const lastDoc = last?.fieldSelection?.document ?? '';
    const lastKeys = last?.fieldSelection?.keys ?? [];
    const lastFields = [...lastKeys, ...(last?.fieldSelection?.values ?? []), ...(lastDoc === '' ? [] : [lastDoc])];
    for (const p of projections) {
      const base = newConstraint(p, isKey(p), deltaUpdates, noFlowDocument);
      const col = existingColumn(p.field);
      let c: Constraint;
      if (base.type === 'FIELD_FORBIDDEN') c = base;
      else if (!deltaUpdates && isRootProjection(p)) {
        const selected = last !== undefined ? p.field === lastDoc : p.field === docFields[0];
        if (selected) {
          const inTable = col === undefined ? undefined : forExisting(p, col);
          c = inTable !== undefined && isForbidden(inTable) ? inTable : { type: 'FIELD_REQUIRED', reason: 'This field is the document in the current materialization' };
        } else if (last !== undefined && lastDoc === '') {
          c = { type: 'INCOMPATIBLE', reason: 'Cannot add a new root document projection to materialization without backfilling' };
        } else {
          c = { type: 'FIELD_FORBIDDEN', reason: `Cannot materialize root document projection '${p.field}' because field '${last !== undefined ? lastDoc : docFields[0]}' is already being materialized as the document` };
        }
      } else if (!deltaUpdates && isKey(p) && last !== undefined && !lastKeys.includes(p.field)) {
        if (!lastFields.includes(p.field)) c = { type: 'FIELD_FORBIDDEN', reason: 'Cannot add a new key location to the field selection of an existing non-delta-updates materialization without backfilling' };
        else c = col === undefined ? { type: 'FIELD_OPTIONAL', reason: 'This location is part of the current materialization' } : forExisting(p, col);
      } else if (col !== undefined) c = forExisting(p, col);
      else c = base;
      out[p.field] = c;
    }
    if (last !== undefined && !deltaUpdates && lastDoc !== '' && !docFields.includes(lastDoc)) {
      out[docFields[0]!] = { type: 'INCOMPATIBLE', reason: `The root document must be materialized as field '${lastDoc}'` };
    }
  }

  // Names the database cannot hold (upstream's forbidLongFields).
  const requiredLocations = new Map<string, boolean>();
  for (const p of projections) {
    const c = out[p.field];
    if (c === undefined) continue;
    const length = [...p.field].length;
    const tooLong = length > max;
    if (c.type === 'LOCATION_REQUIRED') requiredLocations.set(p.ptr ?? '', (requiredLocations.get(p.ptr ?? '') ?? false) || !tooLong);
    if (!tooLong) continue;
    if (c.type === 'FIELD_REQUIRED') throw new SqlConfigError(`${where}: field '${p.field}' is required to be materialized but has a length of ${length} which exceeds the maximum length allowable by the destination of ${max}`);
    out[p.field] = { type: 'FIELD_FORBIDDEN', reason: `Field '${p.field}' has a length of ${length} which exceeds the maximum length allowable by the destination of ${max}. Use an alternate projection with a shorter name to materialize this location` };
  }
  for (const [location, allowable] of requiredLocations) {
    if (!allowable) throw new SqlConfigError(`${where}: at least one field from location '${location}' is required to be materialized, but all projections exceed the maximum length allowable by the destination of ${max}: must provide an alternate projection with a shorter name`);
  }
  // A standard table needs its first key location and a document (unless no_flow_document).
  if (!deltaUpdates) {
    const first = keyPtrs[0];
    if (first !== undefined && !projections.some((p) => p.ptr === first && out[p.field] !== undefined && out[p.field]?.type !== 'FIELD_FORBIDDEN')) {
      throw new SqlConfigError(`${where}: no projection of the first key location '${first}' can be materialized (unsupported type)`);
    }
    if (!noFlowDocument && !projections.some(isRootProjection)) throw new SqlConfigError(`${where}: the collection has no root document projection, which standard updates require`);
  }
  return out;
}
