// Newline-delimited JSON framing (flow-protocol.md §1.3), the reading side: one JSON object per line, lines
// split out of any byte source, up to 128 MiB each; a partial trailing line is a ProtocolError. Parsing a
// line into an envelope is envelope.ts; writing lines is message-writer.ts.
import { ProtocolError } from '../errors.ts';

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

type Utf8Slicer = Buffer & { utf8Slice?: (start: number, end: number) => string };

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
        // utf8Slice: toString's argument handling cost a quarter of the decode for a typical 700-byte line.
        text = (buf as Utf8Slicer).utf8Slice?.(start, nl) ?? buf.toString('utf8', start, nl);
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

  /**
   * push() as byte ranges, for a reader that looks at a line's bytes before (or instead of) decoding it:
   * calls `visit(buf, start, end, line)` for every complete line of the chunk, blank ones included, the
   * newline excluded (lineText() gives what push() would). `buf` is the chunk itself, or, for a line begun
   * in an earlier chunk, a buffer holding just that line and its newline: either way buf[end] is the newline.
   * A line is counted before it is visited; when `visit` throws, the rest of the chunk is dropped (the
   * stream is broken then).
   */
  pushSpans(chunk: Uint8Array | string, visit: (buf: Buffer, start: number, end: number, line: number) => void): void {
    const buf = toBuffer(chunk);
    let start = 0;
    while (start < buf.length) {
      const nl = buf.indexOf(10, start);
      if (nl === -1) break;
      if (this.pendingLength + (nl - start) > this.max) throw this.tooLong();
      this.lineNo++;
      if (this.pendingLength > 0) {
        // With its newline, as a line in a chunk has one after it (a reader may stop at it instead of at the end).
        this.pending.push(buf.subarray(start, nl + 1));
        const whole = Buffer.concat(this.pending);
        this.pending = [];
        this.pendingLength = 0;
        start = nl + 1;
        visit(whole, 0, whole.length - 1, this.lineNo);
      } else {
        const from = start;
        start = nl + 1;
        visit(buf, from, nl, this.lineNo);
      }
    }
    if (start < buf.length) {
      const rest = buf.subarray(start);
      this.pendingLength += rest.length;
      if (this.pendingLength > this.max) throw this.tooLong();
      // Copy: the source may reuse its chunk buffers.
      this.pending.push(Buffer.from(rest));
    }
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

/** A line's text as push() gives it (a trailing `\r` dropped), or undefined for a blank line (skipped). */
export function lineText(buf: Buffer, start: number, end: number): string | undefined {
  let text = (buf as Utf8Slicer).utf8Slice?.(start, end) ?? buf.toString('utf8', start, end);
  if (text.endsWith('\r')) text = text.slice(0, -1);
  return text.trim() === '' ? undefined : text;
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
