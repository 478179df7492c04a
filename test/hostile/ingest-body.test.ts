// Hostile /ingest bodies against the real `sluice serve` (#17.1, #17.6, #13.7): each is refused with a
// JSON error that names what is wrong and where, nothing of the request is written, and the plane keeps
// serving. (Latency and memory while a 58 MB request runs are measured by bench/ingest-responsiveness.ts.)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ingest, spawnServe, tempDir } from './helpers.ts';

test('hostile ingest bodies through sluice serve: precise 4xx, nothing written, the plane keeps serving', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}, v: {type: number}, m: {type: integer, maximum: 9223372036854775807}}, required: [id]}
    key: [/id]
`);
  const serve = spawnServe(t, ['--catalog', join(dir, 'flow.yaml'), '--port', '0', '--ingest-port', '0', '--data-dir', join(dir, 'data')]);
  const [, url] = await serve.waitFor(/ingester: (http:\/\/\S+)/);
  const apiUrl = (await serve.waitFor(/API: (http:\/\/\S+)/))[1]!;
  const error = async (body: string | Buffer, status: number, contentType?: string) => {
    const r = await ingest(url!, body, contentType);
    assert.equal(r.status, status, r.body);
    assert.equal(r.headers.get('content-type'), 'application/json');
    return (JSON.parse(r.body) as { error: string }).error;
  };
  const offset = async (id: number) => {
    const r = await ingest(url!, `{"hostile/events": [{"id": ${id}}]}`);
    assert.equal(r.status, 200, r.body);
    return Number(/"hostile\/events\/pivot=00":(\d+)/.exec(r.body)?.[1]);
  };
  // The journal is empty: the first line's length is the head after it.
  const line100 = await offset(100);

  // Numbers that cannot be kept: a 400 naming the document and pointer (they used to be stored as null).
  assert.equal(await error('{"hostile/events": [{"id": 1}, {"id": 1e400}]}', 400),
    'ingestion of collection "hostile/events": document 1: /id: number is out of range (beyond ±1.7976931348623157e308, it cannot be stored exactly); send it as a string, or a smaller number');
  assert.match(await error('{"hostile/events": [{"id": 2, "v": -1e400}]}', 400), /^ingestion of collection "hostile\/events": document 0: \/v: number is out of range/);
  // An integer beyond a 64-bit column, where the schema can tell (a maximum): refused where it enters.
  // (The schema's maximum is a double once loaded, so the message shows it rounded.)
  assert.match(await error('{"hostile/events": [{"id": 2, "m": 123456789012345678901234567890}]}', 400),
    /^ingestion of collection "hostile\/events": document 0: \/m: must be <= 92233720368547\d{5}$/);
  // Nesting: 5,000 and 100,000 levels are a 400 (5,000 used to be a 500 "Maximum call stack size exceeded").
  for (const depth of [5_000, 100_000]) {
    assert.equal(await error(`{"hostile/events": [{"id": 3, "x": ${'['.repeat(depth)}${']'.repeat(depth)}}]}`, 400),
      'ingestion of collection "hostile/events": document 0: nested deeper than 128 levels of objects and arrays (the limit is 128)');
  }
  // Over the documents-per-request cap: a 413 (the body is read to its end first, so the client sees it).
  assert.equal(await error(`{"hostile/events": [${Array.from({ length: 100_001 }, (_, i) => `{"id":${i}}`).join(',')}]}`, 413),
    'request has more than 100000 documents; split it into several requests (each request is one transaction)');
  // Content types: parameters are fine, another charset is a 415, another media type the legacy 404.
  assert.equal((await ingest(url!, '{"hostile/events": [{"id": 4}]}', 'application/json; charset=utf-8')).status, 200);
  assert.match(await error('{"hostile/events": [{"id": 5}]}', 415, 'application/json; charset=utf-16'), /^unsupported charset "utf-16"/);
  const legacy = await ingest(url!, '{"hostile/events": [{"id": 6}]}', 'text/plain');
  assert.deepEqual([legacy.status, legacy.body], [404, '404 page not found\n']);
  // Not UTF-8: a 400, never a replacement character in the journal.
  assert.match(await error(Buffer.concat([Buffer.from('{"hostile/events": [{"id": 7, "s": "'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]), 400), /document 0 is not valid UTF-8/);

  // Only the one good document (id 4, a line 2 bytes shorter than id 100's) was written in between.
  assert.equal(await offset(101), line100 + (line100 - 2) + line100);
  assert.equal((await fetch(`${apiUrl}/openapi.json`)).status, 200);
  assert.equal(await serve.stop(), 0);
});
