// CSV: tokenizer, dialect detection, records and every option value.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { CsvRecordParser, CsvTokenizer, detectDialect } from '../src/csv.ts';
import type { CsvDialect } from '../src/csv.ts';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { ConfigError, DecodeError, ErrorThresholdError } from '../src/errors.ts';
import type { CsvConfig } from '../src/schema.ts';
import { CHUNK_SIZES, feedText } from './helpers.ts';

function parse(text: string, config: CsvConfig = {}, size = 1 << 20): JsonObject[] {
  return feedText(new CsvRecordParser({ config, datetimes: new DatetimeNormalizer() }), text, size);
}

/** Parses at every chunk size and checks they all agree; returns the records. */
function parseAll(text: string, config: CsvConfig = {}): JsonObject[] {
  const first = parse(text, config);
  for (const size of CHUNK_SIZES) assert.deepEqual(parse(text, config, size), first, `chunk size ${size}`);
  return first;
}

function tokens(text: string, dialect: Partial<CsvDialect> = {}, size = 1 << 20): string[][] {
  return feedText(new CsvTokenizer({ delimiter: ',', quote: '"', escape: '', lineEnding: 'crlf', ...dialect }), text, size).map((r) => r.fields);
}

describe('csv tokenizer', () => {
  test('bad input: unterminated quote names line and byte offset', () => {
    for (const size of CHUNK_SIZES) {
      assert.throws(() => tokens('a,b\n1,"open\n2,3\n', {}, size), (e: unknown) => {
        assert.ok(e instanceof DecodeError);
        assert.equal(e.message, 'CSV quoted field starting at line 2 (byte offset 4) has no closing quote before the end of the file: check the quote setting or the file');
        return true;
      });
    }
  });

  test('empty input yields no rows', () => {
    assert.deepEqual(tokens(''), []);
  });

  test('quotes, doubled quotes, embedded terminators, trailing text after a closing quote', () => {
    const text = 'a,"b,c","d""e","f\r\ng",h"i,"j"k\r\n';
    for (const size of CHUNK_SIZES) assert.deepEqual(tokens(text, {}, size), [['a', 'b,c', 'd"e', 'f\r\ng', 'h"i', 'jk']]);
  });

  test('CRLF mode accepts \\r, \\n and \\r\\n, and skips blank lines', () => {
    for (const size of CHUNK_SIZES) assert.deepEqual(tokens('a,b\r\n1,2\r3,4\n\n\r\n5,6', {}, size), [['a', 'b'], ['1', '2'], ['3', '4'], ['5', '6']]);
  });

  test('rows longer than 1 MiB across many chunks: the same rows, lines and offsets as in one piece', () => {
    // A carried long row is re-scanned geometrically, and probed before a sink sees it again (csv-core.ts).
    const big = 'x'.repeat(700_000);
    const text = `h1,h2\n"${big}""q\r\n${big}\\\\",tail\r\n${'y'.repeat(2_500_000)},z\n"${big}\r\n${big}"\r\nlast,1\n`;
    const whole = feedText(new CsvTokenizer({ delimiter: ',', quote: '"', escape: '\\', lineEnding: 'crlf' }), text, text.length);
    assert.deepEqual(whole.map((r) => [r.fields.map((f) => f.length), r.line, r.byteOffset]), [
      [[2, 2], 1, 0], [[1_400_005, 4], 2, 6], [[2_500_000, 1], 4, 1_400_022], [[1_400_002], 5, 3_900_025], [[4, 1], 7, 5_300_031],
    ]);
    assert.equal(whole[1]?.fields[0], `${big}"q\r\n${big}\\`);
    for (const size of [65_536, 1_048_577, 3_000_001]) {
      assert.deepEqual(feedText(new CsvTokenizer({ delimiter: ',', quote: '"', escape: '\\', lineEnding: 'crlf' }), text, size), whole, `chunk size ${size}`);
    }
    // Long rows come out while the input arrives, not only at its end: a carried row of ≥ 1 MiB is looked at
    // again once the bytes held grew by half, so rows 4 and 5 (1.4 MB in all, the end of the input) wait for end().
    const t = new CsvTokenizer({ delimiter: ',', quote: '"', escape: '\\', lineEnding: 'crlf' });
    let early = 0;
    for (let i = 0; i < text.length; i += 65_536) early += t.push(text.slice(i, i + 65_536)).length;
    assert.equal(early, 3);
  });

  test('line numbers count terminators inside quoted fields', () => {
    const rows = feedText(new CsvTokenizer({ delimiter: ',', quote: '"', escape: '', lineEnding: 'crlf' }), 'h\n"x\ny"\nz\n', 1);
    assert.deepEqual(rows.map((r) => r.line), [1, 2, 4]);
    assert.deepEqual(rows.map((r) => r.byteOffset), [0, 2, 8]);
  });
});

