// The Parquet path of a capture and of discover: choose the byte source (Range requests, else a
// private temporary copy), read the footer, then hand rows on as framed `captured` lines with a
// checkpoint every `every` documents that records the row group and row to resume at.
import type { CaptureOutput, JsonObject, Logger } from '@sluice/runtime';
import { ConfigError, DecodeError } from './errors.ts';
import type { HttpClient } from './http.ts';
import type { FileInfo } from './http-response.ts';
import { LineSink } from './lines.ts';
import { BatchCutter, FOOTER_READ_BYTES, isFlatSchema, locateRow, PARQUET_BATCH_ROWS, rangeSource, readFooter, readParquetRows, rowGroupStarts, spooledSource } from './parquet.ts';
import type { ByteSource, ParquetLines } from './parquet.ts';
import { decodeInThread, decoderMode, prestartDecoderThread, releaseDecoderThread, SPLIT_OUTPUT_WINDOW } from './parquet-thread.ts';
import type { DecoderMode } from './parquet-thread.ts';
import { parquetDocumentSchema } from './parquet-schema.ts';
import { DatetimeNormalizer } from './datetime.ts';
import type { EndpointConfig } from './schema.ts';
import { parquetSchema } from 'hyparquet/src/metadata.js';
import type { FileMetaData } from 'hyparquet';

/** Where a capture of a Parquet file resumes: the row group and the row within it (a mid-file state extra). */
export interface ParquetPosition { rowGroup: number; row: number }

export { checkParquetCompression, hasParquetMagic, parquetBy } from './parquet-detect.ts';

export interface ParquetSourceOptions {
  client: HttpClient;
  head: FileInfo & { lastModified: string };
  /** A body already open (magic detection), used for the temporary copy when ranges are not supported. */
  body: AsyncIterable<Uint8Array> | null;
  log: Logger;
}

/** Range requests when the server offers them (Accept-Ranges and a Content-Length), else a temporary copy. */
export async function openParquetSource(o: ParquetSourceOptions): Promise<ByteSource> {
  const { head } = o;
  const validator = { etag: head.etag, lastModified: head.lastModified };
  if (head.acceptRanges && head.contentLength !== null && !head.contentEncoding) {
    o.log.debug(`parquet: reading by range requests (${head.contentLength} bytes)`);
    // An open body is not needed: stop it.
    if (o.body) await (o.body as AsyncGenerator<Uint8Array>).return?.(undefined);
    return rangeSource(o.client, head.contentLength, validator);
  }
  o.log.info('the server does not support range requests: copying the Parquet file to a private temporary file to read it (removed afterwards)', { acceptRanges: head.acceptRanges, contentLength: head.contentLength });
  return spooledSource(o.body ?? o.client.get({ validator }));
}

export interface ParquetCaptureOptions extends ParquetSourceOptions {
  config: EndpointConfig;
  /** `_meta.file`. */
  file: string;
  /** For messages: the URL without credentials and query. */
  shown: string;
  binding: number;
  every: number;
  /** Documents already captured from this version of the file. */
  resumeFrom: number;
  /** The position the state recorded with them, if any. */
  resumeAt: ParquetPosition | null;
  /** The mid-file checkpoint: `records` documents captured, the next one at `at`. */
  progress: (records: number, at: ParquetPosition) => CaptureOutput;
}

