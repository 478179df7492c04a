// Static analysis of a JSON Schema into a "shape": the types a location may take, its object properties
// (and whether they are required), string/numeric annotations and the `reduce` strategy. Projections,
// inference, key checks and reductions are all computed from shapes. Handles type, const, enum,
// properties, required, additionalProperties, items/prefixItems, allOf (intersection), anyOf/oneOf
// (union) and local $ref. Anything else leaves a location unconstrained, which is the safe answer.
import { parsePointer, unescapePointerToken } from '@sluice/runtime/json-pointer';
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';

export const ALL_TYPES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'] as const;

export interface Shape {
  types: Set<string>;
  properties: Map<string, { shape: Shape; required: boolean }>;
  /** Shape of members not named in `properties`; null means unconstrained (any value). */
  additional: Shape | null;
  /** Shape of array items; null means unconstrained. */
  items: Shape | null;
  title?: string;
  description?: string;
  default?: JsonValue;
  format?: string;
  contentEncoding?: string;
  contentType?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  secret?: boolean;
  reduce?: string;
}

export function anyShape(): Shape {
  return { types: new Set(ALL_TYPES.filter((t) => t !== 'integer')), properties: new Map(), additional: null, items: null };
}

function neverShape(): Shape {
  return { types: new Set(), properties: new Map(), additional: null, items: null };
}

const MAX_DEPTH = 24;

/**
 * The schema resources a schema embeds under `$defs` with an `$id` (`flow://write-schema`, files referenced by
 * `$ref`, `flow://connector-schema`), by `$id`: what a non-local `$ref` resolves to.
 */
export function embeddedResources(root: JsonSchema): Map<string, JsonSchema> {
  const out = new Map<string, JsonSchema>();
  if (!isObject(root)) return out;
  for (const kw of ['$defs', 'definitions']) {
    const defs = root[kw];
    if (!isObject(defs)) continue;
    for (const def of Object.values(defs)) if (isObject(def) && typeof def.$id === 'string') out.set(def.$id, def);
  }
  return out;
}

/**
 * Builds the shape of `schema`; `$ref`s starting with `#` are resolved against `root` (the current resource),
 * others against `resources` (embeddedResources of the top-level schema), fragment included.
 */
