// Constant memory: when the consumer of open() stops pulling, the server stops being read.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import type { CaptureOutput } from '@sluice/runtime';
import { createHttpFileConnector } from '../src/index.ts';
import { LAST_MODIFIED } from './helpers.ts';

for (const worker of [false, true]) test(`backpressure: a stalled consumer stops the socket (bounded read-ahead on a 256 MB body; parser ${worker ? 'in a worker thread' : 'on the main thread'})`, async () => {
  const TOTAL = 256 * 1024 * 1024;
  const row = 'x'.repeat(60);
  let produced = 0;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'last-modified': LAST_MODIFIED, 'content-length': TOTAL + 2 });
    if (req.method === 'HEAD') { res.end(); return; }
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
    // Stall: give the server time to fill every buffer it can.
    await new Promise((r) => setTimeout(r, 300));
    const snapshot = produced;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(produced, snapshot, 'the server is not read while the consumer is stalled');
    assert.ok(produced < 32 * 1024 * 1024, `read-ahead stays bounded (${produced} bytes produced of ${TOTAL})`);
  } finally {
    controller.abort();
    await it.return?.(undefined);
    server.closeAllConnections();
    server.close();
  }
});
