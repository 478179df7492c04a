// The CSV fast path: rows written as JSON straight from their bytes (csv-bytes.ts, into a LineSink) must be
// exactly what JSON.stringify gives for the object the object sink builds (plus `_meta`), for every header
// and value; headers the fast path cannot take fall back to objects.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { CsvRecordParser } from '../src/csv.ts';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { LineSink } from '../src/lines.ts';
import { columnPrefixes, jsonString } from '../src/record.ts';
import type { CsvConfig } from '../src/schema.ts';
import { CHUNK_SIZES } from './helpers.ts';

const FILE = 'http://h/x.csv';
const FIRST_OFFSET = 7;

/** The text as UTF-8 bytes in chunks of `size` bytes (as the charset stage gives them; chunks may split characters). */
function feedBytes(parser: CsvRecordParser, text: string, size: number, take: (records: JsonObject[]) => void): void {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) take(parser.push(bytes.subarray(i, i + size)));
  for (let n = 0; n < 3; n++) take(parser.end());
}

function objects(text: string, config: CsvConfig = {}, size = 1 << 20): JsonObject[] {
  const out: JsonObject[] = [];
  feedBytes(new CsvRecordParser({ config, datetimes: new DatetimeNormalizer('+02:00') }), text, size, (records) => out.push(...records));
  return out;
}

/** The documents the capture writes (fast path into the sink, else objects appended), and whether the fast path was taken. */
function documents(text: string, config: CsvConfig = {}, size = 1 << 20): { docs: string[]; fast: boolean } {
  const sink = new LineSink(0, FILE, FIRST_OFFSET, 0);
  const parser = new CsvRecordParser({ config, datetimes: new DatetimeNormalizer('+02:00'), lines: sink });
  feedBytes(parser, text, size, (records) => { for (const r of records) sink.appendRecord(r); });
  const taken = sink.take();
  const lines = taken === null ? [] : Buffer.from(taken.lines).toString('utf8').split('\n').slice(0, -1);
  const open = '{"captured":{"doc":';
  return { docs: lines.map((l) => { assert.ok(l.startsWith(open) && l.endsWith('}}'), l); return l.slice(open.length, -2); }), fast: parser.writesLines };
}

/** Asserts both paths give the same bytes at every chunk size; returns whether the fast path was taken. */
function same(text: string, config: CsvConfig = {}): boolean {
  const expected = objects(text, config).map((r, i) => { r['_meta'] = { file: FILE, offset: FIRST_OFFSET + i }; return JSON.stringify(r); });
  let fast = false;
  for (const size of CHUNK_SIZES) {
    const got = documents(text, config, size);
    fast = got.fast;
    assert.deepEqual(got.docs, expected, `chunk size ${size}`);
  }
  return fast;
}

describe('CSV records as JSON text', () => {
  test('values: quotes, backslashes, control characters, non-BMP, lone surrogates (U+FFFD once encoded), U+2028, nulls, timestamps', () => {
    const values = [
      '"say ""hi"""', 'C:\\dir\\file', '"a\tb"', '"line\nbreak"', '"cr\rlf"', '\u0001\u001f\u007f', '\u2028\u2029',
      '😀𝄞', '\ud800', 'x\udfffy', '\udc00\ud800', '', 'NULL', 'null', 'nil', 'Null', 'true', '12', '-0', '1e21',
      '2024-01-02 03:04:05', '2024-01-02T03:04:05.120Z', '2024-02-30 01:02:03', '"2024-01-02 03:04:05+05:30"', ' spaced ',
    ];
    const rows = values.map((v, i) => `${i},${v},end`).join('\n');
    assert.equal(same(`id,value,tail\n${rows}\n`), true);
  });

  test('headers: escaped names, non-ASCII, empty name; short rows omit keys', () => {
    assert.equal(same('"a ""q""",b\\c,"d\ne",ключ,🔑,\n1,2,3,4,5,6\n7,8\n9\n'), true);
    assert.equal(same('x\n\n1\n\n2\n'), true);
  });

  test('configured headers, delimiter and quote options', () => {
    assert.equal(same("1;'a;b';\"c\"\n2;'x''y';z\n", { headers: ['n', 'q', 'r'], delimiter: ';', quote: "'" }), true);
    assert.equal(same('a|b\n"1"|"2\\"3"\n', { delimiter: '|', escape: '\\' }), true);
  });

  test('headers the fast path cannot take fall back to objects, with the same bytes', () => {
    for (const header of ['a,a', '__proto__,b', 'b,1,a', '0,x', '4294967294,y', '_meta,z']) {
      const text = `${header}\n1,2\n,3\nNULL,"{""x"":1}"\n`;
      const prefixes = columnPrefixes(header.split(','));
      assert.equal(prefixes, null, header);
      if (header.startsWith('_meta')) continue; // the connector rejects a string _meta (connector.test.ts)
      assert.equal(same(text), false, header);
    }
    // Names that only look like array indexes keep the fast path.
    for (const header of ['01,x', '-1,x', '1.5,x', '4294967295,x', ' 1,x']) {
      assert.notEqual(columnPrefixes(header.split(',')), null, header);
      assert.equal(same(`${header}\n1,2\n`), true, header);
    }
  });

  test('errorThreshold: rows wait in the look-ahead window as objects; malformed ones are skipped', () => {
    const rows = Array.from({ length: 300 }, (_, i) => (i % 50 === 7 ? `${i},x,y,z` : `${i},"v""${i}"`)).join('\n');
    assert.equal(same(`a,b\n${rows}\n`, { errorThreshold: 5 }), false);
    assert.equal(objects(`a,b\n${rows}\n`, { errorThreshold: 5 }).length, 294);
  });

  test('jsonString is JSON.stringify', () => {
    for (const s of ['', 'plain', '"', '\\', '\u0000', '\u001f', ' ', '\u007f', 'é', '😀', '\ud83d', '\ude00', '\ude00\ud83d', 'a"b\\c\nd']) {
      assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
    }
  });
});

describe('LineSink offsets', () => {
  test('each record gets its offset: consecutive ones across every digit count, after records skipped or appended otherwise, from any start', () => {
    // closeRecord increments the last offset's digits in place; anything else recomputes them.
    const sink = new LineSink(0, 'f.csv', 7, 0);
    const expected: number[] = [];
    const close = (): void => {
      expected.push(sink.offset);
      sink.openRecord(16);
      sink.writeShort(Buffer.from('{"a":1'));
      sink.closeRecord();
    };
    for (let i = 0; i < 1200; i++) close(); // 7 … 1206: 9→10, 99→100, 999→1000
    sink.appendRecord({ a: 2 }); // an object's document, then closeRecord again
    expected.push(sink.offset - 1);
    close();
    sink.offset = 9_999_998; // a jump (as after records counted, not written)
    for (let i = 0; i < 3; i++) close(); // 9999998, 9999999, 10000000
    sink.offset = 5; // and back to fewer digits
    close();
    const text = Buffer.from(sink.take()?.lines ?? new Uint8Array(0)).toString('utf8');
    const offsets = text.trimEnd().split('\n').map((line) => (JSON.parse(line) as { captured: { doc: { _meta: { offset: number } } } }).captured.doc._meta.offset);
    assert.deepEqual(offsets, expected);
    assert.deepEqual(offsets.slice(-5), [1208, 9_999_998, 9_999_999, 10_000_000, 5]);
  });
});
