// The checkpoint column in upstream's format: base64 protobuf consumer.Checkpoint. Bad input first; then a
// Sluice-written value read back by a plain protobuf wire decoder written here (no schema, no protobufjs), and
// upstream-written values (upstream's documented bytes) read by Sluice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
