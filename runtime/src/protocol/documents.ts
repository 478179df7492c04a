// Documents as the host carries them: JSON text that is parsed once where it enters, with integers
// kept exact. JSON.parse turns 9007199254740993 into 9007199254740992; Flow keeps every i64/u64.
// A document whose text has no run of 16 or more digits cannot hold an integer beyond ±2^53 (2^53 has
// 16 digits), so it takes plain JSON.parse (the fast path); any other is parsed with a reviver that
// reads each unsafe integer's source text (Node 24's `context.source`) into a bigint. Serialising
// writes bigints back as their digits (JSON.rawJSON). Values holding bigints are typed JsonValue
// throughout (a bigint is a JSON number that JavaScript's number cannot hold).
//
// Also here: the full key/r-clock range of a single-shard task. JSON pointers are json-pointer.ts.
import type { JsonObject, JsonValue } from './specs.ts';

/** The whole key and r-clock space: the one shard of a local task (`open.range`). */
export const FULL_RANGE = Object.freeze({ keyEnd: 4294967295, rClockEnd: 4294967295 });

/**
 * True when `text` has a run of 16 or more ASCII digits (what /\d{16}/ finds): the only texts in which an
 * integer can exceed ±2^53 (2^53 has 16 digits). It reads every 16th character: a run of 16 digits covers
 * one of them. At a digit it measures that digit's run, and goes on 16 past the run's end (a run ending
 * there would be the next one that could be long enough). About a sixteenth of a document is read, not
 * all of it: measured 0.08 µs per 380-byte document against 0.41 µs for /(?:^|\D)\d{16}/, which ran
 * for every document the plane parsed (issue 16).
 */
export function hasLongDigits(text: string): boolean {
  const n = text.length;
  let i = 15;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) {
      i += 16;
      continue;
    }
    let start = i;
    while (start > 0) {
      const d = text.charCodeAt(start - 1);
      if (d < 0x30 || d > 0x39) break;
      start--;
    }
    let end = i + 1;
    while (end < n) {
      const d = text.charCodeAt(end);
      if (d < 0x30 || d > 0x39) break;
      end++;
    }
    if (end - start >= 16) return true;
    i = end + 16;
  }
  return false;
}

const INTEGER_TEXT = /^-?\d+$/;

/** The source text of an integer JSON.parse read as a number it cannot hold exactly (beyond ±2^53), or undefined. */
function unsafeIntegerText(value: unknown, context: { source?: string } | undefined): string | undefined {
  if (typeof value !== 'number' || Number.isSafeInteger(value)) return undefined;
  const source = context?.source;
  return source !== undefined && INTEGER_TEXT.test(source) ? source : undefined;
}

function reviveExact(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  const digits = unsafeIntegerText(value, context);
  return digits === undefined ? value : BigInt(digits);
}

function reviveRaw(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  const digits = unsafeIntegerText(value, context);
  return digits === undefined ? value : rawJSON(digits);
}

/**
 * Parses document text keeping integers exact: an integer beyond ±2^53 becomes a bigint. Throws
 * SyntaxError as JSON.parse does.
 */
export function parseDocument(text: string): JsonValue {
  if (!hasLongDigits(text)) return JSON.parse(text) as JsonValue;
  return JSON.parse(text, reviveExact as (key: string, value: unknown) => unknown) as JsonValue;
}

/**
 * parseDocument for a reader that only writes the value back out as JSON (a connector's records): an integer
 * beyond ±2^53 becomes a JSON.rawJSON value of its digits (JSON.stringify writes them unchanged, no replacer
 * needed), not a bigint. Throws SyntaxError as JSON.parse does.
 */
export function parseDocumentRaw(text: string): JsonValue {
  if (!hasLongDigits(text)) return JSON.parse(text) as JsonValue;
  return JSON.parse(text, reviveRaw as (key: string, value: unknown) => unknown) as JsonValue;
}

/** Node 24's JSON.rawJSON (ES2026; not yet in TypeScript's lib): a value JSON.stringify writes as the given text. */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

function replaceBigint(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? rawJSON(value.toString()) : value;
}

/** JSON text of a document (compact), writing bigints as their exact digits. */
export function stringifyDocument(value: JsonValue): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    // Only a bigint makes JSON.stringify of a parsed document throw; the replacer costs, so only then.
    if (!(err instanceof TypeError)) throw err;
    return JSON.stringify(value, replaceBigint);
  }
}

