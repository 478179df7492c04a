// Building `keyPacked` / `valuesPacked` from a reduced document per the binding's field selection:
// each selected field is read at its projection's pointer; objects and arrays pack as bytes holding
// their JSON text (as Flow's runtime does); `flow_published_at` is the time of `/_meta/uuid`.
import { packTupleBase64, type CollectionSpec, type FieldSelection, type JsonValue, type Projection, type TupleValue } from '@sluice/runtime';
import { resolvePointer } from '../journals/pointer.ts';
import { uuidTime } from '../journals/uuid.ts';

export interface Packer {
  key(doc: JsonValue): string;
  values(doc: JsonValue): string;
}

function tupleValue(v: JsonValue | undefined): TupleValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) ? BigInt(v) : v;
  return new Uint8Array(Buffer.from(JSON.stringify(v), 'utf8'));
}

function extractor(p: Projection): (doc: JsonValue) => TupleValue {
  const ptr = p.ptr ?? '';
  if (p.field === 'flow_published_at' || (ptr === '/_meta/uuid' && p.inference?.string?.format === 'date-time')) {
    return (doc) => {
      const uuid = resolvePointer(doc, ptr);
      if (typeof uuid !== 'string') return null;
      return uuidTime(uuid)?.toISOString() ?? null;
    };
  }
  return (doc) => tupleValue(resolvePointer(doc, ptr));
}

export function createPacker(collection: CollectionSpec, selection: FieldSelection): Packer {
  const byField = new Map((collection.projections ?? []).map((p) => [p.field, p]));
  const get = (field: string) => {
    const p = byField.get(field);
    if (p === undefined) throw new Error(`field "${field}" of the field selection is not a projection of collection "${collection.name}"`);
    return extractor(p);
  };
  const keys = (selection.keys ?? []).map(get);
  const values = (selection.values ?? []).map(get);
  return {
    key: (doc) => packTupleBase64(keys.map((f) => f(doc))),
    values: (doc) => packTupleBase64(values.map((f) => f(doc))),
  };
}
