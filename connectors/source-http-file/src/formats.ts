// Format resolution and the per-file record decoder: one pure incremental core per format, composed
// with the charset stage for text formats. Every core takes bytes and returns records.
import type { JsonObject } from '@sluice/runtime';
import { CharsetDecoder } from './charset.ts';
import { CsvRecordParser } from './csv.ts';
import type { CsvResume } from './csv.ts';
import type { DecodeError } from './errors.ts';
import { ConfigError } from './errors.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { JsonRecordParser } from './json.ts';
import type { LineSink } from './lines.ts';
import type { FormatConfig } from './schema.ts';
import { W3cRecordParser } from './w3c.ts';

export type ResolvedFormat = Exclude<FormatConfig, { type: 'auto' }>;

/**
 * A pure incremental record core. `push` and `end` may return records and defer an error found after
 * them to the next call, so callers call `end()` until it returns no records (see drainEnd).
 */
export interface RecordDecoder {
  push(chunk: Uint8Array): JsonObject[];
  end(): JsonObject[];
  /** Source bytes after which the next record starts (all returned records lie before), or null when unknown. */
  position?(): number | null;
  /** For CSV: the header names and dialect, so a later session can resume mid-file. */
  resumeConfig?(): CsvResume | null;
}

/**
 * Calls `end()` until it returns nothing (a deferred error is thrown by a later call). `wrote` tells
 * whether the call wrote lines to a LineSink instead of returning records (CSV, csv-bytes.ts): that
 * counts as a batch too.
 */
export function* drainEnd<R>(decoder: { end(): R[] }, wrote: () => boolean = () => false): Generator<R[]> {
  for (let i = 0; i < 3; i++) {
    const batch = decoder.end();
    if (batch.length === 0 && !wrote()) return;
    yield batch;
  }
}

const UNSUPPORTED: Record<string, string> = { xls: 'excel', xlsx: 'excel', xlsm: 'excel', xml: 'xml', ods: 'ods' };
const SUPPORTED = 'csv, json, avro, parquet, protobuf and w3cExtendedLog';

export function formatFromName(filename: string): ResolvedFormat | 'unsupported' | null {
  const segments = filename.slice(1).split('.').slice(1);
  for (let i = segments.length - 1; i >= 0; i--) {
    const ext = (segments[i] as string).toLowerCase();
    if (ext === 'json' || ext === 'jsonl' || ext === 'ndjson') return { type: 'json' };
    if (ext === 'csv' || ext === 'tsv') return { type: 'csv' };
    if (ext === 'avro') return { type: 'avro' };
    if (ext === 'parquet') return { type: 'parquet' };
    if (UNSUPPORTED[ext]) throw new ConfigError(`unsupported format: '${UNSUPPORTED[ext]}' (file '${filename}'); supported formats are ${SUPPORTED}`);
  }
  return null;
}

export function formatFromContentType(contentType: string | null | undefined): ResolvedFormat | null {
  const essence = (contentType ?? '').split(';')[0]?.trim();
  if (essence === 'application/json' || essence === 'text/json' || essence === 'application/x-ndjson' || essence === 'application/jsonl') return { type: 'json' };
  if (essence === 'text/csv' || essence === 'text/tab-separated-values') return { type: 'csv' };
  if (essence === 'application/avro' || essence === 'avro/binary') return { type: 'avro' };
  if (essence === 'application/vnd.apache.parquet' || essence === 'application/x-parquet') return { type: 'parquet' };
  return null;
}

/** Explicit format, else extension (outer file name, then zip member name), else Content-Type. */
export function resolveFormat(explicit: FormatConfig | undefined, names: string[], contentType: string | null | undefined): ResolvedFormat {
  if (explicit && explicit.type !== 'auto') {
    const known = ['csv', 'json', 'avro', 'parquet', 'protobuf', 'w3cExtendedLog'];
    if (!known.includes(explicit.type)) throw new ConfigError(`unsupported format: '${String(explicit.type)}'; supported formats are ${known.join(', ')}`);
    return explicit;
  }
  for (const name of names) {
    const f = formatFromName(name);
    if (f) return f as ResolvedFormat;
  }
  const ct = formatFromContentType(contentType);
  if (ct) return ct;
  throw new ConfigError(`unable to automatically determine the format for file '${names[0] ?? ''}'. explicit format configuration required: set parser.format.type to csv, json, avro, parquet, protobuf or w3cExtendedLog`);
}

