import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createIngestHandler, notFound } from '../../src/ingest/ingest.ts';
import { JournalStore } from '../../src/journals/store.ts';
import { UuidProducer, uuidTime } from '../../src/journals/uuid.ts';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { CollectionWriters } from '../../src/journals/writer.ts';
import { collection, tempDir } from '../journals/helpers.ts';

const rides = collection('examples/rides', { id: { type: 'integer' }, name: { type: 'string' } }, ['/id']);
const orders = collection('acmeCo/orders', { order_id: { type: 'string' }, region: { type: 'string' }, total: { type: 'number' } }, ['/order_id'], { partitions: ['region'] });

async function setup(t: { after: (fn: () => void | Promise<void>) => void }) {
  const store = JournalStore.open(tempDir(t));
  const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
  writers.setCollections([rides, orders]);
  const handle = createIngestHandler({ store: () => store, writers: () => writers });
  const server: Server = createServer((req, res) => {
    void handle(req, res).then((handled) => { if (!handled) notFound(res); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => { await new Promise((r) => server.close(r)); store.close(); });
  const port = (server.address() as AddressInfo).port;
  const send = (body: string, options: { method?: string; contentType?: string; path?: string } = {}) =>
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
  return { store, send };
}

test('ingest: other methods, paths and content types are 404', async (t) => {
  const { send, store } = await setup(t);
  const body = JSON.stringify({ 'examples/rides': [{ id: 1 }] });
  for (const o of [{ method: 'GET' }, { method: 'DELETE' }, { contentType: 'application/json; charset=utf-8' }, { contentType: 'text/plain' }, { path: '/ingest/x' }]) {
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

test('ingest: one bad document means nothing is written; the 400 names collection, index and error', async (t) => {
  const { send, store } = await setup(t);
  const r = await send(JSON.stringify({ 'examples/rides': [{ id: 1 }, { id: 2 }], 'acmeCo/orders': [{ order_id: 'x', region: 'EU', total: 1 }, { order_id: 'y', region: 'EU', total: 'lots' }] }));
  assert.equal(r.status, 400);
  assert.match(r.type, /^text\/plain/);
  assert.equal(r.body, 'ingestion of collection "acmeCo/orders": document 1: /total: must be number\n');
  assert.deepEqual(store.journals(), []);
  const missingKey = await send(JSON.stringify({ 'examples/rides': [{ name: 'no id' }] }));
  assert.equal(missingKey.body, 'ingestion of collection "examples/rides": document 0: document root: missing required property "id"\n');
  const notObject = await send(JSON.stringify({ 'examples/rides': [{ id: 1 }, 7] }));
  assert.equal(notObject.body, 'ingestion of collection "examples/rides": document 1: expected a JSON object, got number\n');
  assert.deepEqual(store.journals(), []);
});

test('ingest: unknown collection, malformed JSON and non-object bodies are 400', async (t) => {
  const { send, store } = await setup(t);
  const unknown = await send(JSON.stringify({ 'examples/rides': [{ id: 1 }], 'not/found': [{}] }));
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body, 'fetching specification for "not/found": not found (no collection of that name in the catalog)\n');
  const bad = await send('{"examples/rides": [,]}');
  assert.equal(bad.status, 400);
  assert.match(bad.body, /^request body is not valid JSON: /);
  const arr = await send('[]');
  assert.equal(arr.body, 'request body must be a JSON object mapping collection names to arrays of documents\n');
  const notArray = await send('{"examples/rides": {"id": 1}}');
  assert.equal(notArray.body, 'ingestion of collection "examples/rides": expected an array of documents, got object\n');
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
