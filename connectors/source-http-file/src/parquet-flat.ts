// The streaming path for flat Parquet schemas (every top-level column a leaf, not repeated): each column
// chunk is read page by page, and every row's JSON is written as bytes straight into the output line
// buffer (LineSink) from the decompressed page — no JS value per cell. What hyparquet decoded before
// (a string, a bigint or a boxed number per value, then a string per row) was most of the garbage, and
// the collector took ~45% of the time.
//   - Dictionary pages are converted once (hyparquet's conversion, then parquet-json.ts's converter) into
//     the JSON bytes of each entry; a dictionary-encoded page is then its indices (Int32Array), each cell a
//     copy of its entry's bytes. Every type goes this way, so its text is the converter's by construction.
//   - PLAIN pages of the common types (integers, floats, booleans, strings, timestamps) are read in place:
//     a cursor over the page bytes writes each value's JSON text (INT64 exact: as a double only when it
//     fits 53 bits, else through a bigint; strings through the same sanitiser: datetime.ts's bytesInto on
//     the bytes, ASCII copied as is, anything else decoded and escaped as jsonString does).
//   - Any other page (other encodings or types) goes through hyparquet's page reader and the column's
//     converter, as before: slower, same text.
// The same reader serves the leaves of structs and lists (parquet-nested.ts): it reads definition levels of
// any depth and a list's repetition levels, and says each row's (entry's) level (def, rep) before writing it.
// Memory: one decompressed page per column (DuckDB writes one page per column chunk: a row group's column),
// in a buffer the column keeps from row group to row group (parquet-decompress.ts); dictionary pages get
// their own (hyparquet's converted dictionary may hold views of it).
import type { ColumnDecoder, DecodedArray, PageHeader } from 'hyparquet/src/types.js';
import { parquetHeader } from 'hyparquet/src/column.js';
import { convert, convertWithDictionary } from 'hyparquet/src/convert.js';
import { decompressPage, readDataPage, readDataPageV2 } from 'hyparquet/src/datapage.js';
import { readRleBitPackedHybrid } from 'hyparquet/src/encoding.js';
import { getMaxDefinitionLevel, getMaxRepetitionLevel } from 'hyparquet/src/schema.js';
import { readPlain } from 'hyparquet/src/plain.js';
import type { DatetimeNormalizer } from './datetime.ts';
import type { PageBuffer, PageDecompressor } from './parquet-decompress.ts';
import { DecodeError } from './errors.ts';
import { writeSafeInt, type LineSink } from './lines.ts';
import type { InstantFormatter, LeafKind, ToJson } from './parquet-json.ts';
import { jsonString } from './record.ts';

const utf8 = new TextDecoder();

/** How a page's cells are read (numbers: Node's type stripping has no enums). */
const Mode = { Generic: 0, Dictionary: 1, Int32: 2, Int64: 3, Double: 4, Float: 5, Bytes: 6, Boolean: 7, Timestamp: 8 } as const;
type Mode = (typeof Mode)[keyof typeof Mode];

/** What the writer needs of a column: its converter (for the generic path and dictionaries) and its leaf kind. */
export interface FlatColumnPlan {
  name: string;
  convert: ToJson;
  kind: LeafKind;
  /** For kind 'timestamp': the formatter of its unit and offset. */
  instant?: InstantFormatter;
}

const NULL = [0x6e, 0x75, 0x6c, 0x6c];
const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];

/** Bits of a level up to `max` (RLE/bit-packed width). */
function bitWidth(max: number): number {
  return 32 - Math.clz32(max);
}

/** Copies src[a, b) to dst at o (a loop for short values: subarray() would allocate a view per value); returns the index after. */
function copyBytes(src: Buffer, a: number, b: number, dst: Buffer, o: number): number {
  if (b - a > 32) return o + src.copy(dst, o, a, b);
  for (let i = a; i < b; i++) dst[o++] = src[i] as number;
  return o;
}

/**
 * The first value of a DELTA_BINARY_PACKED INT32 page as hyparquet reads it and as it is (null when they are the
 * same): hyparquet keeps only the low 32 bits of its zigzag varint, so bit 32 is lost. DuckDB writes a UINT_32
 * column's first value as the unsigned number, whose zigzag form has 33 bits from 2^31 up: 4294967295 was read as
 * 2147483647. `at`: where the page's values start (the encoding's header: block size, miniblocks, count, first value).
 */
