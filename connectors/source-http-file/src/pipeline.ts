// The per-file pipeline: raw body bytes → decompress (per member) → record decoder → record batches.
// Thin async-generator glue over the pure cores; each stage pulls from the previous one, so the
// consumer's pace reaches the socket.
import type { JsonObject } from '@sluice/runtime';
import { decompress, resolveCompression } from './compression.ts';
import type { ResolvedCompression } from './compression.ts';
import { DatetimeNormalizer } from './datetime.ts';
import type { DecodeError } from './errors.ts';
import { ConfigError } from './errors.ts';
import { createRecordDecoder, drainEnd, resolveFormat } from './formats.ts';
import type { RecordDecoder, ResolvedFormat } from './formats.ts';
import type { ParserConfig } from './schema.ts';
import type { CsvResume } from './csv.ts';
import type { LineSink } from './lines.ts';

export interface FileMeta {
  /** Name used for format and compression detection (last path segment of the URL). */
  filename: string;
  /** Further names to try for the format (final URL after redirects, Content-Disposition). */
  altNames?: string[];
  contentType?: string | null;
  contentEncoding?: string | null;
}

export interface ParseEvents {
  onCompression?: (c: ResolvedCompression, by: string) => void;
  onFormat?: (f: ResolvedFormat, member: string | null) => void;
  onSkippedRow?: (error: DecodeError) => void;
  /**
   * Updated before each batch: the raw byte offset after which the next record starts (known only for
   * uncompressed UTF-8 CSV without errorThreshold, and JSON outside a top-level array), and the CSV
   * header/dialect; a later session resumes there with a Range request.
   */
  tracker?: { position: number | null; csv: CsvResume | null };
  /**
   * CSV rows may be written to this sink as framed `captured` lines (csv-bytes.ts) instead of returned as
   * objects; a batch is then yielded for them too (possibly with no records).
   */
  lines?: LineSink;
}

export interface ResumeFrom {
  /** Raw byte offset the body starts at (the body is the rest of the file). */
  byteOffset: number;
  csv?: CsvResume | undefined;
}

/** Reads the first `n` bytes (or fewer at the end) and returns them with a stream replaying everything. */
async function peek(source: AsyncIterable<Uint8Array>, n: number): Promise<{ head: Uint8Array; rest: AsyncIterable<Uint8Array> }> {
  const it = source[Symbol.asyncIterator]();
  const seen: Uint8Array[] = [];
  let length = 0;
  let done = false;
  while (length < n) {
    const r = await it.next();
    if (r.done) { done = true; break; }
    seen.push(r.value);
    length += r.value.length;
  }
  const head = Buffer.concat(seen).subarray(0, n);
  async function* rest(): AsyncGenerator<Uint8Array> {
    try {
      yield* seen;
      if (done) return;
      while (true) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      if (!done) await it.return?.();
    }
  }
  return { head, rest: rest() };
}

/** Parses one file's body into record batches (records carry no `_meta` yet; CSV rows may go to `events.lines`). */
export async function* parseFile(body: AsyncIterable<Uint8Array>, meta: FileMeta, parser: ParserConfig | undefined, events: ParseEvents = {}, resume?: ResumeFrom): AsyncGenerator<JsonObject[]> {
  let datetimes: DatetimeNormalizer;
  try {
    datetimes = new DatetimeNormalizer(parser?.defaultOffset ?? '+00:00');
  } catch (err) {
    throw new ConfigError(`parser.defaultOffset: ${(err as Error).message}`, { cause: err });
  }
  const explicitFormat = parser?.format;
  // Resolve an explicit or name-based format before reading, so configuration errors come first.
  const names = [meta.filename, ...(meta.altNames ?? [])];
  let outerFormat: ResolvedFormat | null = null;
  try {
    outerFormat = resolveFormat(explicitFormat, names, meta.contentType);
  } catch (err) {
    if (!(err instanceof ConfigError) || /unsupported format/.test(err.message)) throw err;
  }
  const { head, rest } = await peek(body, 32);
  const { compression, by } = resume
    ? { compression: 'none' as const, by: 'resume' }
    : resolveCompression({ explicit: parser?.compression ?? null, filename: meta.filename, contentEncoding: meta.contentEncoding, contentType: meta.contentType, head });
  events.onCompression?.(compression, by);
  let decoder: RecordDecoder | null = null;
  const decoderFor = (member: string | null): Promise<RecordDecoder> => {
    const format = outerFormat ?? resolveFormat(explicitFormat, member ? [...names, member.split('/').pop() ?? member] : names, meta.contentType);
    events.onFormat?.(format, member);
    return createRecordDecoder(format, { datetimes, ...(events.onSkippedRow ? { onSkippedRow: events.onSkippedRow } : {}), ...(resume?.csv ? { csvResume: resume.csv } : {}), ...(events.lines ? { lines: events.lines } : {}) });
  };
  const tracker = events.tracker;
  const base = resume?.byteOffset ?? 0;
  const track = (d: RecordDecoder): void => {
    if (!tracker) return;
    const p = compression === 'none' ? (d.position?.() ?? null) : null;
    tracker.position = p === null ? null : base + p;
    tracker.csv = d.resumeConfig?.() ?? null;
  };
  // Batches from end() (and zip members' ends) carry no resumable position.
  const untrack = (): void => {
    if (tracker) tracker.position = null;
  };
  const sink = events.lines;
  const wrote = (): boolean => sink !== undefined && sink.pending;
  for await (const ev of decompress(rest, compression)) {
    if ('member' in ev) {
      if (decoder) {
        for (const batch of drainEnd(decoder, wrote)) { untrack(); yield batch; }
      }
      decoder = await decoderFor(ev.member);
      continue;
    }
    const records = (decoder as RecordDecoder).push(ev.data);
    if (records.length || wrote()) {
      track(decoder as RecordDecoder);
      yield records;
    }
  }
  if (decoder) {
    for (const batch of drainEnd(decoder, wrote)) { untrack(); yield batch; }
  }
}
