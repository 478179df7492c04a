import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { DecodeError } from '../src/errors.ts';
import { W3cRecordParser } from '../src/w3c.ts';
import { CHUNK_SIZES, FIXTURES, feedText } from './helpers.ts';

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

  test('the flow-parser fixture: names from #Fields, "-" is null, comments skipped', () => {
    const text = `${readFileSync(`${FIXTURES}examples/w3c-extended-log`, 'utf8')}#a comment: here\n`;
    const first = parse(text);
    for (const size of CHUNK_SIZES) assert.deepEqual(parse(text, size), first);
    assert.equal(first.length, 1);
    const r = first[0] as Record<string, unknown>;
    assert.equal(r['date'], '2021-09-07');
    assert.equal(r['time'], '20:02:43');
    assert.equal(r['cs-method'], 'GET');
    assert.equal(r['cs(Referer)'], null);
    assert.equal(r['sc-status'], '404');
    assert.equal(Object.keys(r).length, 33);
  });
});
