// Benchmark: framing throughput of the runtime's writer, writing `captured` documents to a pipe
// (a child `cat > /dev/null`), against plain JSON.stringify + write (awaiting drain only when the
// pipe is full) of the same documents, in the same run. Also shown: the writer without document
// coalescing (one stream write per line, awaited), and the whole serveCapture path (connector
// generator → ordering checks → writer).
//   npx node bench/protocol.ts [--docs N] [--rounds R]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { MessageWriter } from '../runtime/src/protocol/message-writer.ts';
import { encodeCaptureOutput, serveCapture } from '../runtime/src/connector/capture.ts';
import { serveMaterialize } from '../runtime/src/connector/materialize.ts';
import type { CaptureConnector, MaterializeConnector } from '../runtime/src/connector/types.ts';
import { packTupleBase64 } from '../runtime/src/protocol/tuple.ts';
import type { TupleValue } from '../runtime/src/protocol/tuple.ts';
import type { JsonObject } from '../runtime/src/protocol/specs.ts';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '300000' }, rounds: { type: 'string', default: '5' } } });
const N = Number(values.docs);
const ROUNDS = Number(values.rounds);

function makeDocs(n: number): JsonObject[] {
  const docs: JsonObject[] = [];
  for (let i = 0; i < n; i++) {
    docs.push({
      id: `rider-${i}`, name: `Rider number ${i}`, email: `rider${i}@example.com`, amount: (i * 7.31) % 1000,
      ts: new Date(1700000000000 + i * 1000).toISOString(), tags: ['a', 'b', i % 3 ? 'c' : 'd'],
      address: { city: 'Springfield', zip: String(10000 + (i % 9000)) }, _meta: { op: 'c', row_id: i },
    });
  }
  return docs;
}

function sink(): { stdin: Writable; done: Promise<unknown> } {
  const child = spawn('sh', ['-c', 'cat > /dev/null'], { stdio: ['pipe', 'ignore', 'inherit'] });
  return { stdin: child.stdin, done: once(child, 'close') };
}

async function finish(s: { stdin: Writable; done: Promise<unknown> }): Promise<void> {
  s.stdin.end();
  await s.done;
}

async function baseline(docs: JsonObject[]): Promise<number> {
  const s = sink();
  const t0 = performance.now();
  for (const doc of docs) {
    if (!s.stdin.write(JSON.stringify({ captured: { doc } }) + '\n')) await once(s.stdin, 'drain');
  }
  await finish(s);
  return performance.now() - t0;
}

// The writer as serveCapture uses it for documents: validated, coalesced, awaited only when full.
async function writer(docs: JsonObject[]): Promise<number> {
  const s = sink();
  const w = new MessageWriter(s.stdin);
  const t0 = performance.now();
  for (const doc of docs) {
    const written = w.writeDocument(encodeCaptureOutput({ captured: { doc } }, 1));
    if (w.isBlocked) await written;
  }
  await w.flush();
  await finish(s);
  return performance.now() - t0;
}

// The writer with one stream write per line (how non-document messages go), awaited every time.
async function writerUnbuffered(docs: JsonObject[]): Promise<number> {
  const s = sink();
  const w = new MessageWriter(s.stdin);
  const t0 = performance.now();
  for (const doc of docs) await w.write({ captured: { doc } });
  await finish(s);
  return performance.now() - t0;
}

async function serve(docs: JsonObject[]): Promise<number> {
  const s = sink();
  const noop = (): void => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop, status: noop, child: () => log };
  const connector: CaptureConnector = {
    configSchema: { type: 'object' }, resourceConfigSchema: { type: 'object' }, documentationUrl: 'x', resourcePathPointers: ['/name'],
    async discover() { return []; },
    async *open() {
      for (const doc of docs) yield { captured: { doc } };
      yield { checkpoint: {} };
    },
  };
  const open = JSON.stringify({ open: { capture: { name: 'b/c', config: {}, bindings: [{ resourceConfig: { name: 'x' }, collection: { name: 'b/x' } }] } } }) + '\n';
  const t0 = performance.now();
  await serveCapture(connector, { input: [open], output: s.stdin, log });
  await finish(s);
  return performance.now() - t0;
}

