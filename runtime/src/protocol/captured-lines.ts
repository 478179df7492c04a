// `captured` lines around document bytes: the runtime owns the protocol framing, the connector writes
// only documents. A connector that serialises its documents itself (e.g. CSV rows straight from the
// input bytes, possibly in a worker thread) writes each one into this writer's buffer between
// beginDocument and endDocument; the writer frames it as `{"captured":{"doc":<document>}}\n` (with
// `"binding":N,` for N > 0), byte for byte what the runtime writes for `{ captured: { binding, doc } }`,
// and hands the lines on in batches (`take`) for the connector to yield as `{ capturedLines }`. A batch's
// buffer can be transferred to another thread and back (`recycle`), so a file is framed in a handful of
// buffers, not one per batch.
import type { CapturedLines } from '../connector/types.ts';

/** Initial size of an output buffer; a batch that needs more grows it. */
export const CAPTURED_LINES_BUFFER_BYTES = 512 * 1024;
/** Returned buffers kept for reuse. */
const POOL_LIMIT = 8;

const encoder = new TextEncoder();
/** `}` closes `captured`, `}` the line's object, then the newline. */
const CLOSE_LINE = [0x7d, 0x7d, 0x0a];

/** The bytes that open a `captured` line for `binding`, before its document. */
export function capturedLineOpen(binding: number): Uint8Array {
  return encoder.encode(binding === 0 ? '{"captured":{"doc":' : `{"captured":{"binding":${binding},"doc":`);
}

export class CapturedLinesWriter {
  readonly #open: Uint8Array;
  /** The buffer documents are written into, at `len` (a view of a transferable ArrayBuffer). */
  buf: Buffer;
  len = 0;
  /** Documents ended since the last take(). */
  documents = 0;
  /** Buffers allocated so far (the rest of the batches reused returned ones). */
  allocated = 1;
  readonly #pool: ArrayBuffer[] = [];

  constructor(binding: number) {
    this.#open = capturedLineOpen(binding);
    this.buf = Buffer.from(new ArrayBuffer(CAPTURED_LINES_BUFFER_BYTES));
  }

  /** Bytes a line needs beyond its document (its framing). */
  get framingBytes(): number {
    return this.#open.length + CLOSE_LINE.length;
  }

  /** Makes room for `extra` more bytes. */
  ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + extra) size *= 2;
    const next = Buffer.from(new ArrayBuffer(size));
    this.allocated++;
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /**
   * Starts a line; the caller then writes one document (the compact JSON text of an object, no newline)
   * at `len`, within `room` bytes this makes for it, and calls endDocument.
   */
  beginDocument(room: number): void {
    this.ensure(this.#open.length + room + CLOSE_LINE.length);
    this.buf.set(this.#open, this.len);
    this.len += this.#open.length;
  }

  /** Ends the line of the document written since beginDocument. */
  endDocument(): void {
    this.ensure(CLOSE_LINE.length);
    const buf = this.buf;
    let o = this.len;
    buf[o++] = 0x7d;
    buf[o++] = 0x7d;
    buf[o++] = 0x0a;
    this.len = o;
    this.documents++;
  }

  /** One document given as text (JSON.stringify of an object). */
  writeDocument(json: string): void {
    this.beginDocument(json.length * 3);
    this.len += this.buf.write(json, this.len, 'utf8');
    this.endDocument();
  }

  /** True when lines were written since the last take(). */
  get pending(): boolean {
    return this.len > 0;
  }

  /** The lines written since the last call (a view of a buffer to hand on), or null; later lines go to another buffer. */
  take(): CapturedLines | null {
    if (this.len === 0) return null;
    const batch = { documents: this.documents, lines: new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.len) };
    let next = this.#pool.pop();
    if (next === undefined) {
      next = new ArrayBuffer(CAPTURED_LINES_BUFFER_BYTES);
      this.allocated++;
    }
    this.buf = Buffer.from(next);
    this.len = 0;
    this.documents = 0;
    return batch;
  }

  /** A buffer of an earlier batch, written and handed back: filled again by later batches (not one grown for a huge document). */
  recycle(buffer: ArrayBuffer): void {
    if (buffer.byteLength >= CAPTURED_LINES_BUFFER_BYTES && buffer.byteLength <= 4 * CAPTURED_LINES_BUFFER_BYTES && this.#pool.length < POOL_LIMIT) this.#pool.push(buffer);
  }
}
