// Parquet values → JSON text, per column, compiled once from the file's schema. hyparquet decodes pages
// into physical values (and assembles nested columns into objects and arrays); the converters here turn
// them into the JSON text of each value, so INT64 and decimals keep every digit (no JS number on the way)
// and each row's text is a concatenation. The mapping follows upstream's parser (the parquet crate's
// record API, estuary/flow crates/parser/src/format/parquet.rs) except where docs/architecture.md says:
// timestamps are RFC 3339 (upstream's `YYYY-MM-DD HH:MM:SS.fff +00:00` is not), nanosecond and INT96
// timestamps keep their precision, decimals are numbers when a double holds them exactly.
import type { ParquetParsers, SchemaElement, SchemaTree } from 'hyparquet';
import { DecodeError } from './errors.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { parseOffset } from './datetime.ts';
import { jsonString } from './record.ts';

/** A value's JSON text. */
export type ToJson = (value: unknown) => string;

const utf8 = new TextDecoder();

/**
 * What a leaf's values are, for the byte writer of flat columns (parquet-flat.ts): PLAIN pages of these
 * kinds are written from the page bytes; 'other' leaves always go through the converter.
 */
export type LeafKind = 'int' | 'float' | 'bool' | 'string' | 'timestamp' | 'other';

/** Leaf handling decided from the schema; `strip` leaves take the physical value (hyparquet's conversion is bypassed). */
interface LeafPlan { convert: ToJson; strip: boolean; kind: LeafKind; instant?: InstantFormatter }

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `YYYY-MM-DD` of a day number since the epoch, or null outside years 0000–9999 (not RFC 3339). */
function dateOfDay(day: number): string | null {
  if (!Number.isFinite(day) || Math.abs(day) > 100_000_000) return null;
  const iso = new Date(day * 86_400_000).toISOString();
  return iso.length === 24 ? iso.slice(0, 10) : null;
}

/** The sanitiser's fraction rule (datetime.ts, as the time crate's RFC 3339): the significant digits, none when zero. */
function fraction(frac: number, digits: number): string {
  if (frac === 0) return '';
  const s = String(frac).padStart(digits, '0');
  let sig = s.length;
  while (sig > 0 && s.charCodeAt(sig - 1) === 48) sig--;
  return `.${s.slice(0, sig)}`;
}

/** The ASCII tens and ones digits of 0–99 (writeInto's hours, minutes and seconds without a division each). */
const TENS = Uint8Array.from({ length: 100 }, (_, n) => 0x30 + Math.floor(n / 10));
const ONES = Uint8Array.from({ length: 100 }, (_, n) => 0x30 + (n % 10));

/** Formats instants (a count of `10^-digits` seconds) as RFC 3339, caching the date of the last day seen. */
export class InstantFormatter {
  readonly #digits: number;
  readonly #per: number;
  readonly #perBig: bigint;
  readonly #offset: string;
  readonly #offsetBytes: Buffer;
  #day = NaN;
  #date = '';
  #dateBytes = Buffer.alloc(10);
  constructor(digits: number, offset: string) {
    this.#digits = digits;
    this.#per = 10 ** digits;
    this.#perBig = 10n ** BigInt(digits);
    this.#offset = offset;
    this.#offsetBytes = Buffer.from(offset, 'latin1');
  }

