// The connector through the protocol (serveCapture in-process) against a loopback server: discover,
// validate, captures of every format × compression × encoding, state, skip, resume, errors.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import iconv from 'iconv-lite';
import type { JsonObject } from '@sluice/runtime';
import { createHttpFileConnector, recommendedName } from '../src/index.ts';
import { LAST_MODIFIED, applyCheckpoints, openRequest, runProtocol, startServer } from './helpers.ts';
import type { FileServer, Route } from './helpers.ts';
import { JAPANESE_CSV, PROTO, W3C_LOG, avroFile, expectedAvroDoc, gzipSync, zipSync, zstdCompressSync } from './fixtures.ts';
import { compileMessageType } from '../src/protobuf.ts';

const connector = createHttpFileConnector({ http: { backoffBaseMs: 5, backoffMaxMs: 20, maxRetries: 2, connectTimeoutMs: 2000, idleTimeoutMs: 5000 }, checkpointEvery: 3 });

const CSV_ROWS = Array.from({ length: 10 }, (_, i) => ({ id: String(i), name: `name ${i} é`, at: `2024-01-0${(i % 9) + 1} 10:00:00` }));
const CSV = `id,name,at\n${CSV_ROWS.map((r) => `${r.id},"${r.name}",${r.at}`).join('\n')}\n`;
const expectedCsv = (file: string): JsonObject[] => CSV_ROWS.map((r, offset) => ({ id: r.id, name: r.name, at: `${r.at.replace(' ', 'T')}Z`, _meta: { file, offset } }));
const JSONL = CSV_ROWS.map((r) => JSON.stringify({ ...r, n: Number(r.id) })).join('\n');
const expectedJson = (file: string): JsonObject[] => CSV_ROWS.map((r, offset) => ({ ...r, at: `${r.at.replace(' ', 'T')}Z`, n: Number(r.id), _meta: { file, offset } }));

const proto = compileMessageType(PROTO, 'FeedMessage');
const PROTO_BYTES = Buffer.from(proto.encode(proto.fromObject({ entity: [{ id: 'e1', routeId: 'r' }], headerTime: '5' })).finish());

