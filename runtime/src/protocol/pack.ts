// The one JSON → tuple packer of the host: `keyPacked` / `valuesPacked` from a document per a
// binding's field selection. Each selected field is read at its projection's pointer; objects and
// arrays pack as bytes holding their JSON text (as Flow's runtime does); integers beyond ±2^53 arrive
// as bigints (documents.ts) and pack exactly; `flow_published_at` is the time of `/_meta/uuid`.
import type { CollectionSpec, FieldSelection, JsonValue, Projection } from './specs.ts';
import { TupleWriter, type TupleValue } from './tuple.ts';
import { stringifyDocument } from './documents.ts';
import { pointerResolver } from './json-pointer.ts';
import { uuidMillis } from './uuid.ts';
import { jsonFieldText } from './json-values.ts';

export interface Packer {
  /** The packed key (FoundationDB tuple bytes): compared as bytes for the load optimization. */
  keyBytes(doc: JsonValue): Buffer;
  /** keyBytes, base64 (`keyPacked`). */
  key(doc: JsonValue): string;
  /** `valuesPacked`. */
  values(doc: JsonValue): string;
  /** The values' packed bytes (not base64), valid until the packer's next call: copy them to keep them. */
  valuesView(doc: JsonValue): Uint8Array;
  /** The key's packed bytes, as valuesView. */
  keyView(doc: JsonValue): Uint8Array;
  /** The key as a JSON array (`key`, json-values.ts): decodes to the tuple values keyView packs. */
  keyJson(doc: JsonValue): string;
  /** The values as a JSON array (`values`), as keyJson. */
  valuesJson(doc: JsonValue): string;
}

const ENCODER = new TextEncoder();

/** A document's value as a tuple element: objects and arrays as the bytes of their JSON text, as Flow packs them. */
export function tupleValueOf(v: JsonValue | bigint | undefined): TupleValue {
  if (v === undefined || v === null) return null;
  const t = typeof v;
  if (t === 'string' || t === 'boolean' || t === 'bigint') return v as TupleValue;
  if (t === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) ? BigInt(v as number) : (v as number);
  return ENCODER.encode(stringifyDocument(v as JsonValue));
}

/** A field's value in a document: as it is there, or for `flow_published_at` the ISO time of its UUID (null for none). */
function fieldValue(p: Projection): (doc: JsonValue) => JsonValue | bigint | undefined {
  const ptr = p.ptr ?? '';
  const at = pointerResolver(ptr);
  if (p.field === 'flow_published_at' || (ptr === '/_meta/uuid' && p.inference?.string?.format === 'date-time')) {
    // Documents of one capture commit share their publication millisecond in runs: the last one's text is kept.
    let lastMs = NaN;
    let lastIso = '';
    return (doc) => {
      const uuid = at(doc);
      if (typeof uuid !== 'string') return null;
      const ms = uuidMillis(uuid);
      if (ms === undefined) return null;
      if (ms !== lastMs) {
        lastIso = new Date(ms).toISOString();
        lastMs = ms;
      }
      return lastIso;
    };
  }
  return at as (doc: JsonValue) => JsonValue | bigint | undefined;
}

function extractor(p: Projection): (doc: JsonValue) => TupleValue {
  const value = fieldValue(p);
  return (doc) => tupleValueOf(value(doc));
}

/** Fields are named by projection; a field without one is an error naming it and the collection. */
export function createPacker(collection: CollectionSpec, selection: FieldSelection): Packer {
  const byField = new Map((collection.projections ?? []).map((p) => [p.field, p]));
  const projection = (field: string) => {
    const p = byField.get(field);
    if (p === undefined) throw new Error(`field "${field}" of the field selection is not a projection of collection "${collection.name}"`);
    return p;
  };
  const keys = (selection.keys ?? []).map((f) => extractor(projection(f)));
  const values = (selection.values ?? []).map((f) => extractor(projection(f)));
  const keyFields = (selection.keys ?? []).map((f) => fieldValue(projection(f)));
  const valueFields = (selection.values ?? []).map((f) => fieldValue(projection(f)));
  const json = (fs: ((doc: JsonValue) => JsonValue | bigint | undefined)[], doc: JsonValue): string => {
    let out = '[';
    for (let i = 0; i < fs.length; i++) out += (i === 0 ? '' : ',') + jsonFieldText(fs[i]!(doc));
    return out + ']';
  };
  // One packing buffer and one row array per list, reused for every document (each is packed at once).
  const writer = new TupleWriter();
  const keyRow = new Array<TupleValue>(keys.length);
  const valueRow = new Array<TupleValue>(values.length);
  const row = (fs: ((doc: JsonValue) => TupleValue)[], out: TupleValue[], doc: JsonValue) => {
    for (let i = 0; i < fs.length; i++) out[i] = fs[i]!(doc);
    return out;
  };
  return {
    keyBytes: (doc) => writer.pack(row(keys, keyRow, doc)).bytes(),
    key: (doc) => writer.pack(row(keys, keyRow, doc)).base64(),
    values: (doc) => writer.pack(row(values, valueRow, doc)).base64(),
    valuesView: (doc) => writer.pack(row(values, valueRow, doc)).view(),
    keyView: (doc) => writer.pack(row(keys, keyRow, doc)).view(),
    keyJson: (doc) => json(keyFields, doc),
    valuesJson: (doc) => json(valueFields, doc),
  };
}
