// The fast path of envelope parsing (envelope.ts's parseEnvelope tries it first).
import type { JsonObject, JsonValue } from './specs.ts';
import { isJsonObjectText } from './json-check.ts';

export const QUOTE = 0x22;

// Hot requests (`store`, `load`, `acknowledge`, `flush`) have one shape: `{"<variant>":{<members>}}` where
// every member but at most one is a plain string (no escapes), a number, true, false or null, and the one
// other (a store's `doc`) is any JSON value. JSON.parse of a whole store line costs ~1.8 µs, of which the
// document is ~1 µs; the rest is the envelope. scanEnvelope reads the envelope itself and JSON.parses only
// that one member, which it finds without scanning it: the members before it are read forward, the members
// after it (literals only, e.g. `"exists":true`) backward from the line's end. Each piece is checked
// against its own grammar and the member's text by JSON.parse, so the line is valid JSON with exactly this
// structure (JSON's grammar is unambiguous). Any other shape — whitespace is fine, but escapes in keys,
// duplicate or unusual keys, `$internal`, two complex members, a parse error — returns undefined and the
// general path parses the line (and reports every error as before). Equivalence: framing-fast.test.ts.
// A caller that only passes the complex member on as text (a materialization's store `doc`) names it in
// ScanOptions.unparsed: that member is then checked against JSON's grammar (json-check.ts) instead of parsed,
// and left out of the body (its text is in `raw`); when the check cannot decide, it is parsed as usual.

const NAME_OK = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  NAME_OK[c] = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f ? 1 : 0;
}
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Member names seen so far (at most 31: a bitmask finds duplicates; the protocol has few): a name is matched in place and the stored
 * string reused, so no string is sliced and hashed per member (that cost more than the rest of the scan).
 */
const NAMES: string[] = [];
const MAX_NAMES = 31;

/** The index in NAMES of the name text[start, end), added when new; -1 when NAMES is full. */
function nameIndex(text: string, start: number, end: number): number {
  const len = end - start;
  for (let k = 0; k < NAMES.length; k++) {
    const name = NAMES[k]!;
    if (name.length === len && text.startsWith(name, start)) return k;
  }
  if (NAMES.length >= MAX_NAMES) return -1;
  // A flat copy, so the stored name does not keep this line alive.
  NAMES.push(Buffer.from(text.slice(start, end), 'latin1').toString('latin1'));
  return NAMES.length - 1;
}

/** A member name at `i` (after its opening quote): letters, digits, `_`, starting with a letter. Returns the end (the closing quote) or -1. */
function nameEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (!((first >= 0x41 && first <= 0x5a) || (first >= 0x61 && first <= 0x7a))) return -1;
  let j = i + 1;
  let c = text.charCodeAt(j);
  while (c < 128 && NAME_OK[c] === 1) c = text.charCodeAt(++j);
  return c === QUOTE ? j : -1;
}

/** The end (after the closing quote) of a string at `i` (its opening quote) with no escape or control character, or -1. */
function plainStringEnd(text: string, i: number): number {
  PLAIN_STRING.lastIndex = i + 1;
  return PLAIN_STRING.test(text) ? PLAIN_STRING.lastIndex : -1;
}
// (Irregexp's native loop is ~5× faster than a charCodeAt loop here.)
// eslint-disable-next-line no-control-regex
const PLAIN_STRING = /[^"\\\u0000-\u001f]*"/y;

/** A number, true, false or null at `i`: [value, end], or undefined. */
function literalAt(text: string, i: number): [JsonValue, number] | undefined {
  const c = text.charCodeAt(i);
  if (c === 0x74) return text.startsWith('true', i) ? [true, i + 4] : undefined;
  if (c === 0x66) return text.startsWith('false', i) ? [false, i + 5] : undefined;
  if (c === 0x6e) return text.startsWith('null', i) ? [null, i + 4] : undefined;
  if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
    NUMBER.lastIndex = i;
    if (!NUMBER.test(text)) return undefined;
    const end = NUMBER.lastIndex;
    return [Number(text.slice(i, end)), end];
  }
  return undefined;
}

export interface ScannedEnvelope {
  variant: string;
  body: JsonObject;
  /** `unparsed`: the member is not in `body`; its text is a JSON object (checked, not parsed). */
  raw?: { member: string; text: string; unparsed?: true };
}

export interface ScanOptions {
  /** The body member of this variant to check instead of parse, when it is the line's complex member (see above). */
  unparsed?: { variant: string; member: string };
}

/**
 * The fast path of parseEnvelope (see above): the envelope of a line of the common shape, or undefined when
 * the line must go through JSON.parse. Never throws.
 */
