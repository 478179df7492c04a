// Keys and values as JSON: Flow's `key_json` / `values_json` (JSON names `key`, `values`: inline JSON arrays,
// flow-protocol.md §1.4, §3.6), the form the local plane sends its built-in connectors instead of packed tuples
// (issue 16: packing and base64 on the host, base64 and unpacking in the connector, for values that the
// documents already hold as JSON text). Decoding gives exactly the tuple values that packing the same
// document and unpacking it gives (pack.ts / pack-bytes.ts → tuple.ts), so a transactor cannot tell the forms
// apart — the tests compare both for every value shape:
//   - an integer JSON number → a number when it is a safe integer, else the bigint of its digits;
//   - any other number → its double, except that an integral double is an integer (1.0 → 1, 1e20 → 10^20 as a
//     bigint, -0 → 0), as the packer writes integral doubles as tuple integers;
//   - a string → the string, a lone surrogate (possible only through a \u escape) as U+FFFD, as UTF-8 packs it;
//   - an object or array → the UTF-8 bytes of its compact JSON text (stringifyDocument), as Flow packs them;
//   - true, false, null as themselves.
import { parseDocument, stringifyDocument } from './documents.ts';
import type { JsonValue } from './specs.ts';
import type { TupleValue } from './tuple.ts';

const UTF8 = new TextEncoder();
const INTEGER_TEXT = /^-?\d+$/;

/** A JSON number's text as the tuple value its packing unpacks to. */
export function numberOfJsonText(text: string): number | bigint {
  const n = Number(text);
  if (Number.isSafeInteger(n)) return n === 0 ? 0 : n;
  if (INTEGER_TEXT.test(text)) return BigInt(text);
  return Number.isInteger(n) ? BigInt(n) : n;
}

/** One value of a parsed `key`/`values` array (parseDocument: bigints exact) as its tuple value. */
export function tupleOfJson(v: JsonValue | bigint): TupleValue {
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
      return v.toWellFormed();
    case 'boolean':
      return v;
    case 'bigint':
      // parseDocument makes bigints of integers beyond ±2^53 only.
      return v;
    case 'number':
      if (Number.isSafeInteger(v)) return v === 0 ? 0 : v;
      return Number.isInteger(v) ? BigInt(v) : v;
    default:
      return UTF8.encode(stringifyDocument(v as JsonValue));
  }
}

/**
 * A `key`/`values` member's JSON text (an array) as tuple values; throws a TypeError naming the problem when it
 * is not an array of JSON values (SyntaxError from the parse).
 */
export function parseJsonTuple(text: string): TupleValue[] {
  const v = parseDocument(text);
  if (!Array.isArray(v)) throw new TypeError(`expected a JSON array, got ${v === null ? 'null' : typeof v}`);
  return v.map(tupleOfJson);
}

// The fast scan of an array as the plane writes it (no whitespace between elements): each element's grammar is
// checked by a sticky expression, so what is accepted is exactly what JSON.parse accepts there.
// JSON strings exclude raw control characters (U+0000–U+001F): the ranges below name them on purpose.
// eslint-disable-next-line no-control-regex
const PLAIN_STRING = /"[^"\\\u0000-\u001f]*"/y;
// eslint-disable-next-line no-control-regex
const ESCAPED_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Reads the JSON array at text[at] (its `[`) into `out` (appended); returns the index after its `]`, or -1 when
 * the array is anything but scalars without whitespace between them (an object or array element, spacing,
 * a grammar error): the caller then parses the member (parseJsonTuple), which reports errors.
 */
export function scanJsonTuple(text: string, at: number, out: TupleValue[]): number {
  if (text.charCodeAt(at) !== 0x5b /* [ */) return -1;
  let i = at + 1;
  if (text.charCodeAt(i) === 0x5d /* ] */) return i + 1;
  while (true) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      PLAIN_STRING.lastIndex = i;
      if (PLAIN_STRING.test(text)) {
        // Its text (a line decoded from UTF-8 holds no lone surrogate; one in a string given otherwise is U+FFFD,
        // as the packed form has it).
        out.push(text.slice(i + 1, PLAIN_STRING.lastIndex - 1).toWellFormed());
        i = PLAIN_STRING.lastIndex;
      } else {
        ESCAPED_STRING.lastIndex = i;
        if (!ESCAPED_STRING.test(text)) return -1;
        out.push((JSON.parse(text.slice(i, ESCAPED_STRING.lastIndex)) as string).toWellFormed());
        i = ESCAPED_STRING.lastIndex;
      }
    } else if (c === 0x74 /* t */) {
      if (!text.startsWith('true', i)) return -1;
      out.push(true);
      i += 4;
    } else if (c === 0x66 /* f */) {
      if (!text.startsWith('false', i)) return -1;
      out.push(false);
      i += 5;
    } else if (c === 0x6e /* n */) {
      if (!text.startsWith('null', i)) return -1;
      out.push(null);
      i += 4;
    } else {
      NUMBER.lastIndex = i;
      if (!NUMBER.test(text)) return -1;
      out.push(numberOfJsonText(text.slice(i, NUMBER.lastIndex)));
      i = NUMBER.lastIndex;
    }
    const d = text.charCodeAt(i);
    if (d === 0x5d /* ] */) return i + 1;
    if (d !== 0x2c /* , */) return -1;
    i++;
  }
}

/**
 * A value extracted from a parsed document (parseDocument: bigints exact; undefined when absent) as the JSON text
 * the plane sends in `key`/`values`: what decodes to the tuple value tupleValueOf (pack.ts) packs for it.
 */
export function jsonFieldText(v: JsonValue | bigint | undefined): string {
  if (v === undefined || v === null) return 'null';
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'number':
      // An integral double beyond ±2^53 as its exact integer (tupleValueOf packs BigInt(v)); -0 as 0.
      if (Number.isInteger(v)) return Number.isSafeInteger(v) ? String(v === 0 ? 0 : v) : BigInt(v).toString();
      // ±Infinity (a document's 1e400): JSON has no such literal, but a number beyond the doubles reads as it.
      if (!Number.isFinite(v)) return v > 0 ? '1e400' : '-1e400';
      return String(v);
    default:
      return stringifyDocument(v as JsonValue);
  }
}