// Reading side: serveMaterialize taking `store` requests (keyPacked + 9 packed values + doc) into a
// transactor that only counts them, against JSON.parse of the same lines alone.
function storeInput(docs: JsonObject[]): { chunks: Buffer[]; lines: string[] } {
  const lines = [JSON.stringify({ open: { materialization: { name: 'b/m', config: {}, bindings: [{ resourceConfig: {}, collection: { name: 'b/c' } }] } } })];
  const TXN = 10_000;
  for (let i = 0; i < docs.length; i++) {
    if (i % TXN === 0) {
      if (i > 0) lines.push('{"startCommit":{"runtimeCheckpoint":{}}}');
      lines.push('{"acknowledge":{}}', '{"flush":{}}');
    }
    const d = docs[i]!;
    const values = [d['name'], d['email'], d['amount'], d['ts'], JSON.stringify(d['tags']), JSON.stringify(d['address']), 'c', i, true] as TupleValue[];
    lines.push(JSON.stringify({ store: { keyPacked: packTupleBase64([String(d['id'])]), valuesPacked: packTupleBase64(values), doc: d, exists: i % 2 === 0 } }));
  }
  lines.push('{"startCommit":{"runtimeCheckpoint":{}}}', '{"acknowledge":{}}');
  const buf = Buffer.from(lines.join('\n') + '\n');
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += 65536) chunks.push(buf.subarray(i, i + 65536));
  return { chunks, lines };
}

async function materialize(chunks: Buffer[]): Promise<number> {
  const noop = (): void => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop, status: noop, child: () => log };
  let stored = 0;
  const connector: MaterializeConnector = {
    configSchema: { type: 'object' }, resourceConfigSchema: { type: 'object' }, documentationUrl: 'x',
    async validate() { return []; },
    async apply() { return {}; },
    async open() {
      return {
        opened: {},
        transactor: {
          async acknowledge() {},
          async load(loads) { for await (const _ of loads); },
          async store(stores) { for await (const _ of stores) stored++; },
          async startCommit() {},
        },
      };
    },
  };
  const { Writable } = await import('node:stream');
  const output = new Writable({ write(_c, _e, cb) { cb(); } });
  const t0 = performance.now();
  await serveMaterialize(connector, { input: chunks, output, log });
  const ms = performance.now() - t0;
  if (stored !== N) throw new Error(`stored ${stored} of ${N}`);
  return ms;
}

function parseOnly(lines: string[]): number {
  const t0 = performance.now();
  for (const line of lines) JSON.parse(line);
  return performance.now() - t0;
}

const docs = makeDocs(N);
const bytes = docs.reduce((n, d) => n + JSON.stringify({ captured: { doc: d } }).length + 1, 0);
const best = { baseline: Infinity, writer: Infinity, unbuffered: Infinity, serve: Infinity, materialize: Infinity, parse: Infinity };
const stores = storeInput(docs);
// Interleave the variants so that machine noise hits all of them alike; report the best round.
for (let r = 0; r < ROUNDS; r++) {
  best.baseline = Math.min(best.baseline, await baseline(docs));
  best.writer = Math.min(best.writer, await writer(docs));
  best.unbuffered = Math.min(best.unbuffered, await writerUnbuffered(docs));
  best.serve = Math.min(best.serve, await serve(docs));
  best.materialize = Math.min(best.materialize, await materialize(stores.chunks));
  best.parse = Math.min(best.parse, parseOnly(stores.lines));
}
const rate = (ms: number): number => N / (ms / 1000);
const fmt = (ms: number): string => `${Math.round(rate(ms)).toLocaleString('en-US')} docs/s (${(bytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s, ${ms.toFixed(0)} ms)`;
console.log(`protocol framing: ${N} captured documents (${(bytes / 1e6).toFixed(1)} MB) to a pipe, best of ${ROUNDS} rounds`);
console.log(`  baseline JSON.stringify + write  : ${fmt(best.baseline)}`);
console.log(`  runtime MessageWriter (documents): ${fmt(best.writer)}`);
console.log(`  MessageWriter, one write a line  : ${fmt(best.unbuffered)}`);
console.log(`  full serveCapture path           : ${fmt(best.serve)}`);
console.log(`ratio writer/baseline = ${(rate(best.writer) / rate(best.baseline)).toFixed(3)} (target >= 0.9)`);
console.log(`ratio unbuffered writer/baseline = ${(rate(best.unbuffered) / rate(best.baseline)).toFixed(3)}`);
console.log(`ratio serveCapture/baseline = ${(rate(best.serve) / rate(best.baseline)).toFixed(3)}`);
console.log(`reading: ${N} store requests (keyPacked, 9 packed values, doc), best of ${ROUNDS} rounds`);
console.log(`  JSON.parse of the lines alone   : ${Math.round(rate(best.parse)).toLocaleString('en-US')} msgs/s`);
console.log(`  serveMaterialize → transactor   : ${Math.round(rate(best.materialize)).toLocaleString('en-US')} msgs/s`);
console.log(`ratio serveMaterialize/JSON.parse = ${(rate(best.materialize) / rate(best.parse)).toFixed(3)}`);
