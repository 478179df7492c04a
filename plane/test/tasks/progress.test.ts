// Progress lines (#16.6): while a capture or materialization moves documents under serve, each task
// prints lines with documents and bytes so far and the current rate, and a final line per session;
// nothing with `quiet`. Driven by a real capture (source-http-file over loopback HTTP) into SQLite.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { until } from '@sluice/runtime/testing';
import { QUICKSTART_TEMPLATE, serveFile } from '../../src/quickstart/index.ts';
import { ridesCsvGz } from '../../src/quickstart/rides.ts';
import { startPlane } from '../../src/cli/serve.ts';

const TEMPLATE = QUICKSTART_TEMPLATE;

async function run(t: { after: (fn: () => void | Promise<void>) => void }, quiet: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-progress-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = await serveFile({ body: ridesCsvGz(2000), path: '/rides.csv.gz', contentType: 'application/gzip', lastModified: new Date(Date.UTC(2024, 0, 1)) });
  t.after(() => file.close());
  writeFileSync(join(dir, 'flow.yaml'), readFileSync(TEMPLATE, 'utf8').replaceAll('${QUICKSTART_URL}', file.url).replaceAll('${QUICKSTART_DB}', join(dir, 'out.db')));
  const lines: string[] = [];
  const running = await startPlane({
    catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, ingestPort: 0, watch: false,
    log: () => undefined, progress: (l) => lines.push(l), progressIntervalMs: 0, quiet,
  });
  t.after(() => running.close());
  assert.equal(running.first.result, 'success', running.first.errors.join('\n'));
  // The capture session completes once the file is captured (the runner then waits for its interval).
  await until(quiet ? 'the capture to commit documents' : 'the capture to commit documents and print "session complete"', () => {
    const m = running.plane.store.journals('quickstart/rides').reduce((a, j) => a + j.head, 0);
    return m > 0 && (quiet || lines.some((l) => l.startsWith('quickstart/source-rides: session complete')));
  }, { intervalMs: 50, detail: () => lines.join('\n') });
  return lines;
}

test('progress: per-task lines with documents, bytes and rate, and a final line per session', { timeout: 180_000 }, async (t) => {
  const lines = await run(t, false);
  const capture = lines.filter((l) => l.startsWith('quickstart/source-rides: '));
  const final = capture.find((l) => l.includes('session complete'));
  assert.match(final ?? '', /^quickstart\/source-rides: session complete: captured 2,000 documents \([\d.]+ [KM]B\) in [\d.]+ s \([\d,]+ docs\/s\)$/, lines.join('\n'));
  for (const l of capture.filter((x) => x !== final)) assert.match(l, /^quickstart\/source-rides: captured [\d,]+ documents \([\d.]+ [KM]B\) so far; now [\d,]+ docs\/s, [\d.]+ MB\/s$/);
  assert.equal(capture.filter((l) => l.includes('session complete')).length, 1);
  // With no minimum interval, every commit that moved documents printed a line before the final one.
  assert.ok(capture.length >= 2, lines.join('\n'));
});

test('progress: quiet prints none', { timeout: 180_000 }, async (t) => {
  assert.deepEqual(await run(t, true), []);
});