export function shapeOf(schema: JsonSchema, root: JsonSchema = schema, depth = 0, resources: Map<string, JsonSchema> = embeddedResources(root)): Shape {
  if (schema === true || depth > MAX_DEPTH) return anyShape();
  if (schema === false) return neverShape();
  let shape = anyShape();
  const s = schema;

  if (typeof s.$ref === 'string' && s.$ref.startsWith('#')) {
    const target = resolveLocalRef(root, s.$ref);
    if (target !== undefined) shape = intersect(shape, shapeOf(target, root, depth + 1, resources));
  } else if (typeof s.$ref === 'string') {
    const hash = s.$ref.indexOf('#');
    const resource = resources.get(hash < 0 ? s.$ref : s.$ref.slice(0, hash));
    const target = resource === undefined ? undefined : hash < 0 ? resource : resolveLocalRef(resource, s.$ref.slice(hash));
    if (resource !== undefined && target !== undefined) shape = intersect(shape, shapeOf(target, resource, depth + 1, resources));
  }

  if (typeof s.type === 'string' || Array.isArray(s.type)) {
    const declared = new Set((Array.isArray(s.type) ? s.type : [s.type]).filter((t): t is string => typeof t === 'string'));
    shape.types = intersectTypes(shape.types, declared);
  }
  if ('const' in s) shape.types = intersectTypes(shape.types, new Set([jsonType(s.const ?? null)]));
  if (Array.isArray(s.enum)) shape.types = intersectTypes(shape.types, new Set(s.enum.map(jsonType)));

  if (typeof s.title === 'string') shape.title = s.title;
  if (typeof s.description === 'string') shape.description = s.description;
  if ('default' in s) shape.default = s.default ?? null;
  if (typeof s.format === 'string') shape.format = s.format;
  if (typeof s.contentEncoding === 'string') shape.contentEncoding = s.contentEncoding;
  if (typeof s.contentMediaType === 'string') shape.contentType = s.contentMediaType;
  if (typeof s.maxLength === 'number') shape.maxLength = s.maxLength;
  if (typeof s.minimum === 'number') shape.minimum = s.minimum;
  if (typeof s.exclusiveMinimum === 'number') shape.minimum = s.exclusiveMinimum;
  if (typeof s.maximum === 'number') shape.maximum = s.maximum;
  if (typeof s.exclusiveMaximum === 'number') shape.maximum = s.exclusiveMaximum;
  if (typeof s.minItems === 'number') shape.minItems = s.minItems;
  if (typeof s.maxItems === 'number') shape.maxItems = s.maxItems;
  if (s.secret === true || s.airbyte_secret === true) shape.secret = true;
  if (isObject(s.reduce) && typeof s.reduce.strategy === 'string') shape.reduce = s.reduce.strategy;

  const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === 'string') : []);
  if (isObject(s.properties)) {
    for (const [name, sub] of Object.entries(s.properties)) {
      if (!isSchema(sub)) continue;
      // Siblings of a $ref (2019-09+) apply together with it: intersect with what the reference said.
      const own = shapeOf(sub, root, depth + 1, resources);
      const prev = shape.properties.get(name);
      shape.properties.set(name, { shape: prev ? intersect(prev.shape, own) : own, required: required.has(name) || prev?.required === true });
    }
  }
  for (const name of required) {
    const prev = shape.properties.get(name);
    if (!prev) shape.properties.set(name, { shape: anyShape(), required: true });
    else prev.required = true;
  }
  if (isSchema(s.additionalProperties)) shape.additional = shapeOf(s.additionalProperties, root, depth + 1, resources);
  if (isObject(s.patternProperties) && Object.keys(s.patternProperties).length > 0 && shape.additional && shape.additional.types.size === 0) {
    // Members matching a pattern may exist even when additionalProperties is false.
    shape.additional = anyShape();
  }
  if (isSchema(s.items)) shape.items = shapeOf(s.items, root, depth + 1, resources);

  if (Array.isArray(s.allOf)) {
    for (const sub of s.allOf) if (isSchema(sub)) shape = intersect(shape, shapeOf(sub, root, depth + 1, resources));
  }
  for (const kw of ['anyOf', 'oneOf'] as const) {
    const branches = s[kw];
    if (Array.isArray(branches) && branches.length > 0) {
      const shapes = branches.filter(isSchema).map((b) => shapeOf(b, root, depth + 1, resources));
      const u = shapes.slice(1).reduce((acc, b) => union(acc, b), shapes[0] ?? anyShape());
      shape = intersect(shape, u);
    }
  }
  return shape;
}

export function resolveLocalRef(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur: JsonValue = root;
  for (const seg of ref.slice(2).split('/').map((x) => unescapePointerToken(decodeURIComponent(x)))) {
    if (isObject(cur)) cur = cur[seg] as JsonValue;
    else if (Array.isArray(cur)) cur = cur[Number(seg)] as JsonValue;
    else return undefined;
    if (cur === undefined) return undefined;
  }
  return isSchema(cur) ? cur : undefined;
}

function intersectTypes(a: Set<string>, b: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const t of a) {
    if (b.has(t)) out.add(t);
    else if (t === 'integer' && b.has('number')) out.add('integer');
    else if (t === 'number' && b.has('integer')) out.add('integer');
  }
  return normalizeTypes(out);
}

/** Integers are numbers: a set holding both is reported as just "number". */
function normalizeTypes(s: Set<string>): Set<string> {
  if (s.has('number')) s.delete('integer');
  return s;
}

