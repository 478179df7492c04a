// Records: `_meta`, and the column prefixes of CSV rows written as JSON straight from their bytes.
// A CSV record is a flat object of string-or-null values, so its JSON text can be built from the fields
// (column-name prefixes escaped once per header row, csv-bytes.ts) instead of creating an object and
// JSON.stringify-ing it. The text is exactly what JSON.stringify would give for the object the object
// sink builds; headers for which that is not a simple concatenation (duplicates, array-index names,
// `__proto__`, `_meta`) keep the object path.
import type { JsonObject } from '@sluice/runtime';
import { DecodeError } from './errors.ts';

/** Characters JSON.stringify escapes in a string: `"`, `\`, C0 controls, and surrogates (lone ones are escaped; pairs are checked by JSON.stringify itself). */
// eslint-disable-next-line no-control-regex -- the control characters are exactly what must be found
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify(s), without its cost for the common string that needs no escaping. */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** A property name JS objects order before the others (a canonical array index, 0 … 2^32 − 2). */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= 4294967294;
}

/**
 * The JSON prefix of each column (`{"a":`, `,"b":`, …), or null when an object built by assigning
 * these names in order would not serialise to the concatenation (then the object path is used).
 */
export function columnPrefixes(headers: readonly string[]): string[] | null {
  const seen = new Set<string>();
  for (const h of headers) {
    if (seen.has(h) || h === '__proto__' || h === '_meta' || isArrayIndex(h)) return null;
    seen.add(h);
  }
  return headers.map((h, i) => `${i === 0 ? '{' : ','}${JSON.stringify(h)}:`);
}

/** Sets `_meta: {file, offset}` on a parsed record, keeping its other `_meta` members; a non-object `_meta` is an error. */
export function addMeta(record: JsonObject, file: string, offset: number): void {
  const m = record['_meta'];
  if (m !== undefined && (m === null || typeof m !== 'object' || Array.isArray(m))) {
    throw new DecodeError(`unable to add value: record ${offset} has a non-object _meta (${JSON.stringify(m)?.slice(0, 60)}) at location /_meta/offset; rename the '_meta' column or field`);
  }
  record['_meta'] = m === undefined ? { file, offset } : { ...m, file, offset };
}