describe('connector', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      '/data.csv': { body: CSV, etag: '"c1"' },
      '/data.csv.gz': { body: gzipSync(CSV) },
      '/data.csv.zst': { body: zstdCompressSync(Buffer.from(CSV)) },
      '/data.zip': { body: Buffer.from(zipSync({ 'part1.csv': Buffer.from(CSV), '__MACOSX/._part1.csv': Buffer.from('x'), 'part2.csv': Buffer.from(CSV) })) },
      '/gz-encoded.csv.gz': { body: gzipSync(CSV), headers: { 'content-encoding': 'gzip' } },
      '/transfer-gzip.csv': { body: gzipSync(CSV), headers: { 'content-encoding': 'gzip' } },
      '/magic': { body: gzipSync(CSV), headers: { 'content-type': 'text/csv' } },
      '/latin1.csv': { body: iconv.encode(CSV, 'windows-1252') },
      '/utf16.csv': { body: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(CSV, 'utf16le')]) },
      '/sjis.csv': { body: iconv.encode(JAPANESE_CSV, 'Shift_JIS') },
      '/data.jsonl': { body: JSONL },
      '/data.json.gz': { body: gzipSync(`[${CSV_ROWS.map((r) => JSON.stringify({ ...r, n: Number(r.id) })).join(',')}]`) },
      '/noext': { body: JSONL, headers: { 'content-type': 'application/json; charset=utf-8' } },
      '/data.avro': { body: avroFile(10, 'deflate') },
      '/feed.pb': { body: PROTO_BYTES },
      '/access.log': { body: W3C_LOG },
      '/empty.csv': { body: '' },
      '/empty.csv.gz': { body: gzipSync('') },
      '/unknown.bin': { body: 'x', headers: { 'content-type': 'application/octet-stream' } },
      '/meta-column.csv': { body: '_meta,b\nx,1\n' },
      '/ragged.csv': { body: `a,b\n${'1,2\n'.repeat(20)}1,2,3\n${'1,2\n'.repeat(20)}` },
      '/bad.json': { body: '{"a":1}\n{"a":\n' },
      '/no-head.csv': { body: CSV, headStatus: 405 },
      '/no-head-no-lm.csv': { body: CSV, headStatus: 405, noLastModified: true },
      '/dir/': { body: CSV, headers: { 'content-type': 'text/csv' } },
      '/private.csv': { body: CSV, auth: 'u:p' },
    });
  });
  after(() => server.close());

  const capture = async (path: string, parser: object | undefined = undefined, state: object = {}, extra: object = {}) =>
    runProtocol(connector, [openRequest({ url: server.url(path), ...(parser ? { parser } : {}), ...extra }, state)]);

  test('recommended names: last path segment, else the host', () => {
    assert.equal(recommendedName('https://example.com:8081/path/to//thing//'), 'thing');
    assert.equal(recommendedName('https://foo:bar@example.com:8081'), 'example.com');
    assert.equal(recommendedName('https://example.com/a/data.csv?x=1'), 'data.csv');
  });

  test('discover: one binding, key, schema with formats from a sample', async () => {
    const run = await runProtocol(connector, [{ discover: { connectorType: 'IMAGE', config: { url: server.url('/data.csv') } } }]);
    assert.equal(run.error, undefined);
    const bindings = (run.responses[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[];
    assert.equal(bindings.length, 1);
    const b = bindings[0] as JsonObject;
    assert.equal(b['recommendedName'], 'data.csv');
    assert.deepEqual(b['resourceConfig'], { stream: 'data.csv' });
    assert.deepEqual(b['key'], ['/_meta/file', '/_meta/offset']);
    const schema = b['documentSchema'] as JsonObject;
    assert.equal(schema['x-infer-schema'], true);
    const props = schema['properties'] as Record<string, JsonObject>;
    assert.deepEqual(props['id'], { type: 'string', format: 'integer' });
    assert.deepEqual(props['name'], { type: 'string' });
    assert.deepEqual(props['at'], { type: 'string', format: 'date-time' });
    assert.deepEqual((props['_meta'] as JsonObject)['required'], ['file', 'offset']);
  });

  test('discover: JSON values keep their types', async () => {
    const run = await runProtocol(connector, [{ discover: { config: { url: server.url('/data.jsonl') } } }]);
    const props = ((((run.responses[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[])[0] as JsonObject)['documentSchema'] as JsonObject)['properties'] as Record<string, JsonObject>;
    assert.deepEqual(props['n'], { type: 'integer' });
  });

  test('validate: HEAD prerequisites are checked, resource paths returned', async () => {
    const ok = await runProtocol(connector, [{ validate: { name: 'acme/http', config: { url: server.url('/data.csv') }, bindings: [{ resourceConfig: { stream: 'data' }, collection: { name: 'acme/data' } }] } }]);
    assert.equal(ok.error, undefined);
    assert.deepEqual(ok.responses[0], { validated: { bindings: [{ resourcePath: ['data'] }] } });
    // HEAD refused: the first byte's GET tells Last-Modified; without it, the error says what to send.
    const probed = await runProtocol(connector, [{ validate: { name: 'acme/http', config: { url: server.url('/no-head.csv') }, bindings: [{ resourceConfig: { stream: 'data' }, collection: { name: 'acme/data' } }] } }]);
    assert.equal(probed.error, undefined, probed.error?.message);
    const refused = await runProtocol(connector, [{ validate: { name: 'acme/http', config: { url: server.url('/no-head-no-lm.csv') }, bindings: [{ resourceConfig: { stream: 'data' }, collection: { name: 'acme/data' } }] } }]);
    assert.match(refused.error?.message ?? '', /refused the HEAD request for .* \(405 Method Not Allowed\) and its GET response has no Last-Modified header: the server must send Last-Modified/);
  });

  test('bad input: unknown config keys (named by the runtime, with the nearest name) and an invalid URL are clear config errors', async () => {
    const run = await runProtocol(connector, [openRequest({ url: 'nope', extra: 1, parser: { bogus: true, adValues: true }, headers: { item: [] } })]);
    assert.equal(run.error?.message, "Invalid endpoint config (4 problems): /extra is not an allowed property; allowed: url, credentials, parser, headers; /parser/bogus is not an allowed property; allowed: compression, format, defaultOffset, addRecordOffset, addValues, filename, contentType, contentEncoding; /parser/adValues is not an allowed property; did you mean 'addValues'?; /headers/item is not an allowed property; did you mean 'items'?");
    const url = await runProtocol(connector, [openRequest({ url: 'nope', parser: { addValues: false } })]);
    assert.equal(url.error?.message, "Invalid endpoint config: URL is invalid: 'nope' (Invalid URL); give a complete URL such as https://example.com/data.csv; parser.addValues must be an object (Values added to each document, by JSON pointer), got false");
  });

  const formats: [string, object | undefined, (f: string) => JsonObject[]][] = [
    ['/data.csv', undefined, expectedCsv],
    ['/data.csv.gz', undefined, expectedCsv],
    ['/data.csv.zst', undefined, expectedCsv],
    ['/gz-encoded.csv.gz', undefined, expectedCsv],
    ['/transfer-gzip.csv', undefined, expectedCsv],
    ['/magic', undefined, expectedCsv],
    ['/latin1.csv', undefined, expectedCsv],
    ['/latin1.csv', { format: { type: 'csv', config: { encoding: 'windows-1252' } } }, expectedCsv],
    ['/utf16.csv', undefined, expectedCsv],
    ['/data.jsonl', undefined, expectedJson],
    ['/data.json.gz', undefined, expectedJson],
    ['/noext', undefined, expectedJson],
    ['/data.csv', { compression: 'none', format: { type: 'csv', config: { delimiter: ',', quote: '"', lineEnding: '\n' } } }, expectedCsv],
  ];
  for (const [path, parser, expected] of formats) {
    test(`capture ${path}${parser ? ` with ${JSON.stringify(parser)}` : ''}`, async () => {
      const run = await capture(path, parser);
      assert.equal(run.error, undefined, run.error?.message);
      assert.deepEqual(run.docs, expected(path.slice(1)));
      // Upstream's state after a finished sweep.
      const state = applyCheckpoints({}, run.checkpoints);
      assert.deepEqual(state, { bindingStateV1: { data: { minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false } } });
    });
  }

  test('zip: every member in order, hidden members skipped, offsets continue', async () => {
    const run = await capture('/data.zip');
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(run.docs.length, 20);
    assert.deepEqual(run.docs.map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: 20 }, (_, i) => i));
    assert.equal(run.docs[10]?.['id'], '0');
  });

  test('a Shift_JIS file is detected and decoded', async () => {
    const run = await capture('/sjis.csv');
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(run.docs.length, 9);
    assert.deepEqual(run.docs[0], { 県名: '山形県', 県庁所在地: '山形市', _meta: { file: 'sjis.csv', offset: 0 } });
  });

  test('avro, protobuf and W3C captures', async () => {
    const avro = await capture('/data.avro');
    assert.equal(avro.error, undefined, avro.error?.message);
    assert.deepEqual(avro.docs, Array.from({ length: 10 }, (_, i) => ({ ...expectedAvroDoc(i), _meta: { file: 'data.avro', offset: i } })));
    const pb = await capture('/feed.pb', { format: { type: 'protobuf', config: { message: 'FeedMessage', protoFile: PROTO } } });
    assert.equal(pb.error, undefined, pb.error?.message);
    assert.deepEqual(pb.docs, [{ entity: [{ id: 'e1', routeId: 'r' }], headerTime: '5', _meta: { file: 'feed.pb', offset: 0 } }]);
    const w3c = await capture('/access.log', { format: { type: 'w3cExtendedLog' } });
    assert.equal(w3c.error, undefined, w3c.error?.message);
    assert.equal(w3c.docs.length, 1);
    assert.equal(w3c.docs[0]?.['cs-method'], 'GET');
  });

  test('empty files yield zero documents and no error', async () => {
    for (const path of ['/empty.csv', '/empty.csv.gz']) {
      const run = await capture(path);
      assert.equal(run.error, undefined);
      assert.equal(run.docs.length, 0);
      assert.equal((applyCheckpoints({}, run.checkpoints)['bindingStateV1'] as JsonObject)['data'] !== undefined, true);
    }
  });

  test('basic auth and extra headers are sent', async () => {
    const run = await capture('/private.csv', undefined, {}, { credentials: { user: 'u', password: 'p' }, headers: { items: [{ key: 'X-Api-Key', value: 'k' }] } });
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(run.docs.length, 10);
    assert.equal(server.requests.filter((r) => r.path === '/private.csv').at(-1)?.headers['x-api-key'], 'k');
  });

  test('unchanged file (Last-Modified not after minBound) is skipped; a newer Last-Modified is captured again', async () => {
    const first = await capture('/data.csv');
    const state = applyCheckpoints({}, first.checkpoints);
    const gets = server.requests.filter((r) => r.path === '/data.csv' && r.method === 'GET').length;
    const second = await capture('/data.csv', undefined, state);
    assert.equal(second.error, undefined);
    assert.equal(second.docs.length, 0);
    assert.equal(server.requests.filter((r) => r.path === '/data.csv' && r.method === 'GET').length, gets, 'no GET when unchanged');
    assert.ok(second.logs.some((l) => /unchanged since the last capture/.test(l.msg)));
    const route = server.routes.get('/data.csv') as Route;
    // As upstream: a new ETag alone (same Last-Modified second) is not a change; a later Last-Modified is.
    route.etag = '"c2"';
    try {
      assert.equal((await capture('/data.csv', undefined, state)).docs.length, 0);
      route.lastModified = 'Wed, 21 Oct 2015 07:28:01 GMT';
      const third = await capture('/data.csv', undefined, state);
      assert.equal(third.docs.length, 10);
      assert.deepEqual(applyCheckpoints(state, third.checkpoints), { bindingStateV1: { data: { minBound: '2015-10-21T07:28:01Z', path: '', records: 0, complete: false } } });
    } finally {
      route.etag = '"c1"';
      delete route.lastModified;
    }
  });

  const RESUME_N = 6000; // > 64 KiB, so CSV rows flow before the end of the file
  const RESUME_ROWS = Array.from({ length: RESUME_N }, (_, i) => `${i},"v ${i}, é"`).join('\n');
  const resumeCases: [string, Route, object | undefined, 'Range' | 'skip'][] = [
    ['/r.csv', { body: `id,value\n${RESUME_ROWS}\n`, slowChunk: 4096, slowDelayMs: 0 }, undefined, 'Range'],
    ['/r-bom-skip.csv', { body: `\ufeffjunk\nid;value\n${RESUME_ROWS.replaceAll(',"', ';"')}\r\n`, slowChunk: 4096, slowDelayMs: 0 }, { format: { type: 'csv', config: { skipLines: 1 } } }, 'Range'],
    ['/r.jsonl', { body: Array.from({ length: RESUME_N }, (_, i) => JSON.stringify({ id: i, value: `v ${i}, é` })).join('\n'), slowChunk: 4096, slowDelayMs: 0 }, undefined, 'Range'],
    ['/r.csv.gz', { body: gzipSync(`id,value\n${RESUME_ROWS}\n`), slowChunk: 4096, slowDelayMs: 0 }, undefined, 'skip'],
    ['/r-threshold.csv', { body: `id,value\n${RESUME_ROWS}\n`, slowChunk: 4096, slowDelayMs: 0 }, { format: { type: 'csv', config: { errorThreshold: 10 } } }, 'skip'],
  ];
  for (const [path, route, parser, how] of resumeCases) {
    test(`resume after a crash mid-file (${path}, by ${how}): no duplicate and no missing offset`, async () => {
      server.routes.set(path, route);
      const full = await capture(path, parser);
      assert.equal(full.error, undefined, full.error?.message);
      assert.equal(full.docs.length, RESUME_N);
      // The session died after its third checkpoint: the runtime kept the state up to it.
      let seen = 0;
      const cut = full.responses.findIndex((r) => 'checkpoint' in r && ++seen === 3);
      const committed = full.responses.slice(0, cut + 1);
      const docsCommitted = committed.filter((r) => 'captured' in r).map((r) => (r['captured'] as JsonObject)['doc'] as JsonObject);
      const state = applyCheckpoints({}, committed.filter((r) => 'checkpoint' in r).map((r) => r['checkpoint'] as JsonObject));
      const saved = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
      assert.equal(saved['complete'], false);
      assert.ok((saved['records'] as number) > 0 && (saved['records'] as number) < RESUME_N);
      assert.equal(typeof saved['byteOffset'] === 'number', how === 'Range', JSON.stringify(saved));
      const before = server.requests.length;
      const resumed = await capture(path, parser, state);
      assert.equal(resumed.error, undefined, resumed.error?.message);
      const get = server.requests.slice(before).find((r) => r.method === 'GET');
      assert.equal(get?.headers.range, how === 'Range' ? `bytes=${saved['byteOffset']}-` : undefined);
      assert.deepEqual([...docsCommitted, ...resumed.docs], full.docs);
      assert.ok(resumed.logs.some((l) => new RegExp(`resuming the capture of this version of the file after ${saved['records']} documents`).test(l.msg)));
    });
  }

  test('resume from an upstream-shaped state (minBound only) skips an old file', async () => {
    const run = await capture('/data.csv', undefined, { bindingStateV1: { data: { minBound: '2016-01-01T00:00:00Z', maxBound: null, maxMod: null, path: '', records: 0, complete: false } } });
    assert.equal(run.error, undefined);
    assert.equal(run.docs.length, 0);
  });

  test('HEAD refused through the protocol: captured with a ranged GET probe; a URL ending in / is captured by content type, _meta/file ""', async () => {
    const probed = await capture('/no-head.csv');
    assert.equal(probed.error, undefined, probed.error?.message);
    assert.deepEqual(probed.docs, expectedCsv('no-head.csv'));
    const refused = await capture('/no-head-no-lm.csv');
    assert.match(refused.error?.message ?? '', /^the server refused the HEAD request for .* \(405 Method Not Allowed\) and its GET response has no Last-Modified header/);
    assert.equal(refused.docs.length, 0);
    const dir = await capture('/dir/');
    assert.equal(dir.error, undefined, dir.error?.message);
    assert.deepEqual(dir.docs, expectedCsv(''));
  });

  test('bad input: unknown format and unsupported format', async () => {
    const run = await capture('/unknown.bin');
    assert.equal(run.error?.message, "unable to automatically determine the format for file 'unknown.bin'. explicit format configuration required: set parser.format.type to csv, json, avro, parquet, protobuf or w3cExtendedLog");
    const xls = await runProtocol(connector, [openRequest({ url: server.url('/report.xlsx') })]);
    assert.match(xls.error?.message ?? '', /HTTP request failed with status 404|unsupported format/);
  });

  test('bad input: a CSV column named _meta', async () => {
    const run = await capture('/meta-column.csv');
    assert.equal(run.error?.message, 'unable to add value: record 0 has a non-object _meta ("x") at location /_meta/offset; rename the \'_meta\' column or field');
  });

  test('bad input: over-threshold errors commit nothing past the last good checkpoint', async () => {
    const run = await capture('/ragged.csv', { format: { type: 'csv', config: { errorThreshold: 1 } } });
    assert.match(run.error?.message ?? '', /^error limit exceeded: 1 of the last 41 CSV rows are malformed \(2%\), at or above errorThreshold 1%/);
    const lastCheckpoint = run.responses.map((r) => 'checkpoint' in r).lastIndexOf(true);
    assert.equal(run.responses.slice(lastCheckpoint + 1).filter((r) => 'captured' in r).length, 0, 'the runtime writes no document after the last checkpoint before failing');
    const within = await capture('/ragged.csv', { format: { type: 'csv', config: { errorThreshold: 5 } } });
    assert.equal(within.error, undefined);
    assert.equal(within.docs.length, 40);
    assert.ok(within.logs.some((l) => /1 malformed CSV rows were excluded/.test(l.msg)));
  });

  test('bad input: invalid JSON through the protocol', async () => {
    const run = await capture('/bad.json');
    assert.match(run.error?.message ?? '', /^failed to parse JSON at line 2 \(byte offset 8\): /);
  });

  test('bad input: validate checks the protobuf message and the encoding label before any request', async () => {
    const bindings = [{ resourceConfig: { stream: 'data' }, collection: { name: 'acme/data' } }];
    const pb = await runProtocol(connector, [{ validate: { name: 'acme/http', config: { url: server.url('/feed.pb'), parser: { format: { type: 'protobuf', config: { message: 'Nope', protoFile: PROTO } } } }, bindings } }]);
    assert.equal(pb.error?.message, "no such message 'Nope' found in proto file (messages: transit_realtime.FeedEntity, transit_realtime.FeedMessage)");
    const enc = await runProtocol(connector, [{ validate: { name: 'acme/http', config: { url: server.url('/data.csv'), parser: { format: { type: 'csv', config: { encoding: 'UTF-8' } } } }, bindings } }]);
    assert.equal(enc.error, undefined, enc.error?.message);
  });

  test('bad input: a malformed defaultOffset', async () => {
    const run = await capture('/data.csv', { defaultOffset: 'UTC' });
    assert.match(run.error?.message ?? '', /parser\.defaultOffset: could not parse offset 'UTC'|must match pattern/);
  });

  test('Last-Modified is stored; LAST_MODIFIED constant matches', () => {
    assert.equal(new Date(LAST_MODIFIED).toISOString(), '2015-10-21T07:28:00.000Z');
  });
});
