// kill -9 of `sluice serve` (the real bin) in the middle of a large /ingest request, after part of it
// was staged in the journal store (#17.6): nothing of the request may be visible after the restart —
// the request was never acknowledged — and what it staged is swept when the store opens. Decided by
// events (staged rows in journals.db), never by time.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { freePort, ingest, spawnServe, tempDir } from './helpers.ts';
import { until } from '@sluice/runtime/testing';

test('kill -9 of serve during a large ingest: nothing of it shows after the restart, its staged pieces are swept', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  const catalog = join(dir, 'flow.yaml');
  const dataDir = join(dir, 'data');
  writeFileSync(catalog, `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}, pad: {type: string}}, required: [id]}
    key: [/id]
`);
  const [port, ingestPort] = [await freePort(), await freePort()];
  const args = ['--catalog', catalog, '--port', String(port), '--ingest-port', String(ingestPort), '--data-dir', dataDir];
  const first = spawnServe(t, args);
  await first.waitFor(/^sluice: ready/m);
  const ingestUrl = `http://127.0.0.1:${ingestPort}/ingest`;
  const acked = await ingest(ingestUrl, '{"hostile/events": [{"id": 0}]}');
  assert.equal(acked.status, 200, acked.body);
  const head = Number(/"hostile\/events\/pivot=00":(\d+)/.exec(acked.body)?.[1]);

  // 20 MB of a request that never ends: the plane stages it as it arrives.
  const docs = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ id: i + 1, pad: 'p'.repeat(1000) })).join(',');
  const req = request({ host: '127.0.0.1', port: ingestPort, path: '/ingest', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 100_000_000 } });
  req.on('error', () => undefined);
  req.write(`{"hostile/events": [${docs},`);
  const staged = () => {
    const db = new DatabaseSync(join(dataDir, 'journals.db'), { readOnly: true });
    try {
      return Number((db.prepare('SELECT count(*) AS n FROM fragment_data').get() as { n: number }).n);
    } finally {
      db.close();
    }
  };
  await until('the large request to stage pieces in journals.db', () => staged() > 0, { ms: 60_000, detail: () => first.stderr() });
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  req.destroy();
  assert.ok(staged() > 0, 'the pieces are still in the file after the kill');

  const second = spawnServe(t, args);
  await second.waitFor(/^sluice: ready/m);
  assert.equal(staged(), 0, 'staged pieces of the unacknowledged request were swept');
  const after = await ingest(ingestUrl, '{"hostile/events": [{"id": 99}]}');
  assert.equal(after.status, 200, after.body);
  // The journal continues right after the acknowledged document: nothing of the killed request in between.
  const line = Buffer.byteLength('{"id": 99,"_meta":{"uuid":"00000000-0000-0000-0000-000000000000"}}') + 1;
  assert.equal(Number(/"hostile\/events\/pivot=00":(\d+)/.exec(after.body)?.[1]), head + line);
  assert.equal(await second.stop(), 0, second.stderr());
});
