// Parquet files: read by byte ranges (the footer, then each row group's column chunks), never the whole
// file in memory. A source is either the server itself (Range requests, when it sends Accept-Ranges
// and Content-Length) or a private temporary copy of the body (removed afterwards). Each row group is
// fetched in one request (its column chunks are contiguous); top-level leaves are written as bytes from
// their pages into the line buffer (parquet-flat.ts), and so are structs of leaves and lists of a leaf
// (parquet-nested.ts); other nested columns are decoded by hyparquet and turned into the JSON text of
// their values (parquet-json.ts); the next row group's bytes are fetched while this one is converted.
// Memory: one row group's compressed bytes (two with the prefetch) plus a decompressed page per column
// (and, for nested columns hyparquet decodes, their row group's objects); a row group too big for the
// heap is refused by name before it is read.
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { getHeapStatistics } from 'node:v8';
import { brotliDecompressSync, gunzipSync, zstdDecompressSync } from 'node:zlib';
// hyparquet's modules by path, not its index: the index loads every module (queries, filters, bloom filters,
// indexes …), ~14 more modules at every start; parquetRead (nested columns only) loads when a file needs it.
import { parquetMetadata, parquetSchema } from 'hyparquet/src/metadata.js';
import type { AsyncBuffer, ColumnChunk, Compressors, FileMetaData, ParquetParsers, RowGroup, SchemaTree } from 'hyparquet';
import { getTreePath } from 'hyparquet/src/schema.js';
import type { DatetimeNormalizer } from './datetime.ts';
import { DecodeError, HttpFileError } from './errors.ts';
import type { HttpClient } from './http.ts';
import { BATCH_BYTES } from './lines.ts';
import type { LineSink } from './lines.ts';
import { deltaInt32Misread, FlatColumn } from './parquet-flat.ts';
import type { FlatColumnPlan } from './parquet-flat.ts';
import { PageDecompressor } from './parquet-decompress.ts';
import type { PageBuffer } from './parquet-decompress.ts';
import { planColumns, textParsers } from './parquet-json.ts';
import { ListWriter, StructWriter } from './parquet-nested.ts';
import type { ColumnWriter } from './parquet-nested.ts';
import type { JsonPlanOptions } from './parquet-json.ts';

