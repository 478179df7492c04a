// The runtime checkpoint as upstream's SQL materializations store it: `flow_checkpoints_v1.checkpoint` holds
// the base64 (standard alphabet, padded) of the protobuf `consumer.Checkpoint` (gazette
// consumer/protocol/protocol.proto). The JSON codec hands us that message as proto3 JSON; this module writes
// and reads its protobuf wire form itself, for the one message and the three it nests (restated below), and
// decodes stored rows back to the same JSON. A fresh row holds the "explicit zero" checkpoint (a lone varint
// field 536870911 = 1), which decodes to an empty message: the runtime then starts from the beginning instead of
// its recovery log, exactly as with upstream's rows. Rows written by earlier Sluice versions hold the checkpoint
// as JSON text (they start with `{`) and are read as they are; an empty text (Sluice's earlier fresh row) means
// "nothing committed yet", as it always did.
// Why not protobufjs (which wrote and read these bytes until session 8, and stays the tests' oracle:
// test/checkpoint.test.ts): loading it (45 CommonJS modules) and parsing the schema cost every materialization
// session ~45 ms of CPU on its first checkpoint, on the path from the plane's ready line to the first row (issue
// 16); the four messages are a page of code.
//
// message Checkpoint {
//   message Source {
//     int64 read_through = 1;
//     message ProducerEntry { bytes id = 1; ProducerState state = 2; }
//     repeated ProducerEntry producers = 2;
//   }
//   message ProducerState { fixed64 last_ack = 1; int64 begin = 2; }
//   map<string, Source> sources = 1;
//   map<string, bytes> ack_intents = 2;
// }
// Field numbers and wire types are the contract (gogoproto options only change the Go types). What is written is
// what protobufjs wrote, byte for byte: fields in number order, a map entry's key and value always present, a
// 64-bit zero and an empty id left out (proto3 defaults), a producer's state always written (as Go's
// non-nullable field is).
import type { JsonObject, JsonValue, RuntimeCheckpoint } from '@sluice/runtime';
import { SqlError } from './errors.ts';

/** The explicit zero checkpoint upstream writes into a fresh row, as stored (base64). */
export const EXPLICIT_ZERO_CHECKPOINT = '+P///w8B';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