function intersect(a: Shape, b: Shape): Shape {
  const out: Shape = {
    types: intersectTypes(a.types, b.types),
    properties: new Map(a.properties),
    additional: a.additional && b.additional ? intersect(a.additional, b.additional) : (a.additional ?? b.additional),
    items: a.items && b.items ? intersect(a.items, b.items) : (a.items ?? b.items),
  };
  for (const [name, pb] of b.properties) {
    const pa = out.properties.get(name);
    out.properties.set(name, pa ? { shape: intersect(pa.shape, pb.shape), required: pa.required || pb.required } : pb);
  }
  for (const k of ['title', 'description', 'format', 'contentEncoding', 'contentType', 'reduce'] as const) {
    const v = b[k] ?? a[k];
    if (v !== undefined) out[k] = v;
  }
  const dflt = 'default' in b ? b.default : a.default;
  if (dflt !== undefined) out.default = dflt;
  if (a.secret || b.secret) out.secret = true;
  const minOf = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.min(x, y));
  const maxOf = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.max(x, y));
  setNum(out, 'maxLength', minOf(a.maxLength, b.maxLength));
  setNum(out, 'maximum', minOf(a.maximum, b.maximum));
  setNum(out, 'minimum', maxOf(a.minimum, b.minimum));
  setNum(out, 'maxItems', minOf(a.maxItems, b.maxItems));
  setNum(out, 'minItems', maxOf(a.minItems, b.minItems));
  return out;
}

function union(a: Shape, b: Shape): Shape {
  // A branch that admits nothing contributes nothing.
  if (a.types.size === 0) return b;
  if (b.types.size === 0) return a;
  const out: Shape = {
    types: normalizeTypes(new Set([...a.types, ...b.types])),
    properties: new Map(),
    additional: a.additional && b.additional ? union(a.additional, b.additional) : null,
    items: a.items && b.items ? union(a.items, b.items) : null,
  };
  for (const name of new Set([...a.properties.keys(), ...b.properties.keys()])) {
    const pa = a.properties.get(name);
    const pb = b.properties.get(name);
    if (pa && pb) out.properties.set(name, { shape: union(pa.shape, pb.shape), required: pa.required && pb.required });
    else out.properties.set(name, { shape: (pa ?? pb)!.shape, required: false });
  }
  for (const k of ['title', 'description', 'format', 'contentEncoding', 'contentType', 'reduce'] as const) {
    if (a[k] !== undefined && a[k] === b[k]) out[k] = a[k];
  }
  if (a.secret && b.secret) out.secret = true;
  const maxOf = (x?: number, y?: number) => (x === undefined || y === undefined ? undefined : Math.max(x, y));
  const minOf = (x?: number, y?: number) => (x === undefined || y === undefined ? undefined : Math.min(x, y));
  setNum(out, 'maxLength', maxOf(a.maxLength, b.maxLength));
  setNum(out, 'maximum', maxOf(a.maximum, b.maximum));
  setNum(out, 'minimum', minOf(a.minimum, b.minimum));
  return out;
}

function setNum(s: Shape, k: 'maxLength' | 'maximum' | 'minimum' | 'maxItems' | 'minItems', v: number | undefined): void {
  if (v !== undefined) s[k] = v;
}

/** The shape at `pointer` and whether the location must, may or cannot exist in a valid document. */
export function locate(root: Shape, pointer: string): { shape: Shape; exists: 'MUST' | 'MAY' | 'CANNOT' } {
  let shape = root;
  let exists: 'MUST' | 'MAY' | 'CANNOT' = root.types.size === 0 ? 'CANNOT' : 'MUST';
  if (pointer === '') return { shape, exists };
  for (const seg of parsePointer(pointer)) {
    const canObject = shape.types.has('object');
    const canArray = shape.types.has('array') && /^(0|[1-9][0-9]*)$/.test(seg);
    if (!canObject && !canArray) return { shape: neverShape(), exists: 'CANNOT' };
    const onlyObject = shape.types.size === 1 && canObject;
    const prop = canObject ? shape.properties.get(seg) : undefined;
    let next: Shape;
    let required = false;
    if (prop) {
      next = prop.shape;
      required = prop.required && onlyObject;
    } else if (canObject && shape.additional) {
      next = shape.additional;
    } else if (canObject && !shape.additional) {
      next = anyShape();
    } else {
      next = canArray ? (shape.items ?? anyShape()) : neverShape();
    }
    if (canArray && !prop && canObject) next = union(next, shape.items ?? anyShape());
    if (next.types.size === 0) return { shape: next, exists: 'CANNOT' };
    if (exists === 'MUST' && !required) exists = 'MAY';
    shape = next;
  }
  return { shape, exists };
}

export function jsonType(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isSchema(v: unknown): v is JsonSchema {
  return typeof v === 'boolean' || isObject(v);
}
