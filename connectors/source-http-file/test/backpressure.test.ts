// Constant memory: when the consumer of open() stops pulling, the server stops being read.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import type { CaptureOutput } from '@sluice/runtime';
import { until } from '@sluice/runtime/testing';
import { createHttpFileConnector } from '../src/index.ts';
import { LAST_MODIFIED } from './helpers.ts';

for (const worker of [false, true]) test(`backpressure: a stalled consumer stops the socket (bounded read-ahead on a 256 MB body; parser ${worker ? 'in a worker thread' : 'on the main thread'})`, async () => {
  const TOTAL = 256 * 1024 * 1024;
  const row = 'x'.repeat(60);
  let produced = 0;
  let response: http.ServerResponse | undefined;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'last-modified': LAST_MODIFIED, 'content-length': TOTAL + 2 });
    if (req.method === 'HEAD') { res.end(); return; }
    response = res;
    res.write('a\n');
    // The body is generated on demand: only what the client's backpressure lets through is produced.
    const body = new Readable({
      read() {
        if (produced >= TOTAL) { this.push(null); return; }
        const chunk = `${row}\n`.repeat(1024);
        produced += chunk.length;
        this.push(chunk);
      },
    });
    body.pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/big.csv`;
  const noop = (): void => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop, status: noop, child: () => log };
  const controller = new AbortController();
  const it = createHttpFileConnector({ worker }).open({
    config: { url }, log, signal: controller.signal, state: {}, range: {}, version: '',
    capture: { name: 'acme/x' }, bindings: [{ index: 0, resource: { stream: 'big' }, spec: { collection: { name: 'acme/big' } }, stateKey: 'big' }],
    acknowledgements: (async function* () {})(),
  })[Symbol.asyncIterator]();
  try {
    let docs = 0;
    while (docs < 1000) {
      const r = await it.next();
      assert.equal(r.done, false);
      const out = r.value as CaptureOutput;
      if ('captured' in out) docs++;
      else if ('capturedLines' in out) docs += out.capturedLines.documents;
    }
    // Stall. The server fills every buffer it can, until its response waits for a drain that no read comes
    // for: awaited as that state holding over ten polls in a row (bounded read-ahead is checked on every poll,
    // so runaway reading fails at once rather than at the deadline).
    const bound = 32 * 1024 * 1024;
    let last = -1;
    let still = 0;
    await until('the server to be blocked by backpressure (its response waiting for a drain, nothing more produced)', () => {
      assert.ok(produced < bound, `read-ahead stays bounded (${produced} bytes produced of ${TOTAL})`);
      still = response?.writableNeedDrain === true && produced === last ? still + 1 : 0;
      last = produced;
      return still >= 10;
    }, { intervalMs: 50 });
    assert.ok(produced < bound, `read-ahead stays bounded (${produced} bytes produced of ${TOTAL})`);
  } finally {
    controller.abort();
    await it.return?.(undefined);
    server.closeAllConnections();
    server.close();
  }
});
