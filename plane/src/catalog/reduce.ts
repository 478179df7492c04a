// Reduction of documents that share a key, following the schema's `reduce` annotations. The local plane
// supports two strategies: `lastWriteWins` (the default: the later document replaces the earlier one at
// that location) and `merge` (objects merge member by member, each member reduced by its own strategy;
// arrays merge item by item). Other strategies are rejected when the catalog loads (see load.ts).
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';
import { resolvePointer } from '@sluice/runtime/json-pointer';
import { anyShape, isObject, shapeOf } from './shape.ts';
import type { Shape } from './shape.ts';

export const SUPPORTED_STRATEGIES = ['lastWriteWins', 'merge'] as const;

/** A reducer compiled once per schema. */
export interface Reducer {
  /** Reduces `rhs` onto `lhs` (lhs came first). Neither input is modified. */
  reduce(lhs: JsonValue, rhs: JsonValue): JsonValue;
}

export function createReducer(schema: JsonSchema): Reducer {
  const root = shapeOf(schema);
  return { reduce: (lhs, rhs) => reduceAt(root, lhs, rhs) };
}

/** Reduces documents (in order) into one. Throws on an empty list. */
export function reduceDocuments(schema: JsonSchema, docs: JsonValue[]): JsonValue {
  if (docs.length === 0) throw new Error('reduceDocuments: no documents to reduce');
  const r = createReducer(schema);
  return docs.slice(1).reduce<JsonValue>((acc, d) => r.reduce(acc, d), structuredClone(docs[0]!));
}

/**
 * Groups documents by the values at the key pointers and reduces each group, keeping the order in which
 * keys were first seen. This is what a transaction of a materialization (and a test's verify) does.
 */
export function combineByKey(schema: JsonSchema, key: string[], docs: JsonObject[]): JsonObject[] {
  const r = createReducer(schema);
  const groups = new Map<string, JsonValue>();
  for (const doc of docs) {
    const k = JSON.stringify(key.map((ptr) => resolvePointer(doc, ptr) ?? null));
    const prev = groups.get(k);
    groups.set(k, prev === undefined ? structuredClone(doc) : r.reduce(prev, doc));
  }
  return [...groups.values()] as JsonObject[];
}

function reduceAt(shape: Shape, lhs: JsonValue, rhs: JsonValue): JsonValue {
  if ((shape.reduce ?? 'lastWriteWins') !== 'merge') return structuredClone(rhs);
  if (isObject(lhs) && isObject(rhs)) {
    const out: JsonObject = structuredClone(lhs);
    for (const [name, value] of Object.entries(rhs)) {
      const child = shape.properties.get(name)?.shape ?? shape.additional ?? anyShape();
      out[name] = name in out ? reduceAt(child, out[name]!, value) : structuredClone(value);
    }
    return out;
  }
  if (Array.isArray(lhs) && Array.isArray(rhs)) {
    const item = shape.items ?? anyShape();
    const out = lhs.map((v) => structuredClone(v));
    rhs.forEach((v, i) => { out[i] = i < lhs.length ? reduceAt(item, lhs[i]!, v) : structuredClone(v); });
    return out;
  }
  // Merging values of different kinds (or scalars): the later one wins.
  return structuredClone(rhs);
}

/** True when the schema reduces every location last-write-wins (no `merge`): a later document replaces the whole. */
export function isLastWriteWins(schema: JsonSchema): boolean {
  return (shapeOf(schema).reduce ?? 'lastWriteWins') !== 'merge';
}
