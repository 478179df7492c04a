// Ingest throughput and latency: 100-document requests (PUT /ingest) over loopback against the local
// plane's ingester (validate every document, stamp UUIDs, one SQLite transaction per request, fsync),
// compared with a no-op handler on the SAME HTTP server in the same run (it reads the body and answers
// 200), which isolates the cost of ingestion from HTTP itself.
//   npx node bench/ingest.ts [--requests 2000] [--concurrency 4] [--docs 100]
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { CollectionSpec } from '@sluice/runtime';
import { createIngestHandler, notFound } from '../plane/src/ingest/ingest.ts';
import { JournalStore } from '../plane/src/journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../plane/src/journals/validator.ts';
import { CollectionWriters } from '../plane/src/journals/writer.ts';

const { values } = parseArgs({ options: { requests: { type: 'string' }, concurrency: { type: 'string' }, docs: { type: 'string' } } });
const REQUESTS = Number(values.requests ?? 2000);
const CONCURRENCY = Number(values.concurrency ?? 4);
const DOCS = Number(values.docs ?? 100);

const rides: CollectionSpec = {
  name: 'bench/rides',
  key: ['/ride_id'],
  uuidPtr: '/_meta/uuid',
  partitionFields: [],
  writeSchema: {
    type: 'object',
    properties: {
      ride_id: { type: 'string' }, rideable_type: { type: 'string', enum: ['classic_bike', 'electric_bike', 'docked_bike'] },
      started_at: { type: 'string', format: 'date-time' }, start_station: { type: 'string' }, end_station: { type: 'string' },
      member: { type: 'boolean' }, duration_s: { type: 'integer', minimum: 0 }, distance_km: { type: 'number' },
    },
    required: ['ride_id', 'rideable_type', 'started_at', 'duration_s'],
  },
  projections: [],
};

function body(req: number): string {
  const docs = Array.from({ length: DOCS }, (_, i) => ({
    ride_id: `R${req}-${i}`, rideable_type: i % 3 ? 'classic_bike' : 'electric_bike', started_at: '2024-05-01T05:00:30Z',
    start_station: 'Broadway & W 60 St', end_station: 'Grand Army Plaza', member: i % 4 !== 0, duration_s: 300 + i, distance_km: 1.25,
  }));
  return JSON.stringify({ 'bench/rides': docs });
}

const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-ingest-'));
const store = JournalStore.open(dir);
const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
writers.setCollections([rides]);
const ingest = createIngestHandler({ store: () => store, writers: () => writers });
const server = createServer((req, res) => {
  if (req.url === '/noop') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = '{"ok":true}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': text.length });
      res.end(text);
    });
    return;
  }
  void ingest(req, res).then((handled) => { if (!handled) notFound(res); });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const bodies = Array.from({ length: 50 }, (_, i) => body(i));

function send(path: string, payload: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${path}: HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function run(path: string, n: number): Promise<{ docsPerSec: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < n) {
      const i = next++;
      latencies.push(await send(path, bodies[i % bodies.length]!));
    }
  }));
  const secs = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  return { docsPerSec: (n * DOCS) / secs, p50: q(0.5), p99: q(0.99) };
}

try {
  await run('/noop', 100);
  await run('/ingest', 100);
  const noop = await run('/noop', REQUESTS);
  const ing = await run('/ingest', REQUESTS);
  const f = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log(`ingest benchmark: ${REQUESTS} requests × ${DOCS} documents, concurrency ${CONCURRENCY}, loopback, journals in SQLite WAL (synchronous=FULL)`);
  console.log(`  no-op handler   ${f(noop.docsPerSec).padStart(10)} docs/s   p50 ${noop.p50.toFixed(2)} ms   p99 ${noop.p99.toFixed(2)} ms`);
  console.log(`  /ingest         ${f(ing.docsPerSec).padStart(10)} docs/s   p50 ${ing.p50.toFixed(2)} ms   p99 ${ing.p99.toFixed(2)} ms`);
  console.log(`  ratio           ${(ing.docsPerSec / noop.docsPerSec).toFixed(3)} of the no-op throughput, p99 ${(ing.p99 / noop.p99).toFixed(1)}× the no-op p99`);
  const heads = store.journals().map((j) => `${j.name} ${f(j.head)} bytes`);
  console.log(`  wrote           ${heads.join(', ')}`);
} finally {
  agent.destroy();
  await new Promise((r) => server.close(r));
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