class CheckpointShapeError extends SqlError {
  constructor(where: string, what: string) {
    super(`the runtime checkpoint cannot be stored: ${where} ${what} (a consumer.Checkpoint has sources{readThrough, producers[{id, state{lastAck, begin}}]} and ackIntents only)`, { code: 'CHECKPOINT' });
  }
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function object(v: JsonValue | undefined, where: string): JsonObject {
  if (!isObject(v)) throw new CheckpointShapeError(where, `must be an object, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  return v;
}

function fields(v: JsonValue | undefined, where: string, allowed: readonly string[]): JsonObject {
  const o = object(v, where);
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new CheckpointShapeError(where, `has the unknown field '${k}'`);
  return o;
}

/** A 64-bit integer as proto3 JSON gives it (decimal string, or a number that is an exact integer) → its 64 bits. */
function int64(v: JsonValue | undefined, where: string, unsigned: boolean): bigint | undefined {
  if (v === undefined || v === null) return undefined;
  let n: bigint;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) n = BigInt(v);
  else if (typeof v === 'number' && Number.isSafeInteger(v)) n = BigInt(v);
  else throw new CheckpointShapeError(where, `must be a ${unsigned ? 'u' : ''}int64 (a decimal string), got ${JSON.stringify(v)}`);
  if (unsigned ? n < 0n || n > UINT64_MAX : n < INT64_MIN || n > INT64_MAX) throw new CheckpointShapeError(where, `is out of the ${unsigned ? 'u' : ''}int64 range: ${v}`);
  if (n === 0n) return undefined; // proto3 writes no default values (as Go's marshaller does)
  return BigInt.asUintN(64, n);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** proto3 JSON bytes: standard or URL-safe base64, padded or not. */
function bytes(v: JsonValue | undefined, where: string): Buffer | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new CheckpointShapeError(where, `must be base64 bytes, got ${JSON.stringify(v)}`);
  if (BASE64.test(v)) return Buffer.from(v, 'base64');
  if (BASE64URL.test(v)) return Buffer.from(v, 'base64url');
  throw new CheckpointShapeError(where, `is not base64: ${JSON.stringify(v)}`);
}

/** A map key (a journal name) as UTF-8; a string UTF-8 cannot hold (a lone surrogate) is refused, not replaced. */
function utf8(key: string, where: string): Buffer {
  if (!key.isWellFormed()) throw new CheckpointShapeError(where, 'is not a well-formed Unicode string (it holds a lone surrogate)');
  return Buffer.from(key, 'utf8');
}

// --- The wire form: varints, and length-delimited fields built inside out (a field's length precedes it). -------

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;

function varintBytes(n: bigint | number): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

/** A message's fields, appended in order; `bytes()` concatenates them. */
class Fields {
  readonly #parts: Uint8Array[] = [];
  varint(field: number, value: bigint): this {
    this.#parts.push(Uint8Array.from([...varintBytes((field << 3) | WIRE_VARINT), ...varintBytes(value)]));
    return this;
  }
  fixed64(field: number, value: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(value);
    this.#parts.push(Uint8Array.from(varintBytes((field << 3) | WIRE_FIXED64)), b);
    return this;
  }
  delimited(field: number, value: Uint8Array): this {
    this.#parts.push(Uint8Array.from([...varintBytes((field << 3) | WIRE_BYTES), ...varintBytes(value.length)]), value);
    return this;
  }
  bytes(): Buffer {
    return Buffer.concat(this.#parts);
  }
}

/** The runtime checkpoint (proto3 JSON of consumer.Checkpoint) → protobuf bytes. Unknown fields are refused: nothing may be lost. */
export function encodeCheckpoint(checkpoint: RuntimeCheckpoint): Uint8Array {
  const cp = fields(checkpoint, 'the checkpoint', ['sources', 'ackIntents']);
  const out = new Fields();
  if (cp.sources !== undefined && cp.sources !== null) {
    for (const [journal, raw] of Object.entries(object(cp.sources, 'sources'))) {
      const at = `sources[${JSON.stringify(journal)}]`;
      const s = fields(raw, at, ['readThrough', 'producers']);
      const source = new Fields();
      const readThrough = int64(s.readThrough, `${at}.readThrough`, false);
      if (readThrough !== undefined) source.varint(1, readThrough);
      if (s.producers !== undefined && s.producers !== null) {
        if (!Array.isArray(s.producers)) throw new CheckpointShapeError(`${at}.producers`, 'must be an array');
        for (const [i, p] of s.producers.entries()) {
          const pat = `${at}.producers[${i}]`;
          const entry = fields(p, pat, ['id', 'state']);
          const producer = new Fields();
          const id = bytes(entry.id, `${pat}.id`);
          if (id !== undefined && id.length > 0) producer.delimited(1, id); // empty: proto3's default, not written
          // The Go side always writes the state (non-nullable), zero or not.
          const st = entry.state === undefined || entry.state === null ? {} : fields(entry.state, `${pat}.state`, ['lastAck', 'begin']);
          const state = new Fields();
          const lastAck = int64(st.lastAck, `${pat}.state.lastAck`, true);
          const begin = int64(st.begin, `${pat}.state.begin`, false);
          if (lastAck !== undefined) state.fixed64(1, lastAck);
          if (begin !== undefined) state.varint(2, begin);
          producer.delimited(2, state.bytes());
          source.delimited(2, producer.bytes());
        }
      }
      out.delimited(1, new Fields().delimited(1, utf8(journal, `${at}'s journal name`)).delimited(2, source.bytes()).bytes());
    }
  }
  if (cp.ackIntents !== undefined && cp.ackIntents !== null) {
    for (const [journal, raw] of Object.entries(object(cp.ackIntents, 'ackIntents'))) {
      const at = `ackIntents[${JSON.stringify(journal)}]`;
      const intent = bytes(raw, at) ?? Buffer.alloc(0);
      out.delimited(2, new Fields().delimited(1, utf8(journal, `${at}'s journal name`)).delimited(2, intent).bytes());
    }
  }
  return out.bytes();
}

/** Why bytes are not a consumer.Checkpoint: where in them, and what was found. */
class WireError extends Error {}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads one message's fields from `buf[start, end)`. It reads them as protobufjs 8 (which read these rows before
 * this module) does, so that no stored checkpoint reads differently now: a 64-bit zero or an empty `id` on the
 * wire is the field left out, the later of two values wins, a message field met twice is merged, a known field
 * with another wire type and unknown fields (groups included) are skipped, a map key must be valid UTF-8.
 */