/** CSV: the charset stage gives UTF-8 bytes (other encodings transcoded) to the one tokenizer (csv.ts). */
class CsvDecoder implements RecordDecoder {
  readonly #charset: CharsetDecoder;
  readonly #parser: CsvRecordParser;
  #ended = false;
  constructor(charset: CharsetDecoder, parser: CsvRecordParser) {
    this.#charset = charset;
    this.#parser = parser;
  }
  /** Input offsets equal source offsets only for UTF-8 (plus a stripped BOM). */
  position(): number | null {
    if (this.#charset.encoding !== 'utf-8') return null;
    const p = this.#parser.position();
    return p === null ? null : p + this.#charset.bomLength;
  }
  resumeConfig(): CsvResume | null {
    return this.#parser.resumeConfig();
  }
  push(chunk: Uint8Array): JsonObject[] {
    const bytes = this.#charset.pushBytes(chunk);
    return bytes.length ? this.#parser.push(bytes) : [];
  }
  end(): JsonObject[] {
    if (!this.#ended) {
      this.#ended = true;
      const bytes = this.#charset.endBytes();
      const records = bytes.length ? this.#parser.push(bytes) : [];
      if (records.length) return records;
    }
    return this.#parser.end();
  }
}

interface TextParser {
  push(text: string): JsonObject[];
  end(): JsonObject[];
  position?(): number | null;
}

/** JSON and W3C: the charset stage gives text to the parser. */
class TextDecoderChain implements RecordDecoder {
  readonly #charset: CharsetDecoder;
  readonly #parser: TextParser;
  readonly #after: ((r: JsonObject) => void) | null;
  constructor(charset: CharsetDecoder, parser: TextParser, after: ((r: JsonObject) => void) | null) {
    this.#charset = charset;
    this.#parser = parser;
    this.#after = after;
  }
  /** Text offsets equal source offsets only for UTF-8 (plus a stripped BOM). */
  position(): number | null {
    if (this.#charset.encoding !== 'utf-8') return null;
    const p = this.#parser.position?.() ?? null;
    return p === null ? null : p + this.#charset.bomLength;
  }
  push(chunk: Uint8Array): JsonObject[] {
    const text = this.#charset.push(chunk);
    return text.length ? this.#map(this.#parser.push(text)) : [];
  }
  #ended = false;
  end(): JsonObject[] {
    if (!this.#ended) {
      this.#ended = true;
      const a = this.#parser.push(this.#charset.end());
      if (a.length) return this.#map(a);
    }
    return this.#map(this.#parser.end());
  }
  #map(records: JsonObject[]): JsonObject[] {
    // `after` is only given for parsers that yield objects (JSON).
    if (this.#after) for (const r of records) this.#after(r as JsonObject);
    return records;
  }
}

/** A binary format's core: bytes in, objects out. */
interface ObjectDecoder {
  push(chunk: Uint8Array): JsonObject[];
  end(): JsonObject[];
}

class BinaryDecoder implements RecordDecoder {
  readonly #inner: ObjectDecoder;
  readonly #dt: DatetimeNormalizer;
  constructor(inner: ObjectDecoder, dt: DatetimeNormalizer) {
    this.#inner = inner;
    this.#dt = dt;
  }
  push(chunk: Uint8Array): JsonObject[] {
    return this.#map(this.#inner.push(chunk));
  }
  end(): JsonObject[] {
    return this.#map(this.#inner.end());
  }
  #map(records: JsonObject[]): JsonObject[] {
    for (const r of records) this.#dt.value(r);
    return records;
  }
}

export interface DecoderOptions {
  datetimes: DatetimeNormalizer;
  onSkippedRow?: (error: DecodeError) => void;
  /** Parse from the middle of a CSV file: these headers and this dialect, UTF-8, no skipLines. */
  csvResume?: CsvResume;
  /**
   * With errorThreshold 0 and headers JSON text can take, CSV rows are written to this sink as framed
   * `captured` lines (csv-bytes.ts) instead of being returned as objects.
   */
  lines?: LineSink;
}

/**
 * Builds the record decoder of one file (or zip member). Config problems throw ConfigError here.
 * The Avro and Protobuf modules (avsc, protobufjs) load only when those formats are used.
 */
export async function createRecordDecoder(format: ResolvedFormat, options: DecoderOptions): Promise<RecordDecoder> {
  const dt = options.datetimes;
  switch (format.type) {
    case 'csv': {
      const r = options.csvResume;
      const config = r
        ? { ...format.config, headers: r.headers, delimiter: r.delimiter, quote: r.quote, escape: r.escape, lineEnding: r.lineEnding, skipLines: 0, encoding: 'UTF-8' } as NonNullable<typeof format.config>
        : format.config ?? {};
      const charset = new CharsetDecoder({ encoding: config.encoding ?? null });
      const skipped = options.onSkippedRow ? { onSkippedRow: options.onSkippedRow } : {};
      return new CsvDecoder(charset, new CsvRecordParser({ config, datetimes: dt, ...skipped, ...(options.lines ? { lines: options.lines } : {}) }));
    }
    case 'json':
      return new TextDecoderChain(new CharsetDecoder({ sampleBytes: 32 }), new JsonRecordParser(), (r) => dt.value(r));
    case 'w3cExtendedLog':
      return new TextDecoderChain(new CharsetDecoder(), new W3cRecordParser(dt), null);
    case 'avro': {
      const { AvroRecordParser } = await import('./avro.ts');
      return new BinaryDecoder(new AvroRecordParser(), dt);
    }
    case 'protobuf': {
      const c = format.config;
      if (!c || typeof c.message !== 'string' || typeof c.protoFile !== 'string') throw new ConfigError('the protobuf format needs parser.format.config.message and parser.format.config.protoFile');
      const { ProtobufRecordParser, compileMessageType } = await import('./protobuf.ts');
      return new BinaryDecoder(new ProtobufRecordParser(compileMessageType(c.protoFile, c.message)), dt);
    }
    case 'parquet':
      // Parquet is read by ranges (parquet-capture.ts), never as a stream: here it is a member of an archive or a compressed file.
      throw new ConfigError('a Parquet file cannot be read inside a zip archive or an outer compression (gzip, zstd): Parquet compresses its own pages, so serve the .parquet file itself');
    default:
      throw new ConfigError(`unsupported format: '${String((format as { type: unknown }).type)}'`);
  }
}
