// Newline-delimited JSON framing (flow-protocol.md §1.3): one JSON object per line, both directions.
// Reading: an async iterable of lines over any byte source, lines up to 128 MiB, a partial trailing
// line is a ProtocolError. Writing: one serialised writer per stream that honours backpressure.
import type { Writable } from 'node:stream';
import { ProtocolError } from '../errors.ts';
import type { JsonObject, JsonValue } from './specs.ts';

/** The largest line accepted (the Python CDK's limit). */
export const MAX_LINE_BYTES = 128 * 1024 * 1024;

export type ByteSource = AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;

export interface ReadLinesOptions {
  /** Defaults to MAX_LINE_BYTES. */
  maxLineBytes?: number;
  /** Names the stream in errors, e.g. "stdin" or "connector stdout". */
  name?: string;
}

/** A line with its 1-based line number in the stream. */
export interface Line {
  text: string;
  line: number;
}

function toBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/**
 * The synchronous core of line reading: feed chunks, get complete lines (without the `\n`; a trailing
 * `\r` is dropped; blank lines are skipped but counted). Throws ProtocolError for a line over the
 * limit, and from end() for a partial trailing line.
 */
export class LineSplitter {
  private readonly max: number;
  private readonly name: string;
  private pending: Buffer[] = [];
  private pendingLength = 0;
  private lineNo = 0;

  constructor(options: ReadLinesOptions = {}) {
    this.max = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.name = options.name ?? 'input';
  }

  private tooLong(): ProtocolError {
    return new ProtocolError(`${this.name} line ${this.lineNo + 1} is longer than the ${formatBytes(this.max)} limit for one message`);
  }

  push(chunk: Uint8Array | string): Line[] {
    const buf = toBuffer(chunk);
    const lines: Line[] = [];
    let start = 0;
    while (start < buf.length) {
      const nl = buf.indexOf(10, start);
      if (nl === -1) break;
      if (this.pendingLength + (nl - start) > this.max) throw this.tooLong();
      let text: string;
      if (this.pendingLength > 0) {
        this.pending.push(buf.subarray(start, nl));
        text = Buffer.concat(this.pending).toString('utf8');
        this.pending = [];
        this.pendingLength = 0;
      } else {
        text = buf.toString('utf8', start, nl);
      }
      start = nl + 1;
      this.lineNo++;
      if (text.endsWith('\r')) text = text.slice(0, -1);
      if (text.trim() === '') continue;
      lines.push({ text, line: this.lineNo });
    }
    if (start < buf.length) {
      const rest = buf.subarray(start);
      this.pendingLength += rest.length;
      if (this.pendingLength > this.max) throw this.tooLong();
      // Copy: the source may reuse its chunk buffers.
      this.pending.push(Buffer.from(rest));
    }
    return lines;
  }

  end(): void {
    if (this.pendingLength === 0) return;
    const trailing = Buffer.concat(this.pending).toString('utf8');
    if (trailing.trim() !== '') {
      throw new ProtocolError(
        `${this.name} ended with a partial message: line ${this.lineNo + 1} (${this.pendingLength} bytes) has no terminating newline`,
      );
    }
  }
}

/** Splits a byte stream into lines; see LineSplitter. */
export async function* readLines(source: ByteSource, options: ReadLinesOptions = {}): AsyncGenerator<Line> {
  const splitter = new LineSplitter(options);
  for await (const chunk of source) yield* splitter.push(chunk);
  splitter.end();
}

/** An async iterator over any byte source (sync iterables too). */
export function chunkIterator(source: ByteSource): AsyncIterator<Uint8Array | string> {
  if (Symbol.asyncIterator in source) return source[Symbol.asyncIterator]();
  const it = source[Symbol.iterator]();
  return {
    next: () => Promise.resolve(it.next()),
    return: () => Promise.resolve(it.return?.() ?? { value: undefined, done: true }),
  };
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

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
   */
  raw?: { member: string; text: string };
}

/**
 * Parses one line as an envelope with exactly one variant key out of `variants`. `$internal` is
 * ignored. `kind` names the message kind in errors ("request" or "response").
 */
export function parseEnvelope(line: Line, variants: readonly string[], kind: string, name = 'input'): Envelope {
  const fast = scanEnvelope(line.text, variants);
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

const QUOTE = 0x22;
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

// ---- Fast path ---------------------------------------------------------------------------------------
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
  raw?: { member: string; text: string };
}

/**
 * The fast path of parseEnvelope (see above): the envelope of a line of the common shape, or undefined when
 * the line must go through JSON.parse. Never throws.
 */
