// The parser thread (src/parallel.ts, src/worker.ts): the same documents, states, errors and logs as the
// single-thread path; resume by Range and by skipping; the thread ends on every way out (error mid-file,
// HTTP failure, abort, SIGTERM of the bin).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { until } from '@sluice/runtime/testing';
import { createHttpFileConnector } from '../src/index.ts';
import { liveWorkers, prestartParserThread, releasePrestartedThread } from '../src/parallel.ts';
import { applyCheckpoints, openRequest, runProtocol, startServer } from './helpers.ts';
import type { FileServer, ProtocolRun } from './helpers.ts';
import { gzipSync, zstdCompressSync } from './fixtures.ts';

const N = 6000;
const ROWS = Array.from({ length: N }, (_, i) => `${i},"v ${i}, é",2024-01-0${1 + (i % 9)} 10:00:00`).join('\n');
const CSV = `id,value,at\n${ROWS}\n`;
const RAGGED = `a,b\n${Array.from({ length: 3000 }, (_, i) => (i % 100 === 7 ? `${i}` : `${i},x${i}`)).join('\n')}\n`;
const JSONL = Array.from({ length: N }, (_, i) => JSON.stringify({ id: i, value: `v ${i}`, nested: { k: [i, null, true] } })).join('\n');
const http = { backoffBaseMs: 5, backoffMaxMs: 20, maxRetries: 1, connectTimeoutMs: 2000, idleTimeoutMs: 5000 };
const single = createHttpFileConnector({ http, checkpointEvery: 500, worker: false });
const threaded = createHttpFileConnector({ http, checkpointEvery: 500, worker: true });
const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;

/** Waits until every parser thread has exited. */
async function threadsEnded(): Promise<void> {
  await until('every parser thread to exit', () => liveWorkers() === 0);
}
const finalState = (run: ProtocolRun): JsonObject => applyCheckpoints({}, run.checkpoints);
const logsOf = (run: ProtocolRun, re: RegExp): string[] => run.logs.map((l) => l.msg).filter((m) => re.test(m));

