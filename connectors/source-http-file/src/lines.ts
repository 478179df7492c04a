// The parser thread's output: `captured` protocol lines as UTF-8 bytes in a reusable buffer.
// Each line is `{"captured":{"doc":<record with _meta>}}\n` (with `"binding":N,` for N > 0), byte for
// byte what the runtime writes for `{ captured: { binding, doc } }`. A batch is handed to the main thread
// by transferring its ArrayBuffer (no copy); once the main thread has written it, the buffer comes back
// (`recycle`) and is filled again, so the thread allocates a handful of buffers per file, not one per batch.
import type { JsonObject, JsonValue } from '@sluice/runtime';
import type { CsvResume } from './csv.ts';
import { addMeta, closeJsonRecord } from './record.ts';
import type { DecodedRecord } from './record.ts';

/** Initial size of an output buffer; a batch that needs more grows it. */
export const LINE_BUFFER_BYTES = 512 * 1024;
/** Returned buffers kept for reuse. */
const POOL_LIMIT = 8;

const encoder = new TextEncoder();

/** A batch of framed lines: `bytes` is a view of a transferable ArrayBuffer. */
export interface LineBatch {
  bytes: Uint8Array;
  documents: number;
}

export class LineSink {
  /** `{"captured":{"doc":` (or with the binding). */
  readonly docOpen: Uint8Array;
  /** `,"_meta":{"file":<file>,"offset":` — follows a record's last field. */
  readonly metaOpen: Uint8Array;
  /** `_meta.file`. */
  readonly #file: string;
  /** `{"file":<file>,"offset":`, for records given as text. */
  readonly #metaPrefix: string;
  readonly #docOpenText: string;
  /** Offset of the next record of the file. */
  offset: number;
  /** Records below this offset were captured by an earlier session: counted, not written. */
  readonly resumeFrom: number;
  /** Lines written since the last take(). */
  documents = 0;
  buf: Buffer;
  len = 0;
  readonly #pool: ArrayBuffer[] = [];
  /** Buffers allocated so far (the rest of the batches reused returned ones). */
  allocated = 1;

  /** Upstream's decoration when the parser options ask for more than `_meta` (decorate.ts); records then come as objects. */
  readonly #decorate: ((record: JsonObject, offset: number) => JsonValue) | null;