class Reader {
  pos: number;
  readonly #buf: Uint8Array;
  readonly end: number;
  constructor(buf: Uint8Array, start = 0, end = buf.length) {
    this.#buf = buf;
    this.pos = start;
    this.end = end;
  }
  varint(): bigint {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (this.pos >= this.end) throw new WireError(`a varint runs past the end of its message (byte ${this.pos})`);
      if (shift >= 70n) throw new WireError(`a varint is longer than 10 bytes (byte ${this.pos})`);
      const b = this.#buf[this.pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, v);
    }
  }
  fixed64(): bigint {
    if (this.pos + 8 > this.end) throw new WireError(`a fixed64 runs past the end of its message (byte ${this.pos})`);
    const v = Buffer.from(this.#buf.buffer, this.#buf.byteOffset + this.pos, 8).readBigUInt64LE();
    this.pos += 8;
    return v;
  }
  /** A length-delimited field's bounds, skipped over here. */
  delimited(): { start: number; end: number } {
    const len = this.varint();
    const start = this.pos;
    if (len > BigInt(this.end - start)) throw new WireError(`a field of ${len} bytes runs past the end of its message (byte ${start})`);
    this.pos = start + Number(len);
    return { start, end: this.pos };
  }
  bytesOf(at: { start: number; end: number }): Buffer {
    return Buffer.from(this.#buf.buffer, this.#buf.byteOffset + at.start, at.end - at.start);
  }
  text(at: { start: number; end: number }): string {
    try {
      return STRICT_UTF8.decode(this.bytesOf(at));
    } catch {
      throw new WireError(`a map key is not valid UTF-8 (byte ${at.start})`);
    }
  }
  sub(at: { start: number; end: number }): Reader {
    return new Reader(this.#buf, at.start, at.end);
  }
  /** Skips a field of an unknown number (e.g. the explicit zero checkpoint's 536870911), groups included. */
  skip(wire: number, field: number, depth = 0): void {
    if (depth > 100) throw new WireError(`groups nest deeper than 100 (byte ${this.pos})`);
    if (wire === 0) this.varint();
    else if (wire === 1) this.fixed64();
    else if (wire === 2) this.delimited();
    else if (wire === 5) {
      if (this.pos + 4 > this.end) throw new WireError(`a fixed32 runs past the end of its message (byte ${this.pos})`);
      this.pos += 4;
    } else if (wire === 3) {
      for (;;) {
        const at = this.pos;
        const tag = this.tag();
        if (tag.wire === 4) {
          if (tag.field !== field) throw new WireError(`group ${field} ends with the end of group ${tag.field} (byte ${at})`);
          return;
        }
        this.skip(tag.wire, tag.field, depth + 1);
      }
    } else {
      throw new WireError(`wire type ${wire} ${wire === 4 ? 'ends a group that was not started' : 'is not a protobuf wire type'} (byte ${this.pos})`);
    }
  }
  tag(): { field: number; wire: number } {
    const at = this.pos;
    const tag = this.varint();
    if (tag >> 3n === 0n) throw new WireError(`a field is numbered 0 (byte ${at})`);
    if (tag >> 3n > 0x1fffffffn) throw new WireError(`a field number is beyond 2^29 - 1 (byte ${at})`);
    return { field: Number(tag >> 3n), wire: Number(tag & 7n) };
  }
  /** Each field of a known number and wire type, in order; the rest are skipped. */
  each(known: Record<number, number>, field: (n: number) => void): void {
    while (this.pos < this.end) {
      const tag = this.tag();
      if (known[tag.field] === tag.wire) field(tag.field);
      else this.skip(tag.wire, tag.field);
    }
  }
}

const base64 = (b: Buffer) => b.toString('base64');
const int64Text = (bits: bigint) => BigInt.asIntN(64, bits).toString();
/** `o[key] = value` as an own member even for a key like "__proto__" (a journal name is any string). */
const put = (o: JsonObject, key: string, value: JsonValue) => Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });

/** Fields read so far; a zero read later removes an earlier value (see Reader). */
type Read = Map<string, JsonValue>;
const setOrDrop = (m: Read, name: string, value: string | undefined) => (value === undefined ? m.delete(name) : m.set(name, value));
/** The fields in their numbers' order, as proto3 JSON lists them. */
const ordered = (m: Read, names: readonly string[]): JsonObject => {
  const out: JsonObject = {};
  for (const n of names) if (m.has(n)) out[n] = m.get(n)!;
  return out;
};

function readProducerState(r: Reader, into: Read = new Map()): Read {
  r.each({ 1: WIRE_FIXED64, 2: WIRE_VARINT }, (n) => {
    if (n === 1) { const v = r.fixed64(); setOrDrop(into, 'lastAck', v === 0n ? undefined : v.toString()); }
    else { const v = r.varint(); setOrDrop(into, 'begin', v === 0n ? undefined : int64Text(v)); }
  });
  return into;
}

