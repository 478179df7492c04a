import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type TupleValue, packTuple, packTupleBase64, unpackTuple, unpackTupleBase64, uuidFromString, uuidToString,
} from '../src/protocol/tuple.ts';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const fromHex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.replaceAll(' ', ''), 'hex'));

describe('tuple codec: bad input', () => {
  it('rejects invalid base64', () => {
    assert.throws(() => unpackTupleBase64('!!!!'), { name: 'ProtocolError', message: 'invalid packed tuple: not valid base64 (4 characters)' });
    assert.throws(() => unpackTupleBase64('FQE'), { message: 'invalid packed tuple: not valid base64 (3 characters)' });
  });
  it('rejects a truncated integer', () => {
    assert.throws(() => unpackTuple(fromHex('16 01')), { message: 'invalid packed tuple: truncated integer (needs 2 bytes, 1 left) at byte 1' });
  });
  it('rejects an unterminated string', () => {
    assert.throws(() => unpackTuple(fromHex('02 61')), { message: 'invalid packed tuple: unterminated string at byte 1' });
  });
  it('rejects an unknown type code', () => {
    assert.throws(() => unpackTuple(fromHex('15 01 40')), { message: 'invalid packed tuple: unsupported type code 0x40 at byte 2' });
  });
  it('rejects invalid UTF-8 in a string', () => {
    assert.throws(() => unpackTuple(fromHex('02 ff 00')), { message: 'invalid packed tuple: string is not valid UTF-8 at byte 0' });
  });
  it('rejects an unterminated nested tuple', () => {
    assert.throws(() => unpackTuple(fromHex('05 15 01')), { message: 'invalid packed tuple: unterminated nested tuple at byte 0' });
  });
  it('refuses to pack unsupported values', () => {
    assert.throws(() => packTuple([{} as unknown as TupleValue]), { message: 'cannot pack a value of type object into a tuple' });
    assert.throws(() => packTuple([{ uuid: new Uint8Array(3) }]), { message: 'tuple UUID must be 16 bytes, got 3' });
  });
});

describe('tuple codec: the reference examples', () => {
  it('key [1] is 15 01 = "FQE="', () => {
    assert.equal(hex(packTuple([1])), '1501');
    assert.equal(packTupleBase64([1]), 'FQE=');
    assert.deepEqual(unpackTupleBase64('FQE='), [1]);
  });
  it('key ["a"] is 02 61 00 = "AmEA"', () => {
    assert.equal(hex(packTuple(['a'])), '026100');
    assert.equal(packTupleBase64(['a']), 'AmEA');
    assert.deepEqual(unpackTupleBase64('AmEA'), ['a']);
  });
  it('value ["new"] is "Am5ldwA="', () => {
    assert.equal(packTupleBase64(['new']), 'Am5ldwA=');
  });
});

// [value, exact encoding] — both directions.
const cases: [string, TupleValue, string][] = [
  ['null', null, '00'],
  ['false', false, '26'],
  ['true', true, '27'],
  ['empty string', '', '02 00'],
  ['string with NUL', 'a\u0000b', '02 61 00 ff 62 00'],
  ['unicode string', 'é', '02 c3 a9 00'],
  ['bytes with NUL', fromHex('00 01'), '01 00 ff 01 00'],
  ['zero', 0, '14'],
  ['1', 1, '15 01'],
  ['255', 255, '15 ff'],
  ['256', 256, '16 01 00'],
  ['65535', 65535, '16 ff ff'],
  ['-1', -1, '13 fe'],
  ['-255', -255, '13 00'],
  ['-256', -256, '12 fe ff'],
  ['2^53-1 (max safe)', Number.MAX_SAFE_INTEGER, '1b 1f ff ff ff ff ff ff'],
  ['2^53 as BigInt', 2n ** 53n, '1b 20 00 00 00 00 00 00'],
  ['-(2^53) as BigInt', -(2n ** 53n), '0d df ff ff ff ff ff ff'],
  ['2^63', 2n ** 63n, '1c 80 00 00 00 00 00 00 00'],
  ['2^64-1', 2n ** 64n - 1n, '1c ff ff ff ff ff ff ff ff'],
  ['-(2^64-1)', -(2n ** 64n - 1n), '0c 00 00 00 00 00 00 00 00'],
  ['2^64 (arbitrary length)', 2n ** 64n, '1d 09 01 00 00 00 00 00 00 00 00'],
  ['-(2^64) (arbitrary length)', -(2n ** 64n), '0b f6 fe ff ff ff ff ff ff ff ff'],
  ['1.5 (double, positive: flip sign bit)', 1.5, '21 bf f8 00 00 00 00 00 00'],
  ['-1.5 (double, negative: flip all bits)', -1.5, '21 40 07 ff ff ff ff ff ff'],
  ['nested tuple with null', [1, null, 'x'], '05 15 01 00 ff 02 78 00 00'],
  ['empty nested tuple', [], '05 00'],
  ['uuid', uuidFromString('00112233-4455-6677-8899-aabbccddeeff'), '30 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff'],
];

