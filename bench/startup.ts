// Benchmark: the fixed overhead of the pipeline (issue 16) — what `sluice serve` costs before and after the
// data, measured on a file small enough (default 2,000 rows of bench/rides.ts) that the documents themselves
// cost little: from the serve process's spawn to its ready line, to the first row in the SQLite table, and to
// the last row (delta-updates binding, as bench/pipeline.ts's delta run). CPU is the plane's own plus every
// connector process it started (exited ones included: the plane's reaped children), read from /proc.
//   npx node bench/startup.ts [--rows N] [--runs N] [--sluice path/to/plane/bin/sluice.js ...]
// With more than one --sluice (e.g. another worktree's bin), the runs alternate between them, so a before and an
// after are compared in the same minutes. Targets (issue 16): ready < 0.7 s, last row < 1 s (fixed overhead).
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFlagsOf } from '@sluice/runtime/launch';
import { countRides, serveRidesFile, writeRidesCsvGz } from './rides-file.ts';
import { RIDES_COLUMNS } from './rides.ts';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const ROWS = Number(arg('--rows') ?? 2000);
const RUNS = Number(arg('--runs') ?? 5);
const BINS = args.flatMap((a, i) => (a === '--sluice' && args[i + 1] !== undefined ? [args[i + 1]!] : []));
if (BINS.length === 0) BINS.push(new URL('../plane/bin/sluice.js', import.meta.url).pathname);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-startup-'));
const gz = join(dir, 'rides.csv.gz');

function catalog(url: string, db: string): string {
  return `collections:
  bench/rides:
    schema: {type: object, properties: {${RIDES_COLUMNS.map((c) => `${c}: {type: string}`).join(', ')}}, required: [ride_id]}
    key: [/ride_id]
captures:
  bench/source:
    endpoint: {connector: {image: ghcr.io/estuary/source-http-file:dev, config: {url: ${JSON.stringify(url)}, parser: {compression: gzip, format: {type: csv}}}}}
    bindings: [{resource: {stream: rides}, target: bench/rides}]
    interval: 1h
materializations:
  bench/to-sqlite:
    endpoint: {sqlite: {path: ${JSON.stringify(db)}}}
    bindings: [{source: bench/rides, resource: {table: rides, delta_updates: true}}]
`;
}

/** CPU seconds of `pid`, its reaped children, and its live descendants (USER_HZ = 100). */
function cpuSeconds(pid: number): number {
  const stats = new Map<number, { ppid: number; cpu: number; children: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / 100, children: (Number(f[13]) + Number(f[14])) / 100 });
    } catch {
      // Exited meanwhile.
    }
  }
  const isDescendant = (p: number): boolean => {
    for (let q = stats.get(p)?.ppid; q !== undefined && q > 1; q = stats.get(q)?.ppid) if (q === pid) return true;
    return false;
  };
  let total = (stats.get(pid)?.cpu ?? 0) + (stats.get(pid)?.children ?? 0);
  for (const [p, st] of stats) if (isDescendant(p)) total += st.cpu + st.children;
  return total;
}

interface Run { ready: number; first: number; last: number; cpu: number }

async function run(bin: string, url: string, i: number): Promise<Run> {
  const work = mkdtempSync(join(dir, `run-${i}-`));
  const db = join(work, 'out.db');
  writeFileSync(join(work, 'flow.yaml'), catalog(url, db));
  const started = process.hrtime.bigint();
  const secs = () => Number(process.hrtime.bigint() - started) / 1e9;
  const child = spawn(process.execPath, [...nodeFlagsOf(bin), bin, 'serve', '--catalog', join(work, 'flow.yaml'), '--data-dir', join(work, 'data'), '--port', '0', '--ingest-port', '0', '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let ready = NaN;
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
    if (Number.isNaN(ready) && stderr.includes('sluice: ready:')) ready = secs();
  });
  let first = NaN;
  let cpu = 0;
  const deadline = Date.now() + 120_000;
  try {
    while (true) {
      if (child.exitCode !== null || stderr.includes('sluice: the first publication')) throw new Error(`sluice serve failed: ${stderr}`);
      const n = countRides(db);
      if (n > 0 && Number.isNaN(first)) first = secs();
      if (n >= ROWS) break;
      if (Date.now() > deadline) throw new Error(`the table did not reach ${ROWS} rows within 2 minutes (has ${n}): ${stderr}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    cpu = cpuSeconds(child.pid!);
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  return { ready, first, last: secs(), cpu };
}

function bareNode(): number {
  const t = process.hrtime.bigint();
  spawnSync(process.execPath, ['-e', '0']);
  return Number(process.hrtime.bigint() - t) / 1e9;
}

try {
  await writeRidesCsvGz(gz, ROWS);
  const server = await serveRidesFile(gz);
  const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  // The peer: a bare Node start in the same minutes (the fixed overhead is counted in them).
  const bare = bareNode();
  console.log(`startup: ${ROWS.toLocaleString('en-US')} rows (delta updates), ${RUNS} run(s) per bin; load average ${load()}; a bare \`node -e 0\` takes ${bare.toFixed(2)} s`);
  const results = new Map<string, Run[]>(BINS.map((b) => [b, []]));
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const bin of BINS) {
        const r = await run(bin, server.url, i);
        results.get(bin)!.push(r);
        console.log(`  ${bin}: ready ${r.ready.toFixed(2)} s  first row ${r.first.toFixed(2)} s  last row ${r.last.toFixed(2)} s  CPU (plane + connectors) ${r.cpu.toFixed(2)} s`);
      }
    }
  } finally {
    server.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [bin, rs] of results) {
    const ready = median(rs.map((r) => r.ready));
    const last = median(rs.map((r) => r.last));
    console.log(`${bin} (median of ${rs.length}): ready ${ready.toFixed(2)} s (${ready < 0.7 ? 'meets' : 'misses'} < 0.7 s)  first row ${median(rs.map((r) => r.first)).toFixed(2)} s  last row ${last.toFixed(2)} s (${last < 1 ? 'meets' : 'misses'} < 1 s) = ${(last / bare).toFixed(1)}× a bare Node start  CPU ${median(rs.map((r) => r.cpu)).toFixed(2)} s; load average ${load()}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