export function deltaInt32FirstValue(page: Uint8Array, at: number): { read: number; actual: number } | null {
  let o = at;
  const skip = (): void => {
    while (o < page.length && ((page[o++] as number) & 0x80) !== 0);
  };
  skip();
  skip();
  skip();
  // The varint as hyparquet's readVarInt computes it (JS shifts: 32-bit, the count modulo 32), and exactly.
  let low = 0;
  let shift = 0;
  let exact = 0n;
  for (;;) {
    if (o >= page.length) return null;
    const byte = page[o++] as number;
    low |= (byte & 0x7f) << shift;
    exact |= BigInt(byte & 0x7f) << BigInt(shift);
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  const read = (low >>> 1) ^ -(low & 1);
  // INT32 delta arithmetic wraps modulo 2^32: the value is the zigzag-decoded number's low 32 bits.
  const actual = Number(BigInt.asIntN(32, (exact >> 1n) ^ -(exact & 1n)));
  return read === actual ? null : { read, actual };
}

/**
 * Whether hyparquet would misread a value of this INT32 column chunk (`bytes`: the chunk, from its first page):
 * a DELTA_BINARY_PACKED data page whose first value loses bit 32 (deltaInt32FirstValue). For the columns hyparquet
 * decodes whole (parquetRead, nested shapes the byte writer does not read), where no page can be corrected.
 */
export function deltaInt32Misread(bytes: Uint8Array, decoder: Pick<ColumnDecoder, 'codec' | 'compressors' | 'schemaPath'>): boolean {
  const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 };
  const hasRep = getMaxRepetitionLevel(decoder.schemaPath) > 0;
  const hasDef = getMaxDefinitionLevel(decoder.schemaPath) > 0;
  while (reader.offset < bytes.byteLength - 1) {
    const header = parquetHeader(reader) as PageHeader;
    const compressed = bytes.subarray(reader.offset, reader.offset + header.compressed_page_size);
    reader.offset += header.compressed_page_size;
    if (header.type === 'DATA_PAGE' && header.data_page_header?.encoding === 'DELTA_BINARY_PACKED') {
      const page = decompressPage(compressed, Number(header.uncompressed_page_size), decoder.codec, decoder.compressors);
      const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
      // Data page v1: each level run is prefixed by its length (4 bytes).
      let at = 0;
      if (hasRep) at += 4 + view.getUint32(at, true);
      if (hasDef) at += 4 + view.getUint32(at, true);
      if (deltaInt32FirstValue(page, at) !== null) return true;
    } else if (header.type === 'DATA_PAGE_V2' && header.data_page_header_v2?.encoding === 'DELTA_BINARY_PACKED') {
      const h = header.data_page_header_v2;
      const levels = h.repetition_levels_byte_length + h.definition_levels_byte_length;
      let values = compressed.subarray(levels);
      if (h.is_compressed !== false) values = decompressPage(values, Number(header.uncompressed_page_size) - levels, decoder.codec, decoder.compressors);
      if (deltaInt32FirstValue(values, 0) !== null) return true;
    }
  }
  return false;
}

/**
 * Corrects a DELTA_BINARY_PACKED INT32 page hyparquet decoded (see deltaInt32FirstValue): every later value is the
 * first plus deltas modulo 2^32, so the whole page is off by the same amount, which is added back.
 */
function fixDeltaInt32(page: Uint8Array, at: number, values: Int32Array): void {
  const first = deltaInt32FirstValue(page, at);
  if (first === null) return;
  const diff = (first.actual - first.read) | 0;
  for (let i = 0; i < values.length; i++) values[i] = ((values[i] as number) + diff) | 0;
}

/** One flat column chunk: its pages, read one at a time, and a cursor over the current page's rows. */
export class FlatColumn {
  readonly #reader: { view: DataView; offset: number };
  readonly #decoder: ColumnDecoder;
  readonly #plan: FlatColumnPlan;
  /** The definition level of a value (0: required all the way); a lower level is a null here or above. */
  readonly #maxDef: number;
  /** 1 for a list's leaf (parquet-nested.ts's ListWriter), else 0. */
  readonly #maxRep: number;
  readonly #dt: DatetimeNormalizer;
  /** hyparquet's converted dictionary (for generic pages) and each entry's JSON bytes. */
  #dictionary: DecodedArray | undefined;
  #dictBytes: Buffer = Buffer.alloc(0);
  #dictStarts: Int32Array = new Int32Array(1);
  // The current page.
  #mode: Mode = Mode.Generic;
  #rows = 0;
  /** Next row of the page (for a list's leaf: the next entry, one per element, empty or null list). */
  #row = 0;
  /** Per row: its definition level (below #maxDef: null), or null when no row is null. */
  #defs: Uint8Array | null = null;
  #defsBuffer = new Uint8Array(0);
  /** Per entry of a list's leaf: its repetition level (0: a row's first entry), else null. */
  #reps: Uint8Array | null = null;
  #repsBuffer = new Uint8Array(0);
  /** Page bytes and the cursor over its values (PLAIN) or the index of the next value (others). */
  #page: Buffer = Buffer.alloc(0);
  #view: DataView = new DataView(new ArrayBuffer(0));
  #pos = 0;
  #value = 0;
  #indices: Int32Array = new Int32Array(0);
  #generic: ArrayLike<unknown> = [];