// Dialect detection and record cases written by this project (the flow-parser corpus runs in
// flow-parser-conformance.test.ts when present): each sample names the dialect it must be detected as.
const DETECTION_CASES: { name: string; quote: string; delimiter: string; sample: string }[] = [
  { name: 'comma, double quotes around commas', quote: '"', delimiter: ',', sample: 'city,note\n"Lyon, FR","a, b"\n"Oslo, NO",plain\n' },
  { name: 'comma, only empty quoted fields', quote: '"', delimiter: ',', sample: '"","",""\n"","",""\n' },
  { name: 'comma, no quoting: double quote is the default', quote: '"', delimiter: ',', sample: 'red,green,blue\nteal,olive,navy\n' },
  { name: 'leading row of empty fields', quote: '"', delimiter: ',', sample: ',,,,\nid,kind,size,colour,shape\n1,a,2,red,round\n' },
  { name: 'semicolon, double quotes with doubled quotes inside', quote: '"', delimiter: ';', sample: '"id";"text"\n"1";"she said ""hi"", twice"\n"2";"x"\n' },
  { name: 'semicolon, apostrophes are not quotes', quote: '"', delimiter: ';', sample: "it's;we're;they'd\nisn't;ok;fine\n" },
  { name: 'pipe, single quotes around pipes', quote: "'", delimiter: '|', sample: "p | q | r\n'has|pipes'|'x | y'|z\n" },
  { name: 'tab, single quotes around tabs, commas in fields', quote: "'", delimiter: '\t', sample: "a, b\tc d\te, f\n'in\ttab'\tplain\t'more\ttabs'\n" },
];

describe('csv dialect detection', () => {
  for (const c of DETECTION_CASES) {
    test(c.name, () => {
      assert.deepEqual(detectDialect(c.sample, true, { escape: '', lineEnding: 'crlf' }), { quote: c.quote, delimiter: c.delimiter });
    });
  }
});

describe('csv records', () => {
  test('values stay strings, whatever they look like', () => {
    assert.deepEqual(parseAll('n,flag\n5,true\n6,maybe\nseven,false\n'), [
      { n: '5', flag: 'true' }, { n: '6', flag: 'maybe' }, { n: 'seven', flag: 'false' },
    ]);
  });

  test('header names verbatim (spaces and quotes kept), timestamps normalised to RFC 3339 UTC', () => {
    const text = '"plain", "fractional", "zulu", "offset", "space", "space_fractional"\n' +
      '"2023-06-30T12:34:56","2023-06-30T12:34:56.000","2023-06-30T12:34:56Z","2023-06-30 12:34:56+00:00","2023-06-30 12:34:56","2023-06-30 12:34:56.000"\n';
    const t = '2023-06-30T12:34:56Z';
    assert.deepEqual(parseAll(text), [{ plain: t, ' "fractional"': t, ' "zulu"': t, ' "offset"': t, ' "space"': t, ' "space_fractional"': t }]);
  });

  test('naive timestamps take the default offset', () => {
    const text = 'a,b,c\n2023-06-30T12:34:56,2023-06-30 12:34:56.000,2023-06-30 12:34:56.000000000\n';
    const rows = feedText(new CsvRecordParser({ config: {}, datetimes: new DatetimeNormalizer('-05:00') }), text, 3);
    assert.deepEqual(rows, [{ a: '2023-06-30T12:34:56-05:00', b: '2023-06-30T12:34:56-05:00', c: '2023-06-30T12:34:56-05:00' }]);
  });

  test('tab-separated UTF-8 is detected', () => {
    const rows = parseAll('fruit\tcolour\tnote\npomme\trouge\tcafé\nbanana\tyellow\t黄色\n');
    assert.deepEqual(rows, [{ fruit: 'pomme', colour: 'rouge', note: 'café' }, { fruit: 'banana', colour: 'yellow', note: '黄色' }]);
  });

  test('single quotes are detected and protect commas; header names keep spaces', () => {
    const rows = parseAll("'col one',two\n'x, y, z',2\n'p, q',3\n");
    assert.deepEqual(rows, [{ 'col one': 'x, y, z', two: '2' }, { 'col one': 'p, q', two: '3' }]);
  });

  test('long hex ids and large integers stay their source text', () => {
    const rows = parseAll('ride_id,n,started_at\n41668E5136117226,18446744073709551617,2021-02-17 21:02:52\n');
    assert.deepEqual(rows, [{ ride_id: '41668E5136117226', n: '18446744073709551617', started_at: '2021-02-17T21:02:52Z' }]);
  });

  test('an explicit double quote keeps a quoted comma in one field', () => {
    const rows = parseAll('id,name,tags\n"1","uhm, yes","a\\,b"\n', { quote: '"' });
    assert.deepEqual(rows, [{ id: '1', name: 'uhm, yes', tags: 'a\\,b' }]);
  });

  test('skipLines drops preamble lines before the header', () => {
    const text = 'exported by some tool\nplease ignore these lines\n======\nx,y\n1,2\n3,4\n';
    assert.deepEqual(parseAll(text, { skipLines: 3 }), [{ x: '1', y: '2' }, { x: '3', y: '4' }]);
  });
});