describe('tuple codec: every type code', () => {
  for (const [name, value, encoded] of cases) {
    it(name, () => {
      assert.equal(hex(packTuple([value])), encoded.replaceAll(' ', ''));
      assert.deepEqual(unpackTuple(fromHex(encoded)), [value]);
    });
  }
  it('decodes float32 (0x20) with the sign-flip rule', () => {
    // 1.5f = 3f c0 00 00 → stored bf c0 00 00; -2f = c0 00 00 00 → stored 3f ff ff ff.
    assert.deepEqual(unpackTuple(fromHex('20 bf c0 00 00 20 3f ff ff ff')), [1.5, -2]);
  });
  it('decodes small arbitrary-length integers to numbers', () => {
    assert.deepEqual(unpackTuple(fromHex('1d 01 05 0b fe fa')), [5, -5]);
  });
  it('decodes a multi-element key', () => {
    const packed = packTupleBase64(['acme', 42, true, null, 2n ** 70n]);
    assert.deepEqual(unpackTupleBase64(packed), ['acme', 42, true, null, 2n ** 70n]);
  });
  it('formats UUIDs', () => {
    assert.equal(uuidToString(uuidFromString('00112233-4455-6677-8899-AABBCCDDEEFF')), '00112233-4455-6677-8899-aabbccddeeff');
    assert.throws(() => uuidFromString('nope'), { message: 'not a UUID: "nope"' });
  });
  it('preserves order: packed bytes sort like the numbers', () => {
    const numbers: (number | bigint)[] = [-(2n ** 70n), -(2n ** 64n), -70000, -256, -255, -1, 0, 1, 255, 256, 2n ** 53n, 2n ** 64n, 2n ** 70n];
    const packed = numbers.map((n) => Buffer.from(packTuple([n])));
    const sorted = [...packed].sort(Buffer.compare);
    assert.deepEqual(sorted, packed);
    const doubles = [-Infinity, -12345.5, -1.5, -0.5, 0.5, 1.5, 12345.5, Infinity].map((d) => Buffer.from(packTuple([d])));
    assert.deepEqual([...doubles].sort(Buffer.compare), doubles);
  });
});

describe('tuple codec: base64 decoding reuses one buffer', () => {
  it('values decoded earlier are copies, never views of it', () => {
    const uuid = { uuid: Uint8Array.from({ length: 16 }, (_, i) => i) };
    const first = unpackTupleBase64(packTupleBase64([Uint8Array.of(1, 0, 2), 'é', uuid, [Uint8Array.of(7)], -(2n ** 70n), 2 ** 40]));
    unpackTupleBase64(packTupleBase64([Uint8Array.of(9, 9, 9), 'zz', { uuid: new Uint8Array(16).fill(0xee) }, [Uint8Array.of(8)], 2n ** 70n, 5]));
    unpackTupleBase64(packTupleBase64(['x'.repeat(10_000)])); // grows the buffer
    assert.deepEqual(first, [Uint8Array.of(1, 0, 2), 'é', uuid, [Uint8Array.of(7)], -(2n ** 70n), 2 ** 40]);
  });
  it('a tuple ending right after a terminator is read from the decoded bytes only, not stale ones', () => {
    unpackTupleBase64(packTupleBase64(['abc', 'def', 'ghi']));
    assert.deepEqual(unpackTupleBase64(packTupleBase64(['ab'])), ['ab']);
    assert.throws(() => unpackTupleBase64(Buffer.from([0x02, 0x61]).toString('base64')), { message: 'invalid packed tuple: unterminated string at byte 1' });
  });
});
