// A `captured` response whose document stays bytes: the host reads a connector's `captured` line of the
// shape the runtime's connectors write (`{"captured":{"doc":…}}` or `{"captured":{"binding":N,"doc":…}}`,
// protocol/captured-lines.ts) as the document's byte range in the stdout chunk, without decoding the line
// into a string or parsing it. Why: a capture's documents go from the connector's bytes into the journal's
// bytes, and decoding, parsing and re-encoding each one was most of the plane's main-thread work (issue 16).
// Nothing about the document is checked here: its consumer checks its bytes (the plane's collection writer
// checks them against the collection's schema in one pass), or reads `doc`/`text`, which parse the whole
// line exactly as the framing always did (same values, same ProtocolError for a malformed line).
import type { CapturedResponse } from '../protocol/capture.ts';
import type { JsonObject } from '../protocol/specs.ts';

const CAPTURED_OPEN = Buffer.from('{"captured":{');
const BINDING = Buffer.from('"binding":');
const DOC = Buffer.from('"doc":');

/** Parses one line the framing's usual way: the `captured` body with its document text (DOC_TEXT) attached. */
export type LineParser = (text: string, line: number) => CapturedResponse;

/** Called with the error a malformed line gave; rejects with the error to report (the connector's own, if it failed). */
export type OutputFailure = (err: unknown) => Promise<never>;

/**
 * The document of one `captured` line as bytes: `buf[start, end)` is the document's text as the connector
 * wrote it (not checked to be JSON, nor UTF-8: see above); `lineStart`/`lineEnd` bound the whole line.
 */
export class CapturedBytes implements CapturedResponse {
  readonly binding: number;
  readonly buf: Buffer;
  readonly start: number;
  readonly end: number;
  readonly lineStart: number;
  readonly lineEnd: number;
  /** The line's number in the connector's output. */
  readonly line: number;
  readonly #parse: LineParser;
  readonly #fail: OutputFailure;
  #parsed: CapturedResponse | undefined;
  /** The error parsing the line gave (so that the driver can tell it from its consumer's errors). */
  parseError: unknown;

  constructor(binding: number, buf: Buffer, start: number, end: number, lineStart: number, lineEnd: number, line: number, parse: LineParser, fail: OutputFailure) {
    this.binding = binding;
    this.buf = buf;
    this.start = start;
    this.end = end;
    this.lineStart = lineStart;
    this.lineEnd = lineEnd;
    this.line = line;
    this.#parse = parse;
    this.#fail = fail;
  }

  /** The body as the framing parses it; throws its ProtocolError for a malformed line. */
  parsed(): CapturedResponse {
    if (this.#parsed !== undefined) return this.#parsed;
    try {
      this.#parsed = this.#parse(this.lineTextValue, this.line);
    } catch (err) {
      this.parseError = err;
      throw err;
    }
    return this.#parsed;
  }

  /** The document parsed (integers beyond ±2^53 rounded, as a parsed `captured` body's). */
  get doc(): JsonObject {
    return this.parsed().doc;
  }

  /** The line's text. */
  get lineTextValue(): string {
    return this.buf.toString('utf8', this.lineStart, this.lineEnd);
  }

  /**
   * Reports a malformed line as the framing does: waits for the connector to exit and rejects with its own
   * error when it failed, else with `err`.
   */
  failed(err: unknown): Promise<never> {
    return this.#fail(err);
  }
}

function startsWithAt(buf: Buffer, at: number, end: number, prefix: Buffer): boolean {
  if (end - at < prefix.length) return false;
  for (let k = 0; k < prefix.length; k++) if (buf[at + k] !== prefix[k]) return false;
  return true;
}

/** Where capturedLineShape puts the line's binding. */
export interface CapturedShape { binding: number }

/**
 * The document start of a line `buf[start, end)` of exactly the shape `{"captured":{"doc":<d>}}` or
 * `{"captured":{"binding":<N>,"doc":<d>}}` (no whitespace outside <d>, N without leading zeros, <d> starting
 * with `{`), with the binding set in `out`; the document ends 2 bytes before the line. -1 for any other
 * line (the caller parses it as usual).
 */
export function capturedLineShape(buf: Buffer, start: number, end: number, out: CapturedShape): number {
  if (!startsWithAt(buf, start, end, CAPTURED_OPEN)) return -1;
  let i = start + CAPTURED_OPEN.length;
  let binding = 0;
  if (startsWithAt(buf, i, end, BINDING)) {
    i += BINDING.length;
    const first = i;
    let c = buf[i]!;
    while (c >= 0x30 && c <= 0x39 && i - first < 9) {
      binding = binding * 10 + (c - 0x30);
      c = buf[++i]!;
    }
    if (i === first || (buf[first] === 0x30 && i - first > 1) || buf[i] !== 0x2c) return -1;
    i++;
  }
  if (!startsWithAt(buf, i, end, DOC)) return -1;
  i += DOC.length;
  if (end - i < 4 || buf[i] !== 0x7b || buf[end - 1] !== 0x7d || buf[end - 2] !== 0x7d) return -1;
  out.binding = binding;
  return i;
}
