// Field selection for one materialization binding: the connector's validate constraints plus the
// catalog's `fields` (recommended / include / exclude) decide which projections become the binding's
// keys, values and document. Problems are collected and reported together.
import { unescapePointerToken } from '@sluice/runtime';
import type { CollectionSpec, Constraint, FieldSelection, JsonValue, Projection } from '@sluice/runtime';
import type { FieldsDef } from '../catalog/types.ts';

const SCALAR_TYPES = new Set(['boolean', 'integer', 'number', 'string']);

export interface FieldSelectionInput {
  /** Used in error messages, e.g. `acmeCo/mat binding 0 (acmeCo/orders)`. */
  where: string;
  collection: CollectionSpec;
  fields: FieldsDef;
  constraints: Record<string, Constraint>;
  deltaUpdates: boolean;
  /** The connector's Validated.caseInsensitiveFields: fields differing only by case would be one column. */
  caseInsensitive?: boolean;
}

export interface FieldSelectionResult {
  selection: FieldSelection;
  errors: string[];
}

/** A projection that the endpoint recommends by default: a scalar of one possible type at the top level. */
export function isRecommended(p: Projection): boolean {
  const types = (p.inference?.types ?? []).filter((t) => t !== 'null');
  if (types.length !== 1 || !SCALAR_TYPES.has(types[0] ?? '')) return false;
  if (p.explicit || p.isPartitionKey || p.isPrimaryKey || p.field === 'flow_published_at') return true;
  return p.ptr !== undefined && /^\/[^/]+$/.test(p.ptr);
}

function isRoot(p: Projection): boolean {
  return p.ptr === undefined || p.ptr === '';
}

function allows(c: Constraint | undefined): boolean {
  return c !== undefined && c.type !== 'FIELD_FORBIDDEN' && c.type !== 'INCOMPATIBLE' && c.type !== 'UNSATISFIABLE';
}

function refusal(field: string, c: Constraint | undefined): string {
  if (c === undefined) return `field "${field}" is not supported by the endpoint (no constraint was returned for it)`;
  if (c.type === 'FIELD_FORBIDDEN') return `field "${field}" cannot be materialized: ${c.reason ?? 'forbidden by the endpoint'}`;
  return `field "${field}" is incompatible with the existing destination and needs a backfill (increment the binding's \`backfill\`): ${c.reason ?? c.type}`;
}

