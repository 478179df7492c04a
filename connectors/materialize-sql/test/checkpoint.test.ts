// The checkpoint column in upstream's format: base64 protobuf consumer.Checkpoint. Bad input first; then a
// Sluice-written value read back by a plain protobuf wire decoder written here (no schema), upstream-written
// values (upstream's documented bytes) read by Sluice, and random checkpoints against protobufjs as the oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { EXPLICIT_ZERO_CHECKPOINT, checkpointFromText, checkpointToText, decodeCheckpoint, encodeCheckpoint } from '../src/index.ts';

test('a checkpoint that is not a consumer.Checkpoint is refused, naming the field (nothing may be lost)', () => {
  const shape = '(a consumer.Checkpoint has sources{readThrough, producers[{id, state{lastAck, begin}}]} and ackIntents only)';
  assert.throws(() => encodeCheckpoint({ n: 1 }), { message: `the runtime checkpoint cannot be stored: the checkpoint has the unknown field 'n' ${shape}` });
  assert.throws(() => encodeCheckpoint({ sources: { j: { readThrough: '1', offset: 2 } } }), { message: `the runtime checkpoint cannot be stored: sources["j"] has the unknown field 'offset' ${shape}` });
  assert.throws(() => encodeCheckpoint({ sources: { j: { readThrough: '1.5' } } }), /sources\["j"\]\.readThrough must be a int64 \(a decimal string\), got "1\.5"/);
  assert.throws(() => encodeCheckpoint({ sources: { j: { readThrough: '9223372036854775808' } } }), /readThrough is out of the int64 range/);
  assert.throws(() => encodeCheckpoint({ sources: { j: { producers: [{ id: 'AQ', state: { lastAck: '-1' } }] } } }), /lastAck is out of the uint64 range/);
  assert.throws(() => encodeCheckpoint({ ackIntents: { j: 'not base64!' } }), /ackIntents\["j"\] is not base64/);
  assert.throws(() => encodeCheckpoint({ sources: [] }), /sources must be an object, got an array/);
});

test('a stored value that is neither base64 protobuf nor JSON fails at open with what it is', () => {
  assert.throws(() => checkpointFromText('not a checkpoint', 't'), /^SqlError: t holds a checkpoint that is neither base64 protobuf nor JSON \(16 characters\); was it written by another tool\?$/);
  assert.throws(() => checkpointFromText('{"sources":', 't'), /t holds a checkpoint that starts like JSON but does not parse/);
  assert.throws(() => checkpointFromText('CgcKAQ==', 't'), /t holds a checkpoint whose bytes are not a consumer\.Checkpoint/);
});

// --- A plain protobuf wire decoder: fields as (number, wire type, value), no schema. -----------------------------

type Field = { n: number; varint?: bigint; fixed64?: bigint; bytes?: Buffer };

function varint(buf: Buffer, at: { i: number }): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const b = buf[at.i++]!;
    v |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return v;
    shift += 7n;
  }
}

function wire(buf: Buffer): Field[] {
  const out: Field[] = [];
  const at = { i: 0 };
  while (at.i < buf.length) {
    const tag = varint(buf, at);
    const n = Number(tag >> 3n);
    const type = Number(tag & 7n);
    if (type === 0) out.push({ n, varint: varint(buf, at) });
    else if (type === 1) { out.push({ n, fixed64: buf.readBigUInt64LE(at.i) }); at.i += 8; }
    else if (type === 2) { const len = Number(varint(buf, at)); out.push({ n, bytes: buf.subarray(at.i, at.i + len) }); at.i += len; }
    else throw new Error(`wire type ${type}`);
  }
  return out;
}

test('a Sluice-written checkpoint decodes with a plain protobuf decoder: field numbers, wire types and values as gazette defines them', () => {
  const cp = {
    sources: { 'acmeCo/users/pivot=00;materialize/acmeCo/mat/users': { readThrough: '9223372036854775807', producers: [{ id: 'AwkIBQcG', state: { lastAck: '18446744073709551615', begin: '-1' } }] } },
    ackIntents: { 'acmeCo/users/pivot=00': 'AQID' },
  };
  const text = checkpointToText(cp);
  assert.match(text, /^[A-Za-z0-9+/]+={0,2}$/, 'standard base64, padded');
  const top = wire(Buffer.from(text, 'base64'));
  assert.deepEqual(top.map((f) => f.n), [1, 2], 'sources = 1 (map entry), ack_intents = 2 (map entry)');
  const [srcKey, srcVal] = wire(top[0]!.bytes!);
  assert.equal(srcKey!.bytes!.toString(), 'acmeCo/users/pivot=00;materialize/acmeCo/mat/users');
  const source = wire(srcVal!.bytes!);
  assert.equal(source[0]!.n, 1);
  assert.equal(source[0]!.varint, 2n ** 63n - 1n, 'read_through = 1, int64 varint');
  assert.equal(source[1]!.n, 2, 'producers = 2');
  const producer = wire(source[1]!.bytes!);
  assert.deepEqual(producer[0], { n: 1, bytes: Buffer.from([3, 9, 8, 5, 7, 6]) }, 'id = 1, bytes');
  const state = wire(producer[1]!.bytes!);
  assert.deepEqual(state[0], { n: 1, fixed64: 2n ** 64n - 1n }, 'last_ack = 1, fixed64');
  assert.equal(state[1]!.n, 2);
  assert.equal(BigInt.asIntN(64, state[1]!.varint!), -1n, 'begin = 2, int64 (two\'s complement varint)');
  const [ackKey, ackVal] = wire(top[1]!.bytes!);
  assert.equal(ackKey!.bytes!.toString(), 'acmeCo/users/pivot=00');
  assert.deepEqual(ackVal!.bytes, Buffer.from([1, 2, 3]));
  // And back: the runtime gets the same JSON it sent.
  assert.deepEqual(checkpointFromText(text, 't'), cp);
});

