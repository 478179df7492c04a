// FoundationDB tuple codec for keyPacked / valuesPacked (flow-protocol.md §3.6).
// Flow packs the selected key fields (and value fields) of a materialization binding as one tuple;
// object and array fields travel as bytes (code 0x01) holding their JSON text.
import { isAscii } from 'node:buffer';
import { ProtocolError } from '../errors.ts';

/** A UUID element (type code 0x30), 16 bytes. */
export interface TupleUuid { uuid: Uint8Array }

/**
 * One decoded tuple element. Integers that fit in a JS safe integer are numbers, larger ones BigInt;
 * bytes (code 0x01, which Flow uses for object/array fields holding their JSON text) are Uint8Array.
 */
export type TupleValue = null | boolean | number | bigint | string | Uint8Array | TupleUuid | TupleValue[];

const NULL = 0x00;
const BYTES = 0x01;
const STRING = 0x02;
const NESTED = 0x05;
const NEG_INT_ARBITRARY = 0x0b;
const INT_ZERO = 0x14;
const POS_INT_ARBITRARY = 0x1d;
const FLOAT = 0x20;
const DOUBLE = 0x21;
const FALSE = 0x26;
const TRUE = 0x27;
const UUID = 0x30;

const utf8 = new TextEncoder();
const SCRATCH = new Uint8Array(8);
const SCRATCH_VIEW = new DataView(SCRATCH.buffer);
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/** A growable byte buffer (exported for pack-bytes.ts, which packs elements straight from JSON bytes). */
export class ByteSink {
  buf = Buffer.allocUnsafe(128);
  len = 0;
  /** Makes room for `extra` more bytes at `len` (buf may be replaced). */
  ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + extra) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  /** Writes a string's UTF-8 bytes (the caller knows it has no NUL). */
  pushUtf8(text: string): void {
    this.ensure(text.length * 3);
    this.len += this.buf.write(text, this.len, 'utf8');
  }
  /**
   * A string element's bytes: its UTF-8 with each NUL escaped as 00 FF, then the 00 terminator. A short
   * ASCII string is copied by a loop: the host packs a dozen strings per document, and a native write per
   * string cost more than the copy (the materialization thread's largest native cost, issue 16).
   */
  pushString(text: string): void {
    const n = text.length;
    if (n <= 64) {
      this.ensure(n + 1);
      const buf = this.buf;
      let o = this.len;
      let i = 0;
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c === 0 || c >= 0x80) break;
        buf[o++] = c;
      }
      if (i === n) {
        buf[o++] = 0x00;
        this.len = o;
        return;
      }
      // A NUL or a non-ASCII character: written again from the start below.
    }
    if (text.includes('\u0000')) {
      pushEscaped(this, utf8.encode(text));
    } else {
      this.pushUtf8(text);
      this.push(0x00);
    }
  }
  push(b: number): void {
    this.ensure(1);
    this.buf[this.len++] = b;
  }
  pushAll(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }
  result(): Uint8Array {
    return Uint8Array.prototype.slice.call(this.buf, 0, this.len);
  }
  toBase64(): string {
    return this.buf.toString('base64', 0, this.len);
  }
}

/** Writes bytes with every 0x00 escaped as 0x00 0xFF, then the 0x00 terminator. */
function pushEscaped(out: ByteSink, bytes: Uint8Array): void {
  if (bytes.indexOf(0x00) === -1) {
    out.pushAll(bytes);
    out.push(0x00);
    return;
  }
  for (const b of bytes) {
    out.push(b);
    if (b === 0x00) out.push(0xff);
  }
  out.push(0x00);
}