  constructor(binding: number, file: string, startOffset: number, resumeFrom: number, decorate: ((record: JsonObject, offset: number) => JsonValue) | null = null) {
    this.#decorate = decorate;
    this.#docOpenText = binding === 0 ? '{"captured":{"doc":' : `{"captured":{"binding":${binding},"doc":`;
    this.docOpen = encoder.encode(this.#docOpenText);
    this.#file = file;
    this.#metaPrefix = `{"file":${JSON.stringify(file)},"offset":`;
    this.metaOpen = encoder.encode(`,"_meta":${this.#metaPrefix}`);
    this.offset = startOffset;
    this.resumeFrom = resumeFrom;
    this.buf = Buffer.from(new ArrayBuffer(LINE_BUFFER_BYTES));
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

  /** Appends bytes. */
  put(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }

  /** Ends a record whose fields were written after docOpen: `_meta` with the offset, the closing braces, the newline. */
  closeRecord(): void {
    this.ensure(this.metaOpen.length + 24);
    const buf = this.buf;
    const meta = this.metaOpen;
    let o = this.len;
    buf.set(meta, o);
    o += meta.length;
    // The offset's decimal digits.
    let v = this.offset;
    if (v === 0) buf[o++] = 0x30;
    else {
      const start = o;
      while (v > 0) {
        const q = Math.floor(v / 10);
        buf[o++] = 0x30 + (v - q * 10);
        v = q;
      }
      for (let i = start, j = o - 1; i < j; i++, j--) {
        const t = buf[i] as number;
        buf[i] = buf[j] as number;
        buf[j] = t;
      }
    }
    buf[o++] = 0x7d; // }  _meta
    buf[o++] = 0x7d; // }  doc
    buf[o++] = 0x7d; // }  captured
    buf[o++] = 0x7d; // }  line
    buf[o++] = 0x0a;
    this.len = o;
    this.offset++;
    this.documents++;
  }

  /** Appends a record another parser decoded (JSON text without its closing brace, or an object), or counts it when resuming past it. */
  appendRecord(record: DecodedRecord): void {
    if (this.offset < this.resumeFrom) {
      this.offset++;
      return;
    }
    let line: string;
    if (this.#decorate !== null) {
      const object = typeof record === 'string' ? JSON.parse(record.length === 1 ? '{}' : `${record}}`) as JsonObject : record;
      line = `${this.#docOpenText}${JSON.stringify(this.#decorate(object, this.offset))}}}\n`;
    } else if (typeof record === 'string') {
      line = `${this.#docOpenText}${closeJsonRecord(record, `${this.#metaPrefix}${this.offset}}`)}}}\n`;
    } else {
      addMeta(record as JsonObject, this.#file, this.offset);
      line = `${this.#docOpenText}${JSON.stringify(record)}}}\n`;
    }
    this.ensure(line.length * 3);
    this.len += this.buf.write(line, this.len, 'utf8');
    this.offset++;
    this.documents++;
  }

  /** True when lines were written since the last take(). */
  get pending(): boolean {
    return this.len > 0;
  }

  /** The lines written since the last call (a view of a buffer to transfer), or null; later lines go to another buffer. */
  take(): LineBatch | null {
    if (this.len === 0) return null;
    const batch = { bytes: new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.len), documents: this.documents };
    let next = this.#pool.pop();
    if (next === undefined) {
      next = new ArrayBuffer(LINE_BUFFER_BYTES);
      this.allocated++;
    }
    this.buf = Buffer.from(next);
    this.len = 0;
    this.documents = 0;
    return batch;
  }

  /** A buffer of an earlier batch, written and handed back: filled again by later batches. */
  recycle(buffer: ArrayBuffer): void {
    if (buffer.byteLength >= LINE_BUFFER_BYTES && this.#pool.length < POOL_LIMIT) this.#pool.push(buffer);
  }
}

/** A batch of framed lines as the capture loop takes it (from parseInWorker or framedBatches). */
export interface FramedBatch {
  /** The lines (a view of a buffer to hand back once written: call `written`). */
  lines: Uint8Array;
  documents: number;
  /** Offset of the next record after this batch. */
  offset: number;
  /** Raw byte position where the next record starts (resume by Range), or null. */
  position: number | null;
  csv: CsvResume | null;
  /** The documents before a failure (no checkpoint follows them; the error comes next). */
  failed: boolean;
}

/** Lines are handed on once a batch reaches this size, or sooner when `mergeWhile` says to (or at the end). */
export const BATCH_BYTES = 192 * 1024;

export interface FramedBatchOptions {
  /** Keep adding parsed records to the current batch while this holds (and it is under BATCH_BYTES). */
  mergeWhile?: () => boolean;
  /** Told the size of each batch handed on (see gc.ts). */
  handled?: (bytes: number) => void;
}

/**
 * The capture's per-record loop over parseFile's batches: records (and CSV rows the byte path wrote) become
 * framed lines in `lines`, handed on in batches with the offset after them and the tracker's resume
 * position. When the parse fails, the lines before the failure are handed on first (marked `failed`).
 */
export async function* framedBatches(
  records: AsyncIterable<DecodedRecord[]>,
  lines: LineSink,
  tracker: { position: number | null; csv: CsvResume | null },
  options: FramedBatchOptions = {},
): AsyncGenerator<FramedBatch, void> {
  const batch = (failed: boolean): FramedBatch | null => {
    const taken = lines.take();
    if (taken === null) return null;
    options.handled?.(taken.bytes.length);
    return { lines: taken.bytes, documents: taken.documents, offset: lines.offset, position: tracker.position, csv: tracker.position === null ? null : tracker.csv, failed };
  };
  try {
    for await (const parsed of records) {
      for (const record of parsed) lines.appendRecord(record);
      if (lines.len < BATCH_BYTES && options.mergeWhile?.() === true) continue;
      // A batch of only skipped records (resume by re-reading) gives nothing.
      const b = batch(false);
      if (b) yield b;
    }
  } catch (err) {
    const b = batch(true);
    if (b) yield b;
    throw err;
  }
  const b = batch(false);
  if (b) yield b;
}
