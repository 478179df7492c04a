import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { DecodeError } from '../src/errors.ts';
import { W3cRecordParser } from '../src/w3c.ts';
import { CHUNK_SIZES, feedText } from './helpers.ts';
import { W3C_LOG } from './fixtures.ts';

const parse = (text: string, size = 1 << 20): unknown[] => feedText(new W3cRecordParser(new DatetimeNormalizer()), text, size);

describe('w3c extended log', () => {
  test('bad input: missing #Fields, malformed directive, wrong field count', () => {
    assert.throws(() => parse('#Version: 1.0\na\tb\n'), (e: unknown) => e instanceof DecodeError && e.message === 'W3C Extended Log file is missing the required #Fields directive: the file must start with a "#Fields: <names>" line');
    assert.throws(() => parse('#Version 1.0\n'), (e: unknown) => e instanceof DecodeError && e.message === "W3C Extended Log file headers are malformed: directive line 1 has no ':' ('#Version 1.0')");
    assert.throws(() => parse('#Fields: a b\n1\t2\t3\n'), /W3C log row at line 2 has 3 fields, but #Fields defines 2/);
    assert.throws(() => parse('#Fields: a b\n1\t2\n3\n'), /W3C log row at line 3 has 1 fields, but the first row has 2/);
  });

  test('empty input yields nothing', () => {
    assert.deepEqual(parse(''), []);
  });

  test('a CDN access log: names from #Fields, "-" is null, comments skipped', () => {
    const text = `${W3C_LOG}#a comment: here\n`;
    const first = parse(text);
    for (const size of CHUNK_SIZES) assert.deepEqual(parse(text, size), first);
    assert.equal(first.length, 1);
    const r = first[0] as Record<string, unknown>;
    assert.deepEqual(r, {
      date: '2024-03-05', time: '08:15:02', 'x-edge-location': 'ams1', 'sc-bytes': '2211', 'c-ip': '192.0.2.10', 'cs-method': 'GET',
      'cs(Host)': 'files.example.test', 'cs-uri-stem': '/a.csv', 'sc-status': '404', 'cs(Referer)': null, 'cs(User-Agent)': 'curl/8.5.0',
      'cs-uri-query': null, 'time-taken': '0.031',
    });
  });
});
