// The capture's output: documents with `_meta` written into the runtime's CapturedLinesWriter, which frames
// them as `captured` lines (the runtime owns the framing). CSV rows are written there straight from the
// input bytes (csv-bytes.ts, between openRecord and closeRecord); other records come as objects
// (appendRecord). A batch is handed on (`take`), possibly to the main thread by transferring its
// ArrayBuffer (no copy); once written, the buffer comes back (`recycle`) and is filled again.
// The writer alone, not the runtime's index: the Parquet decoder thread loads this module, and the whole
// index (protocol, config validation, ajv) cost its start ~80 ms.
import { CapturedLinesWriter } from '@sluice/runtime/captured-lines';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import type { CsvResume } from './csv.ts';
import { addMeta } from './record.ts';

/** Writes the decimal digits of a safe integer at `o`; returns the index after them. */
export function writeSafeInt(buf: Uint8Array, o: number, n: number): number {
  if (n < 0) {
    buf[o++] = 0x2d;
    n = -n;
  }
  if (n < 10) {
    buf[o++] = 0x30 + n;
    return o;
  }
  const start = o;
  while (n > 0) {
    const q = Math.floor(n / 10);
    buf[o++] = 0x30 + (n - q * 10);
    n = q;
  }
  for (let i = start, j = o - 1; i < j; i++, j--) {
    const t = buf[i] as number;
    buf[i] = buf[j] as number;
    buf[j] = t;
  }
  return o;
}

const encoder = new TextEncoder();

export class LineSink extends CapturedLinesWriter {
  /** `,"_meta":{"file":<file>,"offset":` — follows a record's last field. */
  readonly #metaOpen: Uint8Array;
  /** `_meta.file`. */
  readonly #file: string;
  /** Offset of the next record of the file. */
  offset: number;
  /** Records below this offset were captured by an earlier session: counted, not written. */
  readonly resumeFrom: number;
  /** The decimal digits of `#digitsOf` (closeRecord writes consecutive offsets: the next is an increment, no division). */
  readonly #digits = new Uint8Array(24);
  #digitCount = 0;
  #digitsOf = -2;
  /** Upstream's decoration when the parser options ask for more than `_meta` (decorate.ts); records then come as objects. */
  readonly #decorate: ((record: JsonObject, offset: number) => JsonValue) | null;

  constructor(binding: number, file: string, startOffset: number, resumeFrom: number, decorate: ((record: JsonObject, offset: number) => JsonValue) | null = null) {
    super(binding);
    this.#decorate = decorate;
    this.#file = file;
    this.#metaOpen = encoder.encode(`,"_meta":{"file":${JSON.stringify(file)},"offset":`);
    this.offset = startOffset;
    this.resumeFrom = resumeFrom;
  }

  /** Appends a few bytes (a column's `,"name":` prefix, `null`), copied by a loop: for so few, TypedArray#set's call costs more than the copy. */
  writeShort(bytes: Uint8Array): void {
    const n = bytes.length;
    this.ensure(n);
    const buf = this.buf;
    let o = this.len;
    for (let i = 0; i < n; i++) buf[o++] = bytes[i] as number;
    this.len = o;
  }

  /** Bytes a record needs beyond its fields: the line's framing, `_meta` and the offset. */
  get recordSlack(): number {
    return this.framingBytes + this.#metaOpen.length + 24;
  }

  /** Starts a record whose fields (`{"a":…,"b":…`, no closing brace) the caller writes at `len`, within `room` bytes. */
  openRecord(room: number): void {
    this.beginDocument(room);
  }

  /** Ends a record whose fields were written since openRecord: `_meta` with the offset, the closing braces. */
  closeRecord(): void {
    this.ensure(this.#metaOpen.length + 24);
    const buf = this.buf;
    const meta = this.#metaOpen;
    let o = this.len;
    buf.set(meta, o);
    o += meta.length;
    o = this.#writeOffset(buf, o);
    buf[o++] = 0x7d; // }  _meta
    buf[o++] = 0x7d; // }  the record
    this.len = o;
    this.endDocument();
    this.offset++;
  }

  /** Writes `offset`'s digits at `o`: the last ones written plus one when it follows them, else computed. */
  #writeOffset(buf: Uint8Array, o: number): number {
    const n = this.offset;
    const d = this.#digits;
    if (n === this.#digitsOf + 1 && n > 0) {
      // Increment the decimal digits in place: trailing 9s become 0s, a carry past the first adds a digit.
      let i = this.#digitCount - 1;
      while (i >= 0 && d[i] === 0x39) d[i--] = 0x30;
      if (i >= 0) d[i] = (d[i] as number) + 1;
      else {
        d.copyWithin(1, 0, this.#digitCount);
        d[0] = 0x31;
        this.#digitCount++;
      }
    } else this.#digitCount = writeSafeInt(d, 0, n);
    this.#digitsOf = n;
    const count = this.#digitCount;
    for (let k = 0; k < count; k++) buf[o++] = d[k] as number;
    return o;
  }

  /**
   * Appends a record given as the JSON text of its fields without the closing brace (`{"a":1,"b":"x"`,
   * Parquet rows, parquet-json.ts), or counts it when resuming past it.
   */
  appendOpenRecord(text: string): void {
    if (this.offset < this.resumeFrom) {
      this.offset++;
      return;
    }
    if (text.length === 1) {
      // No fields: `_meta` is the only member.
      this.writeDocument(`{"_meta":{"file":${JSON.stringify(this.#file)},"offset":${this.offset}}}`);
      this.offset++;
      return;
    }
    this.openRecord(text.length * 3);
    this.len += this.buf.write(text, this.len, 'utf8');
    this.closeRecord();
  }

  /** Appends a record another parser decoded, or counts it when resuming past it. */
  appendRecord(record: JsonObject): void {
    if (this.offset < this.resumeFrom) {
      this.offset++;
      return;
    }
    if (this.#decorate !== null) {
      this.writeDocument(JSON.stringify(this.#decorate(record, this.offset)));
    } else {
      addMeta(record, this.#file, this.offset);
      this.writeDocument(JSON.stringify(record));
    }
    this.offset++;
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
  records: AsyncIterable<JsonObject[]>,
  lines: LineSink,
  tracker: { position: number | null; csv: CsvResume | null },
  options: FramedBatchOptions = {},
): AsyncGenerator<FramedBatch, void> {
  const batch = (failed: boolean): FramedBatch | null => {
    const taken = lines.take();
    if (taken === null) return null;
    options.handled?.(taken.lines.length);
    return { lines: taken.lines as Uint8Array, documents: taken.documents, offset: lines.offset, position: tracker.position, csv: tracker.position === null ? null : tracker.csv, failed };
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
