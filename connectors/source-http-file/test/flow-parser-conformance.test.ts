// Conformance against Estuary's flow-parser corpus (`<repo>/../shared/fixtures/flow-parser`), run when that sibling
// checkout exists; otherwise one skipped suite says why. The project's own cases for the same behaviours live in
// csv/json/w3c/charset/connector tests and always run.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { CharsetDecoder } from '../src/charset.ts';
import { CsvRecordParser, detectDialect } from '../src/csv.ts';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { createHttpFileConnector } from '../src/index.ts';
import { JsonRecordParser } from '../src/json.ts';
import type { CsvConfig } from '../src/schema.ts';
import { W3cRecordParser } from '../src/w3c.ts';
import { CHUNK_SIZES, feedText, flowParserCorpus, openRequest, runProtocol, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const corpus = flowParserCorpus();
const read = (name: string): Buffer => readFileSync(`${corpus.dir ?? ''}${name}`);
const text = (name: string): string => read(name).toString('utf8');

function feedAll<T>(make: () => { push(text: string): T[]; end(): T[] }, input: string): T[] {
  const first = feedText(make(), input, 1 << 20);
  for (const size of CHUNK_SIZES) assert.deepEqual(feedText(make(), input, size), first, `chunk size ${size}`);
  return first;
}
const csv = (input: string, config: CsvConfig = {}): JsonObject[] =>
  feedAll(() => new CsvRecordParser({ config, datetimes: new DatetimeNormalizer() }), input);

describe('flow-parser conformance', { skip: corpus.skip }, () => {
  describe('csv dialect detection (detection-cases)', () => {
    for (const file of corpus.dir === undefined ? [] : readdirSync(`${corpus.dir}detection-cases/`)) {
      test(file, () => {
        const sample = text(`detection-cases/${file}`);
        const nl = sample.indexOf('\n');
        const expected = JSON.parse(sample.slice(0, nl)) as { quote: string; delimiter: string };
        const got = detectDialect(sample.slice(nl + 1), true, { escape: '', lineEnding: 'crlf' });
        assert.deepEqual(got, { quote: expected.quote, delimiter: expected.delimiter });
      });
    }
  });

  describe('csv records (examples)', () => {
    test('valid-mixed-types.csv: values stay strings', () => {
      assert.deepEqual(csv(text('examples/valid-mixed-types.csv')), [
        { int_or_string: '5', bool_or_string: 'true' }, { int_or_string: '6', bool_or_string: 'foo' },
        { int_or_string: 'bar', bool_or_string: 'false' }, { int_or_string: 'baz', bool_or_string: 'qux' },
      ]);
    });

    test('datetimes.csv: header names verbatim, timestamps normalised', () => {
      const [r] = csv(text('examples/datetimes.csv'));
      assert.deepEqual(r, {
        no_timezone: '2020-01-01T00:00:00Z', ' "no_timezone_fractional"': '2020-01-01T00:00:00Z', ' "rfc3339"': '2020-01-01T00:00:00Z',
        ' "timezone_offset"': '2020-01-01T00:00:00Z', ' "no_t"': '2020-01-01T00:00:00Z', ' "no_t_fractional"': '2020-01-01T00:00:00Z',
      });
    });

    test('datetimes-naive.csv with a default offset of -05:00', () => {
      const rows = feedText(new CsvRecordParser({ config: {}, datetimes: new DatetimeNormalizer('-05:00') }), text('examples/datetimes-naive.csv'), 3);
      assert.equal(rows[0]?.['no_timezone'], '2020-01-01T00:00:00-05:00');
      assert.equal(rows[0]?.[' "no_t_large_fractional"'], '2020-01-01T00:00:00-05:00');
    });

    test('valid-utf-8.tsv: tab detected', () => {
      const rows = csv(text('examples/valid-utf-8.tsv'));
      assert.equal(rows.length, 9);
      assert.equal(rows[0]?.['jewelled'], 'stepmother');
    });

    test('valid-csv-comma-sq-noescape.csv: single quotes detected', () => {
      assert.equal(csv(text('examples/valid-csv-comma-sq-noescape.csv'))[0]?.['c 1 with spaces'], 'val, with, commas, and, spaces');
    });

    test('valid-csv-comma-dq-noescape.csv and valid-big-nums.csv', () => {
      assert.equal(csv(text('examples/valid-csv-comma-dq-noescape.csv')).length, 5);
      const big = csv(text('examples/valid-big-nums.csv'));
      assert.equal(big[0]?.['ride_id'], '41668E5136117226');
      assert.equal(big[0]?.['started_at'], '2021-02-17T21:02:52Z');
    });

    test('requires-explicit-quote.csv parses with an explicit double quote', () => {
      const rows = csv(text('examples/requires-explicit-quote.csv'), { quote: '"' });
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.['app_id'], 'uhhh, wut');
    });

    test('csv-with-extra-steps: skipLines', () => {
      assert.deepEqual(csv(text('examples/csv-with-extra-steps'), { skipLines: 3 }), [{ a: 'foo', b: 'bar', c: 'baz' }, { a: '1', b: '2', c: '3' }, { a: 'larry', b: 'curly', c: 'moe' }]);
    });
  });

  describe('json (examples)', () => {
    test('valid.json (pretty, concatenated), valid.jsonl and a top-level array', () => {
      const expected = [{ foo: 'bar' }, { one: 2 }, { three: 5.0 }, { wut: true }, { _meta: { yea: 'boiiiii' } }];
      assert.deepEqual(feedAll(() => new JsonRecordParser(), text('examples/valid.json')), expected);
      assert.deepEqual(feedAll(() => new JsonRecordParser(), text('examples/valid.jsonl')), expected);
      assert.deepEqual(feedAll(() => new JsonRecordParser(), text('examples/valid-json-top-level-array.json')), [{ foo: 'bar' }, { a: 1 }, { b: false }]);
    });
  });

  describe('w3c extended log (examples)', () => {
    test('names from #Fields, "-" is null, comments skipped', () => {
      const input = `${text('examples/w3c-extended-log')}#a comment: here\n`;
      const [r, ...rest] = feedAll(() => new W3cRecordParser(new DatetimeNormalizer()), input) as JsonObject[];
      assert.equal(rest.length, 0);
      assert.equal(r?.['date'], '2021-09-07');
      assert.equal(r?.['time'], '20:02:43');
      assert.equal(r?.['cs-method'], 'GET');
      assert.equal(r?.['cs(Referer)'], null);
      assert.equal(r?.['sc-status'], '404');
      assert.equal(Object.keys(r ?? {}).length, 33);
    });
  });

  describe('charset (examples)', () => {
    test('valid-shift-jis.csv is detected as Shift_JIS and decodes to its UTF-8 text', () => {
      const bytes = read('examples/valid-shift-jis.csv');
      const expected = text('examples/valid-shift-jis.decoded-utf8.txt');
      for (const size of [1, 100, 1 << 20]) {
        const d = new CharsetDecoder({ encoding: null });
        let decoded = '';
        for (let i = 0; i < bytes.length; i += size) decoded += d.push(bytes.subarray(i, i + size));
        decoded += d.end();
        assert.equal(d.encoding, 'shift_jis');
        assert.equal(decoded.trim(), expected.trim());
      }
    });
  });

  describe('connector (examples over HTTP)', () => {
    const connector = createHttpFileConnector({ http: { backoffBaseMs: 5, backoffMaxMs: 20, maxRetries: 2, connectTimeoutMs: 2000, idleTimeoutMs: 5000 } });
    let server: FileServer;
    before(async () => {
      server = await startServer({ '/sjis.csv': { body: read('examples/valid-shift-jis.csv') }, '/access.log': { body: read('examples/w3c-extended-log') } });
    });
    after(() => server.close());

    test('the Shift_JIS file is detected and decoded', async () => {
      const run = await runProtocol(connector, [openRequest({ url: server.url('/sjis.csv') })]);
      assert.equal(run.error, undefined, run.error?.message);
      assert.equal(run.docs.length, 19);
      assert.equal(run.docs[0]?.['山形県'], '山形県');
    });

    test('the W3C log captures', async () => {
      const run = await runProtocol(connector, [openRequest({ url: server.url('/access.log'), parser: { format: { type: 'w3cExtendedLog' } } })]);
      assert.equal(run.error, undefined, run.error?.message);
      assert.equal(run.docs.length, 1);
      assert.equal(run.docs[0]?.['cs-method'], 'GET');
    });
  });
});
