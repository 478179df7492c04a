import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AvroRecordParser } from '../src/avro.ts';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { DecodeError } from '../src/errors.ts';
import { CHUNK_SIZES, feed } from './helpers.ts';
import { avroFile, expectedAvroDoc } from './fixtures.ts';

const parse = (bytes: Uint8Array, size = 1 << 20): unknown[] => {
  const dt = new DatetimeNormalizer();
  return feed(new AvroRecordParser(), bytes, size).map((r) => dt.value(r));
};

describe('avro', () => {
  test('bad input: not an Avro file', () => {
    assert.throws(() => parse(Buffer.from('id,name\n1,x\n')), (e: unknown) => e instanceof DecodeError && e.message === 'Avro file is corrupt at byte offset 0: not an Avro object container file (bad magic bytes)');
  });

  test('bad input: a corrupted block (wrong sync marker) and a truncated file', () => {
    const bytes = Buffer.from(avroFile(7, 'null'));
    const lastSync = bytes.lastIndexOf(Buffer.from('0123456789abcdef'));
    bytes[lastSync + 3] = 0x21;
    assert.throws(() => parse(bytes), (e: unknown) => e instanceof DecodeError && /^Avro file is corrupt at byte offset \d+: block 3 does not end with the file's sync marker$/.test(e.message));
    const whole = avroFile(7, 'deflate');
    for (const size of [1, 1 << 20]) {
      assert.throws(() => parse(whole.subarray(0, whole.length - 5), size), (e: unknown) => e instanceof DecodeError && /the file ends inside block 3/.test(e.message));
    }
  });

  test('bad input: a block that does not decompress', () => {
    const bytes = Buffer.from(avroFile(3, 'deflate', 3));
    const lastSync = bytes.lastIndexOf(Buffer.from('0123456789abcdef'));
    bytes.fill(0xff, lastSync - 12, lastSync - 1);
    assert.throws(() => parse(bytes), /cannot be decompressed with codec 'deflate'/);
  });

  test('empty input yields nothing', () => {
    assert.deepEqual(parse(new Uint8Array(0)), []);
  });

  for (const codec of ['null', 'deflate', 'zstandard', 'snappy']) {
    test(`codec ${codec}: every value converted as upstream, at every chunk size`, () => {
      const bytes = avroFile(7, codec);
      const expected = Array.from({ length: 7 }, (_, i) => expectedAvroDoc(i));
      for (const size of CHUNK_SIZES) assert.deepEqual(parse(bytes, size), expected, `chunk size ${size}`);
    });
  }
});