describe('csv options', () => {
  test('bad input: errorThreshold above 100 and negative', () => {
    assert.throws(() => parse('a\n1\n', { errorThreshold: 101 }), (e: unknown) => e instanceof ConfigError && e.message === 'ErrorThreshold cannot be greater than 100%: 101%');
    assert.throws(() => parse('a\n1\n', { errorThreshold: -1 }), (e: unknown) => e instanceof ConfigError && e.message === 'errorThreshold must be a non-negative integer percentage, got -1');
  });

  test('bad input: ragged (long) row', () => {
    for (const size of CHUNK_SIZES) {
      assert.throws(() => parse('a,b\n1,2\n3,4,5\n', {}, size), (e: unknown) => {
        assert.ok(e instanceof DecodeError);
        assert.equal(e.message, 'CSV row at line 3 (byte offset 8) has 3 columns, but the headers only define 2 columns: fix the row, set headers for every column, or raise errorThreshold');
        return true;
      });
    }
  });

  test('short rows omit keys; null spellings become null', () => {
    assert.deepEqual(parseAll('a,b,c\n1\n,NULL,null\nnil,Null,x\n'), [{ a: '1' }, { a: null, b: null, c: null }, { a: null, b: 'Null', c: 'x' }]);
  });

  test('duplicate header names keep the later value', () => {
    assert.deepEqual(parseAll('a,a\n1,2\n'), [{ a: '2' }]);
  });

  const delimiters: [string, string][] = [[',', 'comma'], ['|', 'pipe'], [' ', 'space'], [';', 'semicolon'], ['\t', 'tab'], ['\u000b', 'vertical tab'], ['\u001f', 'unit separator'], ['\u0001', 'SOH']];
  for (const [d, name] of delimiters) {
    test(`delimiter: ${name}`, () => {
      const text = `x${d}y\n1${d}"a${d}b"\n`;
      assert.deepEqual(parseAll(text, { delimiter: d as NonNullable<CsvConfig['delimiter']> }), [{ x: '1', y: `a${d}b` }]);
    });
  }
  test('delimiter: auto (detected) and auto with pinned quote', () => {
    assert.deepEqual(parseAll('x;y\n1;2\n3;4\n'), [{ x: '1', y: '2' }, { x: '3', y: '4' }]);
    assert.deepEqual(parseAll("x|y\n'1|2'|3\n", { quote: "'" }), [{ x: '1|2', y: '3' }]);
  });

  test('quote: double, single, disabled, auto', () => {
    assert.deepEqual(parseAll('x,y\n"1,2",3\n', { quote: '"' }), [{ x: '1,2', y: '3' }]);
    assert.deepEqual(parseAll("x,y\n'1,2',3\n", { quote: "'", delimiter: ',' }), [{ x: '1,2', y: '3' }]);
    assert.deepEqual(parseAll('x,y\n"1",3\n', { quote: '', delimiter: ',' }), [{ x: '"1"', y: '3' }]);
    assert.deepEqual(parseAll("x,y\n'a,b','c'\n'd','e'\n"), [{ x: 'a,b', y: 'c' }, { x: 'd', y: 'e' }]);
  });

  test('escape: backslash, disabled, auto (none)', () => {
    const text = 'x,y\n"a\\"b",c\n';
    assert.deepEqual(parseAll(text, { escape: '\\', delimiter: ',', quote: '"' }), [{ x: 'a"b', y: 'c' }]);
    // Inside a quoted field the escape makes the next character literal, whatever it is (csv-core):
    // `\\` is one backslash, `\n` is `n`, `\,` a comma; outside quotes it is an ordinary character.
    assert.deepEqual(parseAll('x,y\n"a\\\\b","\\n\\,\\\\"\nc\\\\d,e\n', { escape: '\\', delimiter: ',', quote: '"' }), [{ x: 'a\\b', y: 'n,\\' }, { x: 'c\\\\d', y: 'e' }]);
    assert.deepEqual(parseAll('x,y\n"a\\""b",c\n', { escape: '', delimiter: ',', quote: '"' }), [{ x: 'a\\"b', y: 'c' }]);
    assert.deepEqual(parseAll('x,y\n"a""b",c\n'), [{ x: 'a"b', y: 'c' }]);
  });

  test('lineEnding: CRLF, CR, LF, record separator, auto', () => {
    assert.deepEqual(parseAll('x,y\r\n1,2\r\n', { lineEnding: '\r\n' }), [{ x: '1', y: '2' }]);
    assert.deepEqual(parseAll('x,y\r1,2\r', { lineEnding: '\r' }), [{ x: '1', y: '2' }]);
    assert.deepEqual(parseAll('x,y\n1,2\r\n', { lineEnding: '\n' }), [{ x: '1', y: '2\r' }]);
    assert.deepEqual(parseAll('x,y\u001e1,2\n3\u001e', { lineEnding: '\u001e' }), [{ x: '1', y: '2\n3' }]);
    assert.deepEqual(parseAll('x,y\r1,2\n3,4\r\n'), [{ x: '1', y: '2' }, { x: '3', y: '4' }]);
  });

  test('headers: authoritative, first row is data', () => {
    assert.deepEqual(parseAll('1,2\n3,4\n', { headers: ['a', 'b'] }), [{ a: '1', b: '2' }, { a: '3', b: '4' }]);
    assert.throws(() => parse('1,2,3\n', { headers: ['a', 'b'], delimiter: ',' }), /has 3 columns, but the headers only define 2 columns/);
  });

  test('encoding option is applied by the charset stage (see charset tests); here: header-only file', () => {
    assert.deepEqual(parseAll('a,b\n'), []);
  });
});