function bigIntToBytes(n: bigint): Uint8Array {
  // n >= 0; minimal big-endian representation (at least one byte).
  let hex = n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

function pushInt(out: ByteSink, n: bigint): void {
  if (n === 0n) {
    out.push(INT_ZERO);
    return;
  }
  const magnitude = n < 0n ? -n : n;
  const bytes = bigIntToBytes(magnitude);
  if (bytes.length > 8) {
    if (bytes.length > 255) throw new RangeError('tuple integer too large: more than 255 bytes');
    if (n > 0n) {
      out.push(POS_INT_ARBITRARY);
      out.push(bytes.length);
      out.pushAll(bytes);
    } else {
      out.push(NEG_INT_ARBITRARY);
      out.push(bytes.length ^ 0xff);
      out.pushAll(bytes.map((b) => b ^ 0xff));
    }
    return;
  }
  if (n > 0n) {
    out.push(INT_ZERO + bytes.length);
    out.pushAll(bytes);
  } else {
    // One's complement of the magnitude within the same number of bytes.
    out.push(INT_ZERO - bytes.length);
    out.pushAll(bytes.map((b) => b ^ 0xff));
  }
}

/** pushInt for safe integers, without BigInt. */
function pushSafeInt(out: ByteSink, n: number): void {
  if (n === 0) {
    out.push(INT_ZERO);
    return;
  }
  const magnitude = Math.abs(n);
  let len = 0;
  for (let m = magnitude; m > 0; m = Math.floor(m / 256)) len++;
  out.push(n > 0 ? INT_ZERO + len : INT_ZERO - len);
  const flip = n > 0 ? 0 : 0xff;
  let div = 1;
  for (let i = 1; i < len; i++) div *= 256;
  for (let i = 0; i < len; i++) {
    out.push((Math.floor(magnitude / div) % 256) ^ flip);
    div /= 256;
  }
}

function pushDouble(out: ByteSink, value: number): void {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setFloat64(0, value, false);
  if ((bytes[0]! & 0x80) !== 0) {
    for (let i = 0; i < 8; i++) bytes[i] = bytes[i]! ^ 0xff;
  } else {
    bytes[0] = bytes[0]! ^ 0x80;
  }
  out.push(DOUBLE);
  out.pushAll(bytes);
}

function isUuid(value: unknown): value is TupleUuid {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
    && (value as TupleUuid).uuid instanceof Uint8Array;
}

/** Appends one top-level tuple element (pack-bytes.ts packs the values it does not read from bytes so). */
export function pushTupleElement(out: ByteSink, value: TupleValue): void {
  pushElement(out, value, false);
}

function pushElement(out: ByteSink, value: TupleValue, nested: boolean): void {
  if (value === null) {
    out.push(NULL);
    if (nested) out.push(0xff);
  } else if (typeof value === 'boolean') {
    out.push(value ? TRUE : FALSE);
  } else if (typeof value === 'string') {
    out.push(STRING);
    out.pushString(value);
  } else if (typeof value === 'bigint') {
    pushInt(out, value);
  } else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) pushSafeInt(out, value);
    else if (Number.isInteger(value)) pushInt(out, BigInt(value));
    else pushDouble(out, value);
  } else if (value instanceof Uint8Array) {
    out.push(BYTES);
    pushEscaped(out, value);
  } else if (Array.isArray(value)) {
    out.push(NESTED);
    for (const element of value) pushElement(out, element, true);
    out.push(0x00);
  } else if (isUuid(value)) {
    if (value.uuid.length !== 16) throw new RangeError(`tuple UUID must be 16 bytes, got ${value.uuid.length}`);
    out.push(UUID);
    out.pushAll(value.uuid);
  } else {
    throw new TypeError(`cannot pack a value of type ${typeof value} into a tuple`);
  }
}

/** Packs values as a FoundationDB tuple. Integral numbers pack as integers, others as float64. */
export function packTuple(values: readonly TupleValue[]): Uint8Array {
  const out = new ByteSink();
  for (const value of values) pushElement(out, value, false);
  return out.result();
}

/**
 * A reusable packing buffer for hot loops (the host packs every document's key and values): pack() then
 * base64() or bytes() (a copy), before the next pack(). Not reentrant; one per synchronous user.
 */
export class TupleWriter {
  readonly #out = new ByteSink();

