// kill -9 of the whole local plane, repeatedly, while documents are ingested and materialized; then a
// restart catches up. Journals must be consistent (contiguous offsets, every ingest batch whole) and the
// SQLite tables exact: one row per key with the last value (standard updates) and exactly one row per
// document (delta updates: a replayed or lost transaction would add or drop rows).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { LocalPlane } from '../plane/src/plane.ts';
import { checkpointKey } from '../plane/src/tasks/materialize.ts';
import { MemoryRecorder } from '../plane/src/tasks/memory-recorder.ts';
import { until } from '@sluice/runtime/testing';

const CHILD = fileURLToPath(new URL('./fixtures/plane-crash-child.ts', import.meta.url));
const CATALOG = `
collections:
  crash/events:
    schema:
      type: object
      properties:
        id: {type: string}
        batch: {type: integer}
        n: {type: integer}
        run: {type: string}
        group: {type: string}
      required: [id, batch, n, run, group]
    key: [/id]
    projections:
      group: {location: /group, partition: true}
materializations:
  crash/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: crash/events
        resource: {table: events}
      - source: crash/events
        resource: {table: events_delta, delta_updates: true}
        partitions: {exclude: {group: [c]}}
`;

function runChildFor(ms: number, catalog: string, dataDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // Its own process group, killed as a whole: the plane and its connector processes die together,
    // as in a machine or container crash.
    const child = spawn(process.execPath, [CHILD, catalog, dataDir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let err = '';
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.stdout.once('data', () => setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), ms));
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

test('kill -9 during ingest and materialization, restart: journals consistent, tables exact', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-crash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const catalog = join(dir, 'flow.yaml');
  writeFileSync(catalog, CATALOG);
  const dataDir = join(dir, 'data');
  for (const ms of [700, 300, 1100, 500]) await runChildFor(ms, catalog, dataDir);

  // Restart in this process and let the materialization catch up.
  const plane = new LocalPlane({ catalogFile: catalog, dataDir, recorder: new MemoryRecorder() });
  try {
    assert.equal((await plane.publish()).result, 'success');
    const journals = plane.store.journals('crash/events');
    assert.deepEqual(journals.map((j) => j.name), ['crash/events/group=c/pivot=00', 'crash/events/group=even/pivot=00', 'crash/events/group=odd/pivot=00']);
    // Caught up: both bindings read every journal they select (3 + 2) through its head.
    const caughtUp = () => {
      const sources = ((plane.store.getState(checkpointKey('crash/to-sqlite')) as { sources?: Record<string, { readThrough: string }> } | undefined)?.sources) ?? {};
      const heads = new Map(journals.map((j) => [j.name, j.head]));
      const entries = Object.entries(sources);
      return entries.length === 5 && entries.every(([k, v]) => Number(v.readThrough) === heads.get(k.split(';')[0] ?? ''));
    };
    await until('the materialization to catch up with every journal', caughtUp);

    // Journals: contiguous offsets; every ingest batch is whole (40 documents + its counter, or nothing).
    const docs: { id: string; batch: number; run: string; group: string }[] = [];
    let lastCounter: { batch: number; run: string } | undefined;
    const perBatch = new Map<string, number>();
    for (const j of journals) {
      let offset = 0;
      for (const d of plane.store.read(j.name, 0, 1_000_000)) {
        assert.equal(d.begin, offset, `${j.name}: offsets are contiguous`);
        offset = d.end;
        const doc = JSON.parse(d.json) as { id: string; batch: number; run: string; group: string };
        docs.push(doc);
        perBatch.set(`${doc.run}/${doc.batch}`, (perBatch.get(`${doc.run}/${doc.batch}`) ?? 0) + 1);
        if (doc.id === 'counter') lastCounter = doc;
      }
      assert.equal(offset, j.head, `${j.name}: head is the end of the last document`);
    }
    assert.ok(perBatch.size >= 5, `several batches were ingested (${perBatch.size})`);
    for (const [batch, n] of perBatch) assert.equal(n, 41, `batch ${batch} is whole`);

    const db = new DatabaseSync(join(dir, 'out.db'), { readOnly: true });
    try {
      const rows = db.prepare('SELECT id, batch, run FROM events').all() as { id: string; batch: number; run: string }[];
      const distinct = new Set(docs.map((d) => d.id));
      assert.equal(rows.length, distinct.size, 'one row per key');
      const counter = rows.find((r) => r.id === 'counter');
      assert.deepEqual(counter && { batch: counter.batch, run: counter.run }, lastCounter && { batch: lastCounter.batch, run: lastCounter.run }, 'the counter row holds the last write');
      const delta = (db.prepare('SELECT count(*) AS n, count(DISTINCT id) AS d FROM events_delta').get() as { n: number; d: number });
      const nonCounter = docs.filter((d) => d.group !== 'c').length;
      assert.deepEqual({ ...delta }, { n: nonCounter, d: nonCounter }, 'delta table: exactly one row per document');
    } finally {
      db.close();
    }
  } finally {
    await plane.close();
  }
});