/** Random access to the file's bytes. */
export interface ByteSource {
  readonly byteLength: number;
  /**
   * Bytes [start, end): the first end - start bytes of `into` when it is given and big enough (the caller's
   * buffer, reused from read to read), else a new buffer.
   */
  read(start: number, end: number, into?: Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

/** The file on the server, read with Range requests (If-Range on its validator, so a changed file fails). */
export function rangeSource(client: HttpClient, byteLength: number, validator: { etag: string | null; lastModified: string | null }): ByteSource {
  return {
    byteLength,
    async read(start, end, into) {
      const out = into !== undefined && into.length >= end - start ? into.subarray(0, end - start) : Buffer.allocUnsafe(end - start);
      let at = 0;
      if (end > start) {
        for await (const chunk of client.get({ from: start, to: end - 1, validator })) {
          const n = Math.min(chunk.length, out.length - at);
          chunk.copy(out, at, 0, n);
          at += n;
        }
      }
      if (at !== out.length) throw new DecodeError(`the server sent ${at} of the ${out.length} bytes asked for at byte ${start}`, { byteOffset: start });
      return out;
    },
    async close() {},
  };
}

/**
 * A private copy of the body (a directory only this user can read, removed by close()), for servers
 * without Range support: Parquet's footer is at the end, so the file cannot be read as a stream.
 */
export async function spooledSource(body: AsyncIterable<Uint8Array>): Promise<ByteSource> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-parquet-'));
  const path = join(dir, 'file.parquet');
  let handle: FileHandle | null = null;
  try {
    await pipeline(body, createWriteStream(path, { mode: 0o600 }));
    const h = await open(path, 'r');
    handle = h;
    const { size } = await h.stat();
    return {
      byteLength: size,
      async read(start, end, into) {
        const out = into !== undefined && into.length >= end - start ? into.subarray(0, end - start) : Buffer.allocUnsafe(end - start);
        const { bytesRead } = await h.read(out, 0, out.length, start);
        if (bytesRead !== out.length) throw new DecodeError(`the copy of the file ended at byte ${start + bytesRead}`, { byteOffset: start + bytesRead });
        return out;
      },
      async close() {
        await h.close().catch(() => {});
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await handle?.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function asyncBuffer(source: ByteSource): AsyncBuffer {
  return {
    byteLength: source.byteLength,
    slice: async (start, end) => {
      const b = await source.read(start, end ?? source.byteLength);
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    },
  };
}

/**
 * Bytes read from the end of the file in the first footer request: the footer of most files fits (the 500k rides'
 * is 6.6 KB), so one request reads its length, its magic and itself; a bigger footer takes one more request.
 */
export const FOOTER_READ_BYTES = 64 * 1024;

/**
 * Reads and checks the footer; a file that is not Parquet, truncated or corrupt gets a DecodeError saying so.
 * `firstRead`: the bytes of the first request (the end of the file). A resumed capture asks for the 8 bytes that
 * say the footer's length, then for the footer itself, so that no request reaches into the row groups it
 * already captured (on a small file, FOOTER_READ_BYTES would be the whole file).
 */
export async function readFooter(source: ByteSource, file: string, firstRead = FOOTER_READ_BYTES): Promise<FileMetaData> {
  const size = source.byteLength;
  if (size < 12) throw new DecodeError(`${file} is not a Parquet file: it has ${size} bytes, fewer than a Parquet file's header and footer (12)`);
  const tailStart = Math.max(0, size - Math.max(8, firstRead));
  const tail = await source.read(tailStart, size);
  if (tail.toString('latin1', tail.length - 4) !== 'PAR1') {
    const head = tailStart === 0 ? tail.subarray(0, 4) : await source.read(0, 4);
    const why = head.toString('latin1') === 'PAR1'
      ? 'it starts like one but does not end with the PAR1 footer magic: the file is truncated (or still being written)'
      : 'neither its first nor its last 4 bytes are PAR1';
    throw new DecodeError(`${file} is not a readable Parquet file: ${why}`, { byteOffset: size - 4 });
  }
  const length = tail.readUInt32LE(tail.length - 8);
  if (length + 12 > size) throw new DecodeError(`the Parquet footer of ${file} is corrupt: it says the metadata has ${length} bytes, but the file has ${size}; the file is truncated or damaged`, { byteOffset: size - 8 });
  // The metadata and the 8 bytes after it; what the first read did not reach is read now.
  const metaStart = size - 8 - length;
  const footer = metaStart >= tailStart ? tail.subarray(metaStart - tailStart) : Buffer.concat([await source.read(metaStart, tailStart), tail]);
  try {
    return parquetMetadata(footer, { geoparquet: false });
  } catch (err) {
    if (err instanceof HttpFileError) throw err;
    throw new DecodeError(`the Parquet footer of ${file} is corrupt (${(err as Error).message}); the file is truncated or damaged`, { byteOffset: metaStart }, { cause: err });
  }
}

/** Node's own decompressors (native, and zlib's sync calls avoid a copy); LZ4 from hyparquet-compressors. Snappy is hyparquet's. */
export async function compressorsFor(metadata: FileMetaData): Promise<Compressors> {
  // One output chunk the page's size (plus room to see the end): zlib's default 16 KB chunks were then
  // concatenated, ~10% of the time on a zstd file. A size beyond 256 MB (a damaged header) keeps the default.
  const out = (size: number): { chunkSize?: number } => (size > 0 && size < 256 * 1024 * 1024 ? { chunkSize: size + 64 } : {});
  const c: Compressors = {
    GZIP: (input, size) => gunzipSync(input, out(size)),
    BROTLI: (input, size) => brotliDecompressSync(input, out(size)),
    ZSTD: (input, size) => zstdDecompressSync(input, out(size)),
  };
  const codecs = new Set(metadata.row_groups.flatMap((rg) => rg.columns.map((col) => col.meta_data?.codec)));
  if (codecs.has('LZ4') || codecs.has('LZ4_RAW')) {
    const lz4 = await import('hyparquet-compressors');
    c.LZ4 = lz4.decompressLz4;
    c.LZ4_RAW = lz4.decompressLz4Raw;
  }
  const unsupported = [...codecs].filter((k) => k !== undefined && !['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'BROTLI', 'ZSTD', 'LZ4', 'LZ4_RAW'].includes(k));
  if (unsupported.length) throw new DecodeError(`the Parquet file uses the ${unsupported.join(', ')} codec, which this connector cannot decompress (supported: uncompressed, snappy, gzip, zstd, brotli, lz4)`);
  return c;
}

/** Bytes [start, end) of a row group's column chunks. */
export function rowGroupSpan(rg: RowGroup): { start: number; end: number } {
  let start = Infinity;
  let end = 0;
  for (const col of rg.columns as ColumnChunk[]) {
    const m = col.meta_data;
    if (!m) continue;
    const data = Number(m.data_page_offset);
    const dict = m.dictionary_page_offset === undefined ? NaN : Number(m.dictionary_page_offset);
    const s = dict > 0 && dict < data ? dict : data;
    start = Math.min(start, s);
    end = Math.max(end, s + Number(m.total_compressed_size));
  }
  return start === Infinity ? { start: 0, end: 0 } : { start, end };
}

/** Rows decoded between two looks at the batch (small: a batch's garbage dies young). */
export const PARQUET_BATCH_ROWS = 256;

/** A row group's uncompressed bytes may take at most this share of the heap limit (decoded values take more). */
export function maxRowGroupBytes(): number {
  const env = process.env['SLUICE_HTTP_FILE_PARQUET_MAX_ROW_GROUP_MB'];
  if (env && /^\d+$/.test(env)) return Number(env) * 1024 * 1024;
  return Math.floor(getHeapStatistics().heap_size_limit / 2);
}

/** The file row index of each row group's first row. */
export function rowGroupStarts(metadata: FileMetaData): number[] {
  const starts: number[] = [];
  let total = 0;
  for (const rg of metadata.row_groups) { starts.push(total); total += Number(rg.num_rows); }
  return starts;
}

/** Refuses row group `i` by name when its uncompressed size is over `limit` (maxRowGroupBytes()). */
export function checkRowGroupSize(metadata: FileMetaData, i: number, file: string, limit: number): void {
  const groups = metadata.row_groups;
  const rg = groups[i] as RowGroup;
  const size = Number(rg.total_byte_size);
  if (size > limit) {
    const start = rowGroupStarts(metadata)[i] as number;
    const mb = (n: number): string => `${Math.round(n / 1024 / 1024)} MB`;
    throw new DecodeError(`row group ${i} of ${groups.length} in ${file} (rows ${start}–${start + Number(rg.num_rows) - 1}) is ${mb(size)} uncompressed, more than the ${mb(limit)} one row group may take in this connector's memory (half its heap; SLUICE_HTTP_FILE_PARQUET_MAX_ROW_GROUP_MB overrides): write the file with smaller row groups`);
  }
}

/**
 * Whether the rows are written by the byte writer (parquet-flat.ts): every top-level column a leaf, not
 * repeated, one chunk per column in every row group. Read from the schema as it is (planColumns rewrites it).
 */
export function isFlatSchema(metadata: FileMetaData, root: SchemaTree = parquetSchema(metadata)): boolean {
  const n = root.children.length;
  return n > 0 && root.children.every((c) => c.children.length === 0 && c.element.repetition_type !== 'REPEATED')
    && metadata.row_groups.every((rg) => rg.columns.length === n);
}

/** The text before each column's value in a row: `{"name":` for the first, `,"name":` for the others. */
export function columnPrefixes(names: string[]): string[] {
  return names.map((name, i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`);
}

/** A batch of rows, written to the sink as framed lines: where the row after it is (its row group and its index within it). */
export interface ParquetBatch {
  rowGroup: number;
  row: number;
}

/** Lines to hand on: framed documents, the offset and the position after them, and whether a checkpoint follows them. */
export interface ParquetLines {
  lines: Uint8Array;
  documents: number;
  /** Offset of the next document (the count of documents of the file so far). */
  offset: number;
  at: ParquetBatch;
  checkpoint: boolean;
  /** Called once the lines are written: their buffer is filled again. */
  written: (err?: Error | null) => void;
}

/**
 * Cuts a sink's lines into batches of BATCH_BYTES, or sooner when `every` documents since the last
 * checkpoint are reached (a checkpoint then follows the batch, at its position). The same rule in the main
 * thread and the decoder thread (parquet-thread-worker.ts).
 */
export class BatchCutter {
  readonly #sink: LineSink;
  readonly #every: number;
  readonly #written: (buffer: ArrayBuffer) => void;
  #since = 0;
  constructor(sink: LineSink, every: number, written: (buffer: ArrayBuffer) => void) {
    this.#sink = sink;
    this.#every = every;
    this.#written = written;
  }

  /** After the rows up to `at`: a batch when one is due, else null. */
  cut(at: ParquetBatch): ParquetLines | null {
    const sink = this.#sink;
    if (sink.len < BATCH_BYTES && this.#since + sink.documents < this.#every) return null;
    return this.#take(at, true);
  }

  /** What is left at the end (no checkpoint: the end of the file has its own). */
  rest(at: ParquetBatch): ParquetLines | null {
    return this.#take(at, false);
  }

  #take(at: ParquetBatch, mayCheckpoint: boolean): ParquetLines | null {
    const taken = this.#sink.take();
    if (taken === null) return null;
    this.#since += taken.documents;
    const checkpoint = mayCheckpoint && this.#since >= this.#every;
    if (checkpoint) this.#since = 0;
    const buffer = taken.lines.buffer as ArrayBuffer;
    return {
      lines: taken.lines, documents: taken.documents, offset: this.#sink.offset, at, checkpoint,
      written: (err) => { if (!err) this.#written(buffer); },
    };
  }
}

export interface ParquetReadOptions extends JsonPlanOptions {
  /** For messages: the file's URL without credentials. */
  file: string;
  /** First row to emit, as an index into the file. */
  startRow: number;
  /** The row group to stop before (default: all to the end of the file); none at or after it is fetched. */
  endRowGroup?: number;
  /** Where the rows go, as framed `captured` lines (its offset is the document count). */
  sink: LineSink;
  /** Rows per batch handed on. */
  batchRows?: number;
  /** false: nested columns through hyparquet's objects even where the byte writer reads them (tests compare both). */
  nestedBytes?: boolean;
  /** The top-level columns of a row group that hyparquet decodes into objects (shapes the byte writer does not read). */
  onObjectColumns?: (rowGroup: number, names: string[]) => void;
  onRowGroup?: (index: number, rows: number, bytes: number) => void;
}

/** The row group holding file row `row`, and the row's index in it. */
export function locateRow(metadata: FileMetaData, row: number): { rowGroup: number; row: number } {
  let base = 0;
  for (let i = 0; i < metadata.row_groups.length; i++) {
    const n = Number((metadata.row_groups[i] as RowGroup).num_rows);
    if (row < base + n) return { rowGroup: i, row: row - base };
    base += n;
  }
  return { rowGroup: metadata.row_groups.length, row: 0 };
}

/** What the row groups of a flat file share: the codecs, the value parsers, and each column's page buffer. */
export interface FlatShared {
  compressors: Compressors;
  parsers: ParquetParsers;
  pages: PageDecompressor;
  buffers: PageBuffer[];
}

/** The shared part of decoding a flat file's row groups (made once per file, in the thread that decodes). */
export function flatShared(compressors: Compressors, parsers: ParquetParsers): FlatShared {
  return { compressors, parsers, pages: new PageDecompressor(compressors), buffers: [] };
}

/** A row group's column chunks: their bytes from file offset `start`. */
export interface RowGroupBytes {
  start: number;
  bytes: Uint8Array;
}

/** The byte writer of one leaf column chunk of a row group; its data pages go to page buffer `bufferIndex` of `shared`. */
function flatColumn(root: SchemaTree, col: ColumnChunk, span: RowGroupBytes, shared: FlatShared, plan: FlatColumnPlan,
  datetimes: DatetimeNormalizer, bufferIndex: number, where: string): FlatColumn {
  const m = col.meta_data;
  if (!m) throw new DecodeError(`${where}: a column chunk has no metadata (columns in separate files are not supported)`);
  const data = Number(m.data_page_offset);
  const dict = m.dictionary_page_offset === undefined ? NaN : Number(m.dictionary_page_offset);
  const start = (dict > 0 && dict < data ? dict : data) - span.start;
  const schemaPath = getTreePath(root, m.path_in_schema);
  const decoder = {
    pathInSchema: m.path_in_schema, element: (schemaPath[schemaPath.length - 1] as SchemaTree).element, schemaPath,
    type: m.type, codec: m.codec, parsers: shared.parsers, compressors: shared.compressors, utf8: false,
  };
  const buffer = (shared.buffers[bufferIndex] ??= { buf: Buffer.alloc(0) });
  return new FlatColumn(span.bytes.subarray(start, start + Number(m.total_compressed_size)), decoder, plan, datetimes, shared.pages, buffer);
}

/**
 * The rows of one row group of a flat schema, streamed page by page and written as framed lines into
 * the sink (parquet-flat.ts); yields the row after each batch. Rows before `from` are decoded and dropped.
 */
export function* flatRowGroup(root: SchemaTree, rg: RowGroup, span: RowGroupBytes, shared: FlatShared,
  plans: FlatColumnPlan[], prefixes: Uint8Array[], sink: LineSink, datetimes: DatetimeNormalizer, from: number, batchRows: number, where: string): Generator<number> {
  const rows = Number(rg.num_rows);
  const cols = rg.columns.map((col, i) => flatColumn(root, col as ColumnChunk, span, shared, plans[i] as FlatColumnPlan, datetimes, i, where));
  const n = cols.length;
  let room = 64;
  for (const p of prefixes) room += p.length;
  for (let r = 0; r < rows;) {
    const stop = Math.min(rows, r + batchRows);
    for (; r < stop; r++) {
      const mark = sink.len;
      sink.openRecord(room);
      for (let c = 0; c < n; c++) {
        sink.writeShort(prefixes[c] as Uint8Array);
        (cols[c] as FlatColumn).write(sink, where);
      }
      if (r >= from) sink.closeRecord();
      else sink.len = mark;
    }
    yield r;
  }
}

/**
 * Refuses a row group whose nested columns hyparquet decodes whole (parquetRead) would come out with changed values:
 * unsigned 32-bit integers in DELTA_BINARY_PACKED pages from 2^31 up (parquet-flat.ts's deltaInt32Misread; the
 * byte writer corrects such pages, hyparquet's own reader cannot be). Signed INT32 values always fit its reading.
 */
function checkObjectColumns(root: SchemaTree, rg: RowGroup, span: RowGroupBytes, names: Set<string>, compressors: Compressors, where: string): void {
  for (const col of rg.columns as ColumnChunk[]) {
    const m = col.meta_data;
    if (!m || m.type !== 'INT32' || !m.encodings.includes('DELTA_BINARY_PACKED') || !names.has(m.path_in_schema[0] as string)) continue;
    const schemaPath = getTreePath(root, m.path_in_schema);
    const el = (schemaPath[schemaPath.length - 1] as SchemaTree).element;
    const lt = el.logical_type;
    if (el.converted_type !== 'UINT_32' && !(lt?.type === 'INTEGER' && !lt.isSigned && lt.bitWidth === 32)) continue;
    const data = Number(m.data_page_offset);
    const dict = m.dictionary_page_offset === undefined ? NaN : Number(m.dictionary_page_offset);
    const start = (dict > 0 && dict < data ? dict : data) - span.start;
    const bytes = span.bytes.subarray(start, start + Number(m.total_compressed_size));
    if (deltaInt32Misread(bytes, { codec: m.codec, compressors, schemaPath })) {
      throw new DecodeError(`${where}: column '${m.path_in_schema.join('.')}' holds unsigned 32-bit integers from 2^31 up in DELTA_BINARY_PACKED pages, inside a nested shape (${m.path_in_schema[0]}) whose decoder here (hyparquet) would change them; rather than capture wrong values the file is refused: write it with data pages v1 (DuckDB: PARQUET_VERSION V1), or the column as a 64-bit integer`);
    }
  }
}

/** The rows of the file from `startRow`, written to the sink a batch at a time; yields the position after each batch. */
export async function* readParquetRows(source: ByteSource, metadata: FileMetaData, options: ParquetReadOptions): AsyncGenerator<ParquetBatch> {
  const root = parquetSchema(metadata);
  const columns = planColumns(root, options);
  if (columns.some((c) => c.name === '_meta')) throw new DecodeError(`${options.file} has a top-level column named '_meta', which Flow reserves for the document's metadata; rename the column`);
  const prefixes = columnPrefixes(columns.map((c) => c.name));
  const prefixBytes = prefixes.map((p) => Buffer.from(p, 'utf8'));
  const sink = options.sink;
  const parsers = textParsers(options);
  const compressors = await compressorsFor(metadata);
  const shared = flatShared(compressors, parsers);
  const limit = maxRowGroupBytes();
  // Small batches: a batch's row texts are garbage once written, and die young (a 2 MB young generation, the bin's flags).
  const batchRows = options.batchRows ?? PARQUET_BATCH_ROWS;
  const groups = metadata.row_groups.slice(0, options.endRowGroup ?? metadata.row_groups.length);
  const starts = rowGroupStarts(metadata);
  const first = locateRow(metadata, options.startRow);
  const flat = isFlatSchema(metadata, root);

  // The row groups' bytes go into two buffers, alternated (the row group decoded and the next, fetched
  // meanwhile), each as big as the largest row group to read, reused: fresh memory costs a page fault per
  // 4 KiB on first touch, and a new buffer per row group was ~5% of the time on the 500k rides.
  let largest = 0;
  for (let i = first.rowGroup; i < groups.length; i++) {
    const { start, end } = rowGroupSpan(groups[i] as RowGroup);
    largest = Math.max(largest, end - start);
  }
  const buffers: (Buffer | undefined)[] = [undefined, undefined];
  const fetchGroup = (i: number): Promise<RowGroupBytes> | null => {
    const rg = groups[i];
    if (!rg) return null;
    const { start, end } = rowGroupSpan(rg);
    // Row group i's buffer last held row group i - 2, whose decoding ended before this fetch starts.
    const into = (buffers[i & 1] ??= Buffer.allocUnsafe(largest));
    return source.read(start, end, into).then((bytes) => ({ start, bytes }));
  };
  const check = (i: number): void => checkRowGroupSize(metadata, i, options.file, limit);
  if (first.rowGroup < groups.length) check(first.rowGroup);
  let next = fetchGroup(first.rowGroup);
  next?.catch(() => {});
  for (let g = first.rowGroup; g < groups.length; g++) {
    const rg = groups[g] as RowGroup;
    const rows = Number(rg.num_rows);
    const span = await (next as Promise<RowGroupBytes>);
    if (g + 1 < groups.length) check(g + 1);
    next = fetchGroup(g + 1);
    next?.catch(() => {});
    options.onRowGroup?.(g, rows, span.bytes.length);
    const groupStart = starts[g] as number;
    const where = `row group ${g} of ${options.file} (rows ${groupStart}–${groupStart + rows - 1})`;
    if (flat) {
      const from = g === first.rowGroup ? first.row : 0;
      try {
        for (const r of flatRowGroup(root, rg, span, shared, columns, prefixBytes, sink, options.datetimes, from, batchRows, where)) {
          if (r <= from) continue;
          yield { rowGroup: r === rows ? g + 1 : g, row: r === rows ? 0 : r };
        }
      } catch (err) {
        if (err instanceof HttpFileError) throw err;
        throw new DecodeError(`${where} could not be decoded: ${(err as Error).message}; the file is damaged or truncated`, { byteOffset: span.start }, { cause: err });
      }
      continue;
    }
    const file: AsyncBuffer = {
      byteLength: source.byteLength,
      slice: (start, end = source.byteLength) => {
        if (start >= span.start && end <= span.start + span.bytes.length) {
          const b = span.bytes;
          return b.buffer.slice(b.byteOffset + start - span.start, b.byteOffset + end - span.start) as ArrayBuffer;
        }
        return asyncBuffer(source).slice(start, end);
      },
    };
    // Top-level leaves beside nested columns are written by the byte writer (their chunk: the one whose
    // path is the column's name), and so are structs of leaves and lists of a leaf (parquet-nested.ts);
    // hyparquet decodes only the other nested columns (objects per value).
    const chunkOf = new Map<string, number>();
    rg.columns.forEach((col, k) => {
      const path = col.meta_data?.path_in_schema;
      if (path) chunkOf.set(path.join('\u0000'), k);
    });
    const leafColumn = (path: string[], plan: FlatColumnPlan): FlatColumn | null => {
      const k = chunkOf.get(path.join('\u0000'));
      return k === undefined ? null : flatColumn(root, rg.columns[k] as ColumnChunk, span, shared, plan, options.datetimes, k, where);
    };
    const byteColumns: (ColumnWriter | null)[] = columns.map((c) => {
      if (c.flat) return leafColumn([c.name], c);
      const plan = options.nestedBytes === false ? undefined : c.nested;
      if (plan?.shape === 'list') {
        const column = leafColumn(plan.leaf.path, plan.leaf.plan);
        return column && new ListWriter(column, plan.listDef, plan.entryDef);
      }
      if (plan?.shape === 'struct') {
        const fields: { prefix: Uint8Array; column: FlatColumn }[] = [];
        for (const [j, f] of plan.fields.entries()) {
          const column = leafColumn(f.path, f.plan);
          if (column === null) return null;
          fields.push({ prefix: Buffer.from(`${j ? ',' : ''}${JSON.stringify(f.key)}:`, 'utf8'), column });
        }
        return new StructWriter(fields, plan.def);
      }
      return null;
    });
    const nested = columns.filter((_, i) => byteColumns[i] === null).map((c) => c.name);
    options.onObjectColumns?.(g, nested);
    if (nested.length) checkObjectColumns(root, rg, span, new Set(nested), compressors, where);
    // Top-level columns, each as the pieces (pages) hyparquet decoded.
    const pieces: { data: ArrayLike<unknown>; rowStart: number }[][] = columns.map(() => []);
    const index = new Map(columns.map((c, i) => [c.name, i]));
    try {
      const { parquetRead } = nested.length ? await import('hyparquet/src/read.js') : { parquetRead: null };
      if (parquetRead !== null) await parquetRead({
        file,
        metadata,
        columns: nested,
        rowStart: groupStart,
        rowEnd: groupStart + rows,
        compressors,
        parsers,
        utf8: false,
        onChunk: (chunk) => {
          const i = index.get(chunk.columnName);
          if (i !== undefined) (pieces[i] as { data: ArrayLike<unknown>; rowStart: number }[]).push({ data: chunk.columnData as ArrayLike<unknown>, rowStart: chunk.rowStart - groupStart });
        },
      });
    } catch (err) {
      if (err instanceof HttpFileError) throw err;
      throw new DecodeError(`row group ${g} of ${options.file} (rows ${groupStart}–${groupStart + rows - 1}) could not be decoded: ${(err as Error).message}; the file is damaged or truncated`, { byteOffset: span.start }, { cause: err });
    }
    for (const p of pieces) p.sort((a, b) => a.rowStart - b.rowStart);
    // A cursor per column over its pieces.
    const cur = pieces.map((p) => ({ p, k: 0, data: p[0]?.data ?? [], base: p[0]?.rowStart ?? 0, end: (p[0]?.rowStart ?? 0) + (p[0]?.data.length ?? 0) }));
    const value = (c: number, r: number): unknown => {
      const x = cur[c] as (typeof cur)[number];
      while (r >= x.end && x.k + 1 < x.p.length) {
        const piece = x.p[++x.k] as { data: ArrayLike<unknown>; rowStart: number };
        x.data = piece.data;
        x.base = piece.rowStart;
        x.end = piece.rowStart + piece.data.length;
      }
      if (r < x.base || r >= x.end) throw new DecodeError(`row group ${g} of ${options.file}: column '${columns[c]?.name}' has no value for row ${groupStart + r}; the file is damaged`);
      return x.data[r - x.base];
    };
    const converts = columns.map((c) => c.convert);
    const n = converts.length;
    const from = g === first.rowGroup ? first.row : 0;
    if (byteColumns.some((b) => b !== null)) {
      // Rows as bytes: a byte column writes its cell, a nested one its converter's text.
      let room = 64;
      for (const p of prefixBytes) room += p.length;
      try {
        for (let r = 0; r < rows;) {
          const stop = Math.min(rows, r + batchRows);
          for (; r < stop; r++) {
            const mark = sink.len;
            sink.openRecord(room);
            for (let c = 0; c < n; c++) {
              sink.writeShort(prefixBytes[c] as Uint8Array);
              const b = byteColumns[c];
              if (b) b.write(sink, where);
              else if (r >= from) {
                const text = (converts[c] as (v: unknown) => string)(value(c, r));
                sink.ensure(text.length * 3);
                sink.len += sink.buf.write(text, sink.len, 'utf8');
              }
            }
            if (r >= from) sink.closeRecord();
            else sink.len = mark;
          }
          if (r > from) yield { rowGroup: r === rows ? g + 1 : g, row: r === rows ? 0 : r };
        }
      } catch (err) {
        if (err instanceof HttpFileError) throw err;
        throw new DecodeError(`${where} could not be decoded: ${(err as Error).message}; the file is damaged or truncated`, { byteOffset: span.start }, { cause: err });
      }
      continue;
    }
    let r = from;
    while (r < rows) {
      const stop = Math.min(rows, r + batchRows);
      for (; r < stop; r++) {
        let s = n === 0 ? '{' : '';
        for (let c = 0; c < n; c++) s += (prefixes[c] as string) + (converts[c] as (v: unknown) => string)(value(c, r));
        sink.appendOpenRecord(s);
      }
      yield { rowGroup: r === rows ? g + 1 : g, row: r === rows ? 0 : r };
    }
  }
}
