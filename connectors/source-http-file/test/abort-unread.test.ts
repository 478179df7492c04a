// A capture that fails while the HTTP body is still being received must end with its own error, and the
// abort of the unread response must not surface as an unhandled 'error' event.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { until } from '@sluice/runtime/testing';
import { createHttpFileConnector } from '../src/index.ts';
import { openRequest, runProtocol, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const LINES = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(40) }));
LINES.splice(100, 0, '{"_meta":5}');
let server: FileServer;
before(async () => {
  server = await startServer({ '/big.jsonl': { body: `${LINES.join('\n')}\n`, slowChunk: 4096, slowDelayMs: 2 } });
});
after(() => server.close());

test('bad input mid-file with the body still unread: the capture fails with its own error and nothing escapes', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown): void => { uncaught.push(err); };
  process.on('uncaughtException', onUncaught);
  try {
    const run = await runProtocol(createHttpFileConnector({ worker: false }), [openRequest({ url: server.url('/big.jsonl') })]);
    assert.match(run.error?.message ?? '', /_meta/);
    // The aborted response has settled once its connection is closed; an error escaping it would surface then.
    await until('the aborted response\'s connection to close', () => server.openConnections() === 0);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(uncaught.map(String), []);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
