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
}

/**
 * Parses one line as an envelope with exactly one variant key out of `variants`. `$internal` is
 * ignored. `kind` names the message kind in errors ("request" or "response").
 */
export function parseEnvelope(line: Line, variants: readonly string[], kind: string, name = 'input'): Envelope {
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
   * writeDocument does with the line it serialises (capture outputs carrying `docJson`).
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
