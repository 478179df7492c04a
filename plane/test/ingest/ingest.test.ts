import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createIngestHandler, notFound, type IngestLimits } from '../../src/ingest/ingest.ts';
import { JournalStore } from '../../src/journals/store.ts';
import { UuidProducer, uuidTime } from '@sluice/runtime';
import { until } from '@sluice/runtime/testing';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { CollectionWriters } from '../../src/journals/writer.ts';
import { collection, tempDir } from '../journals/helpers.ts';

const rides = collection('examples/rides', { id: { type: 'integer' }, name: { type: 'string' } }, ['/id']);
const orders = collection('acmeCo/orders', { order_id: { type: 'string' }, region: { type: 'string' }, total: { type: 'number' } }, ['/order_id'], { partitions: ['region'] });

async function setup(t: { after: (fn: () => void | Promise<void>) => void }, limits: Partial<IngestLimits> = {}) {
  const store = JournalStore.open(tempDir(t));
  const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
  writers.setCollections([rides, orders]);
  const handle = createIngestHandler({ store: () => store, writers: () => writers, limits });
  const server: Server = createServer((req, res) => {
    void handle(req, res).then((handled) => { if (!handled) notFound(res); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => { await new Promise((r) => server.close(r)); store.close(); });
  const port = (server.address() as AddressInfo).port;
  const send = (body: string | Buffer, options: { method?: string; contentType?: string; path?: string } = {}) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: options.path ?? '/ingest', method: options.method ?? 'POST', agent: false, headers: { 'content-type': options.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { text += c; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  /** Sends and expects a JSON error `{"status", "error"}` with this status; returns the message. */
  const error = async (body: string | Buffer, status: number, options: { contentType?: string } = {}) => {
    const r = await send(body, options);
    assert.equal(r.status, status, r.body);
    assert.equal(r.type, 'application/json');
    const parsed = JSON.parse(r.body) as { status: number; error: string };
    assert.equal(parsed.status, status);
    return parsed.error;
  };
  /** Starts a request of `total` bytes, sending `first` now; `rest` sends the remainder. */
  const open = (total: number, first: string) => {
    let resolveRes!: (r: { status: number; body: string }) => void;
    const response = new Promise<{ status: number; body: string }>((r) => { resolveRes = r; });
    const req = request({ host: '127.0.0.1', port, path: '/ingest', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': total } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => resolveRes({ status: res.statusCode ?? 0, body: text }));
    });
    req.write(first);
    return { response, rest: (text: string) => req.end(text) };
  };
  return { store, send, error, open };
}

/** Waits (yielding to the event loop) until `cond` holds; fails naming what it awaited after `ms`. */
test('ingest: other methods, paths and media types are the legacy 404', async (t) => {
  const { send, store } = await setup(t);
  const body = JSON.stringify({ 'examples/rides': [{ id: 1 }] });
  for (const o of [{ method: 'GET' }, { method: 'DELETE' }, { contentType: 'application/jsonx' }, { contentType: 'text/plain' }, { contentType: 'application/x-ndjson; charset=utf-8' }, { path: '/ingest/x' }]) {
    const r = await send(o.method === 'GET' ? '' : body, o);
    assert.equal(r.status, 404, JSON.stringify(o) + r.body);
    assert.equal(r.body, '404 page not found\n');
  }
  assert.deepEqual(store.journals(), []);
});

test('ingest: PUT and POST write every document, response has Offsets and the SQLite header', async (t) => {
  const { send, store } = await setup(t);
  const r = await send(JSON.stringify({ 'examples/rides': [{ id: 1, name: 'a' }, { id: 2 }], 'acmeCo/orders': [{ order_id: 'x', region: 'EU', total: 1 }, { order_id: 'y', region: 'US West', total: 2 }] }));
  assert.equal(r.status, 200, r.body);
  assert.equal(r.type, 'application/json');
  const m = /^\{"Offsets":(\{.*\}),"SQLite":\{"cluster_id":(\d+),"member_id":(\d+),"revision":(\d+),"raft_term":(\d+)\}\}$/.exec(r.body);
  assert.ok(m, r.body);
  const offsets = JSON.parse(m[1] ?? '') as Record<string, number>;
  assert.deepEqual(Object.keys(offsets).sort(), ['acmeCo/orders/region=EU/pivot=00', 'acmeCo/orders/region=US%20West/pivot=00', 'examples/rides/pivot=00']);
  for (const [journal, head] of Object.entries(offsets)) assert.equal(store.head(journal), head);
  assert.equal(m[2], String(store.header().cluster_id));
  const docs = store.read('examples/rides/pivot=00', 0).map((d) => JSON.parse(d.json) as { id: number; _meta: { uuid: string } });
  assert.deepEqual(docs.map((d) => d.id), [1, 2]);
  assert.ok(uuidTime(docs[0]?._meta.uuid ?? '') instanceof Date);
  const put = await send(JSON.stringify({ 'examples/rides': [{ id: 3 }] }), { method: 'PUT' });
  assert.equal(put.status, 200);
  assert.ok((JSON.parse(put.body.replace(/:(\d{16,})/g, ':"$1"')) as { Offsets: Record<string, number> }).Offsets['examples/rides/pivot=00']! > offsets['examples/rides/pivot=00']!);
  assert.equal(Number(/"revision":(\d+)/.exec(put.body)?.[1]), Number(m[4]) + 1);
});

test('ingest: application/json with parameters is accepted; a charset other than UTF-8 is a 415', async (t) => {
  const { send, store, error } = await setup(t);
  const body = JSON.stringify({ 'examples/rides': [{ id: 1 }] });
  for (const contentType of ['application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"', 'application/json; charset=utf8', 'application/json; foo=bar']) {
    const r = await send(body, { contentType });
    assert.equal(r.status, 200, `${contentType}: ${r.body}`);
  }
  assert.equal(await error(body, 415, { contentType: 'application/json; charset=iso-8859-1' }),
    'unsupported charset "iso-8859-1": the ingester reads UTF-8 only; send the body as UTF-8 with Content-Type: application/json (or application/json; charset=utf-8)');
  assert.equal(store.read('examples/rides/pivot=00', 0).length, 4);
});

test('ingest: one bad document means nothing is written; the 400 names collection, index and error', async (t) => {
  const { error, store } = await setup(t);
  assert.equal(await error(JSON.stringify({ 'examples/rides': [{ id: 1 }, { id: 2 }], 'acmeCo/orders': [{ order_id: 'x', region: 'EU', total: 1 }, { order_id: 'y', region: 'EU', total: 'lots' }] }), 400),
    'ingestion of collection "acmeCo/orders": document 1: /total: must be number');
  assert.deepEqual(store.journals(), []);
  assert.equal(await error(JSON.stringify({ 'examples/rides': [{ name: 'no id' }] }), 400), 'ingestion of collection "examples/rides": document 0: document root: missing required property "id"');
  assert.equal(await error(JSON.stringify({ 'examples/rides': [{ id: 1 }, 7] }), 400), 'ingestion of collection "examples/rides": document 1: expected a JSON object, got number');
  assert.deepEqual(store.journals(), []);
});

test('ingest: the journal keeps each document as sent, integers beyond ±2^53 exact; newlines in it become spaces', async (t) => {
  const { send, store } = await setup(t);
  const r = await send('{"examples/rides": [{"id": 9007199254740993, "name": "n\\u00e9", "big": 123456789012345678901234567890, "x": 1.50},\n  {"id": 2,\r\n "name":\n"b"}]}');
  assert.equal(r.status, 200, r.body);
  const lines = store.read('examples/rides/pivot=00', 0).map((d) => d.json.replace(/"_meta":\{"uuid":"[^"]+"\}/, '"_meta":{}'));
  assert.deepEqual(lines, [
    '{"id": 9007199254740993, "name": "n\\u00e9", "big": 123456789012345678901234567890, "x": 1.50,"_meta":{}}',
    '{"id": 2,   "name": "b","_meta":{}}',
  ]);
});

test('ingest: numbers beyond a double are refused with the document and pointer; nothing is written', async (t) => {
  const { error, store } = await setup(t);
  assert.equal(await error('{"examples/rides": [{"id": 1}, {"id": 1e400}]}', 400),
    'ingestion of collection "examples/rides": document 1: /id: number is out of range (beyond ±1.7976931348623157e308, it cannot be stored exactly); send it as a string, or a smaller number');
  assert.match(await error('{"acmeCo/orders": [{"order_id": "a", "region": "EU", "total": -1E400, "x": {"a/b~": [1, 2e999]}}]}', 400), /document 0: \/total: number is out of range/);
  assert.match(await error('{"examples/rides": [{"id": 1, "name": "1e400", "x": {"a/b~": [1, 2e999]}}]}', 400), /document 0: \/x\/a~1b~0\/1: number is out of range/);
  assert.match(await error(`{"examples/rides": [{"id": 1${'0'.repeat(400)}}]}`, 400), /document 0: \/id: number is out of range/);
  assert.deepEqual(store.journals(), []);
});

test('ingest: a document nested deeper than the limit is a 400 naming it, however deep', async (t) => {
  const { error, send, store } = await setup(t);
  for (const depth of [129, 5_000, 100_000]) {
    const deep = '{"id": 1, "x": ' + '['.repeat(depth - 1) + ']'.repeat(depth - 1) + '}';
    assert.equal(await error(`{"examples/rides": [{"id": 0}, ${deep}]}`, 400),
      'ingestion of collection "examples/rides": document 1: nested deeper than 128 levels of objects and arrays (the limit is 128)');
  }
  const ok = '{"id": 1, "x": ' + '['.repeat(127) + ']'.repeat(127) + '}';
  assert.equal((await send(`{"examples/rides": [${ok}]}`)).status, 200);
  assert.equal(store.read('examples/rides/pivot=00', 0).length, 1);
});

test('ingest: the documents-per-request cap and the body size limit are 413s; nothing is written', async (t) => {
  const { error, send, store } = await setup(t, { maxDocuments: 1000, maxBodyBytes: 200_000 });
  const docs = (n: number) => JSON.stringify({ 'examples/rides': Array.from({ length: n }, (_, i) => ({ id: i })) });
  assert.equal(await error(docs(1001), 413), 'request has more than 1000 documents; split it into several requests (each request is one transaction)');
  assert.equal(await error(JSON.stringify({ 'examples/rides': [{ id: 1, name: 'x'.repeat(300_000) }] }), 413), 'request body exceeds 200000 bytes; split it into several requests');
  assert.deepEqual(store.journals(), []);
  assert.equal((await send(docs(1000))).status, 200);
});

test('ingest: bytes that are not UTF-8 are a 400, never replaced', async (t) => {
  const { error, store } = await setup(t);
  const body = Buffer.concat([Buffer.from('{"examples/rides": [{"id": 1, "name": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]);
  assert.equal(await error(body, 400), 'ingestion of collection "examples/rides": document 0 is not valid UTF-8; send the body encoded as UTF-8');
  assert.deepEqual(store.journals(), []);
});

test('ingest: unknown collection, malformed JSON and non-object bodies are 400', async (t) => {
  const { error, store } = await setup(t);
  assert.equal(await error(JSON.stringify({ 'examples/rides': [{ id: 1 }], 'not/found': [{}] }), 400),
    'fetching specification for "not/found": not found (no collection of that name in the catalog)');
  assert.equal(await error('{"examples/rides": [,]}', 400), "request body is not valid JSON: expected a document at byte 20, got ','");
  assert.equal(await error('{"examples/rides": [{"id": 1},]}', 400), "request body is not valid JSON: expected a document at byte 30, got ']'");
  assert.match(await error('{"examples/rides": [{"id": 1,}]}', 400), /^request body is not valid JSON: ingestion of collection "examples\/rides": document 0: /);
  assert.equal(await error('{"examples/rides": [{"id": 1}]', 400), 'request body is not valid JSON: expected more JSON at byte 30, got the end of the body');
  assert.equal(await error('{"examples/rides": [{"id": 1}]} x', 400), "request body is not valid JSON: expected the end of the body after the closing '}' at byte 32, got 'x'");
  assert.equal(await error('', 400), 'request body is empty; send a JSON object mapping collection names to arrays of documents');
  assert.equal(await error('[]', 400), 'request body must be a JSON object mapping collection names to arrays of documents');
  assert.equal(await error('{"examples/rides": {"id": 1}}', 400), 'ingestion of collection "examples/rides": expected an array of documents, got object');
  assert.deepEqual(store.journals(), []);
});

test('ingest: concurrent requests are each atomic and offsets account for every byte', async (t) => {
  const { send, store } = await setup(t);
  const n = 40;
  const results = await Promise.all(Array.from({ length: n }, (_, i) => send(JSON.stringify({
    'examples/rides': Array.from({ length: 25 }, (_, j) => ({ id: i * 100 + j, name: `r${i}` })),
    'acmeCo/orders': [{ order_id: `o${i}`, region: i % 2 ? 'EU' : 'US', total: i }],
  }))));
  assert.ok(results.every((r) => r.status === 200));
  const docs = store.read('examples/rides/pivot=00', 0, 100_000);
  assert.equal(docs.length, n * 25);
  // Contiguous offsets, and each request's 25 documents are adjacent (one transaction each).
  let offset = 0;
  for (const d of docs) { assert.equal(d.begin, offset); offset = d.end; }
  assert.equal(offset, store.head('examples/rides/pivot=00'));
  for (let k = 0; k < docs.length; k += 25) {
    const names = new Set(docs.slice(k, k + 25).map((d) => (JSON.parse(d.json) as { name: string }).name));
    assert.equal(names.size, 1);
  }
  // Requests may share a commit (group commit): those that did report the same revision and heads.
  const byRevision = new Map<number, string>();
  for (const r of results) {
    const revision = Number(/"revision":(\d+)/.exec(r.body)?.[1]);
    const head = /"examples\/rides\/pivot=00":(\d+)/.exec(r.body)?.[1] ?? '';
    assert.equal(byRevision.get(revision) ?? head, head, `revision ${revision} has one head`);
    byRevision.set(revision, head);
  }
  assert.equal(Math.max(...byRevision.keys()), store.header().revision);
});

test('ingest: a large request is staged as it arrives; a small one commits meanwhile; nothing of it shows until it ends, and a failed one leaves nothing', async (t) => {
  const { send, store, open } = await setup(t);
  const pad = 'p'.repeat(900);
  const docs = Array.from({ length: 12_000 }, (_, i) => `{"order_id":"big${i}","region":"${i % 3 ? 'EU' : 'US'}","total":${i},"pad":"${pad}"}`);
  const head = '{"acmeCo/orders": [';
  const first = head + docs.slice(0, 8_000).join(',') + ',';
  const rest = docs.slice(8_000).join(',') + ']}';
  const big = open(Buffer.byteLength(first) + Buffer.byteLength(rest), first);
  // Over SPILL_BYTES: part of it is in the store already, still invisible.
  await until('the large request to stage pieces in the store', () => store.stagedPieces() > 0);
  const small = await send(JSON.stringify({ 'acmeCo/orders': [{ order_id: 'small', region: 'EU', total: 1 }] }));
  assert.equal(small.status, 200, small.body);
  assert.deepEqual(store.read('acmeCo/orders/region=EU/pivot=00', 0).map((d) => (JSON.parse(d.json) as { order_id: string }).order_id), ['small']);
  assert.equal(store.head('acmeCo/orders/region=US/pivot=00'), 0);
  big.rest(rest);
  const r = await big.response;
  assert.equal(r.status, 200, r.body);
  const ids = (journal: string) => store.read(journal, 0, 100_000).map((d) => (JSON.parse(d.json) as { order_id: string }).order_id);
  assert.deepEqual(ids('acmeCo/orders/region=EU/pivot=00'), ['small', ...docs.map((_, i) => `big${i}`).filter((_, i) => i % 3 !== 0)]);
  assert.deepEqual(ids('acmeCo/orders/region=US/pivot=00'), docs.map((_, i) => `big${i}`).filter((_, i) => i % 3 === 0));
  let offset = 0;
  for (const d of store.read('acmeCo/orders/region=EU/pivot=00', 0, 100_000)) { assert.equal(d.begin, offset); offset = d.end; }
  assert.equal(offset, store.head('acmeCo/orders/region=EU/pivot=00'));
  const committed = store.stagedPieces();

  // The same request with a bad last document: a 400, and what it had staged is gone.
  const heads = store.journals().map((j) => j.head);
  const badRest = docs.slice(8_000, -1).join(',') + ',{"order_id":"bad","region":"EU","total":"lots"}]}';
  const bad = open(Buffer.byteLength(first) + Buffer.byteLength(badRest), first);
  await until('the failing request to stage pieces in the store', () => store.stagedPieces() > committed);
  bad.rest(badRest);
  const b = await bad.response;
  assert.equal(b.status, 400, b.body);
  assert.match(b.body, /document 11999: \/total: must be number/);
  assert.equal(store.stagedPieces(), committed);
  assert.deepEqual(store.journals().map((j) => j.head), heads);
});

test('ingest: documents over 512 KiB (admitted in steps) keep their place among the others, and their errors name them', async (t) => {
  const { send, error, store } = await setup(t);
  const big = (id: number) => `{"id": ${id}, "name": "${'b'.repeat(700_000)}",\n "x": 1}`;
  const r = await send(`{"examples/rides": [{"id": 1}, ${big(2)}, {"id": 3}, ${big(4)}, {"id": 5}]}`);
  assert.equal(r.status, 200, r.body);
  const docs = store.read('examples/rides/pivot=00', 0).map((d) => d.json.replace(/,"_meta":\{"uuid":"[^"]+"\}/, ''));
  assert.deepEqual(docs.map((d) => (JSON.parse(d) as { id: number }).id), [1, 2, 3, 4, 5]);
  assert.equal(docs[1], big(2).replace('\n', ' '));
  const head = store.head('examples/rides/pivot=00');
  assert.equal(await error(`{"examples/rides": [{"id": 6}, ${big(7).replace('"x": 1', '"x": 1,')}, {"id": 8}]}`, 400).then((m) => m.slice(0, 80)),
    'request body is not valid JSON: ingestion of collection "examples/rides": docume');
  assert.match(await error(`{"examples/rides": [{"id": 6}, ${big(7).replace('"id": 7', '"id": "seven"')}]}`, 400), /^ingestion of collection "examples\/rides": document 1: \/id: must be integer/);
  assert.equal(store.head('examples/rides/pivot=00'), head);
});
