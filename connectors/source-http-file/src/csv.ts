// CSV records: UTF-8 bytes in (csv-core.ts tokenizes them), skipLines, dialect detection over the first
// 64 KiB, the header row, then each row to one of two sinks: framed JSON lines written straight into the
// capture's LineSink (csv-bytes.ts; when errorThreshold is 0 and the header names allow it), or objects of
// string-or-null values with timestamps normalised (discover, errorThreshold, names JSON text cannot take).
// Short rows omit keys; long rows are errors (or skipped under errorThreshold with a look-ahead window of
// 1000 rows).
import type { JsonObject } from '@sluice/runtime';
import { CsvCore, raggedRow } from './csv-core.ts';
import type { CsvDialect, CsvSink } from './csv-core.ts';
import { detectDialect } from './csv-dialect.ts';
import { FieldStringsSink, RowCollector } from './csv-field-strings.ts';
import { CsvJsonSink } from './csv-bytes.ts';
import type { CsvConfig } from './schema.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { ConfigError, ErrorThresholdError } from './errors.ts';
import type { DecodeError } from './errors.ts';
import type { LineSink } from './lines.ts';
import { columnPrefixes } from './record.ts';

export { MAX_ROW_BYTES } from './csv-core.ts';
export type { CsvDialect } from './csv-core.ts';
export { detectDialect } from './csv-dialect.ts';
export { CsvTokenizer } from './csv-field-strings.ts';
export type { CsvRow } from './csv-field-strings.ts';

export const ERROR_WINDOW = 1000;
const DETECTION_SAMPLE_BYTES = 64 * 1024;
const NONE: JsonObject[] = [];

type Result = { record: JsonObject } | { error: DecodeError };

/** Stored in the state so a later session can parse from the middle of the file (see connector.ts). */
export interface CsvResume {
  headers: string[];
  delimiter: string;
  quote: string;
  escape: string;
  lineEnding: string;
}

export interface CsvRecordOptions {
  config: CsvConfig;
  datetimes: DatetimeNormalizer;
  /** Called for each malformed row dropped under errorThreshold. */
  onSkippedRow?: (error: DecodeError) => void;
  /**
   * Rows become framed `captured` lines in this sink (csv-bytes.ts) instead of returned objects, when
   * errorThreshold is 0 and the header names allow it (record.ts columnPrefixes).
   */
  lines?: LineSink;
}


/**
 * UTF-8 bytes (or text) in → records out, or lines into the LineSink (then `push` returns none). An error
 * found after some rows of the same call is deferred: those rows go out first, the next call throws it.
 */
export class CsvRecordParser {
  readonly #config: CsvConfig;
  readonly #dt: DatetimeNormalizer;
  readonly #threshold: number;
  readonly #onSkipped: (error: DecodeError) => void;
  readonly #lines: LineSink | null;
  #skipLinesLeft: number;
  #skippedBytes = 0;
  #pending: Buffer[] = [];
  #pendingLength = 0;
  #core: CsvCore | null = null;
  #headers: string[] | null;
  #headerRow: RowCollector | null = null;
  #sink: CsvSink | null = null;
  #json: CsvJsonSink | null = null;
  /** Records of the current call (object sink). */
  #out: JsonObject[] = [];
  /** The error that stopped the current scan (a ragged row, the error threshold). */
  #error: DecodeError | null = null;
  #queue: Result[] = [];
  #queueErrors = 0;
  #rowsRead = 0;
  #deferred: Error | null = null;
  /** Rows dropped under errorThreshold. */
  skippedRows = 0;
  /** The dialect in use, once detected. */
  dialect: CsvDialect | null = null;

  constructor(options: CsvRecordOptions) {
    const config = options.config;
    this.#config = config;
    this.#dt = options.datetimes;
    const t = config.errorThreshold ?? 0;
    if (!Number.isInteger(t) || t < 0) throw new ConfigError(`errorThreshold must be a non-negative integer percentage, got ${t}`);
    if (t > 100) throw new ConfigError(`ErrorThreshold cannot be greater than 100%: ${t}%`);
    this.#threshold = t;
    this.#headers = config.headers && config.headers.length ? [...config.headers] : null;
    this.#skipLinesLeft = config.skipLines ?? 0;
    this.#onSkipped = options.onSkippedRow ?? (() => {});
    this.#lines = options.lines ?? null;
  }

