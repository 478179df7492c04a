// One protocol line as an envelope (flow-protocol.md §1.3): its single variant key and body, with errors
// naming the line; the fast path for the hot request shapes is envelope-scan.ts. Also the raw text of a
// body member (a store's `doc`), sliced out of the line instead of re-serialised.
import { ProtocolError } from '../errors.ts';
import { QUOTE, type ScanOptions, scanEnvelope } from './envelope-scan.ts';
import type { ByteSource, Line, ReadLinesOptions } from './line-reader.ts';
import { readLines } from './line-reader.ts';
import type { JsonObject, JsonValue } from './specs.ts';

/** One protocol message: its single variant key and body. */
export interface Envelope {
  variant: string;
  body: JsonObject;
  line: number;
  /** The line's JSON text (for slicing out a member's raw text, see rawBodyMemberText). */
  text?: string;
  /**
   * The raw JSON text of the body's one object/array member (or string with escapes), when the fast path
   * parsed the line (see scanEnvelope): exactly what rawBodyMemberText(text, variant, member) returns.
   * `unparsed` (asked for with ScanOptions.unparsed): the member is not in `body`; its text was checked to be
   * a JSON object, not parsed.
   */
  raw?: { member: string; text: string; unparsed?: true };
}

/**
 * Parses one line as an envelope with exactly one variant key out of `variants`. `$internal` is
 * ignored. `kind` names the message kind in errors ("request" or "response").
 */
export function parseEnvelope(line: Line, variants: readonly string[], kind: string, name = 'input', scan?: ScanOptions): Envelope {
  const fast = scanEnvelope(line.text, variants, scan);
  if (fast !== undefined) {
    const out: Envelope = { variant: fast.variant, body: fast.body, line: line.line, text: line.text };
    if (fast.raw !== undefined) out.raw = fast.raw;
    return out;
  }
  return parseEnvelopeGeneral(line, variants, kind, name);
}

/** parseEnvelope without the fast path: JSON.parse of the whole line (gives every error). */
export function parseEnvelopeGeneral(line: Line, variants: readonly string[], kind: string, name = 'input'): Envelope {
  let value: JsonValue;
  try {
    value = JSON.parse(line.text) as JsonValue;
  } catch (err) {
    // Never echo the line: it may carry secrets.
    throw new ProtocolError(`${name} line ${line.line} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError(
      `${name} line ${line.line} must be a JSON object with exactly one of ${quoteList(variants)}, got ${describe(value)}`,
    );
  }
  // One pass over the keys, without arrays (this runs for every message).
  let variant: string | undefined;
  let count = 0;
  for (const k in value) {
    if (k === '$internal') continue;
    variant ??= k;
    count++;
  }
  if (count !== 1) {
    const keys = Object.keys(value).filter((k) => k !== '$internal');
    const found = keys.length === 0 ? 'none' : quoteList(keys);
    throw new ProtocolError(
      `${name} line ${line.line}: a ${kind} must have exactly one of ${quoteList(variants)}; found ${found}`,
    );
  }
  if (!variants.includes(variant!)) {
    throw new ProtocolError(
      `${name} line ${line.line}: unknown ${kind} "${variant}"; expected one of ${quoteList(variants)}`,
    );
  }
  const body = value[variant!];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ProtocolError(`${name} line ${line.line}: "${variant}" must be a JSON object, got ${describe(body)}`);
  }
  return { variant: variant!, body, line: line.line, text: line.text };
}

// ---- Raw member text -------------------------------------------------------------------------------
// A store's `doc` is written to the destination as JSON text. Re-serialising the parsed object costs
// as much as parsing it; the line already holds that text, so it is sliced out instead. These scanners
// run only on text JSON.parse has accepted, so they need not validate, only find boundaries.

const BACKSLASH = 0x5c;

function skipWhitespace(text: string, i: number): number {
  let c = text.charCodeAt(i);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i);
  return i;
}

/** `i` is at an opening quote; returns the index after the closing one. */
function skipString(text: string, i: number): number {
  let from = i + 1;
  while (true) {
    const q = text.indexOf('"', from);
    if (q === -1) return text.length;
    let backslashes = 0;
    for (let j = q - 1; text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** `i` is at the first character of a value; returns the index after it. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) {
        j = skipString(text, j) - 1;
      } else if (d === 0x7b || d === 0x5b) {
        depth++;
      } else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  while (j < text.length) {
    const d = text.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
    j++;
  }
  return j;
}

/** The key of the member starting at `i` (an opening quote) and the index after it. */
function readKey(text: string, i: number): [string, number] {
  const end = skipString(text, i);
  const raw = text.slice(i + 1, end - 1);
  return [raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw, end];
}

/**
 * Scans the object at `i`: calls `visit(key, start)` for every member with the index of its value; the
 * visitor returns the index after the value when it scanned it itself, else the value is skipped.
 * Returns the index after the object.
 */
function forEachMember(text: string, i: number, visit: (key: string, start: number) => number | undefined): number {
  i = skipWhitespace(text, i);
  if (text.charCodeAt(i) !== 0x7b) return skipValue(text, i);
  i = skipWhitespace(text, i + 1);
  while (text.charCodeAt(i) === QUOTE) {
    const [key, afterKey] = readKey(text, i);
    const start = skipWhitespace(text, skipWhitespace(text, afterKey) + 1);
    const end = visit(key, start) ?? skipValue(text, start);
    i = skipWhitespace(text, end);
    if (text.charCodeAt(i) !== 0x2c) break;
    i = skipWhitespace(text, i + 1);
  }
  return i + 1;
}

/**
 * The raw JSON text of `member` inside the body of an envelope line `{"<variant>": {…}}` that JSON.parse
 * accepted, or undefined when the body has no such member. Duplicate keys resolve as JSON.parse does
 * (the last one wins).
 */
export function rawBodyMemberText(text: string, variant: string, member: string): string | undefined {
  let found: string | undefined;
  forEachMember(text, 0, (key, start) => {
    if (key !== variant) return undefined;
    found = undefined;
    return forEachMember(text, start, (k, s) => {
      if (k !== member) return undefined;
      const e = skipValue(text, s);
      found = text.slice(s, e);
      return e;
    });
  });
  return found;
}
/** Reads envelopes from a byte source. */
export async function* readEnvelopes(
  source: ByteSource,
  variants: readonly string[],
  kind: string,
  options: ReadLinesOptions = {},
): AsyncGenerator<Envelope> {
  for await (const line of readLines(source, options)) yield parseEnvelope(line, variants, kind, options.name);
}

export function quoteList(items: readonly string[]): string {
  return items.map((i) => `"${i}"`).join(', ');
}

function describe(value: JsonValue | undefined): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
