// Avro object container files: a pure incremental core (bytes in → records out) that reads the header,
// then block by block (bounded by the block size), decompresses each block with its codec and decodes
// the records with avsc. Values are converted to JSON as the upstream parser does (reference §4.8).
import { createRequire } from 'node:module';
import { inflateRawSync, zstdDecompressSync } from 'node:zlib';
import avro from 'avsc';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { DecodeError } from './errors.ts';
import { rawJson } from './json.ts';

const require = createRequire(import.meta.url);
const snappy = require('snappyjs') as { uncompress(b: Uint8Array): Uint8Array };
const bzip2 = require('seek-bzip') as { decode(b: Buffer): Buffer };

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1
/** Upper bound on one block, so a corrupt size cannot grow memory without limit. */
export const MAX_BLOCK_BYTES = 256 * 1024 * 1024;

type Codec = (block: Buffer) => Buffer;

const CODECS: Record<string, Codec> = {
  null: (b) => b,
  deflate: (b) => inflateRawSync(b),
  zstandard: (b) => zstdDecompressSync(b),
  bzip2: (b) => bzip2.decode(b),
  // Snappy blocks carry a 4-byte big-endian CRC32 of the uncompressed data after the compressed bytes.
  snappy: (b) => Buffer.from(snappy.uncompress(b.subarray(0, b.length - 4))),
};

export const AVRO_CODECS = Object.keys(CODECS);

// ------------------------------------------------------------------------------------------------
// Logical types, converted straight to their JSON output form.

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `.fff`, `.ffffff` or `.fffffffff` for a nanosecond count, or '' when zero. */
function fraction(nanos: number): string {
  if (nanos === 0) return '';
  if (nanos % 1_000_000 === 0) return `.${pad(nanos / 1_000_000, 3)}`;
  if (nanos % 1000 === 0) return `.${pad(nanos / 1000, 6)}`;
  return `.${pad(nanos, 9)}`;
}

function naiveDateTime(epochMs: number, extraNanos: number): string {
  const d = new Date(epochMs);
  const date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const nanos = d.getUTCMilliseconds() * 1_000_000 + extraNanos;
  return `${date} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${fraction(nanos)}`;
}

function timeOfDay(micros: number): string {
  const secs = Math.floor(micros / 1_000_000);
  const nanos = (micros % 1_000_000) * 1000;
  return `${pad(Math.floor(secs / 3600))}:${pad(Math.floor(secs / 60) % 60)}:${pad(secs % 60)}${fraction(nanos)}`;
}

function logical(fromValue: (v: any) => unknown): typeof avro.types.LogicalType {
  return class extends avro.types.LogicalType {
    override _fromValue(v: any): any { return fromValue(v); }
    override _toValue(v: any): any { return v; }
  } as unknown as typeof avro.types.LogicalType;
}

/**
 * Avro `long` read exactly: a number when a double holds it, else a BigInt (avsc's own long type refuses
 * values beyond ±2^53 with "potential precision loss"); written out as raw JSON digits by the converter.
 */
const EXACT_LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => {
    const n = buf.readBigInt64LE();
    return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n;
  },
  toBuffer: (n: number | bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (v: number | bigint) => v,
  toJSON: (v: number | bigint) => v,
  isValid: (v: unknown) => typeof v === 'bigint' || Number.isSafeInteger(v),
  compare: (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0),
});
/** `{"type": "long"}` written as an object bypasses the registry: the hook gives it EXACT_LONG too. */
function exactLongHook(schema: unknown): avro.Type | undefined {
  const s = schema as { type?: unknown; logicalType?: unknown } | null;
  return s !== null && typeof s === 'object' && s.type === 'long' && s.logicalType === undefined ? (EXACT_LONG as unknown as avro.Type) : undefined;
}
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const LOGICAL_TYPES = {
  date: logical((days: number) => new Date(days * 86_400_000).toISOString().slice(0, 10)),
  'time-millis': logical((ms: number) => timeOfDay(ms * 1000)),
  // Longs may come as BigInt (EXACT_LONG); times beyond ±2^53 µs are far outside any calendar.
  'time-micros': logical((us: number | bigint) => timeOfDay(Number(us))),
  'timestamp-millis': logical((ms: number | bigint) => naiveDateTime(Number(ms), 0)),
  'timestamp-micros': logical((v: number | bigint) => { const us = Number(v); return naiveDateTime(Math.floor(us / 1000), (((us % 1000) + 1000) % 1000) * 1000); }),
  'local-timestamp-millis': logical((ms: number | bigint) => naiveDateTime(Number(ms), 0)),
  'local-timestamp-micros': logical((v: number | bigint) => { const us = Number(v); return naiveDateTime(Math.floor(us / 1000), (((us % 1000) + 1000) % 1000) * 1000); }),
  decimal: logical((b: Buffer) => Array.from(b)),
  duration: logical((b: Buffer) => ({ months: b.readUInt32LE(0), days: b.readUInt32LE(4), millis: b.readUInt32LE(8) })),
};