test('upstream-written rows: the explicit zero checkpoint reads as the empty checkpoint; a hand-encoded upstream checkpoint reads as its JSON', () => {
  assert.deepEqual([...Buffer.from(EXPLICIT_ZERO_CHECKPOINT, 'base64')], [0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01], 'field 536870911, varint 1');
  assert.deepEqual(checkpointFromText(EXPLICIT_ZERO_CHECKPOINT, 't'), {});
  // What upstream's Go marshaller writes for {sources: {j: {readThrough: 300, producers: [{id: 01 02, state: {lastAck: 5, begin: 0}}]}}},
  // byte by byte: the ProducerState is always written (non-nullable), even with begin = 0 omitted.
  const producerState = [0x09, 5, 0, 0, 0, 0, 0, 0, 0];
  const producer = [0x0a, 2, 1, 2, 0x12, producerState.length, ...producerState];
  const source = [0x08, 0xac, 0x02, 0x12, producer.length, ...producer];
  const entry = [0x0a, 1, 0x6a, 0x12, source.length, ...source];
  const upstream = Buffer.from([0x0a, entry.length, ...entry]).toString('base64');
  assert.deepEqual(checkpointFromText(upstream, 't'), { sources: { j: { readThrough: '300', producers: [{ id: 'AQI=', state: { lastAck: '5' } }] } } });
  // Sluice encodes that JSON to the same bytes.
  assert.equal(checkpointToText({ sources: { j: { readThrough: '300', producers: [{ id: 'AQI=', state: { lastAck: '5' } }] } } }), upstream);
  assert.deepEqual(decodeCheckpoint(new Uint8Array(0)), {});
});

test('rows of earlier Sluice versions: JSON text is returned as it is; an empty value means nothing was committed', () => {
  assert.deepEqual(checkpointFromText('{"sources":{"j":{"readThrough":"7"}},"ackIntents":{}}', 't'), { sources: { j: { readThrough: '7' } }, ackIntents: {} });
  assert.equal(checkpointFromText('', 't'), undefined);
  assert.equal(checkpointFromText(null, 't'), undefined);
});

test('numbers for 64-bit fields and URL-safe base64 bytes are accepted (proto3 JSON allows both); defaults are omitted on the way back', () => {
  const text = checkpointToText({ sources: { j: { readThrough: 42, producers: [{ id: '_-8', state: { begin: 0 } }] } }, ackIntents: {} });
  assert.deepEqual(checkpointFromText(text, 't'), { sources: { j: { readThrough: '42', producers: [{ id: '/+8=', state: {} }] } } });
  assert.equal(checkpointToText({}), '');
  assert.equal(checkpointToText({ sources: {}, ackIntents: {} }), '');
});

// --- protobufjs as the oracle: it wrote and read these bytes until session 8 (checkpoint.ts says why not now). ----

const protobuf = createRequire(import.meta.url)('protobufjs') as typeof Protobuf;
const ORACLE = protobuf.parse(`syntax = "proto3"; package consumer;
message Checkpoint {
  message Source { int64 read_through = 1; message ProducerEntry { bytes id = 1; ProducerState state = 2; } repeated ProducerEntry producers = 2; }
  message ProducerState { fixed64 last_ack = 1; int64 begin = 2; }
  map<string, Source> sources = 1;
  map<string, bytes> ack_intents = 2;
}`, { keepCase: false }).root.lookupType('consumer.Checkpoint');