/** True when the value holds a bigint anywhere (a document that plain JSON.stringify cannot write). */
export function holdsBigint(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(holdsBigint);
  for (const k in value) if (holdsBigint((value as Record<string, unknown>)[k])) return true;
  return false;
}

/** A copy of the value with bigints as (rounded) numbers: what JSON Schema validators can read. */
export function withoutBigints(value: JsonValue): JsonValue {
  if (typeof value === 'bigint') return Number(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(withoutBigints);
  const out: JsonObject = {};
  for (const k in value) out[k] = withoutBigints(value[k]!);
  return out;
}

// ---- Splicing a member into document text -------------------------------------------------------------

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Index of the last non-whitespace character at or before `i`. */
function backOverWs(text: string, i: number): number {
  while (i >= 0 && isWs(text.charCodeAt(i))) i--;
  return i;
}

/** `i` is at a closing quote; the index of its opening quote (quotes inside a JSON string are escaped). */
function backOverString(text: string, i: number): number {
  let j = i - 1;
  while (j >= 0) {
    const q = text.lastIndexOf('"', j);
    if (q < 0) return -1;
    let slashes = 0;
    for (let k = q - 1; k >= 0 && text.charCodeAt(k) === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q;
    j = q - 1;
  }
  return -1;
}

/** `i` is at the `}` closing an object: the index of its `{`, or -1. */
function backOverObject(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j >= 0; j--) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      j = backOverString(text, j);
      if (j < 0) return -1;
    } else if (c === 0x7d || c === 0x5d) {
      depth++;
    } else if (c === 0x7b || c === 0x5b) {
      if (--depth === 0) return j;
    }
  }
  return -1;
}

/**
 * Where and what to insert into `text` (valid JSON of an object whose parsed value is `doc`) to add
 * `"<name>":<valueJson>` at `/<parent>/<name>`: the spliced text is text[0, at) + insert + text[at, …). It
 * splices when that member does not exist yet and the parent is either absent (created as `{"<name>":…}`,
 * appended as the document's last member) or an object that is the document's LAST member (the shape
 * connectors write `_meta` in). Returns undefined for any other shape: the caller then sets the value on a
 * copy and serialises it. The spliced bytes are exactly those JSON.stringify of the document with the member
 * set would give, for compact text. A writer of bytes writes the three pieces, with no joined string to build
 * and flatten.
 */
export function spliceMemberAt(text: string, doc: JsonObject, parent: string, name: string, valueJson: string): { at: number; insert: string } | undefined {
  const end = backOverWs(text, text.length - 1);
  if (text.charCodeAt(end) !== 0x7d) return undefined;
  const existing = doc[parent];
  const member = `${JSON.stringify(name)}:${valueJson}`;
  if (existing === undefined) {
    const before = backOverWs(text, end - 1);
    const empty = text.charCodeAt(before) === 0x7b;
    return { at: end, insert: `${empty ? '' : ','}${JSON.stringify(parent)}:{${member}}` };
  }
  if (existing === null || typeof existing !== 'object' || Array.isArray(existing) || Object.hasOwn(existing, name)) return undefined;
  // The document's last member must be `"<parent>": {…}`: walk back over one object value and its key.
  const close = backOverWs(text, end - 1);
  if (text.charCodeAt(close) !== 0x7d) return undefined;
  const open = backOverObject(text, close);
  if (open < 0) return undefined;
  const colon = backOverWs(text, open - 1);
  if (text.charCodeAt(colon) !== 0x3a) return undefined;
  const keyEnd = backOverWs(text, colon - 1);
  if (text.charCodeAt(keyEnd) !== QUOTE) return undefined;
  const keyStart = backOverString(text, keyEnd);
  if (keyStart < 0) return undefined;
  let key: unknown;
  try {
    key = JSON.parse(text.slice(keyStart, keyEnd + 1));
  } catch {
    return undefined;
  }
  if (key !== parent) return undefined;
  const sep = text.charCodeAt(backOverWs(text, keyStart - 1));
  if (sep !== 0x2c && sep !== 0x7b) return undefined;
  const inner = backOverWs(text, close - 1);
  const emptyParent = inner === open;
  return { at: close, insert: emptyParent ? member : `,${member}` };
}