  readonly #pages: PageDecompressor;
  readonly #pageBuffer: PageBuffer;

  /** `pageBuffer`: where this column's data pages are decompressed (the same column's buffer from row group to row group). */
  constructor(bytes: Uint8Array, decoder: ColumnDecoder, plan: FlatColumnPlan, dt: DatetimeNormalizer, pages: PageDecompressor, pageBuffer: PageBuffer) {
    this.#reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 };
    this.#pages = pages;
    this.#pageBuffer = pageBuffer;
    this.#decoder = decoder;
    this.#plan = plan;
    this.#maxDef = getMaxDefinitionLevel(decoder.schemaPath);
    this.#maxRep = getMaxRepetitionLevel(decoder.schemaPath);
    if (this.#maxRep > 1) throw new Error(`column '${plan.name}' is nested ${this.#maxRep} lists deep; the byte writer reads one`);
    this.#dt = dt;
  }

  /** Loads the next data page; false at the end of the chunk. */
  #nextPage(): boolean {
    const r = this.#reader;
    const d = this.#decoder;
    while (r.offset < r.view.byteLength - 1) {
      const header = parquetHeader(r) as PageHeader;
      const compressed = new Uint8Array(r.view.buffer, r.view.byteOffset + r.offset, header.compressed_page_size);
      r.offset += header.compressed_page_size;
      if (header.type === 'DICTIONARY_PAGE') {
        this.#loadDictionary(header, compressed);
        continue;
      }
      if (header.type === 'DATA_PAGE' && header.data_page_header) {
        const daph = header.data_page_header;
        const page = this.#pages.decompress(compressed, Number(header.uncompressed_page_size), d.codec, this.#pageBuffer);
        const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
        const reader = { view, offset: 0 };
        const rows = daph.num_values;
        let present = rows;
        let defs: Uint8Array | null = null;
        let reps: Uint8Array | null = null;
        if (this.#maxRep > 0) {
          reps = this.#repLevels(rows);
          readRleBitPackedHybrid(reader, bitWidth(this.#maxRep), reps);
        }
        if (this.#maxDef > 0) {
          defs = this.#levels(rows);
          readRleBitPackedHybrid(reader, bitWidth(this.#maxDef), defs);
          present = this.#count(defs);
          if (present === rows) defs = null;
        }
        if (this.#fast(daph.encoding, page, reader.offset, present)) {
          this.#setRows(rows, defs, reps);
          return true;
        }
        const data = readDataPage(page, daph, d);
        if (daph.encoding === 'DELTA_BINARY_PACKED' && data.dataPage instanceof Int32Array) fixDeltaInt32(page, reader.offset, data.dataPage);
        this.#setGeneric(rows, data.definitionLevels ?? [], convertWithDictionary(data.dataPage, this.#dictionary, daph.encoding, d), reps);
        return true;
      }
      if (header.type === 'DATA_PAGE_V2' && header.data_page_header_v2) {
        const daph2 = header.data_page_header_v2;
        const rows = daph2.num_values;
        const levelBytes = daph2.repetition_levels_byte_length + daph2.definition_levels_byte_length;
        let defs: Uint8Array | null = null;
        let reps: Uint8Array | null = null;
        const levelView = new DataView(compressed.buffer, compressed.byteOffset, compressed.byteLength);
        if (this.#maxRep > 0) {
          reps = this.#repLevels(rows);
          readRleBitPackedHybrid({ view: levelView, offset: 0 }, bitWidth(this.#maxRep), reps, daph2.repetition_levels_byte_length);
        }
        if (this.#maxDef > 0 && daph2.num_nulls > 0) {
          defs = this.#levels(rows);
          readRleBitPackedHybrid({ view: levelView, offset: daph2.repetition_levels_byte_length }, bitWidth(this.#maxDef), defs, daph2.definition_levels_byte_length);
        }
        const valueBytes = header.uncompressed_page_size - levelBytes;
        let page = compressed.subarray(levelBytes);
        if (daph2.is_compressed !== false && valueBytes) page = this.#pages.decompress(page, valueBytes, d.codec, this.#pageBuffer);
        if (this.#fast(daph2.encoding, page, 0, rows - daph2.num_nulls)) {
          this.#setRows(rows, defs, reps);
          return true;
        }
        const data = readDataPageV2(compressed, header, d);
        if (daph2.encoding === 'DELTA_BINARY_PACKED' && data.dataPage instanceof Int32Array) fixDeltaInt32(page, 0, data.dataPage);
        this.#setGeneric(rows, data.definitionLevels ?? [], convertWithDictionary(data.dataPage, this.#dictionary, daph2.encoding, d), reps);
        return true;
      }
      // Index pages and others carry no rows.
    }
    return false;
  }

  #levels(rows: number): Uint8Array {
    if (this.#defsBuffer.length < rows) this.#defsBuffer = new Uint8Array(rows);
    return this.#defsBuffer.subarray(0, rows);
  }

  #repLevels(rows: number): Uint8Array {
    if (this.#repsBuffer.length < rows) this.#repsBuffer = new Uint8Array(rows);
    return this.#repsBuffer.subarray(0, rows);
  }

  /** Rows whose definition level is a value's. */
  #count(defs: Uint8Array): number {
    const max = this.#maxDef;
    let n = 0;
    for (let i = 0; i < defs.length; i++) if (defs[i] === max) n++;
    return n;
  }

  #setRows(rows: number, defs: Uint8Array | null, reps: Uint8Array | null): void {
    if (reps !== null && rows > 0 && reps[0] !== 0) throw new Error(`a page of column '${this.#plan.name}' starts inside a row (its first repetition level is ${reps[0]})`);
    this.#rows = rows;
    this.#row = 0;
    this.#defs = defs;
    this.#reps = reps;
    this.#value = 0;
  }

  #setGeneric(rows: number, defs: ArrayLike<number>, values: ArrayLike<unknown>, reps: Uint8Array | null): void {
    this.#mode = Mode.Generic;
    let levels: Uint8Array | null = null;
    if (defs.length === 0) {
      this.#generic = values;
    } else {
      const max = this.#maxDef;
      const out = new Array<unknown>(defs.length);
      for (let i = 0, k = 0; i < defs.length; i++) out[i] = defs[i] === max ? values[k++] : null;
      this.#generic = out;
      // The levels are kept: a struct is null by its first field's level, a list tells an empty or null list
      // from a null element by it.
      levels = this.#levels(defs.length);
      for (let i = 0; i < defs.length; i++) levels[i] = defs[i] as number;
    }
    if (this.#generic.length < rows) throw new Error(`a page of column '${this.#plan.name}' has ${this.#generic.length} values for ${rows} rows`);
    this.#setRows(rows, levels, reps);
  }

  /** Loads pages until one has a row left; false at the end of the chunk. */
  #ready(): boolean {
    while (this.#row >= this.#rows) if (!this.#nextPage()) return false;
    return true;
  }

  /** The definition level of the next row (entry), loading its page; `where` names the row group for errors. */
  def(where: string): number {
    if (!this.#ready()) throw new DecodeError(`${where}: column '${this.#plan.name}' ends before the row group's last row; the file is damaged`);
    return this.#defs === null ? this.#maxDef : this.#defs[this.#row] as number;
  }

  /** The repetition level of the next entry (1: it continues the row before), or -1 at the end of the chunk. */
  rep(): number {
    if (!this.#ready()) return -1;
    return this.#reps === null ? 0 : this.#reps[this.#row] as number;
  }

  /** Passes over the next row (entry), which has no value (its definition level is below a value's). */
  skip(): void {
    this.#row++;
  }

  /** Sets up a page read in place (dictionary indices or PLAIN values from `at`); false when the page needs the generic path. */
  #fast(encoding: string, page: Uint8Array, at: number, values: number): boolean {
    const kind = this.#plan.kind;
    const type = this.#decoder.type;
    if (encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY') {
      if (this.#dictionary === undefined) throw new Error(`column '${this.#plan.name}' has a dictionary-encoded page but no dictionary page`);
      const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
      const width = view.getUint8(at);
      if (this.#indices.length < values) this.#indices = new Int32Array(Math.max(values, 1024));
      const indices = this.#indices.subarray(0, values);
      if (width === 0) indices.fill(0);
      else readRleBitPackedHybrid({ view, offset: at + 1 }, width, indices, page.byteLength - at - 1);
      const n = this.#dictStarts.length - 1;
      for (let i = 0; i < values; i++) {
        const k = indices[i] as number;
        if (k >= n) throw new Error(`column '${this.#plan.name}' refers to dictionary entry ${k}, but the dictionary has ${n}`);
      }
      this.#mode = Mode.Dictionary;
      this.#value = 0;
      return true;
    }
    if (encoding !== 'PLAIN') return false;
    let mode: Mode;
    let width = 0;
    if (kind === 'int' && type === 'INT32') { mode = Mode.Int32; width = 4; }
    else if (kind === 'int' && type === 'INT64') { mode = Mode.Int64; width = 8; }
    else if (kind === 'float' && type === 'DOUBLE') { mode = Mode.Double; width = 8; }
    else if (kind === 'float' && type === 'FLOAT') { mode = Mode.Float; width = 4; }
    else if (kind === 'timestamp' && type === 'INT64') { mode = Mode.Timestamp; width = 8; }
    else if (kind === 'string' && type === 'BYTE_ARRAY') mode = Mode.Bytes;
    else if (kind === 'bool' && type === 'BOOLEAN') mode = Mode.Boolean;
    else return false;
    if (width && at + values * width > page.byteLength) throw new Error(`a page of column '${this.#plan.name}' has ${page.byteLength - at} bytes of values, fewer than its ${values} values need`);
    if (mode === Mode.Boolean && at + Math.ceil(values / 8) > page.byteLength) throw new Error(`a page of column '${this.#plan.name}' is shorter than its ${values} booleans`);
    this.#mode = mode;
    this.#page = Buffer.isBuffer(page) ? page : Buffer.from(page.buffer, page.byteOffset, page.byteLength);
    this.#view = new DataView(page.buffer, page.byteOffset, page.byteLength);
    this.#pos = at;
    return true;
  }

  #loadDictionary(header: PageHeader, compressed: Uint8Array): void {
    const d = this.#decoder;
    const diph = header.dictionary_page_header;
    if (!diph) throw new Error('a dictionary page has no dictionary page header');
    const page = decompressPage(compressed, Number(header.uncompressed_page_size), d.codec, d.compressors);
    const raw = readPlain({ view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 }, d.type, diph.num_values, d.element.type_length);
    const values = convert(raw, d);
    this.#dictionary = values;
    const texts = new Array<string>(values.length);
    let total = 0;
    for (let i = 0; i < values.length; i++) {
      const t = this.#plan.convert(values[i] as unknown);
      texts[i] = t;
      total += Buffer.byteLength(t, 'utf8');
    }
    const bytes = Buffer.allocUnsafe(total);
    const starts = new Int32Array(values.length + 1);
    let o = 0;
    for (let i = 0; i < texts.length; i++) {
      starts[i] = o;
      o += bytes.write(texts[i] as string, o, 'utf8');
    }
    starts[texts.length] = o;
    this.#dictBytes = bytes;
    this.#dictStarts = starts;
  }

  /** Writes the next row's value (its JSON text) at the end of the sink; `where` names the row group for errors. */
  write(sink: LineSink, where: string): void {
    if (this.#row >= this.#rows) {
      if (!this.#nextPage()) throw new DecodeError(`${where}: column '${this.#plan.name}' ends before the row group's last row; the file is damaged`);
      if (this.#rows === 0) return this.write(sink, where);
    }
    const row = this.#row++;
    if (this.#defs !== null && this.#defs[row] !== this.#maxDef) {
      sink.ensure(4);
      sink.buf.set(NULL, sink.len);
      sink.len += 4;
      return;
    }
    switch (this.#mode) {
      case Mode.Dictionary: {
        const k = this.#indices[this.#value++] as number;
        const a = this.#dictStarts[k] as number;
        const b = this.#dictStarts[k + 1] as number;
        sink.ensure(b - a);
        sink.len = copyBytes(this.#dictBytes, a, b, sink.buf, sink.len);
        return;
      }
      case Mode.Int32: {
        const v = this.#view.getInt32(this.#pos, true);
        this.#pos += 4;
        sink.ensure(11);
        sink.len = writeSafeInt(sink.buf, sink.len, v);
        return;
      }
      case Mode.Int64: {
        const lo = this.#view.getUint32(this.#pos, true);
        const hi = this.#view.getInt32(this.#pos + 4, true);
        sink.ensure(20);
        // Exact as a double when it fits 53 bits (|hi| < 2^21); else through a bigint.
        if (hi >= -0x200000 && hi < 0x200000) sink.len = writeSafeInt(sink.buf, sink.len, hi * 4294967296 + lo);
        else sink.len += sink.buf.write(String(this.#view.getBigInt64(this.#pos, true)), sink.len, 'latin1');
        this.#pos += 8;
        return;
      }
      case Mode.Double:
      case Mode.Float: {
        const v = this.#mode === Mode.Double ? this.#view.getFloat64(this.#pos, true) : this.#view.getFloat32(this.#pos, true);
        this.#pos += this.#mode === Mode.Double ? 8 : 4;
        sink.ensure(25);
        if (Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER) sink.len = writeSafeInt(sink.buf, sink.len, v === 0 ? 0 : v);
        else if (Number.isFinite(v)) sink.len += sink.buf.write(String(v), sink.len, 'latin1');
        else {
          // Non-finite floats have no JSON form; upstream writes null.
          sink.buf.set(NULL, sink.len);
          sink.len += 4;
        }
        return;
      }
      case Mode.Timestamp: {
        const lo = this.#view.getUint32(this.#pos, true);
        const hi = this.#view.getInt32(this.#pos + 4, true);
        const v = hi >= -0x200000 && hi < 0x200000 ? hi * 4294967296 + lo : this.#view.getBigInt64(this.#pos, true);
        this.#pos += 8;
        sink.ensure(48);
        sink.len = (this.#plan.instant as InstantFormatter).writeInto(v, sink.buf, sink.len);
        return;
      }
      case Mode.Bytes:
        this.#writeString(sink);
        return;
      case Mode.Boolean: {
        const k = this.#value++;
        const bit = ((this.#page[this.#pos + (k >> 3)] as number) >> (k & 7)) & 1;
        // Copied by a loop: Buffer#write's call into native code costs more than these few bytes (~90 ns a cell).
        const text = bit ? TRUE : FALSE;
        sink.ensure(5);
        const buf = sink.buf;
        let o = sink.len;
        for (let i = 0; i < text.length; i++) buf[o++] = text[i] as number;
        sink.len = o;
        return;
      }
      default: {
        const text = this.#plan.convert(this.#generic[row]);
        sink.ensure(text.length * 3);
        sink.len += sink.buf.write(text, sink.len, 'utf8');
      }
    }
  }

  /** A PLAIN BYTE_ARRAY string: the sanitiser's rewrite when it is a timestamp, else the bytes quoted (escaped when needed). */
  #writeString(sink: LineSink): void {
    const page = this.#page;
    if (this.#pos + 4 > page.length) throw new Error(`a page of column '${this.#plan.name}' ends inside a value's length`);
    const n = this.#view.getUint32(this.#pos, true);
    const a = this.#pos + 4;
    const b = a + n;
    if (b > page.length) throw new Error(`a value of column '${this.#plan.name}' runs past the end of its page`);
    this.#pos = b;
    sink.ensure(n + 18);
    const rewritten = this.#dt.bytesInto(page, a, b, sink.buf, sink.len);
    if (rewritten !== -1) {
      sink.len = rewritten;
      return;
    }
    // Printable ASCII without `"` or `\` is its own JSON text, copied as it is checked (one pass); anything else
    // as jsonString writes it, over what the pass copied (sink.len has not moved).
    const buf = sink.buf;
    let o = sink.len;
    buf[o++] = 0x22;
    let i = a;
    if (n > 32) {
      for (; i < b; i++) {
        const c = page[i] as number;
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) break;
      }
      if (i === b) o = copyBytes(page, a, b, buf, o);
    } else {
      for (; i < b; i++) {
        const c = page[i] as number;
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) break;
        buf[o++] = c;
      }
    }
    if (i === b) {
      buf[o++] = 0x22;
      sink.len = o;
      return;
    }
    const text = jsonString(this.#dt.string(utf8.decode(page.subarray(a, b))));
    sink.ensure(text.length * 3);
    sink.len += sink.buf.write(text, sink.len, 'utf8');
  }
}
