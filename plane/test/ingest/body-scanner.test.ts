// The ingest body scanner is an incremental core: the same events whatever the chunking (1-byte
// chunks included), and its errors name what was expected and where.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IngestBodyScanner, IngestError, type ScannedDocument } from '../../src/ingest/body-scanner.ts';

function scan(body: Uint8Array, chunk: number, maxDepth = 128): string[] {
  const events: string[] = [];
  const s = new IngestBodyScanner({
    collection: (name) => events.push(`collection ${name}`),
    document: (d: ScannedDocument) => events.push(`${d.collection}#${d.index}${d.mayHaveHugeNumber ? '!' : ''} ${Buffer.from(d.bytes).toString()}`),
  }, { maxDepth });
  for (let i = 0; i < body.length; i += chunk) s.push(body.subarray(i, i + chunk));
  s.end();
  return events;
}

test('body scanner: bad input first — every error says what was expected', () => {
  const cases: [string, RegExp][] = [
    ['', /^request body is empty/],
    ['  [1]', /^request body must be a JSON object mapping collection names to arrays of documents$/],
    ['{"a" [', /^request body is not valid JSON: expected ':' at byte 5, got '\['$/],
    ['{"a": 1}', /^ingestion of collection "a": expected an array of documents, got number$/],
    ['{"a": [{}] "b"', /^request body is not valid JSON: expected ',' or '}' after an array of documents at byte 11, got '"'$/],
    ['{"a": [{"x": "}"}', /^request body is not valid JSON: expected ',' or '\]' after a document at byte 17, got the end|^request body is not valid JSON: expected more JSON/],
    ['{"a": [{"x": [1}', /^request body is not valid JSON: it ends inside ingestion of collection "a": document 0$/],
    ['{"a": [null]}', /^ingestion of collection "a": document 0: expected a JSON object, got null$/],
    ['{"a": [{"x": [[[1]]]}]}', /^ingestion of collection "a": document 0: nested deeper than 3 levels of objects and arrays \(the limit is 3\)$/],
  ];
  for (const [body, message] of cases) {
    for (const chunk of [1, 3, 1000]) {
      assert.throws(() => scan(Buffer.from(body), chunk, 3), (err: unknown) => err instanceof IngestError && message.test(err.message), `${body} in chunks of ${chunk}`);
    }
  }
});

test('body scanner: the same collections and document bytes whatever the chunk size', () => {
  const body = Buffer.from(` { "a/b" : [ {"s": "a \\" ] } [ { \\\\", "n": -1.5e3, "u": "é✓"} ,{"x":[{}, [], 12]}],
    "c": [], "a/b": [{"k": true, "big": ${'9'.repeat(310)}}, {"e": "1e5", "f": 1E2}] }  `);
  const whole = scan(body, body.length);
  assert.deepEqual(whole, [
    'collection a/b',
    'a/b#0! {"s": "a \\" ] } [ { \\\\", "n": -1.5e3, "u": "é✓"}',
    'a/b#1 {"x":[{}, [], 12]}',
    'collection c',
    'collection a/b',
    `a/b#0! {"k": true, "big": ${'9'.repeat(310)}}`,
    'a/b#1! {"e": "1e5", "f": 1E2}',
  ]);
  for (const chunk of [1, 2, 3, 5, 7, 64]) assert.deepEqual(scan(body, chunk), whole, `chunks of ${chunk}`);
  // "e" inside strings and in true/false is not an exponent.
  assert.deepEqual(scan(Buffer.from('{"c": [{"e": "1e400", "t": true, "f": false}]}'), 1), ['collection c', 'c#0 {"e": "1e400", "t": true, "f": false}']);
  assert.deepEqual(scan(Buffer.from('{}'), 1), []);
});