export function scanEnvelope(text: string, variants: readonly string[]): ScannedEnvelope | undefined {
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
      if (end === -1) return complexMember(text, variant, body, key, seen, i);
      body[key] = text.slice(i + 1, end - 1);
    } else if (c === 0x7b || c === 0x5b) {
      return complexMember(text, variant, body, key, seen, i);
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
function complexMember(text: string, variant: string, body: JsonObject, key: string, seen: number, start: number): ScannedEnvelope | undefined {
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
  let value: JsonValue;
  try {
    value = JSON.parse(raw) as JsonValue;
  } catch {
    return undefined;
  }
  body[key] = value;
  if (after !== undefined) {
    for (let m = after.length - 1; m >= 0; m--) {
      const [name, v] = after[m]!;
      body[NAMES[name]!] = v;
    }
  }
  return { variant, body, raw: { member: key, text: raw } };
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

const RESOLVED: Promise<void> = Promise.resolve();

/** Buffered document lines are handed to the stream once they reach this many characters. */
export const DOCUMENT_BUFFER_CHARS = 64 * 1024;

/**
 * The one writer of a stream. Lines are handed to the stream in call order, so concurrent producers
 * never interleave. Document lines (`writeDocument`) are coalesced into ~64 KiB writes — flushed when
 * the buffer fills, before any other message, and on the next turn of the event loop — the way Flow's
 * Go runtime buffers `captured` lines and flushes on everything else. The returned promise resolves
 * at once while the stream has room and otherwise on `drain`: await it to honour backpressure.
 */
export class MessageWriter {
  readonly stream: Writable;
  private blocked: Promise<void> | null = null;
  private failure: Error | null = null;
  private rejectBlocked: ((err: Error) => void) | null = null;
  private buffer = '';
  private flushScheduled = false;

  constructor(stream: Writable) {
    this.stream = stream;
    stream.on('error', (err: Error) => {
      this.failure ??= err;
      this.rejectBlocked?.(err);
    });
    // A stream destroyed without an error never drains: release blocked writers.
    stream.on('close', () => {
      this.rejectBlocked?.(this.failure ?? new ProtocolError('output is closed: cannot write another message'));
    });
  }

  /** True while the stream is over its high-water mark (writes resolve on drain). */
  get isBlocked(): boolean {
    return this.blocked !== null;
  }

  /** Serialises one message as a JSON line and writes it now (after any buffered documents). */
  write(message: object): Promise<void> {
    return this.writeLine(JSON.stringify(message) + '\n');
  }

  /** Serialises a document message (`captured`, `loaded`) into the coalescing buffer. */
  writeDocument(message: object): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.buffer += JSON.stringify(message) + '\n';
    if (this.buffer.length >= DOCUMENT_BUFFER_CHARS) return this.writeLine('');
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
    return this.blocked ?? RESOLVED;
  }

  /**
   * Appends an already-serialised document line (ending with `\n`) to the coalescing buffer, exactly as
   * writeDocument does with the line it serialises (the host sending `load` and `store` requests it built as text).
   */
  writeDocumentLine(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.buffer += line;
    if (this.buffer.length >= DOCUMENT_BUFFER_CHARS) return this.writeLine('');
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
    return this.blocked ?? RESOLVED;
  }

  /**
   * Writes already-framed document lines given as UTF-8 bytes (ending with `\n`), after any buffered
   * documents. The stream keeps the bytes until it has written them: `written` is called then (with the
   * error if the write failed), and only after that may the caller reuse the buffer.
   */
  writeDocumentBytes(bytes: Uint8Array, written?: (err?: Error | null) => void): Promise<void> {
    const refuse = this.failure ?? (this.stream.destroyed || this.stream.writableEnded ? new ProtocolError('output is closed: cannot write another message') : null);
    if (refuse) {
      written?.(refuse);
      return Promise.reject(refuse);
    }
    if (this.buffer !== '') this.writeLine('').catch(() => undefined);
    if (bytes.length === 0) {
      written?.(null);
      return this.blocked ?? RESOLVED;
    }
    const ok = written === undefined ? this.stream.write(bytes) : this.stream.write(bytes, written);
    if (!ok && this.blocked === null) this.block();
    return this.blocked ?? RESOLVED;
  }

  private block(): void {
    this.blocked = new Promise<void>((resolve, reject) => {
      this.rejectBlocked = reject;
      this.stream.once('drain', () => {
        this.blocked = null;
        this.rejectBlocked = null;
        resolve();
      });
    });
    // A rejection nobody awaits must not crash the process; writers see it on their next write.
    this.blocked.catch(() => undefined);
  }

  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    if (this.buffer !== '' && !this.failure && !this.stream.destroyed && !this.stream.writableEnded) {
      this.writeLine('').catch(() => undefined);
    }
  };

  /** Writes one already-serialised line (must end with `\n`; '' just flushes buffered documents). */
  writeLine(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.stream.destroyed || this.stream.writableEnded) {
      return Promise.reject(new ProtocolError('output is closed: cannot write another message'));
    }
    let chunk = line;
    if (this.buffer !== '') {
      chunk = this.buffer + line;
      this.buffer = '';
    }
    if (chunk === '') return this.blocked ?? RESOLVED;
    if (!this.stream.write(chunk) && this.blocked === null) this.block();
    return this.blocked ?? RESOLVED;
  }

  /** Resolves once everything written so far (buffered documents included) has been handed on. */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.stream.destroyed || this.stream.writableEnded) return RESOLVED;
    if (this.buffer !== '') this.writeLine('').catch(() => undefined);
    return new Promise<void>((resolve, reject) => {
      this.stream.write('', (err) => (err ? reject(err) : resolve()));
    });
  }
}