export function selectFields(input: FieldSelectionInput): FieldSelectionResult {
  const { collection, fields, constraints, deltaUpdates } = input;
  const errors: string[] = [];
  const err = (m: string) => errors.push(`${input.where}: ${m}`);
  const projections = collection.projections ?? [];
  const byField = new Map(projections.map((p) => [p.field, p]));
  const include = new Set(Object.keys(fields.include));
  const exclude = new Set(fields.exclude);

  for (const f of include) {
    if (!byField.has(f)) err(`\`fields.include\` names "${f}", which is not a projection of collection "${collection.name}"`);
    if (exclude.has(f)) err(`field "${f}" is both included and excluded`);
  }
  for (const f of exclude) if (!byField.has(f)) err(`\`fields.exclude\` names "${f}", which is not a projection of collection "${collection.name}"`);
  for (const [f, c] of Object.entries(constraints)) {
    if (c.type === 'FIELD_REQUIRED' && !byField.has(f)) err(`the endpoint requires field "${f}", which is not a projection of collection "${collection.name}": ${c.reason ?? ''}`.trimEnd());
  }

  const selected = new Set<string>();
  // Selected fields by the name the destination sees (folded when it is case-insensitive).
  const byName = new Map<string, string>();
  const nameOf = (field: string) => (input.caseInsensitive ? field.toLowerCase() : field);
  const take = (p: Projection) => {
    if (!allows(constraints[p.field])) err(refusal(p.field, constraints[p.field]));
    selected.add(p.field);
    byName.set(nameOf(p.field), p.field);
  };
  /** The selected field `field` would collide with (same name but for case), if any. */
  const collision = (field: string) => byName.get(nameOf(field));
  const canonical = (ptr: string): Projection | undefined => {
    const options = projections.filter((p) => p.ptr === ptr);
    return options.find((p) => include.has(p.field)) ?? options.find((p) => p.field === unescapePointerToken(ptr.slice(1)) && !exclude.has(p.field))
      ?? options.find((p) => !exclude.has(p.field));
  };

  // Keys: one projection per key location, in key order.
  const keys: string[] = [];
  for (const ptr of collection.key ?? []) {
    const p = canonical(ptr);
    if (p === undefined) {
      err(`collection key ${ptr} has no selectable projection (is every projection of it excluded?)`);
      continue;
    }
    const other = collision(p.field);
    if (other !== undefined) err(`key field "${p.field}" collides with key field "${other}": the endpoint's field names are case-insensitive; project one of these key locations under another name`);
    take(p);
    keys.push(p.field);
  }

  // Document: the root projection, unless excluded or forbidden (required ones must not be excluded).
  let document: string | undefined;
  const roots = projections.filter(isRoot);
  const root = roots.find((p) => include.has(p.field)) ?? roots.find((p) => p.field === 'flow_document') ?? roots[0];
  if (root !== undefined) {
    const c = constraints[root.field];
    const required = c?.type === 'LOCATION_REQUIRED' || c?.type === 'FIELD_REQUIRED';
    if (exclude.has(root.field)) {
      if (required) err(`field "${root.field}" is required by the endpoint and cannot be excluded: ${c?.reason ?? 'the document is needed'}`);
    } else if (include.has(root.field) || required || (allows(c) && !deltaUpdates) || (allows(c) && fields.recommended)) {
      take(root);
      document = root.field;
    }
  }

  // Values: required fields, required locations, includes, and recommended fields.
  const values: string[] = [];
  const coveredPtrs = new Set(projections.filter((p) => selected.has(p.field)).map((p) => p.ptr ?? ''));
  for (const p of projections) {
    if (selected.has(p.field) || isRoot(p)) continue;
    const c = constraints[p.field];
    if (exclude.has(p.field)) {
      if (c?.type === 'FIELD_REQUIRED') err(`field "${p.field}" is required by the endpoint and cannot be excluded${c.reason ? `: ${c.reason}` : ''}`);
      continue;
    }
    let pick = false;
    if (include.has(p.field) || c?.type === 'FIELD_REQUIRED') pick = true;
    else if (c?.type === 'LOCATION_REQUIRED') pick = !coveredPtrs.has(p.ptr ?? '') && canonical(p.ptr ?? '')?.field === p.field;
    else if (fields.recommended && allows(c) && isRecommended(p)) pick = !coveredPtrs.has(p.ptr ?? '') || p.explicit === true;
    if (!pick) continue;
    const other = collision(p.field);
    if (other !== undefined) {
      // The destination would see one column for both: the first selected keeps it; an explicit include is a conflict.
      if (include.has(p.field)) err(`field "${p.field}" collides with selected field "${other}": the endpoint's field names are case-insensitive; exclude one of them`);
      continue;
    }
    take(p);
    values.push(p.field);
    coveredPtrs.add(p.ptr ?? '');
  }
  for (const p of projections) {
    const c = constraints[p.field];
    // Root and key locations were checked above.
    if (isRoot(p) || (collection.key ?? []).includes(p.ptr ?? '')) continue;
    if (c?.type === 'LOCATION_REQUIRED' && !coveredPtrs.has(p.ptr ?? '')) {
      err(`the endpoint requires location ${p.ptr ?? '(document root)'} but all its projections are excluded${c.reason ? `: ${c.reason}` : ''}`);
      coveredPtrs.add(p.ptr ?? '');
    }
  }
  values.sort();

  const fieldConfig: Record<string, JsonValue> = {};
  for (const [f, cfg] of Object.entries(fields.include)) {
    if (cfg !== null && typeof cfg === 'object' && !Array.isArray(cfg) && Object.keys(cfg).length === 0) continue;
    fieldConfig[f] = cfg;
  }
  const selection: FieldSelection = { keys, values };
  if (document !== undefined) selection.document = document;
  if (Object.keys(fieldConfig).length > 0) selection.fieldConfig = fieldConfig;
  return { selection, errors };
}