/** Captures the file's rows; returns the number of documents the file has. */
export async function* captureParquet(o: ParquetCaptureOptions): AsyncGenerator<CaptureOutput[], number> {
  const defaultOffset = o.config.parser?.defaultOffset ?? '+00:00';
  let datetimes: DatetimeNormalizer;
  try {
    datetimes = new DatetimeNormalizer(defaultOffset);
  } catch (err) {
    throw new ConfigError(`parser.defaultOffset: ${(err as Error).message}`, { cause: err });
  }
  prestartDecoderThread(o.head.contentLength);
  const source = await openParquetSource(o);
  try {
    // A resumed capture reads the footer in two requests, none reaching into the row groups already captured.
    const metadata = await readFooter(source, o.shown, o.resumeFrom > 0 ? 8 : FOOTER_READ_BYTES);
    const total = Number(metadata.num_rows);
    if (o.resumeFrom > total) throw new DecodeError(`the file now has ${total} rows but ${o.resumeFrom} were already captured from this version; it is not the file the state describes`);
    const at = locateRow(metadata, o.resumeFrom);
    if (o.resumeFrom > 0) {
      if (o.resumeAt && (o.resumeAt.rowGroup !== at.rowGroup || o.resumeAt.row !== at.row)) {
        o.log.warn('the state\'s Parquet position does not match its document count; resuming after the documents counted', { state: o.resumeAt, fromCount: at });
      }
      o.log.info(`resuming the Parquet file at row group ${at.rowGroup}, row ${at.row} (document ${o.resumeFrom}), without reading the row groups before it`);
    }
    o.log.debug(`parquet: ${total} rows in ${metadata.row_groups.length} row groups`);
    // A flat file is decoded here, or on request (SLUICE_HTTP_FILE_PARQUET_THREAD) on the decoder thread, or the
    // first row group here and the others there (parquet-thread.ts: DecoderMode).
    const mode: DecoderMode = isFlatSchema(metadata) ? decoderMode(metadata, o.resumeFrom) : 'main';
    let offset = o.resumeFrom;
    const init = { metadata, file: o.file, shown: o.shown, binding: o.binding, startRow: o.resumeFrom, every: o.every, defaultOffset, batchRows: PARQUET_BATCH_ROWS };
    const batches = mode === 'thread'
      ? decodeInThread({ init, source, log: (m) => o.log.debug(m) })
      : mode === 'split'
        ? splitBatches(source, metadata, o, datetimes, defaultOffset, init)
        : mainThreadBatches(source, metadata, o, datetimes, defaultOffset);
    o.log.debug(`parquet: decoding on ${mode === 'thread' ? 'the decoder thread' : mode === 'split' ? 'the main thread, then the decoder thread' : 'the main thread'}`);
    for await (const b of batches) {
      offset = b.offset;
      const out: CaptureOutput[] = [{ capturedLines: { documents: b.documents, lines: b.lines, written: b.written } }];
      if (b.checkpoint) out.push(o.progress(b.offset, b.at));
      yield out;
      // A turn of the event loop: the decoding runs in promise continuations (the row group's bytes are
      // already here), which starve process.nextTick — where a stream calls back `written` — so no line
      // buffer came back for reuse and every batch held a new 512 KB buffer until the row group ended
      // (656 allocated for 500k rows, a large part of the peak RSS).
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return offset;
  } finally {
    releaseDecoderThread();
    await source.close();
  }
}

/**
 * The first row group decoded here while the decoder thread, started ahead, decodes the ones after it (their
 * batches wait for the main thread, at most SPLIT_OUTPUT_WINDOW of them); then the thread's batches, in order.
 * The documents, their offsets and the checkpoints' positions are those of the other modes; the checkpoints fall
 * every `every` documents of each side (the thread counts from the start of the second row group).
 */
async function* splitBatches(source: ByteSource, metadata: FileMetaData, o: ParquetCaptureOptions, datetimes: DatetimeNormalizer, defaultOffset: string,
  init: Parameters<typeof decodeInThread>[0]['init']): AsyncGenerator<ParquetLines> {
  const firstGroup = locateRow(metadata, o.resumeFrom).rowGroup;
  const stop = new AbortController();
  const rest = decodeInThread({
    // The footer as read: this thread's planColumns rewrites the schema's annotations in place (the thread's
    // copy is made when its generator starts, after that).
    init: { ...init, metadata: structuredClone(metadata), startRow: rowGroupStarts(metadata)[firstGroup + 1] as number, outputWindow: SPLIT_OUTPUT_WINDOW },
    source, log: (m) => o.log.debug(m), signal: stop.signal,
  });
  // Started (an async generator runs on its first next()) once the first row group's bytes are here, so that
  // the thread's requests do not slow them down: the thread's row groups are then fetched and decoded while
  // this thread decodes the first one.
  let pending: Promise<IteratorResult<ParquetLines>> | null = null;
  const startRest = (): Promise<IteratorResult<ParquetLines>> => {
    if (pending === null) {
      pending = rest.next();
      pending.catch(() => {});
    }
    return pending;
  };
  try {
    for await (const b of mainThreadBatches(source, metadata, o, datetimes, defaultOffset, firstGroup + 1)) {
      void startRest();
      yield b;
    }
    for (let r = await startRest(); !r.done; r = await rest.next()) yield r.value;
  } finally {
    // An error or a return here ends the thread (its pending read fails at once, then the generator returns).
    stop.abort(new Error('the Parquet capture ended'));
    await rest.return(undefined).catch(() => {});
  }
}

/** The rows decoded on this thread (readParquetRows), cut into batches as the decoder thread cuts them. */
async function* mainThreadBatches(source: ByteSource, metadata: FileMetaData, o: ParquetCaptureOptions, datetimes: DatetimeNormalizer, defaultOffset: string,
  endRowGroup?: number): AsyncGenerator<ParquetLines> {
  const sink = new LineSink(o.binding, o.file, o.resumeFrom, o.resumeFrom);
  const cutter = new BatchCutter(sink, o.every, (buffer) => sink.recycle(buffer));
  let at: ParquetPosition = locateRow(metadata, o.resumeFrom);
  for await (const batch of readParquetRows(source, metadata, {
    datetimes, defaultOffset, file: o.shown, startRow: o.resumeFrom, sink, batchRows: PARQUET_BATCH_ROWS, ...(endRowGroup === undefined ? {} : { endRowGroup }),
    onRowGroup: (i, rows, bytes) => o.log.debug(`parquet: row group ${i}: ${rows} rows, ${bytes} bytes`),
    onObjectColumns: (i, names) => { if (names.length) o.log.debug(`parquet: row group ${i}: columns decoded as objects (hyparquet): ${names.join(', ')}`); },
  })) {
    at = { rowGroup: batch.rowGroup, row: batch.row };
    const out = cutter.cut(at);
    if (out) yield out;
  }
  const rest = cutter.rest(at);
  if (rest) yield rest;
  o.log.debug(`parquet: ${sink.allocated} line buffers allocated`);
}

/** Discover's schema for a Parquet file: from its footer. */
export async function discoverParquet(o: ParquetSourceOptions & { shown: string }): Promise<JsonObject> {
  const source = await openParquetSource(o);
  try {
    return parquetDocumentSchema(parquetSchema(await readFooter(source, o.shown)));
  } finally {
    await source.close();
  }
}