  pack(values: readonly TupleValue[]): this {
    this.#out.len = 0;
    for (let i = 0; i < values.length; i++) pushElement(this.#out, values[i]!, false);
    return this;
  }

  base64(): string {
    return this.#out.toBase64();
  }

  /** A copy of the packed bytes (the buffer is reused by the next pack()). */
  bytes(): Buffer {
    return Buffer.from(this.#out.buf.subarray(0, this.#out.len));
  }

  /** The packed bytes themselves, valid until the next pack() (copy them to keep them). */
  view(): Uint8Array {
    return this.#out.buf.subarray(0, this.#out.len);
  }
}

/** packTuple, base64-encoded as in `keyPacked` / `valuesPacked`. */
export function packTupleBase64(values: readonly TupleValue[]): string {
  const out = new ByteSink();
  for (const value of values) pushElement(out, value, false);
  return out.toBase64();
}

function tupleError(message: string, offset: number): ProtocolError {
  return new ProtocolError(`invalid packed tuple: ${message} at byte ${offset}`);
}

type Utf8Slicer = Buffer & { utf8Slice?: (start: number, end: number) => string };

/** Reads bytes[0, end). The bytes may be a reused scratch buffer: nothing returned may be a view of it. */
class Reader {
  pos = 0;
  readonly bytes: Buffer;
  readonly end: number;
  constructor(bytes: Uint8Array, end = bytes.length) {
    this.bytes = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.end = end;
  }
  /** Checks that n more bytes exist and returns the offset of the first (advancing past them). */
  skip(n: number, what: string): number {
    if (this.pos + n > this.end) {
      throw tupleError(`truncated ${what} (needs ${n} bytes, ${this.end - this.pos} left)`, this.pos);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }
  /** The next byte (advancing past it). */
  byte(what: string): number {
    if (this.pos >= this.end) throw tupleError(`truncated ${what} (needs 1 bytes, 0 left)`, this.pos);
    return this.bytes[this.pos++]!;
  }
  /** The index of the next 0x00 at or after `from`, or -1. */
  nul(from: number): number {
    const i = this.bytes.indexOf(0x00, from);
    return i === -1 || i >= this.end ? -1 : i;
  }
  /** Unsigned big-endian integer of n (≤ 8) bytes, optionally one's-complemented. */
  unsigned(n: number, what: string, complement: boolean): number | bigint {
    const at = this.skip(n, what);
    const b = this.bytes;
    const flip = complement ? 0xff : 0;
    if (n <= 6) {
      let v = 0;
      for (let i = 0; i < n; i++) v = v * 256 + (b[at + i]! ^ flip);
      return v;
    }
    let hi = 0;
    for (let i = 0; i < n - 4; i++) hi = hi * 256 + (b[at + i]! ^ flip);
    let lo = 0;
    for (let i = n - 4; i < n; i++) lo = lo * 256 + (b[at + i]! ^ flip);
    const v = hi * 0x100000000 + lo;
    return v <= Number.MAX_SAFE_INTEGER ? v : (BigInt(hi) << 32n) + BigInt(lo);
  }
  /** A UTF-8 string up to its unescaped terminator, decoded without an intermediate copy. */
  text(at: number): string {
    const start = this.pos;
    const end = this.nul(start);
    if (end !== -1 && (end + 1 >= this.end || this.bytes[end + 1] !== 0xff)) {
      this.pos = end + 1;
      const b = this.bytes as Utf8Slicer;
      const text = b.utf8Slice ? b.utf8Slice(start, end) : b.toString('utf8', start, end);
      // (A one-byte string cannot contain U+FFFD: V8 answers this without scanning.)
      if (text.includes('\uFFFD')) strictUtf8(this.bytes.subarray(start, end), at);
      return text;
    }
    const raw = this.escaped('string');
    const text = raw.toString('utf8');
    if (text.includes('\uFFFD')) strictUtf8(raw, at);
    return text;
  }
  take(n: number, what: string): Uint8Array {
    const at = this.skip(n, what);
    return this.bytes.subarray(at, at + n);
  }
  /** Reads an escaped, 0x00-terminated byte string (a view of the input when nothing was escaped). */
  escaped(what: string): Buffer {
    const start = this.pos;
    const bytes = this.bytes;
    let end = this.nul(start);
    if (end === -1) throw tupleError(`unterminated ${what}`, start);
    if (end + 1 >= this.end || bytes[end + 1] !== 0xff) {
      this.pos = end + 1;
      return bytes.subarray(start, end);
    }
    // Escaped NULs (0x00 0xFF): copy the pieces between them.
    const parts: Uint8Array[] = [];
    let from = start;
    while (end + 1 < this.end && bytes[end + 1] === 0xff) {
      parts.push(bytes.subarray(from, end + 1));
      from = end + 2;
      end = this.nul(from);
      if (end === -1) throw tupleError(`unterminated ${what}`, start);
    }
    parts.push(bytes.subarray(from, end));
    this.pos = end + 1;
    return Buffer.concat(parts);
  }
}

/** Only text with a replacement character needs the strict check (it may be a literal U+FFFD). */
function strictUtf8(raw: Uint8Array, at: number): void {
  try {
    utf8Strict.decode(raw);
  } catch {
    throw tupleError('string is not valid UTF-8', at);
  }
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  return BigInt('0x' + Buffer.from(bytes).toString('hex'));
}

function negate(n: number | bigint): number | bigint {
  return typeof n === 'number' ? (n === 0 ? 0 : -n) : narrow(-n);
}

function narrow(n: bigint): number | bigint {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

function readElement(r: Reader, nested: boolean): TupleValue {
  const at = r.pos;
  const code = r.byte('type code');
  switch (code) {
    case NULL:
      if (nested) {
        // Inside a nested tuple, null is 0x00 0xFF (a bare 0x00 ends the nested tuple; handled by the caller).
        r.byte('nested null');
      }
      return null;
    case BYTES:
      return Uint8Array.from(r.escaped('byte string'));
    case STRING:
      return r.text(at);
    case NESTED: {
      const out: TupleValue[] = [];
      while (true) {
        if (r.pos >= r.end) throw tupleError('unterminated nested tuple', at);
        if (r.bytes[r.pos] === 0x00 && (r.pos + 1 >= r.end || r.bytes[r.pos + 1] !== 0xff)) {
          r.pos++;
          return out;
        }
        out.push(readElement(r, true));
      }
    }
    case FALSE:
      return false;
    case TRUE:
      return true;
    case FLOAT:
    case DOUBLE: {
      const size = code === FLOAT ? 4 : 8;
      const off = r.skip(size, code === FLOAT ? 'float' : 'double');
      const bytes = r.bytes;
      const flipAll = (bytes[off]! & 0x80) === 0;
      for (let i = 0; i < size; i++) SCRATCH[i] = flipAll ? bytes[off + i]! ^ 0xff : bytes[off + i]!;
      if (!flipAll) SCRATCH[0] = SCRATCH[0]! ^ 0x80;
      return size === 4 ? SCRATCH_VIEW.getFloat32(0, false) : SCRATCH_VIEW.getFloat64(0, false);
    }
    case UUID:
      return { uuid: Uint8Array.from(r.take(16, 'UUID')) };
    case POS_INT_ARBITRARY: {
      const len = r.byte('integer length');
      return narrow(bytesToBigInt(r.take(len, 'integer')));
    }
    case NEG_INT_ARBITRARY: {
      const len = r.byte('integer length') ^ 0xff;
      const bytes = r.take(len, 'integer').map((b) => b ^ 0xff);
      return narrow(-bytesToBigInt(bytes));
    }
    default:
      if (code >= 0x0c && code <= 0x1c) {
        if (code === INT_ZERO) return 0;
        if (code > INT_ZERO) return r.unsigned(code - INT_ZERO, 'integer', false);
        return negate(r.unsigned(INT_ZERO - code, 'integer', true));
      }
      throw tupleError(`unsupported type code 0x${code.toString(16).padStart(2, '0')}`, at);
  }
}

/** Unpacks a FoundationDB tuple. Throws ProtocolError on malformed input. */
export function unpackTuple(bytes: Uint8Array): TupleValue[] {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return unpackLatin1(buf, buf.length) ?? unpackFrom(new Reader(buf));
}

/** unpackTuple with the byte reader alone (no fast path): the reference the fast path is tested against. */
export function unpackTupleReference(bytes: Uint8Array): TupleValue[] {
  return unpackFrom(new Reader(bytes));
}

function unpackFrom(r: Reader): TupleValue[] {
  const out: TupleValue[] = [];
  while (r.pos < r.end) out.push(readElement(r, false));
  return out;
}

/** Base64 is decoded into this reused buffer (no allocation per tuple); it grows as needed. */
let base64Scratch = Buffer.allocUnsafe(4096);

/** Unpacks a base64 `keyPacked` / `valuesPacked` string. */
export function unpackTupleBase64(packed: string): TupleValue[] {
  // Node skips characters outside the alphabet, so a clean decode has exactly the expected length.
  const padding = packed.endsWith('==') ? 2 : packed.endsWith('=') ? 1 : 0;
  const expected = (packed.length / 4) * 3 - padding;
  if (packed.length % 4 !== 0) throw new ProtocolError(`invalid packed tuple: not valid base64 (${packed.length} characters)`);
  if (base64Scratch.length < expected + 3) base64Scratch = Buffer.allocUnsafe(Math.max(expected + 3, base64Scratch.length * 2));
  // base64Write: write()'s argument handling cost as much as the decode itself (issue 16's connector profile).
  const scratch = base64Scratch as Base64Writer;
  const written = scratch.base64Write ? scratch.base64Write(packed, 0, scratch.length) : scratch.write(packed, 0, 'base64');
  if (written !== expected) throw new ProtocolError(`invalid packed tuple: not valid base64 (${packed.length} characters)`);
  return unpackLatin1(base64Scratch, written) ?? unpackFrom(new Reader(base64Scratch, written));
}

type Latin1Slicer = Buffer & { latin1Slice?: (start: number, end: number) => string };
type Base64Writer = Buffer & { base64Write?: (text: string, offset: number, length: number) => number };

/**
 * The fast path of unpackTupleBase64 for the common elements (null, booleans, integers of ≤ 8 bytes, floats,
 * doubles, unescaped strings): the bytes are read as ONE latin1 string (one native call instead of one per
 * string element; charCodeAt is inlined), and an ASCII string element is a substring of it (others are decoded
 * as UTF-8, checked as the byte reader does). Anything else — bytes, nested tuples, UUIDs, big integers,
 * escaped strings, truncation — returns undefined and the byte reader decodes the whole tuple (with its exact
 * errors). Equivalence: tuple-fast.test.ts.
 */
function unpackLatin1(bytes: Buffer, end: number): TupleValue[] | undefined {
  const b = bytes as Latin1Slicer;
  const bin = b.latin1Slice ? b.latin1Slice(0, end) : bytes.toString('latin1', 0, end);
  // All bytes ASCII (one SIMD pass, typical of string keys and values): every string element is a substring
  // of `bin` as it is, and none can hold an escaped NUL (0x00 0xFF): no per-character check below.
  const allAscii = end === bytes.length ? isAscii(bytes) : isAscii(new Uint8Array(bytes.buffer, bytes.byteOffset, end));
  const out: TupleValue[] = [];
  let pos = 0;
  while (pos < end) {
    const code = bin.charCodeAt(pos++);
    if (code === STRING) {
      const nul = bin.indexOf('\u0000', pos);
      if (nul === -1) return undefined;
      if (allAscii) {
        out.push(bin.slice(pos, nul));
        pos = nul + 1;
        continue;
      }
      if (nul + 1 < end && bin.charCodeAt(nul + 1) === 0xff) return undefined;
      let ascii = true;
      for (let i = pos; i < nul; i++) {
        if (bin.charCodeAt(i) > 0x7f) {
          ascii = false;
          break;
        }
      }
      if (ascii) {
        out.push(bin.slice(pos, nul));
      } else {
        const u = bytes as Utf8Slicer;
        const text = u.utf8Slice ? u.utf8Slice(pos, nul) : bytes.toString('utf8', pos, nul);
        if (text.includes('\uFFFD')) strictUtf8(bytes.subarray(pos, nul), pos - 1);
        out.push(text);
      }
      pos = nul + 1;
    } else if (code >= 0x0c && code <= 0x1c) {
      if (code === INT_ZERO) {
        out.push(0);
        continue;
      }
      const n = code > INT_ZERO ? code - INT_ZERO : INT_ZERO - code;
      if (pos + n > end) return undefined;
      const flip = code > INT_ZERO ? 0 : 0xff;
      let v: number;
      if (n <= 6) {
        v = 0;
        for (let i = 0; i < n; i++) v = v * 256 + (bin.charCodeAt(pos + i) ^ flip);
      } else {
        let hi = 0;
        for (let i = 0; i < n - 4; i++) hi = hi * 256 + (bin.charCodeAt(pos + i) ^ flip);
        let lo = 0;
        for (let i = n - 4; i < n; i++) lo = lo * 256 + (bin.charCodeAt(pos + i) ^ flip);
        v = hi * 0x100000000 + lo;
        if (v > Number.MAX_SAFE_INTEGER) return undefined;
      }
      pos += n;
      out.push(code > INT_ZERO ? v : v === 0 ? 0 : -v);
    } else if (code === DOUBLE || code === FLOAT) {
      const size = code === FLOAT ? 4 : 8;
      if (pos + size > end) return undefined;
      const flipAll = (bin.charCodeAt(pos) & 0x80) === 0;
      for (let i = 0; i < size; i++) SCRATCH[i] = flipAll ? bin.charCodeAt(pos + i) ^ 0xff : bin.charCodeAt(pos + i);
      if (!flipAll) SCRATCH[0] = SCRATCH[0]! ^ 0x80;
      out.push(size === 4 ? SCRATCH_VIEW.getFloat32(0, false) : SCRATCH_VIEW.getFloat64(0, false));
      pos += size;
    } else if (code === NULL) {
      out.push(null);
    } else if (code === FALSE) {
      out.push(false);
    } else if (code === TRUE) {
      out.push(true);
    } else {
      return undefined;
    }
  }
  return out;
}

/** Formats a UUID element as the usual 8-4-4-4-12 hex string. */
export function uuidToString(value: TupleUuid): string {
  const hex = Buffer.from(value.uuid).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Parses an 8-4-4-4-12 UUID string into a tuple UUID element. */
export function uuidFromString(text: string): TupleUuid {
  const hex = text.replaceAll('-', '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new TypeError(`not a UUID: ${JSON.stringify(text)}`);
  return { uuid: Uint8Array.from(Buffer.from(hex, 'hex')) };
}
