// Projections and their inference, computed from a collection's read schema the way Flow builds them:
// every property by name (nested ones as `a/b`), `flow_document` for the root, `flow_published_at` for
// /_meta/uuid, then the explicit projections (logical partitions flagged), key locations flagged.
import { escapePointerToken } from '@sluice/runtime';
import type { Inference, Projection } from '@sluice/runtime';
import { ALL_TYPES, locate } from './shape.ts';
import type { Shape } from './shape.ts';

export interface ExplicitProjection { field: string; ptr: string; partition: boolean }

/** How deep nested object properties are projected as `a/b/c` fields. */
const MAX_NESTING = 8;

export function buildProjections(shape: Shape, key: string[], explicit: ExplicitProjection[]): Projection[] {
  const byField = new Map<string, Projection>();
  const add = (p: Projection) => byField.set(p.field, p);

  add({ field: 'flow_document', inference: inferenceAt(shape, '') });
  add({
    field: 'flow_published_at', ptr: '/_meta/uuid',
    inference: { types: ['string'], string: { format: 'date-time' }, title: 'Flow Publication Time', description: 'Flow publication date-time of this document', exists: 'MUST' },
  });

  const walk = (s: Shape, ptr: string, field: string, depth: number) => {
    for (const name of [...s.properties.keys()].sort()) {
      const childPtr = `${ptr}/${escapePointerToken(name)}`;
      const childField = field === '' ? name : `${field}/${name}`;
      if (childPtr === '/_meta/uuid') continue; // projected as flow_published_at
      const child = s.properties.get(name)!.shape;
      add({ field: childField, ptr: childPtr, inference: inferenceAt(shape, childPtr) });
      if (child.types.has('object') && child.properties.size > 0 && depth + 1 < MAX_NESTING) walk(child, childPtr, childField, depth + 1);
    }
  };
  if (shape.types.has('object')) walk(shape, '', '', 0);

  // Key locations not reachable through named properties still get a projection.
  for (const ptr of key) {
    if (![...byField.values()].some((p) => p.ptr === ptr)) {
      add({ field: ptr.slice(1), ptr, inference: inferenceAt(shape, ptr) });
    }
  }
  for (const e of explicit) {
    const p: Projection = { field: e.field, ptr: e.ptr, explicit: true, inference: inferenceAt(shape, e.ptr) };
    if (e.partition) p.isPartitionKey = true;
    add(p);
  }
  for (const p of byField.values()) {
    if (p.ptr !== undefined && key.includes(p.ptr)) p.isPrimaryKey = true;
  }
  return [...byField.values()].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
}

/** Inference of the location `ptr` of a document with shape `root`, in the protocol's JSON shape (defaults omitted). */
export function inferenceAt(root: Shape, ptr: string): Inference {
  const { shape, exists } = locate(root, ptr);
  const types = ALL_TYPES.filter((t) => shape.types.has(t));
  const inf: Inference = { types: [...types] };
  if (shape.types.has('string')) {
    const str: NonNullable<Inference['string']> = {};
    if (shape.format !== undefined) str.format = shape.format;
    if (shape.contentEncoding !== undefined) str.contentEncoding = shape.contentEncoding;
    if (shape.contentType !== undefined) str.contentType = shape.contentType;
    if (shape.maxLength !== undefined && shape.maxLength > 0) str.maxLength = shape.maxLength;
    inf.string = str;
  }
  if ((shape.types.has('integer') || shape.types.has('number')) && (shape.minimum !== undefined || shape.maximum !== undefined)) {
    const num: NonNullable<Inference['numeric']> = {};
    if (shape.minimum !== undefined) { num.hasMinimum = true; num.minimum = shape.minimum; }
    if (shape.maximum !== undefined) { num.hasMaximum = true; num.maximum = shape.maximum; }
    inf.numeric = num;
  }
  if (shape.types.has('array')) {
    const arr: NonNullable<Inference['array']> = {};
    if (shape.minItems !== undefined && shape.minItems > 0) arr.minItems = shape.minItems;
    if (shape.maxItems !== undefined) { arr.hasMaxItems = true; arr.maxItems = shape.maxItems; }
    if (shape.items) arr.itemTypes = ALL_TYPES.filter((t) => shape.items!.types.has(t));
    inf.array = arr;
  }
  if (shape.title !== undefined) inf.title = shape.title;
  if (shape.description !== undefined) inf.description = shape.description;
  if (shape.default !== undefined) inf.default = shape.default;
  if (shape.secret) inf.secret = true;
  inf.exists = exists;
  return inf;
}