describe('parser thread', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      '/d.csv': { body: CSV, slowChunk: 8192, slowDelayMs: 0 },
      '/d.csv.gz': { body: gzipSync(CSV), slowChunk: 4096, slowDelayMs: 0 },
      '/d.csv.zst': { body: zstdCompressSync(Buffer.from(CSV)), slowChunk: 4096, slowDelayMs: 0 },
      '/d.jsonl': { body: JSONL, slowChunk: 8192, slowDelayMs: 0 },
      '/ragged.csv': { body: RAGGED },
      '/truncated.csv.gz': { body: gzipSync(CSV).subarray(0, 30_000) },
      // Small enough to be read whole before the error (an abort with the body unread raises an unhandled
      // socket 'error' on the single-thread path too: a known problem of http.ts, reported, not fixed here).
      '/meta.jsonl': { body: '{"a":1}\n{"a":2}\n{"_meta":5}\n' },
      '/quote.csv': { body: `${CSV}1,"never closed\n` },
      '/dropped.csv': { body: CSV, dropAfter: 40_000, dropTimes: 5, ranges: false },
    });
  });
  after(() => server.close());

  const both = async (path: string, parser?: object): Promise<[ProtocolRun, ProtocolRun]> => {
    const request = [openRequest({ url: server.url(path), ...(parser ? { parser } : {}) })];
    return [await runProtocol(single, request), await runProtocol(threaded, request)];
  };

  for (const [path, parser] of [['/d.csv'], ['/d.csv.gz'], ['/d.csv.zst'], ['/d.jsonl'], ['/ragged.csv', { format: { type: 'csv', config: { errorThreshold: 5 } } }]] as [string, object?][]) {
    test(`${path}: the same documents, final state and logs as the single thread`, async () => {
      const [a, b] = await both(path, parser);
      assert.equal(a.error, undefined, a.error?.message);
      assert.equal(b.error, undefined, b.error?.message);
      assert.ok(a.docs.length > 0);
      assert.deepEqual(b.docs, a.docs);
      assert.deepEqual(finalState(b), finalState(a));
      assert.ok(b.checkpoints.length > 2, 'checkpoints are interleaved, not only at the ends');
      // Every mid-file checkpoint's `records` is the number of documents before it (a completed file and a
      // finished sweep have records 0, as upstream).
      let docs = 0;
      for (const r of b.responses) {
        if ('captured' in r) docs++;
        const s = ((r['checkpoint'] as JsonObject | undefined)?.['state'] as JsonObject | undefined)?.['updated'] as JsonObject | undefined;
        const data = (s?.['bindingStateV1'] as JsonObject | undefined)?.['data'] as JsonObject | undefined;
        if (data && data['complete'] === false && data['path'] !== '') assert.equal(data['records'], docs);
      }
      assert.deepEqual(logsOf(b, /malformed|captured \d+ documents|compression|format/), logsOf(a, /malformed|captured \d+ documents|compression|format/));
      assert.equal(liveWorkers(), 0);
    });
  }

  test('a prestarted thread is taken by the next capture, and an unused one is released', async () => {
    prestartParserThread();
    prestartParserThread(); // one at a time
    assert.equal(liveWorkers(), 1);
    const [a, b] = await both('/d.csv.gz');
    assert.equal(b.error, undefined, b.error?.message);
    assert.deepEqual(b.docs, a.docs);
    assert.equal(liveWorkers(), 0, 'the capture took the prestarted thread and ended it');
    prestartParserThread();
    assert.equal(liveWorkers(), 1);
    // A small file parsed on the main thread releases the thread it did not need.
    const small = await runProtocol(createHttpFileConnector({ http, checkpointEvery: 500 }), [openRequest({ url: server.url('/meta.jsonl') })]);
    assert.match(small.error?.message ?? '', /non-object _meta/);
    await threadsEnded();
    prestartParserThread();
    releasePrestartedThread();
    await threadsEnded();
  });

  for (const [path, how] of [['/d.csv', 'Range'], ['/d.csv.gz', 'skip']] as const) {
    test(`${path}: resume after a crash mid-file (by ${how}) — no duplicate and no missing offset`, async () => {
      const full = await runProtocol(threaded, [openRequest({ url: server.url(path) })]);
      assert.equal(full.error, undefined, full.error?.message);
      // The session died right after the first checkpoint that falls mid-file.
      let cut = -1;
      full.responses.forEach((r, i) => {
        const s = (((r['checkpoint'] as JsonObject | undefined)?.['state'] as JsonObject | undefined)?.['updated'] as JsonObject | undefined);
        const rec = s ? (((s['bindingStateV1'] as JsonObject)['data'] as JsonObject)['records'] as number) : 0;
        if (cut < 0 && rec > 0 && rec < N) cut = i;
      });
      assert.ok(cut > 0, 'a checkpoint falls mid-file');
      const committed = full.responses.slice(0, cut + 1);
      const state = applyCheckpoints({}, committed.filter((r) => 'checkpoint' in r).map((r) => r['checkpoint'] as JsonObject));
      const saved = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
      assert.equal(typeof saved['byteOffset'] === 'number', how === 'Range', JSON.stringify(saved));
      const before = server.requests.length;
      const resumed = await runProtocol(threaded, [openRequest({ url: server.url(path) }, state)]);
      assert.equal(resumed.error, undefined, resumed.error?.message);
      const get = server.requests.slice(before).find((r) => r.method === 'GET');
      assert.equal(get?.headers.range, how === 'Range' ? `bytes=${saved['byteOffset']}-` : undefined);
      const docsCommitted = committed.filter((r) => 'captured' in r).map((r) => (r['captured'] as JsonObject)['doc'] as JsonObject);
      assert.deepEqual([...docsCommitted, ...resumed.docs], full.docs);
      assert.equal(liveWorkers(), 0);
    });
  }

  for (const [path, parser] of [['/truncated.csv.gz'], ['/meta.jsonl'], ['/quote.csv'], ['/ragged.csv', { format: { type: 'csv', config: { errorThreshold: 0.5 } } }], ['/dropped.csv']] as [string, object?][]) {
    test(`error mid-file (${path}): the same error and documents before it; the thread ends`, async () => {
      const [a, b] = await both(path, parser);
      assert.ok(a.error, 'the single thread fails');
      assert.equal(b.error?.name, a.error.name);
      assert.equal(b.error?.message, a.error.message);
      assert.equal((b.error as { code?: string }).code, (a.error as { code?: string }).code);
      // The documents written before the error are a prefix of the single thread's (it may have read further).
      assert.deepEqual(b.docs, a.docs.slice(0, b.docs.length));
      assert.equal(liveWorkers(), 0);
    });
  }

  test('abort (the session stops) ends the thread', async () => {
    const controller = new AbortController();
    const noop = (): void => {};
    const log = { debug: noop, info: noop, warn: noop, error: noop, status: noop, child: () => log };
    const it = threaded.open({
      config: { url: server.url('/d.csv.gz') }, log, signal: controller.signal, state: {}, range: {}, version: '',
      capture: { name: 'acme/x' }, bindings: [{ index: 0, resource: { stream: 'd' }, spec: { collection: { name: 'acme/d' } }, stateKey: 'd' }],
      acknowledgements: (async function* () {})(),
    } as never)[Symbol.asyncIterator]();
    let r = await it.next();
    while (!r.done && !('capturedLines' in r.value)) r = await it.next();
    assert.equal(liveWorkers(), 1);
    controller.abort();
    await it.return?.(undefined);
    assert.equal(liveWorkers(), 0);
  });

  const runBin = (path: string, env: Record<string, string>, onLine?: (line: string, kill: () => void) => void): Promise<{ code: number | null; signal: string | null; stderr: string; docs: number }> => {
    const child = spawn(process.execPath, [BIN], { env: { ...process.env, SLUICE_HTTP_FILE_WORKER: '1', HTTP_FILE_MAX_RETRIES: '0', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let buf = '';
    let docs = 0;
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.startsWith('{"captured"')) docs++;
        onLine?.(line, () => child.kill('SIGTERM'));
      }
    });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.stdin.end(`${JSON.stringify(openRequest({ url: server.url(path) }))}\n`);
    return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr, docs })));
  };

  test('the bin with the parser thread: an error mid-file exits 1 with the message', async () => {
    const p = await runBin('/truncated.csv.gz', {});
    assert.equal(p.code, 1, p.stderr);
    assert.match(p.stderr, /truncated|unexpected end/i);
  });

  test('the bin with the parser thread: SIGTERM mid-file exits 0 (the thread does not keep it alive)', async () => {
    server.routes.set('/slow.csv', { body: CSV, slowChunk: 1024, slowDelayMs: 5 });
    let killed = false;
    const p = await runBin('/slow.csv', {}, (line, kill) => {
      if (!killed && line.startsWith('{"captured"')) {
        killed = true;
        kill();
      }
    });
    assert.ok(killed, p.stderr);
    assert.equal(p.signal, null, p.stderr);
    assert.equal(p.code, 0, p.stderr);
    assert.ok(p.docs < N, `stopped before the end (${p.docs} documents)`);
  });
});
