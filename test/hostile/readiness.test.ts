// Readiness (#16.5): serve accepts no request before its first publication has finished. The
// publication here is slow (its capture's apply takes 2 s), so a client that waits for the port and
// ingests at once arrives in the middle of it: its request must wait and then succeed (before the fix
// it got 400 "no collection of that name" for a collection of the catalog).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, ingest, SLOW_CAPTURE, spawnServe, tempDir, waitForPort } from './helpers.ts';

test('serve: a client that waits for the port and then ingests succeeds; the ready line comes after the publication', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}}, required: [id]}
    key: [/id]
captures:
  hostile/slow:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(SLOW_CAPTURE)}]
        config: {applyDelayMs: 2000, openDelayMs: 100}
    bindings:
      - resource: {name: events}
        target: hostile/events
`);
  const [port, ingestPort] = [await freePort(), await freePort()];
  const serve = spawnServe(t, ['--catalog', join(dir, 'flow.yaml'), '--port', String(port), '--ingest-port', String(ingestPort), '--data-dir', join(dir, 'data')]);
  await waitForPort(ingestPort);
  const early = ingest(`http://127.0.0.1:${ingestPort}/ingest`, '{"hostile/events": [{"id": 1}]}');
  const api = fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`);
  // The request was sent before the plane said it was ready.
  assert.doesNotMatch(serve.stderr(), /sluice: ready/);
  const r = await early;
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /^\{"Offsets":\{"hostile\/events\/pivot=00":\d+\}/);
  assert.equal((await api).status, 200);
  const [line] = await serve.waitFor(/^sluice: ready: .*$/m);
  assert.match(line, new RegExp(`API: http://127\\.0\\.0\\.1:${port}/api/v1 {2}ingester: http://127\\.0\\.0\\.1:${ingestPort}/ingest`));
  // The publication (with the slow apply) was logged before the ready line.
  assert.ok(serve.stderr().indexOf(' publication ') < serve.stderr().indexOf('sluice: ready'), serve.stderr());
  assert.equal(await serve.stop(), 0);
});
