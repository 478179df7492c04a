// Over loopback HTTP through the protocol: every format × compression, and one served file per CSV
// option value, each captured with that option.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { createHttpFileConnector } from '../src/index.ts';
import { openRequest, runProtocol, startServer } from './helpers.ts';
import type { FileServer, Route } from './helpers.ts';
import { avroFile, gzipSync, zipSync, zstdCompressSync } from './fixtures.ts';

const connector = createHttpFileConnector({ http: { backoffBaseMs: 5, maxRetries: 1 } });

const FORMATS: Record<string, { ext: string; body: Buffer; parser?: object; count: number }> = {
  csv: { ext: 'csv', body: Buffer.from('a,b\n1,x\n2,y\n3,z\n'), count: 3 },
  json: { ext: 'jsonl', body: Buffer.from('{"a":1}\n{"a":2}\n'), count: 2 },
  jsonArray: { ext: 'json', body: Buffer.from('[{"a":1},{"a":2},{"a":3},{"a":4}]'), count: 4 },
  avro: { ext: 'avro', body: avroFile(5, 'zstandard', 2), count: 5 },
  w3c: { ext: 'log', body: Buffer.from('#Version: 1.0\n#Fields: date cs-method\n2024-01-01\tGET\n2024-01-02\t-\n'), parser: { format: { type: 'w3cExtendedLog' } }, count: 2 },
};
const COMPRESSIONS: Record<string, { suffix: string; wrap: (b: Buffer, name: string) => Buffer }> = {
  none: { suffix: '', wrap: (b) => b },
  gzip: { suffix: '.gz', wrap: (b) => gzipSync(b) },
  zstd: { suffix: '.zst', wrap: (b) => zstdCompressSync(b) },
  zip: { suffix: '.zip', wrap: (b, name) => Buffer.from(zipSync({ [name]: b })) },
};

// One file per CSV option value: [option, value, file body, expected records].
const CSV_OPTIONS: [string, unknown, string, JsonObject[]][] = [
  ['delimiter', ',', 'a,b\n1,2\n', [{ a: '1', b: '2' }]],
  ['delimiter', '|', 'a|b\n1|2\n', [{ a: '1', b: '2' }]],
  ['delimiter', ' ', 'a b\n1 2\n', [{ a: '1', b: '2' }]],
  ['delimiter', ';', 'a;b\n1;2\n', [{ a: '1', b: '2' }]],
  ['delimiter', '\t', 'a\tb\n1\t2\n', [{ a: '1', b: '2' }]],
  ['delimiter', '\u000b', 'a\u000bb\n1\u000b2\n', [{ a: '1', b: '2' }]],
  ['delimiter', '\u001f', 'a\u001fb\n1\u001f2\n', [{ a: '1', b: '2' }]],
  ['delimiter', '\u0001', 'a\u0001b\n1\u00012\n', [{ a: '1', b: '2' }]],
  ['delimiter', null, 'a|b\n1|2\n3|4\n', [{ a: '1', b: '2' }, { a: '3', b: '4' }]],
  ['quote', '"', 'a,b\n"1,5",2\n', [{ a: '1,5', b: '2' }]],
  ['quote', "'", "a,b\n'1,5',2\n", [{ a: '1,5', b: '2' }]],
  ['quote', '', 'a,b\n"1",2\n', [{ a: '"1"', b: '2' }]],
  ['quote', null, "a,b\n'1,5','2'\n'3','4'\n", [{ a: '1,5', b: '2' }, { a: '3', b: '4' }]],
  ['escape', '\\', 'a,b\n"1\\"5",2\n', [{ a: '1"5', b: '2' }]],
  ['escape', '', 'a,b\n"1""5",2\n', [{ a: '1"5', b: '2' }]],
  ['escape', null, 'a,b\n"1""5",2\n', [{ a: '1"5', b: '2' }]],
  ['lineEnding', '\r\n', 'a,b\r\n1,2\r\n', [{ a: '1', b: '2' }]],
  ['lineEnding', '\r', 'a,b\r1,2\r', [{ a: '1', b: '2' }]],
  ['lineEnding', '\n', 'a,b\n1,2\n', [{ a: '1', b: '2' }]],
  ['lineEnding', '\u001e', 'a,b\u001e1,2\u001e', [{ a: '1', b: '2' }]],
  ['lineEnding', null, 'a,b\r1,2\n3,4\r\n', [{ a: '1', b: '2' }, { a: '3', b: '4' }]],
  ['headers', ['x', 'y'], '1,2\n3,4\n', [{ x: '1', y: '2' }, { x: '3', y: '4' }]],
  ['errorThreshold', 50, 'a,b\n1,2\n1,2,3\n5,6\n', [{ a: '1', b: '2' }, { a: '5', b: '6' }]],
  ['encoding', 'UTF-16LE', '\u0000', [{ a: 'é', b: '2' }]],
  ['skipLines', 1, 'junk line\na,b\n1,2\n', [{ a: '1', b: '2' }]],
];

describe('format × compression and CSV options over HTTP', () => {
  let server: FileServer;
  const routes: Record<string, Route> = {};
  before(async () => {
    for (const [format, f] of Object.entries(FORMATS)) {
      for (const [compression, c] of Object.entries(COMPRESSIONS)) {
        const name = `${format}.${f.ext}`;
        routes[`/${format}-${compression}/${name}${c.suffix}`] = { body: c.wrap(f.body, name) };
      }
    }
    CSV_OPTIONS.forEach(([option, , body], i) => {
      routes[`/opt/${i}-${option}.csv`] = { body: option === 'encoding' ? Buffer.from('a,b\né,2\n', 'utf16le') : Buffer.from(body) };
    });
    server = await startServer(routes);
  });
  after(() => server.close());

  for (const [format, f] of Object.entries(FORMATS)) {
    for (const [compression, c] of Object.entries(COMPRESSIONS)) {
      test(`${format} × ${compression}`, async () => {
        const path = `/${format}-${compression}/${format}.${f.ext}${c.suffix}`;
        const run = await runProtocol(connector, [openRequest({ url: server.url(path), ...(f.parser ? { parser: f.parser } : {}) })]);
        assert.equal(run.error, undefined, run.error?.message);
        assert.equal(run.docs.length, f.count);
        assert.deepEqual(run.docs.map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: f.count }, (_, i) => i));
      });
    }
  }

  CSV_OPTIONS.forEach(([option, value, , expected], i) => {
    test(`CSV option ${option} = ${JSON.stringify(value)}`, async () => {
      const config = { [option]: value };
      const url = server.url(`/opt/${i}-${option}.csv`);
      const run = await runProtocol(connector, [openRequest({ url, parser: { format: { type: 'csv', config } } })]);
      assert.equal(run.error, undefined, run.error?.message);
      assert.deepEqual(run.docs, expected.map((r, offset) => ({ ...r, _meta: { file: `${i}-${option}.csv`, offset } })));
    });
  });
});