export function scanEnvelope(text: string, variants: readonly string[], options?: ScanOptions): ScannedEnvelope | undefined {
  const n = text.length;
  let i = 0;
  while (isWs(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  i++;
  while (isWs(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== QUOTE) return undefined;
  let e = nameEnd(text, i + 1);
  if (e === -1) return undefined;
  let variant: string | undefined;
  for (const v of variants) {
    if (v.length === e - i - 1 && text.startsWith(v, i + 1)) {
      variant = v;
      break;
    }
  }
  if (variant === undefined) return undefined;
  i = e + 1;
  while (isWs(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x3a) return undefined;
  i++;
  while (isWs(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  i++;
  while (isWs(text.charCodeAt(i))) i++;
  const body: JsonObject = {};
  if (text.charCodeAt(i) === 0x7d) return closeEnvelope(text, i + 1) ? { variant, body } : undefined;
  // Bit k: NAMES[k] was seen (a duplicate declines: JSON.parse would keep the last).
  let seen = 0;
  while (true) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    e = nameEnd(text, i + 1);
    if (e === -1) return undefined;
    const index = nameIndex(text, i + 1, e);
    if (index === -1 || (seen & (1 << index)) !== 0) return undefined;
    seen |= 1 << index;
    const key = NAMES[index]!;
    i = e + 1;
    while (isWs(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) !== 0x3a) return undefined;
    i++;
    while (isWs(text.charCodeAt(i))) i++;
    const c = text.charCodeAt(i);
    let end: number;
    if (c === QUOTE) {
      end = plainStringEnd(text, i);
      if (end === -1) return complexMember(text, variant, body, key, seen, i, options);
      body[key] = text.slice(i + 1, end - 1);
    } else if (c === 0x7b || c === 0x5b) {
      return complexMember(text, variant, body, key, seen, i, options);
    } else {
      const lit = literalAt(text, i);
      if (lit === undefined) return undefined;
      body[key] = lit[0];
      end = lit[1];
    }
    i = end;
    while (isWs(text.charCodeAt(i))) i++;
    const d = text.charCodeAt(i);
    i++;
    if (d === 0x7d) return closeEnvelope(text, i) ? { variant, body } : undefined;
    if (d !== 0x2c) return undefined;
    while (isWs(text.charCodeAt(i))) i++;
    if (i >= n) return undefined;
  }
}

/** After the body's closing brace at i - 1: whitespace, the envelope's closing brace, whitespace, end. */
function closeEnvelope(text: string, i: number): boolean {
  while (isWs(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x7d) return false;
  i++;
  while (isWs(text.charCodeAt(i))) i++;
  return i === text.length;
}

/**
 * The member `key` whose value starts at `start` is not simple: read the members after it backward from
 * the end (literals only), JSON.parse what lies between.
 */
function complexMember(text: string, variant: string, body: JsonObject, key: string, seen: number, start: number, options: ScanOptions | undefined): ScannedEnvelope | undefined {
  let j = text.length - 1;
  while (j > start && isWs(text.charCodeAt(j))) j--;
  if (text.charCodeAt(j) !== 0x7d) return undefined;
  j--;
  while (j > start && isWs(text.charCodeAt(j))) j--;
  if (text.charCodeAt(j) !== 0x7d) return undefined;
  j--;
  // Members after the complex one, last first: `,"name":literal`.
  let after: [number, JsonValue][] | undefined;
  while (j > start) {
    while (j > start && isWs(text.charCodeAt(j))) j--;
    const c = text.charCodeAt(j);
    // A complex value ends with `}`, `]` or `"`; a literal with a letter or digit.
    if (c === 0x7d || c === 0x5d || c === QUOTE) break;
    let k = j;
    while (k > start) {
      const d = text.charCodeAt(k - 1);
      if (d === 0x3a || isWs(d)) break;
      k--;
    }
    const lit = literalAt(text, k);
    if (lit === undefined || lit[1] !== j + 1) return undefined;
    k--;
    while (k > start && isWs(text.charCodeAt(k))) k--;
    if (text.charCodeAt(k) !== 0x3a) return undefined;
    k--;
    while (k > start && isWs(text.charCodeAt(k))) k--;
    if (text.charCodeAt(k) !== QUOTE) return undefined;
    const nameClose = k;
    k--;
    while (k > start && text.charCodeAt(k) < 128 && NAME_OK[text.charCodeAt(k)] === 1) k--;
    if (text.charCodeAt(k) !== QUOTE || nameEnd(text, k + 1) !== nameClose) return undefined;
    const name = nameIndex(text, k + 1, nameClose);
    if (name === -1 || (seen & (1 << name)) !== 0) return undefined;
    seen |= 1 << name;
    k--;
    while (k > start && isWs(text.charCodeAt(k))) k--;
    if (text.charCodeAt(k) !== 0x2c) return undefined;
    (after ??= []).push([name, lit[0]]);
    j = k - 1;
  }
  if (j <= start) return undefined;
  const raw = text.slice(start, j + 1);
  const u = options?.unparsed;
  const unparsed = u !== undefined && u.member === key && u.variant === variant && isJsonObjectText(raw);
  if (!unparsed) {
    let value: JsonValue;
    try {
      value = JSON.parse(raw) as JsonValue;
    } catch {
      return undefined;
    }
    body[key] = value;
  }
  if (after !== undefined) {
    for (let m = after.length - 1; m >= 0; m--) {
      const [name, v] = after[m]!;
      body[NAMES[name]!] = v;
    }
  }
  return { variant, body, raw: unparsed ? { member: key, text: raw, unparsed: true } : { member: key, text: raw } };
}