function decodeProducer(r: Reader): JsonObject {
  const m: Read = new Map();
  let state: Read | undefined;
  r.each({ 1: WIRE_BYTES, 2: WIRE_BYTES }, (n) => {
    const at = r.delimited();
    if (n === 1) setOrDrop(m, 'id', at.end === at.start ? undefined : base64(r.bytesOf(at)));
    else state = readProducerState(r.sub(at), state);
  });
  if (state !== undefined) m.set('state', ordered(state, ['lastAck', 'begin']));
  return ordered(m, ['id', 'state']);
}

function readSource(r: Reader, into: { m: Read; producers: JsonObject[] } = { m: new Map(), producers: [] }): { m: Read; producers: JsonObject[] } {
  r.each({ 1: WIRE_VARINT, 2: WIRE_BYTES }, (n) => {
    if (n === 1) { const v = r.varint(); setOrDrop(into.m, 'readThrough', v === 0n ? undefined : int64Text(v)); }
    else into.producers.push(decodeProducer(r.sub(r.delimited())));
  });
  return into;
}

/** Protobuf bytes → the proto3 JSON the runtime expects (64-bit as strings, bytes as base64, defaults omitted). */
export function decodeCheckpoint(data: Uint8Array): RuntimeCheckpoint {
  const r = new Reader(data);
  const sources: JsonObject = {};
  const ackIntents: JsonObject = {};
  let anySource = false;
  let anyIntent = false;
  try {
    r.each({ 1: WIRE_BYTES, 2: WIRE_BYTES }, (n) => {
      // A map entry: its key (absent: ""), its value (absent: the empty message or bytes; met twice: merged).
      const entry = r.sub(r.delimited());
      let key = '';
      if (n === 1) {
        let source: ReturnType<typeof readSource> | undefined;
        entry.each({ 1: WIRE_BYTES, 2: WIRE_BYTES }, (f) => {
          const at = entry.delimited();
          if (f === 1) key = entry.text(at);
          else source = readSource(entry.sub(at), source);
        });
        const out = source === undefined ? {} : ordered(source.m, ['readThrough']);
        if (source !== undefined && source.producers.length > 0) out.producers = source.producers;
        put(sources, key, out);
        anySource = true;
      } else {
        let intent = '';
        entry.each({ 1: WIRE_BYTES, 2: WIRE_BYTES }, (f) => {
          const at = entry.delimited();
          if (f === 1) key = entry.text(at);
          else intent = base64(entry.bytesOf(at));
        });
        put(ackIntents, key, intent);
        anyIntent = true;
      }
    });
  } catch (err) {
    if (err instanceof WireError) throw new SqlError(`bad protobuf: ${err.message}`, { cause: err });
    throw err;
  }
  // proto3 JSON lists only what the bytes carry: an empty map is left out.
  const out: JsonObject = {};
  if (anySource) out.sources = sources;
  if (anyIntent) out.ackIntents = ackIntents;
  return out;
}

/** The text stored in the checkpoints table for a runtime checkpoint. */
export function checkpointToText(checkpoint: RuntimeCheckpoint): string {
  return Buffer.from(encodeCheckpoint(checkpoint)).toString('base64');
}

/**
 * Read a stored checkpoint: base64 protobuf (upstream's format and ours), JSON text (Sluice's earlier rows), or
 * empty/NULL (Sluice's earlier fresh row: nothing committed). Returns undefined for "nothing committed".
 */
export function checkpointFromText(text: string | null | undefined, table: string): RuntimeCheckpoint | undefined {
  if (text === null || text === undefined) return undefined;
  const s = text.trim();
  if (s === '') return undefined;
  if (s.startsWith('{')) {
    let v: unknown;
    try {
      v = JSON.parse(s);
    } catch (cause) {
      throw new SqlError(`${table} holds a checkpoint that starts like JSON but does not parse; was it edited by hand?`, { cause });
    }
    if (!isObject(v as JsonValue)) throw new SqlError(`${table} holds a JSON checkpoint that is not an object`);
    return v as RuntimeCheckpoint;
  }
  if (!BASE64.test(s)) throw new SqlError(`${table} holds a checkpoint that is neither base64 protobuf nor JSON (${s.length} characters); was it written by another tool?`);
  try {
    return decodeCheckpoint(Buffer.from(s, 'base64'));
  } catch (cause) {
    throw new SqlError(`${table} holds a checkpoint whose bytes are not a consumer.Checkpoint: ${(cause as Error).message}`, { cause });
  }
}