  /**
   * format()'s text written as bytes at `o` (room for 48 needed); returns the index after it. For the
   * byte writer of flat columns: the same arithmetic, no string per value.
   */
  writeInto(v: bigint | number, buf: Uint8Array, o: number): number {
    let secs: number;
    let frac: number;
    if (typeof v === 'number') {
      secs = Math.floor(v / this.#per);
      frac = v - secs * this.#per;
    } else {
      const text = this.format(v);
      for (let i = 0; i < text.length; i++) buf[o++] = text.charCodeAt(i);
      return o;
    }
    const day = Math.floor(secs / 86_400);
    if (day !== this.#day) {
      const d = dateOfDay(day);
      if (d === null) {
        const text = String(v);
        for (let i = 0; i < text.length; i++) buf[o++] = text.charCodeAt(i);
        return o;
      }
      this.#day = day;
      this.#date = d;
      this.#dateBytes = Buffer.from(d, 'latin1');
    }
    // 0 ≤ t < 86,400, an integer: `| 0` truncates exactly (and is integer arithmetic).
    const t = secs - day * 86_400;
    const h = (t / 3600) | 0;
    const r = t - h * 3600;
    const m = (r / 60) | 0;
    const sec = r - m * 60;
    buf[o++] = 0x22;
    // Short copies by a loop: TypedArray#set's call costs more than 10 bytes (and the offset's 1 or 6).
    const date = this.#dateBytes;
    for (let i = 0; i < 10; i++) buf[o++] = date[i] as number;
    buf[o++] = 0x54; // T
    buf[o++] = TENS[h] as number;
    buf[o++] = ONES[h] as number;
    buf[o++] = 0x3a;
    buf[o++] = TENS[m] as number;
    buf[o++] = ONES[m] as number;
    buf[o++] = 0x3a;
    buf[o++] = TENS[sec] as number;
    buf[o++] = ONES[sec] as number;
    if (frac !== 0) {
      // fraction(): the digits padded to the unit, trailing zeros dropped.
      const digits = this.#digits;
      buf[o] = 0x2e;
      let f = frac;
      for (let i = digits; i >= 1; i--) {
        const q = Math.floor(f / 10);
        buf[o + i] = 0x30 + (f - q * 10);
        f = q;
      }
      let end = digits;
      while (buf[o + end] === 0x30) end--;
      o += end + 1;
    }
    const offset = this.#offsetBytes;
    for (let i = 0; i < offset.length; i++) buf[o++] = offset[i] as number;
    buf[o++] = 0x22;
    return o;
  }
  /** JSON text; a value outside years 0000–9999 (no RFC 3339 form) stays the integer it is. */
  format(v: bigint | number): string {
    let secs: number;
    let frac: number;
    if (typeof v === 'number' || (v >= -9_007_199_254_740_991n && v <= 9_007_199_254_740_991n)) {
      const n = Number(v);
      secs = Math.floor(n / this.#per);
      frac = n - secs * this.#per;
    } else {
      let s = v / this.#perBig;
      let f = v % this.#perBig;
      if (f < 0n) { f += this.#perBig; s -= 1n; }
      secs = Number(s);
      frac = Number(f);
    }
    const day = Math.floor(secs / 86_400);
    if (day !== this.#day) {
      const d = dateOfDay(day);
      if (d === null) return String(v);
      this.#day = day;
      this.#date = d;
    }
    const t = secs - day * 86_400;
    const h = Math.floor(t / 3600);
    const m = Math.floor((t - h * 3600) / 60);
    return `"${this.#date}T${pad2(h)}:${pad2(m)}:${pad2(t - h * 3600 - m * 60)}${fraction(frac, this.#digits)}${this.#offset}"`;
  }
}

/** Time of day as upstream writes it (`HH:MM:SS.fff` for milliseconds, `.ffffff` micro, `.fffffffff` nano). */
function timeOfDay(v: bigint | number, digits: number): string {
  const n = typeof v === 'bigint' ? v : BigInt(v);
  const per = 10n ** BigInt(digits);
  const secs = Number(n / per);
  const frac = Number(n % per);
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  return `"${pad2(h)}:${pad2(m)}:${pad2(secs % 60)}.${String(frac).padStart(digits, '0')}"`;
}

/** Two's-complement big-endian bytes as a bigint. */
function bigintOfBytes(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  let v = 0n;
  for (let i = 0; i < bytes.length; i++) v = (v << 8n) | BigInt(bytes[i] as number);
  return (bytes[0] as number) & 0x80 ? v - (1n << BigInt(bytes.length * 8)) : v;
}

/**
 * A decimal's JSON text: a number when the double nearest it prints back as the same value (what a reader
 * parsing JSON numbers as doubles then gets exactly), else a string with every digit of the scale, as
 * upstream writes all decimals.
 */
export function decimalJson(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n;
  let digits = (negative ? -unscaled : unscaled).toString();
  let text: string;
  if (scale <= 0) text = digits + '0'.repeat(-scale);
  else {
    if (digits.length <= scale) digits = digits.padStart(scale + 1, '0');
    text = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  }
  if (negative) text = `-${text}`;
  // The canonical value: no trailing fraction zeros, no point without a fraction.
  const canonical = text.includes('.') ? text.replace(/\.?0+$/, '') : text;
  const n = Number(canonical);
  const back = String(n);
  if (back === canonical || (canonical === '-0' && back === '0')) return back;
  return `"${text}"`;
}

function decimalOf(v: unknown, scale: number): string {
  if (typeof v === 'bigint') return decimalJson(v, scale);
  if (typeof v === 'number') return decimalJson(BigInt(v), scale);
  return decimalJson(bigintOfBytes(v as Uint8Array), scale);
}

function base64(v: unknown): string {
  const b = v as Uint8Array;
  return `"${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')}"`;
}

const numberJson: ToJson = (v) => {
  const n = v as number;
  // Non-finite floats have no JSON form; upstream writes null.
  return Number.isFinite(n) ? String(n) : 'null';
};
const integerJson: ToJson = (v) => String(v);
const booleanJson: ToJson = (v) => (v ? 'true' : 'false');
/** Values a parser (stringParsers) already made JSON text. */
const textJson: ToJson = (v) => v as string;

export interface JsonPlanOptions {
  datetimes: DatetimeNormalizer;
  /** parser.defaultOffset, for timestamps not adjusted to UTC (wall-clock times). */
  defaultOffset: string;
}

/**
 * hyparquet's parsers, returning JSON text: strings (sanitised like every format's strings), dates,
 * UTC timestamps, INT96 timestamps, UUIDs, JSON text (a string, as upstream) and geometries (base64, as upstream).
 */
export function textParsers(options: JsonPlanOptions): ParquetParsers {
  const dt = options.datetimes;
  const millis = new InstantFormatter(3, 'Z');
  const micros = new InstantFormatter(6, 'Z');
  const nanos = new InstantFormatter(9, 'Z');
  const str = (bytes: Uint8Array): string => jsonString(dt.string(utf8.decode(bytes)));
  return {
    timestampFromMilliseconds: (v) => millis.format(v),
    timestampFromMicroseconds: (v) => micros.format(v),
    timestampFromNanoseconds: (v) => nanos.format(v),
    dateFromDays: (days) => {
      const d = dateOfDay(days);
      return d === null ? String(days) : `"${d}"`;
    },
    stringFromBytes: (bytes) => (bytes === undefined ? bytes : str(bytes)),
    jsonFromBytes: (bytes) => (bytes === undefined ? bytes : str(bytes)),
    geometryFromBytes: (bytes) => (bytes === undefined ? bytes : base64(bytes)),
    geographyFromBytes: (bytes) => (bytes === undefined ? bytes : base64(bytes)),
    uuidFromBytes: (bytes) => {
      if (bytes === undefined) return bytes;
      const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
      return `"${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}"`;
    },
  };
}

function offsetText(offset: string): string {
  const minutes = parseOffset(offset);
  if (minutes === null || minutes === 0) return 'Z';
  return offset;
}

function unitDigits(unit: string | undefined): number {
  return unit === 'NANOS' ? 9 : unit === 'MICROS' ? 6 : 3;
}

/** How one leaf's values become JSON text (and whether hyparquet's own conversion must be bypassed). */
function leafPlan(el: SchemaElement, path: string, options: JsonPlanOptions): LeafPlan {
  const lt = el.logical_type;
  const ct = el.converted_type;
  if (lt?.type === 'DECIMAL' || ct === 'DECIMAL') {
    const scale = lt?.type === 'DECIMAL' ? lt.scale : el.scale ?? 0;
    return { convert: (v) => decimalOf(v, scale), strip: true, kind: 'other' };
  }
  if (lt?.type === 'TIMESTAMP') {
    const f = new InstantFormatter(unitDigits(lt.unit), lt.isAdjustedToUTC ? 'Z' : offsetText(options.defaultOffset));
    return { convert: (v) => f.format(v as bigint), strip: true, kind: 'timestamp', instant: f };
  }
  if (ct === 'TIMESTAMP_MILLIS' || ct === 'TIMESTAMP_MICROS') {
    // Legacy annotations mean UTC.
    const f = new InstantFormatter(ct === 'TIMESTAMP_MILLIS' ? 3 : 6, 'Z');
    return { convert: (v) => f.format(v as bigint), strip: true, kind: 'timestamp', instant: f };
  }
  if (lt?.type === 'TIME' || ct === 'TIME_MILLIS' || ct === 'TIME_MICROS') {
    const digits = lt?.type === 'TIME' ? unitDigits(lt.unit) : ct === 'TIME_MILLIS' ? 3 : 6;
    return { convert: (v) => timeOfDay(v as bigint | number, digits), strip: true, kind: 'other' };
  }
  if (lt?.type === 'INTERVAL' || ct === 'INTERVAL' || lt?.type === 'BSON' || ct === 'BSON') return { convert: base64, strip: true, kind: 'other' };
  if (lt?.type === 'ENUM' || ct === 'ENUM') return { convert: textJson, strip: false, kind: 'string' };
  // JSON is a string too (the same parser).
  if (lt?.type === 'STRING' || ct === 'UTF8' || lt?.type === 'JSON' || ct === 'JSON') return { convert: textJson, strip: false, kind: 'string' };
  if (lt?.type === 'UUID' || lt?.type === 'GEOMETRY' || lt?.type === 'GEOGRAPHY' || ct === 'DATE' || lt?.type === 'DATE') {
    return { convert: textJson, strip: false, kind: 'other' };
  }
  // Unsigned 32/64-bit integers are converted by hyparquet (its values are not the physical ones).
  const unsigned = ct === 'UINT_32' || ct === 'UINT_64' || (lt?.type === 'INTEGER' && !lt.isSigned && lt.bitWidth >= 32);
  switch (el.type) {
    case 'BOOLEAN': return { convert: booleanJson, strip: false, kind: 'bool' };
    case 'INT32':
    case 'INT64': return { convert: integerJson, strip: false, kind: unsigned ? 'other' : 'int' };
    case 'INT96': return { convert: textJson, strip: false, kind: 'other' };
    case 'FLOAT':
    case 'DOUBLE': return { convert: numberJson, strip: false, kind: 'float' };
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY':
      if (lt?.type === 'FLOAT16') return { convert: numberJson, strip: false, kind: 'other' };
      return { convert: base64, strip: false, kind: 'other' };
    default:
      throw new DecodeError(`Parquet column '${path}' has physical type ${String(el.type)}, which this connector cannot read`);
  }
}

/** A leaf inside a nested column the byte writer reads (parquet-nested.ts): its path and how its values are written. */
export interface NestedLeaf {
  /** The names from the top-level column down to the leaf (a column chunk's path_in_schema). */
  path: string[];
  plan: { name: string; convert: ToJson; kind: LeafKind; instant?: InstantFormatter };
}

/** A top-level nested column of a shape the byte writer reads, with the definition levels it needs. */
export type NestedPlan =
  | { shape: 'struct'; def: number; fields: (NestedLeaf & { key: string })[] }
  | { shape: 'list'; listDef: number; entryDef: number; leaf: NestedLeaf };

/** The definition level of the last of `nodes` (a path down from a top-level column): the non-required nodes on it. */
function defLevel(nodes: SchemaTree[]): number {
  let d = 0;
  for (const n of nodes) if (n.element.repetition_type !== 'REQUIRED') d++;
  return d;
}

function isPlainLeaf(node: SchemaTree): boolean {
  return node.children.length === 0 && node.element.logical_type?.type !== 'VARIANT';
}

/**
 * The byte writer's plan for a top-level nested column (a struct of leaves, a list of one leaf), or null for
 * other shapes (hyparquet's objects). Leaf plans are made before nodeJson strips the annotations they read.
 */
function nestedPlan(child: SchemaTree, options: JsonPlanOptions): NestedPlan | null {
  if (child.children.length === 0 || child.element.repetition_type === 'REPEATED' || isMapLike(child)) return null;
  const leafOf = (path: SchemaTree[]): NestedLeaf => {
    const leaf = path[path.length - 1] as SchemaTree;
    const dotted = path.map((n) => n.element.name).join('.');
    const plan = leafPlan(leaf.element, dotted, options);
    const convert = nullable(plan.convert);
    return { path: path.map((n) => n.element.name), plan: plan.instant ? { name: dotted, convert, kind: plan.kind, instant: plan.instant } : { name: dotted, convert, kind: plan.kind } };
  };
  if (isListLike(child)) {
    const mid = child.children[0] as SchemaTree;
    const element = mid.children.length === 1 ? (mid.children[0] as SchemaTree) : mid;
    if (!isPlainLeaf(element) || (element !== mid && element.element.repetition_type === 'REPEATED')) return null;
    const path = element === mid ? [child, mid] : [child, mid, element];
    return { shape: 'list', listDef: defLevel([child]), entryDef: defLevel([child, mid]), leaf: leafOf(path) };
  }
  if (!child.children.every((c) => isPlainLeaf(c) && c.element.repetition_type !== 'REPEATED')) return null;
  return { shape: 'struct', def: defLevel([child]), fields: child.children.map((c) => ({ key: c.element.name, ...leafOf([child, c]) })) };
}

/**
 * Rewrites the leaf annotations hyparquet would convert lossily (decimals to doubles, timestamps to
 * millisecond Dates) so it hands over physical values; ENUM becomes UTF8 so dictionaries decode once.
 * Returns the converter of each top-level column, and for a nested one the byte writer reads, its plan.
 */
export function planColumns(root: SchemaTree, options: JsonPlanOptions): { name: string; convert: ToJson; flat: boolean; kind: LeafKind; instant?: InstantFormatter; nested?: NestedPlan }[] {
  return root.children.map((child) => {
    const flat = child.children.length === 0 && child.element.repetition_type !== 'REPEATED';
    // The leaf plan before nodeJson strips the annotations it reads.
    const leaf = flat && child.element.logical_type?.type !== 'VARIANT' ? leafPlan(child.element, child.element.name, options) : null;
    const nested = flat ? null : nestedPlan(child, options);
    const convert = nodeJson(child, child.element.name, options, false);
    const base = leaf?.instant
      ? { name: child.element.name, convert, flat, kind: leaf.kind, instant: leaf.instant }
      : { name: child.element.name, convert, flat, kind: leaf?.kind ?? 'other' };
    return nested ? { ...base, nested } : base;
  });
}

function isListLike(node: SchemaTree): boolean {
  const first = node.children[0];
  return node.element.converted_type === 'LIST' && node.children.length === 1 && first !== undefined
    && first.children.length <= 1 && first.element.repetition_type === 'REPEATED';
}

function isMapLike(node: SchemaTree): boolean {
  const first = node.children[0];
  return node.element.converted_type === 'MAP' && node.children.length === 1 && first !== undefined
    && first.children.length === 2 && first.element.repetition_type === 'REPEATED';
}

const nullable = (f: ToJson): ToJson => (v) => (v === undefined || v === null ? 'null' : f(v));

/**
 * A map key's JSON text (a JSON string), as upstream writes keys (the parquet crate's `to_json_value`): a
 * string key as it is (not through the datetime sanitiser, which rewrites values only, as for Avro maps'
 * keys), any other key as the JSON text of its value (`"12.5"`, `"2024-01-01"`, `"9007199254740993"`, `"true"`,
 * `"null"`), so that a key is the value the same column would give outside a map.
 */
function mapKeyJson(keyNode: SchemaTree, path: string, options: JsonPlanOptions): ToJson {
  const el = keyNode.element;
  const lt = el.logical_type?.type;
  const ct = el.converted_type;
  if (keyNode.children.length === 0 && el.type === 'BYTE_ARRAY' && (lt === 'STRING' || lt === 'ENUM' || lt === 'JSON' || ct === 'UTF8' || ct === 'ENUM' || ct === 'JSON')) {
    // The bytes, not hyparquet's string parser (which sanitises).
    delete el.logical_type;
    delete el.converted_type;
    return (v) => (v === undefined || v === null ? '"null"' : jsonString(utf8.decode(v as Uint8Array)));
  }
  const text = nodeJson(keyNode, path, options, true);
  return (v) => {
    const t = text(v);
    return t.charCodeAt(0) === 0x22 ? t : JSON.stringify(t);
  };
}

/** The converter of a schema node, the way hyparquet assembles its values (assemble.js). */
function nodeJson(node: SchemaTree, path: string, options: JsonPlanOptions, inRepeated: boolean): ToJson {
  const el = node.element;
  let f: ToJson;
  if (el.logical_type?.type === 'VARIANT') {
    throw new DecodeError(`Parquet column '${path}' has the VARIANT logical type, which this connector does not read yet; leave the column out of the file or cast it to a string`);
  }
  if (isListLike(node)) {
    const mid = node.children[0] as SchemaTree;
    const element = mid.children.length === 1 ? (mid.children[0] as SchemaTree) : mid;
    const item = nodeJson(element, `${path}.${element.element.name}`, options, true);
    f = (v) => {
      const a = v as unknown[];
      let s = '[';
      for (let i = 0; i < a.length; i++) s += (i ? ',' : '') + item(a[i]);
      return `${s}]`;
    };
  } else if (isMapLike(node)) {
    const kv = node.children[0] as SchemaTree;
    const keyNode = kv.children[0] as SchemaTree;
    const valueNode = kv.children[1] as SchemaTree;
    const key = mapKeyJson(keyNode, `${path}.${keyNode.element.name}`, options);
    const value = nodeJson(valueNode, `${path}.${valueNode.element.name}`, options, true);
    // hyparquet assembles a MAP into a JS object keyed by String(key): a decimal's key became its unscaled
    // integer, a timestamp's its raw count, bytes "0,255,16", a `__proto__` key was lost and a key it did not
    // quote made the line invalid JSON. Without the annotation it hands over the entries as they are stored,
    // a repeated group of {key, value} objects, and each key is converted here like any value of its type.
    delete el.converted_type;
    delete el.logical_type;
    const entries = kv.element.name;
    const keyName = keyNode.element.name;
    const valueName = valueNode.element.name;
    f = (v) => {
      // A key written twice keeps its first place and its last value (a JSON object has each key once).
      const texts = new Map<string, string>();
      for (const e of ((v as Record<string, unknown>)[entries] ?? []) as Record<string, unknown>[]) {
        texts.set(key(e[keyName]), value(e[valueName]));
      }
      let s = '{';
      let first = true;
      for (const [k, t] of texts) {
        s += `${first ? '' : ','}${k}:${t}`;
        first = false;
      }
      return `${s}}`;
    };
  } else if (node.children.length) {
    const fields = node.children.map((c) => ({ key: c.element.name, prefix: JSON.stringify(c.element.name), convert: nodeJson(c, `${path}.${c.element.name}`, options, false) }));
    const lost = fields.find((field) => field.key === '__proto__');
    // hyparquet assembles such a struct as a JS object (`obj[name] = value`), where this name sets the
    // prototype instead of a field: the value is gone (and was written as invalid JSON). Only values that
    // reach this converter are refused: a struct of leaves at the top level is read by the byte writer.
    if (lost) f = () => { throw new DecodeError(`Parquet column '${path}' has a field named '__proto__' inside a nested shape this connector decodes into JavaScript objects (a struct within a list, a map or another struct holding lists or maps), where that name cannot hold a value; rename the field in the file`); };
    else f = (v) => {
      const o = v as Record<string, unknown>;
      let s = '{';
      for (let i = 0; i < fields.length; i++) {
        const field = fields[i] as (typeof fields)[number];
        s += `${i ? ',' : ''}${field.prefix}:${field.convert(o[field.key])}`;
      }
      return `${s}}`;
    };
  } else {
    const plan = leafPlan(el, path, options);
    if (plan.strip) {
      delete el.logical_type;
      delete el.converted_type;
    } else if (el.logical_type?.type === 'ENUM' || el.converted_type === 'ENUM') {
      el.logical_type = { type: 'STRING' };
      el.converted_type = 'UTF8';
    }
    f = plan.convert;
  }
  f = nullable(f);
  if (el.repetition_type === 'REPEATED' && !inRepeated) {
    // A repeated field outside a LIST annotation: an array.
    const item = f;
    return (v) => {
      if (v === undefined || v === null) return '[]';
      const a = v as unknown[];
      let s = '[';
      for (let i = 0; i < a.length; i++) s += (i ? ',' : '') + item(a[i]);
      return `${s}]`;
    };
  }
  return f;
}