  /** Whether rows go to the LineSink as framed lines (known once the header row is read; tests). */
  get writesLines(): boolean {
    return this.#json !== null;
  }

  push(input: Uint8Array | string): JsonObject[] {
    if (this.#deferred) throw this.#deferred;
    let bytes: Uint8Array = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
    if (this.#core) return bytes.length ? this.#call(bytes, false) : NONE;
    if (this.#skipLinesLeft > 0) bytes = this.#skipLines(bytes);
    if (bytes.length === 0) return NONE;
    // The caller may reuse its buffer: the sample is a copy.
    this.#pending.push(Buffer.from(bytes));
    this.#pendingLength += bytes.length;
    if (this.#pendingLength < DETECTION_SAMPLE_BYTES && !this.#pinned()) return NONE;
    return this.#call(null, false);
  }

  end(): JsonObject[] {
    if (this.#deferred) throw this.#deferred;
    return this.#call(null, true);
  }

  /**
   * Bytes of input after which the next record starts (every record returned or written lies before it),
   * or null when unknown: before the dialect and headers are known, and with errorThreshold (rows wait in
   * the look-ahead window).
   */
  position(): number | null {
    if (this.#core === null || this.#threshold > 0 || this.#headers === null || this.#deferred) return null;
    return this.#skippedBytes + this.#core.bytesConsumed;
  }

  /** What a parser resuming mid-file needs: the header names and the dialect in use. */
  resumeConfig(): CsvResume | null {
    if (this.dialect === null || this.#headers === null) return null;
    const d = this.dialect;
    return { headers: [...this.#headers], delimiter: d.delimiter, quote: d.quote, escape: d.escape, lineEnding: d.lineEnding === 'crlf' ? '\r\n' : d.lineEnding };
  }

  /** Quote and delimiter configured: no sample to wait for. */
  #pinned(): boolean {
    const c = this.#config;
    return c.quote !== null && c.quote !== undefined && c.delimiter !== null && c.delimiter !== undefined;
  }

  #skipLines(bytes: Uint8Array): Uint8Array {
    // Each skipped line ends at the next LF, whatever lineEnding says (as upstream).
    let pos = 0;
    while (this.#skipLinesLeft > 0) {
      const nl = bytes.indexOf(10, pos);
      if (nl === -1) { this.#skippedBytes += bytes.length - pos; return bytes.subarray(bytes.length); }
      pos = nl + 1;
      this.#skipLinesLeft--;
    }
    this.#skippedBytes += pos;
    return bytes.subarray(pos);
  }

  #start(complete: boolean): void {
    const c = this.#config;
    const lineEnding = c.lineEnding === null || c.lineEnding === undefined || c.lineEnding === '\r\n' ? 'crlf' : c.lineEnding;
    const escape = c.escape ?? '';
    const text = this.#pending.length === 1 ? this.#pending[0] as Buffer : Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingLength = 0;
    let detected: { quote: string; delimiter: string };
    if (this.#pinned()) detected = { quote: c.quote as string, delimiter: c.delimiter as string };
    else {
      let sample: Uint8Array = text;
      if (!complete) {
        const cut = Math.max(text.lastIndexOf(10), text.lastIndexOf(13));
        if (cut > 0) sample = text.subarray(0, cut);
      }
      detected = detectDialect(sample, complete, { quote: c.quote ?? null, delimiter: c.delimiter ?? null, escape, lineEnding, ...(this.#headers ? { headerCount: this.#headers.length } : {}) });
    }
    this.dialect = { delimiter: detected.delimiter, quote: detected.quote, escape, lineEnding };
    this.#core = new CsvCore(this.dialect);
    if (this.#headers === null) {
      this.#headerRow = new RowCollector(this.#core);
      this.#headerRow.limit = 1;
    } else this.#useHeaders(this.#headers);
    if (text.length) this.#scan(text, false);
    if (complete) this.#scan(null, true);
  }

  /** Picks the sink for these headers: JSON lines when it can, else objects. */
  #useHeaders(headers: string[]): void {
    this.#headers = headers;
    const core = this.#core as CsvCore;
    const prefixes = this.#lines !== null && this.#threshold === 0 ? columnPrefixes(headers) : null;
    if (prefixes !== null) {
      this.#json = new CsvJsonSink(core, this.#lines as LineSink, prefixes, this.#dt);
      this.#sink = this.#json;
    } else {
      this.#sink = new FieldStringsSink(core, (fields, line, byteOffset) => this.#row(fields, line, byteOffset));
    }
  }

  /**
   * One call from outside (`bytes` pushed, the sample complete, or the end). A tokenizer error fails the
   * whole call: its rows do not go out. A ragged row or the error threshold stops the scan; the rows of
   * the call before it go out and the next call throws it (none: it is thrown now).
   */
  #call(bytes: Uint8Array | null, final: boolean): JsonObject[] {
    const lines = this.#lines;
    const mark = lines === null ? null : { len: lines.len, documents: lines.documents, offset: lines.offset };
    const rowsAt = this.#json?.rows ?? 0;
    try {
      if (this.#core === null) this.#start(final);
      else this.#scan(bytes, final);
    } catch (err) {
      if (mark !== null && lines !== null) {
        lines.len = mark.len;
        lines.documents = mark.documents;
        lines.offset = mark.offset;
      }
      this.#out = [];
      throw err;
    }
    const error = this.#error ?? this.#json?.error ?? null;
    if (error !== null) {
      const before = (this.#json === null ? 0 : this.#json.rows - rowsAt) + this.#out.length;
      this.#deferred = error;
      if (before === 0) throw error;
    }
    const out = this.#out;
    if (out.length === 0) return NONE;
    this.#out = [];
    return out;
  }

  /** One scan of the tokenizer (`bytes` pushed, or the end), the header row first while it is to come. */
  #scan(bytes: Uint8Array | null, final: boolean): void {
    const core = this.#core as CsvCore;
    if (this.#headerRow !== null) {
      const h = this.#headerRow;
      if (bytes !== null) core.push(bytes, h);
      else core.end(h);
      const first = h.rows[0];
      if (first === undefined) return;
      this.#headerRow = null;
      this.#useHeaders(first.fields);
      if (final) core.end(this.#sink as CsvSink);
      else core.resume(this.#sink as CsvSink);
    } else if (bytes !== null) core.push(bytes, this.#sink as CsvSink);
    else core.end(this.#sink as CsvSink);
    if (final && this.#error === null && (this.#json === null || this.#json.error === null)) this.#drain();
  }

  /** A row as an object (object sink); false stops the scan at an error. */
  #row(fields: string[], line: number, byteOffset: number): boolean {
    const headers = this.#headers as string[];
    const width = headers.length;
    const strict = this.#threshold === 0;
    if (fields.length > width) {
      const error = raggedRow(fields.length, width, line, byteOffset);
      if (strict) { this.#error = error; return false; }
      return this.#enqueue({ error });
    }
    const dt = this.#dt;
    const record: JsonObject = {};
    for (let k = 0; k < fields.length; k++) {
      const v = fields[k] as string;
      record[headers[k] as string] = v === '' || v === 'NULL' || v === 'null' || v === 'nil' ? null : dt.string(v);
    }
    if (strict) {
      this.#out.push(record);
      return true;
    }
    return this.#enqueue({ record });
  }

  #enqueue(result: Result): boolean {
    this.#queue.push(result);
    this.#rowsRead++;
    if ('error' in result) this.#queueErrors++;
    try {
      while (this.#queue.length >= ERROR_WINDOW) this.#pop();
    } catch (err) {
      this.#error = err as DecodeError;
      return false;
    }
    return true;
  }

  #drain(): void {
    try {
      while (this.#queue.length) this.#pop();
    } catch (err) {
      this.#error = err as DecodeError;
    }
  }

  #pop(): void {
    if (this.#queueErrors > 0) {
      const pct = Math.floor((100 * this.#queueErrors) / Math.min(this.#rowsRead, ERROR_WINDOW));
      if (pct >= this.#threshold) {
        const first = this.#queue.find((r): r is { error: DecodeError } => 'error' in r)?.error;
        throw new ErrorThresholdError(`error limit exceeded: ${this.#queueErrors} of the last ${Math.min(this.#rowsRead, ERROR_WINDOW)} CSV rows are malformed (${pct}%), at or above errorThreshold ${this.#threshold}%; first: ${first?.message ?? 'unknown'}`, { line: first?.line ?? null, byteOffset: first?.byteOffset ?? null });
      }
    }
    const head = this.#queue.shift() as Result;
    if ('error' in head) {
      this.#queueErrors--;
      this.skippedRows++;
      this.#onSkipped(head.error);
    } else this.#out.push(head.record);
  }
}