// ------------------------------------------------------------------------------------------------
// avsc value → JSON value.

type Convert = (v: any) => JsonValue;

function converter(type: any, memo: Map<unknown, Convert>): Convert {
  const known = memo.get(type);
  if (known) return known;
  let impl: Convert = (v) => v as JsonValue;
  const lazy: Convert = (v) => impl(v);
  memo.set(type, lazy);
  const name: string = type.typeName;
  if (name.startsWith('logical:')) impl = (v) => v as JsonValue;
  else if (name === 'abstract:long') impl = (v: number | bigint) => (typeof v === 'bigint' ? rawJson(String(v)) : v);
  else if (name === 'float' || name === 'double') impl = (v: number) => (Number.isFinite(v) ? v : Number.isNaN(v) ? 'NaN' : v > 0 ? 'inf' : '-inf');
  else if (name === 'bytes' || name === 'fixed') impl = (v: Buffer) => v.toString('base64');
  else if (name === 'array') {
    const item = converter(type.itemsType, memo);
    impl = (v: unknown[]) => v.map(item);
  } else if (name === 'map') {
    const value = converter(type.valuesType, memo);
    impl = (v: Record<string, unknown>) => {
      const out: JsonObject = {};
      for (const k of Object.keys(v)) out[k] = value(v[k]);
      return out;
    };
  } else if (name === 'record' || name === 'error') {
    const fields = (type.fields as { name: string; type: unknown }[]).map((f) => [f.name, converter(f.type, memo)] as const);
    impl = (v: Record<string, unknown>) => {
      const out: JsonObject = {};
      for (const [k, c] of fields) out[k] = c(v[k]);
      return out;
    };
  } else if (name === 'union:wrapped') {
    const branches = new Map<string, Convert>((type.types as any[]).map((t) => [t.branchName as string, converter(t, memo)]));
    impl = (v: Record<string, unknown> | null) => {
      if (v === null) return null;
      const key = Object.keys(v)[0] as string;
      return (branches.get(key) ?? ((x) => x as JsonValue))(v[key]);
    };
  }
  return lazy;
}

// ------------------------------------------------------------------------------------------------

/** Reads a zig-zag varint long at `pos`; returns [value, next] or null when more bytes are needed. */
function readLong(buf: Buffer, pos: number): [number, number] | null {
  let n = 0;
  let shift = 1;
  let i = pos;
  while (true) {
    if (i >= buf.length) return null;
    const b = buf[i++] as number;
    n += (b & 0x7f) * shift;
    if (!(b & 0x80)) break;
    shift *= 128;
    if (i - pos > 10) throw new Error('varint too long');
  }
  return [n % 2 === 0 ? n / 2 : -(n + 1) / 2, i];
}

interface AvroHeader { codec: Codec; codecName: string; sync: Buffer; convert: Convert; type: any }

export class AvroRecordParser {
  #buf: Buffer = Buffer.alloc(0);
  /** Source bytes consumed before #buf. */
  #offset = 0;
  #header: AvroHeader | null = null;
  #blocks = 0;

  push(chunk: Uint8Array): JsonObject[] {
    if (chunk.length === 0) return [];
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    return this.#parse();
  }

  end(): JsonObject[] {
    const out = this.#parse();
    if (this.#buf.length > 0 || (this.#header === null && this.#offset > 0)) {
      throw this.#corrupt(this.#header ? `the file ends inside block ${this.#blocks + 1}` : 'the file ends inside the header', this.#offset);
    }
    return out;
  }