/** What the old code handed protobufjs for a proto3 JSON checkpoint: 64-bit values as Longs (zero left out), bytes decoded. */
function oracleEncode(cp: JsonObject): Uint8Array {
  const long = (v: JsonValue | undefined, unsigned: boolean) => {
    if (v === undefined || BigInt(v as string) === 0n) return undefined;
    const bits = BigInt.asUintN(64, BigInt(v as string));
    return { low: Number(bits & 0xffffffffn) | 0, high: Number(bits >> 32n) | 0, unsigned };
  };
  const bytes = (v: JsonValue | undefined) => (v === undefined ? undefined : Buffer.from(v as string, /[-_]/.test(v as string) ? 'base64url' : 'base64'));
  const sources: Record<string, unknown> = {};
  for (const [journal, raw] of Object.entries((cp.sources ?? {}) as JsonObject)) {
    const s = raw as JsonObject;
    const src: Record<string, unknown> = {};
    const rt = long(s.readThrough, false);
    if (rt) src.readThrough = rt;
    if (s.producers) {
      src.producers = (s.producers as JsonObject[]).map((p) => {
        const st = (p.state ?? {}) as JsonObject;
        const state: Record<string, unknown> = {};
        const lastAck = long(st.lastAck, true);
        const begin = long(st.begin, false);
        if (lastAck) state.lastAck = lastAck;
        if (begin) state.begin = begin;
        const id = bytes(p.id);
        return { ...(id ? { id } : {}), state };
      });
    }
    Object.defineProperty(sources, journal, { value: src, enumerable: true });
  }
  const ackIntents: Record<string, Uint8Array> = {};
  for (const [journal, raw] of Object.entries((cp.ackIntents ?? {}) as JsonObject)) Object.defineProperty(ackIntents, journal, { value: bytes(raw) ?? new Uint8Array(0), enumerable: true });
  return ORACLE.encode(ORACLE.fromObject({ sources, ackIntents })).finish();
}

const oracleDecode = (data: Uint8Array) => ORACLE.toObject(ORACLE.decode(data), { longs: String, bytes: String });

/** A small deterministic random source (xorshift), so a failure reproduces. */
function randomSource(seed: number) {
  let x = seed;
  const next = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x / 2 ** 32; };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const big = (bits: number) => { let v = 0n; for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(int(65536)); return BigInt.asUintN(bits, v); };
  return { int, pick, big, next };
}

const JOURNAL_PARTS = ['acmeCo/users/pivot=00', ';materialize/acmeCo/mat', 'é', '日本', '😀', '123', '0', 'a b', '"', '\\', '__proto__', '', 'x'.repeat(130)];

function randomCheckpoint(r: ReturnType<typeof randomSource>): JsonObject {
  const int64 = (): JsonValue => {
    const v = r.pick([0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), BigInt.asIntN(64, r.big(64)), BigInt(r.int(300)), -BigInt(r.int(300))]);
    return r.int(4) === 0 && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  };
  const uint64 = (): JsonValue => r.pick([0n, 1n, 2n ** 64n - 1n, 2n ** 63n, r.big(64), BigInt(r.int(1000))]).toString();
  const b64 = (): string => {
    const b = Buffer.from(Array.from({ length: r.int(12) }, () => r.int(256)));
    // Standard padded and URL-safe unpadded (the two forms checkpoint.ts accepts).
    return r.pick([b.toString('base64'), b.toString('base64url')]);
  };
  const journal = () => Array.from({ length: 1 + r.int(3) }, () => r.pick(JOURNAL_PARTS)).join('/');
  const cp: JsonObject = {};
  if (r.int(5) > 0) {
    const sources: JsonObject = {};
    for (let i = r.int(4); i > 0; i--) {
      const s: JsonObject = {};
      if (r.int(3) > 0) s.readThrough = int64();
      if (r.int(3) > 0) {
        s.producers = Array.from({ length: r.int(4) }, () => {
          const p: JsonObject = {};
          if (r.int(4) > 0) p.id = b64();
          if (r.int(4) > 0) {
            const st: JsonObject = {};
            if (r.int(3) > 0) st.lastAck = uint64();
            if (r.int(3) > 0) st.begin = int64();
            p.state = st;
          }
          return p;
        });
      }
      Object.defineProperty(sources, journal(), { value: s, enumerable: true, writable: true, configurable: true });
    }
    cp.sources = sources;
  }
  if (r.int(3) > 0) {
    const intents: JsonObject = {};
    for (let i = r.int(4); i > 0; i--) Object.defineProperty(intents, journal(), { value: b64(), enumerable: true, writable: true, configurable: true });
    cp.ackIntents = intents;
  }
  return cp;
}

test('against protobufjs: 3,000 random checkpoints encode to the same bytes, and those bytes decode to the same JSON (member order too)', () => {
  const r = randomSource(0x5eed);
  for (let i = 0; i < 3000; i++) {
    const cp = randomCheckpoint(r);
    const ours = encodeCheckpoint(cp);
    const theirs = oracleEncode(cp);
    assert.equal(Buffer.from(ours).toString('hex'), Buffer.from(theirs).toString('hex'), `bytes of ${JSON.stringify(cp)}`);
    assert.equal(JSON.stringify(decodeCheckpoint(ours)), JSON.stringify(oracleDecode(ours)), `JSON of ${JSON.stringify(cp)}`);
  }
});

