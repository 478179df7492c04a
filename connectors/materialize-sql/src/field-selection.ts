// Field selection per the SPEC's binding `fields`: `recommended` (default true), `include`, `exclude`.
// Given the connector's constraints for a binding, it decides fieldSelection {keys, values, document,
// fieldConfig}. The plane calls it when it builds a materialization (Flow's control plane does the same).
import type { CollectionSpec, Constraint, FieldSelection, JsonObject, JsonValue } from '@sluice/runtime';
import { SqlConfigError } from './errors.ts';

/** The SPEC's `fields` object of a materialization binding. */
export interface FieldsConfig {
  /** Include every endpoint-recommended field (for databases: scalar fields with a single type). Default true. */
  recommended?: boolean;
  /** Projection names never to materialize. */
  exclude?: string[];
  /** Projection name → object passed to the driver (e.g. `{DDL: "DECIMAL(20)"}`, `{castToString: true}`). */
  include?: Record<string, JsonObject>;
}

export interface SelectFieldsOptions {
  /** Fields differing only by case collide (Validated.caseInsensitiveFields). */
  caseInsensitive?: boolean;
}

const REQUIRED = new Set(['FIELD_REQUIRED', 'LOCATION_REQUIRED']);
const UNUSABLE = new Set(['FIELD_FORBIDDEN', 'INCOMPATIBLE', 'UNSATISFIABLE']);

/**
 * Select fields for one binding. Errors (SqlConfigError) name the field and what to change:
 * including an unknown or forbidden field, excluding a required one, a key location with no usable field.
 */
export function selectFields(collection: CollectionSpec, constraints: Record<string, Constraint>, fields: FieldsConfig = {}, options: SelectFieldsOptions = {}): FieldSelection {
  const where = `materialization binding of '${collection.name}'`;
  const projections = collection.projections ?? [];
  const byField = new Map(projections.map((p) => [p.field, p]));
  const include = fields.include ?? {};
  const exclude = new Set(fields.exclude ?? []);
  const recommended = fields.recommended ?? true;

  for (const f of Object.keys(include)) {
    if (!byField.has(f)) throw new SqlConfigError(`${where}: fields.include names '${f}', which is not a projection of the collection`);
    const c = constraints[f];
    if (c === undefined || UNUSABLE.has(c.type)) throw new SqlConfigError(`${where}: fields.include names '${f}', which cannot be materialized: ${c?.reason ?? 'no constraint was returned for it'}`);
    if (exclude.has(f)) throw new SqlConfigError(`${where}: '${f}' is both included and excluded`);
  }
  for (const f of exclude) {
    if (!byField.has(f)) throw new SqlConfigError(`${where}: fields.exclude names '${f}', which is not a projection of the collection`);
  }
  const usable = (f: string) => {
    const c = constraints[f];
    return c !== undefined && !UNUSABLE.has(c.type) && !exclude.has(f);
  };

  // Keys: one field per collection key location, preferring an included field, then the canonical name.
  const keys: string[] = [];
  for (const ptr of collection.key ?? []) {
    const candidates = projections.filter((p) => p.ptr === ptr && usable(p.field)).map((p) => p.field);
    const pick = candidates.find((f) => f in include) ?? candidates.find((f) => `/${f}` === ptr) ?? candidates[0];
    if (pick === undefined) throw new SqlConfigError(`${where}: no field can be selected for key location '${ptr}' (excluded or forbidden)`);
    keys.push(pick);
  }
  const keyPtrs = new Set(collection.key ?? []);

  // Document: the root projection the connector requires or recommends.
  let document: string | undefined;
  for (const p of projections) {
    if (p.ptr !== undefined && p.ptr !== '') continue;
    const c = constraints[p.field];
    if (c === undefined || !usable(p.field)) {
      if (c !== undefined && REQUIRED.has(c.type) && exclude.has(p.field)) throw new SqlConfigError(`${where}: '${p.field}' is required by the endpoint (${c.reason ?? ''}) and cannot be excluded`);
      continue;
    }
    if (REQUIRED.has(c.type) || p.field in include || (recommended && c.type === 'LOCATION_RECOMMENDED')) {
      document ??= p.field;
    }
  }

  const values: string[] = [];
  const taken = new Set(keys.map((k) => (options.caseInsensitive ? k.toLowerCase() : k)));
  if (document !== undefined) taken.add(options.caseInsensitive ? document.toLowerCase() : document);
  // Locations already materialized (by a key column): LOCATION_* constraints are satisfied there.
  const coveredPtrs = new Set<string>(collection.key ?? []);
  for (const p of projections) {
    const f = p.field;
    const ptr = p.ptr ?? '';
    if (ptr === '' || keys.includes(f)) continue;
    const c = constraints[f];
    if (c === undefined) continue;
    if (exclude.has(f)) {
      if (REQUIRED.has(c.type) && !projections.some((q) => q.ptr === p.ptr && q.field !== f && usable(q.field))) {
        throw new SqlConfigError(`${where}: '${f}' is required by the endpoint (${c.reason ?? ''}) and cannot be excluded`);
      }
      continue;
    }
    if (UNUSABLE.has(c.type)) continue;
    const wanted = f in include || REQUIRED.has(c.type) || (recommended && c.type === 'LOCATION_RECOMMENDED' && !keyPtrs.has(ptr));
    if (!wanted) continue;
    // Location constraints (not explicitly included) need one field per location.
    if (!(f in include) && c.type !== 'FIELD_REQUIRED' && coveredPtrs.has(ptr)) continue;
    const folded = options.caseInsensitive ? f.toLowerCase() : f;
    if (taken.has(folded)) {
      if (f in include) throw new SqlConfigError(`${where}: field '${f}' collides with another selected field that differs only by case; exclude one of them`);
      continue;
    }
    taken.add(folded);
    coveredPtrs.add(ptr);
    values.push(f);
  }
  values.sort();

  const selection: FieldSelection = { keys, values };
  if (document !== undefined) selection.document = document;
  const fieldConfig: Record<string, JsonValue> = {};
  for (const [f, cfg] of Object.entries(include)) if (Object.keys(cfg).length > 0) fieldConfig[f] = cfg;
  if (Object.keys(fieldConfig).length > 0) selection.fieldConfig = fieldConfig;
  return selection;
}