describe('csv errorThreshold', () => {
  const rows = (good: number, bad: number, badFirst = false): string => {
    const g = Array.from({ length: good }, (_, i) => `${i},x`);
    const b = Array.from({ length: bad }, () => '1,2,3');
    return `a,b\n${(badFirst ? [...b, ...g] : [...g, ...b]).join('\n')}\n`;
  };

  test('bad input: over the threshold fails before emitting anything (500 good + 56 bad at 10%)', () => {
    const p = new CsvRecordParser({ config: { errorThreshold: 10 }, datetimes: new DatetimeNormalizer() });
    const out: JsonObject[] = [];
    assert.throws(() => { out.push(...p.push(rows(500, 56))); for (let b = p.end(); b.length; b = p.end()) out.push(...b); }, (e: unknown) => {
      assert.ok(e instanceof ErrorThresholdError);
      assert.equal(e.message, 'error limit exceeded: 56 of the last 556 CSV rows are malformed (10%), at or above errorThreshold 10%; first: CSV row at line 502 (byte offset 2894) has 3 columns, but the headers only define 2 columns: fix the row, set headers for every column, or raise errorThreshold');
      return true;
    });
    assert.equal(out.length, 0);
  });

  test('within the threshold: malformed rows are excluded and counted (500 good + 55 bad at 10%)', () => {
    const skipped: DecodeError[] = [];
    const out = feedText(new CsvRecordParser({ config: { errorThreshold: 10 }, datetimes: new DatetimeNormalizer(), onSkippedRow: (e) => skipped.push(e) }), rows(500, 55), 7);
    assert.equal(out.length, 500);
    assert.equal(skipped.length, 55);
  });

  test('look-ahead window: 1000 good then 100 bad at 10% emits exactly 100 rows then fails', () => {
    const p = new CsvRecordParser({ config: { errorThreshold: 10 }, datetimes: new DatetimeNormalizer() });
    const out: JsonObject[] = [];
    const text = rows(1000, 100);
    assert.throws(() => { for (let i = 0; i < text.length; i += 13) out.push(...p.push(text.slice(i, i + 13))); for (let b = p.end(); b.length; b = p.end()) out.push(...b); }, ErrorThresholdError);
    assert.equal(out.length, 100);
  });

  test('every 5th row bad at 25% emits 800 of 1000', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => (i % 5 === 4 ? '1,2,3' : `${i},x`));
    const out = parse(`a,b\n${lines.join('\n')}\n`, { errorThreshold: 25 });
    assert.equal(out.length, 800);
  });

  test('threshold 0: the first bad row fails', () => {
    assert.throws(() => parse(rows(10, 1), { errorThreshold: 0 }), /CSV row at line 12/);
  });
});