test('against protobufjs: bytes it did not write — explicit zeros, unknown fields of every wire type, repeated fields, zero-length ids — decode the same', () => {
  const tag = (field: number, wire: number) => varintOf((BigInt(field) << 3n) | BigInt(wire));
  const delim = (field: number, body: number[]) => [...tag(field, 2), ...varintOf(BigInt(body.length)), ...body];
  const state = [...tag(1, 1), 0, 0, 0, 0, 0, 0, 0, 0, ...tag(2, 0), 0, ...tag(9, 5), 1, 2, 3, 4];
  const producer = [...delim(1, []), ...delim(2, state), ...delim(2, [...tag(2, 0), 7]), ...tag(3, 3), ...tag(1, 0), 5, ...tag(3, 4)];
  const source = [...tag(1, 0), 0, ...tag(1, 0), ...varintOf(2n ** 64n - 1n), ...delim(2, producer), ...delim(2, []), ...tag(7, 1), 1, 1, 1, 1, 1, 1, 1, 1];
  const entry = [...delim(1, [0x6a]), ...delim(2, source), ...tag(15, 0), 1];
  const bytes = Uint8Array.from([...tag(536870911, 0), 1, ...delim(1, entry), ...delim(2, [...delim(1, [0x6b])]), ...delim(1, entry), ...delim(2, [...delim(1, [0x6b]), ...delim(2, [1])])]);
  assert.equal(JSON.stringify(decodeCheckpoint(bytes)), JSON.stringify(oracleDecode(bytes)));
  // A zero and an empty id are the field left out, the later value wins, the two states of one producer merge.
  assert.deepEqual(decodeCheckpoint(bytes), { sources: { j: { readThrough: '-1', producers: [{ state: { begin: '7' } }, {}] } }, ackIntents: { k: 'AQ==' } });
  // A known field with another wire type is skipped, as an unknown one.
  for (const odd of [[0x08, 0x01], [0x0a, 0x02, 0x08, 0x01], [0x0a, 0x04, 0x12, 0x02, 0x0a, 0x00]]) {
    assert.equal(JSON.stringify(decodeCheckpoint(Uint8Array.from(odd))), JSON.stringify(oracleDecode(Uint8Array.from(odd))), `bytes ${odd.join(' ')}`);
  }
});

test('bytes that are not a consumer.Checkpoint fail with where they go wrong; an entry without a value is the empty message (as Go reads it)', () => {
  const bad: [number[], RegExp][] = [
    [[0x0a, 0x07, 0x0a, 0x01], /^SqlError: bad protobuf: a field of 7 bytes runs past the end of its message \(byte 2\)$/],
    [[0x1f], /wire type 7 is not a protobuf wire type \(byte 1\)/],
    [[0x1c], /wire type 4 ends a group that was not started/],
    [[0x1b, 0x24], /group 3 ends with the end of group 4 \(byte 1\)/],
    [[0x18, 0xff], /a varint runs past the end of its message/],
    [[0x18, ...Array(10).fill(0xff), 0x01], /a varint is longer than 10 bytes/],
    [[0x00, 0x01], /a field is numbered 0 \(byte 0\)/],
    [[0x19, 1, 2, 3], /a fixed64 runs past the end/],
    [[0x1d, 1, 2, 3], /a fixed32 runs past the end/],
    [[0x0a, 0x03, 0x0a, 0x01, 0xff], /a map key is not valid UTF-8 \(byte 4\)/],
  ];
  for (const [bytes, message] of bad) {
    assert.throws(() => decodeCheckpoint(Uint8Array.from(bytes)), message);
    // protobufjs skips an unknown varint of any length; protobuf's encoding (and Go's decoder) stops at 10 bytes.
    if (bytes.length < 12) assert.throws(() => oracleDecode(Uint8Array.from(bytes)), `protobufjs refuses ${bytes.join(' ')} too`);
  }
  assert.deepEqual(decodeCheckpoint(Uint8Array.from([0x0a, 0x03, 0x0a, 0x01, 0x6a])), { sources: { j: {} } });
  assert.throws(() => encodeCheckpoint({ sources: { ['a\ud800']: {} } }), /sources\["a\\ud800"\]'s journal name is not a well-formed Unicode string/);
});

function varintOf(v: bigint): number[] {
  const out: number[] = [];
  while (v > 0x7fn) { out.push(Number(v & 0x7fn) | 0x80); v >>= 7n; }
  out.push(Number(v));
  return out;
}