  #corrupt(what: string, at: number, cause?: unknown): DecodeError {
    return new DecodeError(`Avro file is corrupt at byte offset ${at}: ${what}`, { byteOffset: at }, cause === undefined ? {} : { cause });
  }

  #parse(): JsonObject[] {
    const out: JsonObject[] = [];
    if (this.#header === null && !this.#readHeader()) return out;
    const h = this.#header as AvroHeader;
    while (true) {
      const buf = this.#buf;
      let count: [number, number] | null;
      let size: [number, number] | null;
      try {
        count = readLong(buf, 0);
        size = count && readLong(buf, count[1]);
      } catch (err) {
        throw this.#corrupt('invalid block header', this.#offset, err);
      }
      if (!count || !size) return out;
      if (count[0] < 0 || size[0] < 0 || size[0] > MAX_BLOCK_BYTES) throw this.#corrupt(`invalid block header (count ${count[0]}, size ${size[0]})`, this.#offset);
      const dataStart = size[1];
      const end = dataStart + size[0] + 16;
      if (buf.length < end) return out;
      const sync = buf.subarray(dataStart + size[0], end);
      if (!sync.equals(h.sync)) throw this.#corrupt(`block ${this.#blocks + 1} does not end with the file's sync marker`, this.#offset + dataStart + size[0]);
      let data: Buffer;
      try {
        data = h.codec(buf.subarray(dataStart, dataStart + size[0]));
      } catch (err) {
        throw this.#corrupt(`block ${this.#blocks + 1} cannot be decompressed with codec '${h.codecName}': ${(err as Error).message}`, this.#offset + dataStart, err);
      }
      let pos = 0;
      for (let i = 0; i < count[0]; i++) {
        let res: { value: unknown; offset: number };
        try {
          res = h.type.decode(data, pos);
        } catch (err) {
          throw this.#corrupt(`record ${i + 1} of block ${this.#blocks + 1} cannot be decoded: ${(err as Error).message}`, this.#offset + dataStart, err);
        }
        if (res.offset < 0) throw this.#corrupt(`record ${i + 1} of block ${this.#blocks + 1} runs past the end of its block`, this.#offset + dataStart);
        pos = res.offset;
        out.push(h.convert(res.value) as JsonObject);
      }
      this.#blocks++;
      this.#offset += end;
      this.#buf = buf.subarray(end);
      if (this.#buf.length === 0) {
        this.#buf = Buffer.alloc(0);
        return out;
      }
    }
  }

  #readHeader(): boolean {
    const buf = this.#buf;
    if (buf.length < 4) {
      if (!MAGIC.subarray(0, buf.length).equals(buf)) throw this.#corrupt('not an Avro object container file (bad magic bytes)', 0);
      return false;
    }
    if (!buf.subarray(0, 4).equals(MAGIC)) throw this.#corrupt('not an Avro object container file (bad magic bytes)', 0);
    const meta = new Map<string, Buffer>();
    let pos = 4;
    try {
      while (true) {
        const c = readLong(buf, pos);
        if (!c) return false;
        pos = c[1];
        let count = c[0];
        if (count === 0) break;
        if (count < 0) {
          const skip = readLong(buf, pos);
          if (!skip) return false;
          pos = skip[1];
          count = -count;
        }
        for (let i = 0; i < count; i++) {
          const kl = readLong(buf, pos);
          if (!kl || kl[1] + kl[0] > buf.length) return false;
          const key = buf.toString('utf8', kl[1], kl[1] + kl[0]);
          pos = kl[1] + kl[0];
          const vl = readLong(buf, pos);
          if (!vl || vl[1] + vl[0] > buf.length) return false;
          meta.set(key, buf.subarray(vl[1], vl[1] + vl[0]));
          pos = vl[1] + vl[0];
        }
        if (pos > MAX_BLOCK_BYTES) throw new Error('header too large');
      }
    } catch (err) {
      throw this.#corrupt(`invalid header: ${(err as Error).message}`, pos, err);
    }
    if (buf.length < pos + 16) return false;
    const codecName = meta.get('avro.codec')?.toString('utf8') || 'null';
    const codec = CODECS[codecName];
    if (!codec) throw this.#corrupt(`unsupported codec '${codecName}' (supported: ${AVRO_CODECS.join(', ')})`, 0);
    const schemaText = meta.get('avro.schema');
    if (!schemaText) throw this.#corrupt('the header has no avro.schema', 0);
    let type: any;
    try {
      type = avro.Type.forSchema(JSON.parse(schemaText.toString('utf8')), { wrapUnions: true, logicalTypes: LOGICAL_TYPES as any, registry: { long: EXACT_LONG }, typeHook: exactLongHook });
    } catch (err) {
      throw this.#corrupt(`invalid writer schema: ${(err as Error).message}`, 0, err);
    }
    if (type.typeName !== 'record') throw this.#corrupt(`the top-level schema must be a record, found '${type.typeName === 'abstract:long' ? 'long' : type.typeName}'`, 0);
    this.#header = { codec, codecName, sync: Buffer.from(buf.subarray(pos, pos + 16)), convert: converter(type, new Map()), type };
    this.#offset += pos + 16;
    this.#buf = buf.subarray(pos + 16);
    return true;
  }
}
