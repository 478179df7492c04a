// The rides file as bench/pipeline.ts and bench/startup.ts use it: written gzip-compressed, served over
// loopback HTTP (HEAD with Last-Modified, as source-http-file checks it), and its SQLite table counted.
import { once } from 'node:events';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { createGzip } from 'node:zlib';
import { ridesCsv } from './rides.ts';

/** Writes `rows` rides as CSV.gz to `path`; returns the CSV's (uncompressed) bytes. */
export async function writeRidesCsvGz(path: string, rows: number): Promise<number> {
  const gzip = createGzip({ level: 6 });
  const out = gzip.pipe(createWriteStream(path));
  let csvBytes = 0;
  for (const chunk of ridesCsv(rows)) {
    csvBytes += Buffer.byteLength(chunk);
    if (!gzip.write(chunk)) await once(gzip, 'drain');
  }
  gzip.end();
  await once(out, 'finish');
  return csvBytes;
}

/** Serves `path` at http://127.0.0.1:<port>/rides.csv.gz (GET and HEAD). */
export async function serveRidesFile(path: string): Promise<{ url: string; close: () => void }> {
  const lastModified = new Date().toUTCString();
  const server = http.createServer((req, res) => {
    const size = statSync(path).size;
    res.writeHead(200, { 'content-length': size, 'last-modified': lastModified, 'accept-ranges': 'bytes', 'content-type': 'text/csv', 'content-encoding': 'identity' });
    if (req.method === 'HEAD') return res.end();
    createReadStream(path, { highWaterMark: 64 * 1024 }).pipe(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rides.csv.gz`, close: () => server.close() };
}

/**
 * Whether the `rides` table of the SQLite file `db` holds at least `n` rows (false while it does not exist
 * yet or is locked), cheaply enough to poll beside the pipeline being timed. `count(*)` reads the whole
 * table or its key index: ~160 ms of CPU at 500k delta rows, which, polled every 100 ms, took half a core
 * from the pipeline on a two-core machine. A rowid table holds at most max(rowid) − min(rowid) + 1 rows:
 * two O(log n) lookups. The exact count is taken only once that bound reaches `n`.
 */
export function hasRides(db: string, n: number): boolean {
  try {
    const d = new DatabaseSync(db, { readOnly: true, timeout: 1000 });
    try {
      const b = d.prepare('SELECT (SELECT min(rowid) FROM rides) AS lo, (SELECT max(rowid) FROM rides) AS hi').get() as { lo: number | null; hi: number | null };
      if (b.lo === null || b.hi === null || b.hi - b.lo + 1 < n) return false;
      return Number((d.prepare('SELECT count(*) AS n FROM rides').get() as { n: number }).n) >= n;
    } finally {
      d.close();
    }
  } catch {
    return false;
  }
}

/** Rows in the `rides` table of the SQLite file `db` (0 while it does not exist yet or is locked). */
export function countRides(db: string): number {
  try {
    const d = new DatabaseSync(db, { readOnly: true, timeout: 1000 });
    try { return Number((d.prepare('SELECT count(*) AS n FROM rides').get() as { n: number }).n); } finally { d.close(); }
  } catch {
    return 0;
  }
}
