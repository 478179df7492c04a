// Journal names as Flow's legacy ingester reports them: `<collection>/pivot=00` for an unpartitioned
// collection, `<collection>/<field>=<encoded value>/…/pivot=00` with logical partitions (fields in
// sorted order). One journal per logical partition; the local plane never splits on key (pivot=00).
import type { JsonValue } from '@sluice/runtime';

export const PIVOT = 'pivot=00';
const SAFE = /^[A-Za-z0-9\-_.~!$()+,;@]*$/;

/** A partition label value: null, booleans and numbers are written as Flow writes them; strings percent-encoded. */
export function encodePartitionValue(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return '%_null';
  if (value === true) return '%_true';
  if (value === false) return '%_false';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'string') {
    if (SAFE.test(value)) return value;
    // Keep the unreserved set of RFC 3986 plus a few path-safe characters; escape the rest.
    return Array.from(new TextEncoder().encode(value), (b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9\-_.~!$()+,;@]/.test(c) && b < 0x80 ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    }).join('');
  }
  throw new TypeError(`partition value must be a scalar, got ${JSON.stringify(value)}`);
}

/** Inverse of encodePartitionValue for strings (null/true/false/numbers decode to their JSON value). */
export function decodePartitionValue(encoded: string): string | number | boolean | null {
  if (encoded === '%_null') return null;
  if (encoded === '%_true') return true;
  if (encoded === '%_false') return false;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(encoded)) return Number(encoded);
  return decodeURIComponent(encoded);
}

/** Labels in field order (sorted); values are the encoded strings. */
export type PartitionLabels = Record<string, string>;

export function journalName(collection: string, labels: PartitionLabels): string {
  const parts = Object.keys(labels).sort().map((f) => `${f}=${labels[f]}`);
  return [collection, ...parts, PIVOT].join('/');
}
