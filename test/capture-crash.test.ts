// kill -9 of `sluice serve` (the real bin, with its connector processes: the whole process group, as a
// machine or container crash) while a 200,000-row CSV.gz is captured over HTTP and materialized into
// SQLite, twice, then a restart that runs to the end. Exactly once end to end: the collection's journals
// hold each row exactly once (the capture resumed from its committed state, and what it sent after its
// last checkpoint was discarded), the delta-updates table holds exactly one row per document (a replayed
// or lost transaction would add or drop rows) and the standard table one row per key.
// The kills are decided by events (rows reaching the destination), never by time.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { until as untilEvent } from '@sluice/runtime/testing';
import { JournalStore } from '../plane/src/journals/store.ts';

const SLUICE = fileURLToPath(new URL('../plane/bin/sluice.js', import.meta.url));
const ROWS = 200_000;

async function writeCsvGz(file: string): Promise<void> {
  const gzip = createGzip({ level: 1 });
  const out = gzip.pipe(createWriteStream(file));
  gzip.write('id,city,fare,note\n');
  let batch = '';
  for (let i = 0; i < ROWS; i++) {
    // Keys in no particular order (a hash first), as real data: the load optimization does not hide loads.
    batch += `${((i * 2654435761) >>> 0).toString(16).padStart(8, '0')}-${i},${i % 3 ? 'Lisbon' : '"New York, NY"'},${(i % 5000) / 100},${i % 7 ? 'ok' : '"said ""hi"""'}\n`;
    if (batch.length > 1 << 20) {
      if (!gzip.write(batch)) await once(gzip, 'drain');
      batch = '';
    }
  }
  gzip.end(batch);
  await once(out, 'finish');
}

function count(db: string, table: string, distinct = false): number {
  try {
    const d = new DatabaseSync(db, { readOnly: true, timeout: 5000 });
    try {
      return Number((d.prepare(`SELECT count(${distinct ? 'DISTINCT id' : '*'}) AS n FROM ${table}`).get() as { n: number }).n);
    } finally {
      d.close();
    }
  } catch {
    return 0; // not created yet
  }
}

/** Waits for `check`, failing at once (with serve's stderr) if serve exits first. */
async function until(what: string, check: () => boolean, child: ChildProcess, stderr: () => string): Promise<void> {
  await untilEvent(what, () => {
    if (child.exitCode !== null) assert.fail(`sluice serve exited (${child.exitCode}) while waiting for ${what}:\n${stderr()}`);
    return check();
  }, { ms: 240_000, intervalMs: 50, detail: () => stderr().slice(-3000) });
}

test(`kill -9 of serve twice during a ${ROWS.toLocaleString('en-US')}-row capture → SQLite, restart: every row exactly once`, { timeout: 900_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-capture-crash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const gz = join(dir, 'rows.csv.gz');
  await writeCsvGz(gz);
  const lastModified = new Date(Date.now() - 60_000).toUTCString();
  const server = http.createServer((req, res) => {
    const size = statSync(gz).size;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m && m[2] ? Number(m[2]) : size - 1;
    const headers = { 'last-modified': lastModified, 'accept-ranges': 'bytes', 'content-type': 'text/csv', 'content-length': end - start + 1 };
    res.writeHead(m ? 206 : 200, m ? { ...headers, 'content-range': `bytes ${start}-${end}/${size}` } : headers);
    if (req.method === 'HEAD') return res.end();
    createReadStream(gz, { start, end }).pipe(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rows.csv.gz`;
  const db = join(dir, 'out.db');
  const dataDir = join(dir, 'data');
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  crash/rows:
    schema:
      type: object
      properties: {id: {type: string}, city: {type: string}, fare: {type: string}, note: {type: string}}
      required: [id]
    key: [/id]
captures:
  crash/source:
    endpoint:
      connector:
        image: ghcr.io/estuary/source-http-file:dev
        config: {url: ${JSON.stringify(url)}, parser: {compression: gzip, format: {type: csv}}}
    bindings:
      - resource: {stream: rows}
        target: crash/rows
    interval: 1h
materializations:
  crash/to-sqlite:
    endpoint:
      sqlite: {path: ${JSON.stringify(db)}}
    bindings:
      - source: crash/rows
        resource: {table: rows_standard}
      - source: crash/rows
        resource: {table: rows_delta, delta_updates: true}
`);

  const serve = () => {
    // Its own process group: killed as a whole, the plane and its connectors die together.
    const child = spawn(process.execPath, [SLUICE, 'serve', '--catalog', join(dir, 'flow.yaml'), '--data-dir', dataDir, '--port', '0', '--ingest-port', '0', '--quiet'],
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-20_000); });
    const exited = once(child, 'exit');
    t.after(() => { if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL'); });
    return { child, stderr: () => err, exited };
  };

  // Two crashes: as soon as rows reach the destination (the capture is mid-file), and mid-way.
  for (const threshold of [1, ROWS / 2]) {
    const s = serve();
    await until(`${threshold} rows in rows_delta`, () => count(db, 'rows_delta') >= threshold, s.child, s.stderr);
    process.kill(-s.child.pid!, 'SIGKILL');
    await s.exited;
  }
  const atCrash = count(db, 'rows_delta');
  assert.ok(atCrash < ROWS, `the second crash came before the end (rows_delta had ${atCrash})`);

  // The restart runs to the end: the capture session completes and every row is materialized.
  const s = serve();
  await until(`all ${ROWS} rows in rows_delta and rows_standard`, () => count(db, 'rows_delta') >= ROWS && count(db, 'rows_standard') >= ROWS, s.child, s.stderr);
  s.child.kill('SIGTERM');
  await s.exited;

  const store = JournalStore.open(dataDir);
  try {
    const seen = new Set<string>();
    let docs = 0;
    for (const j of store.journals('crash/rows')) {
      for (let offset = 0; offset < j.head;) {
        const batch = store.read(j.name, offset, 50_000);
        for (const d of batch) {
          seen.add((JSON.parse(d.json) as { id: string }).id);
          docs++;
        }
        offset = batch[batch.length - 1]!.end;
      }
    }
    assert.equal(docs, ROWS, 'the journals hold every row exactly once (no document of a crashed session kept)');
    assert.equal(seen.size, ROWS, 'every key once');
  } finally {
    store.close();
  }
  assert.equal(count(db, 'rows_delta'), ROWS, 'delta table: one row per document (no replayed or lost transaction)');
  assert.equal(count(db, 'rows_delta', true), ROWS);
  assert.equal(count(db, 'rows_standard'), ROWS, 'standard table: one row per key');
});
