// Benchmark: the pipeline every user runs. A generated CSV.gz (default 500,000 rows, 12 columns, ~77 MB
// of CSV) served over loopback HTTP, captured by source-http-file under `sluice serve` (a real child
// process: the bin), journaled, and materialized by materialize-sqlite into a keyed table (standard
// updates) — timed from the serve process's start until the table holds every row. The peer, in the
// same run on the same file: `zcat rides.csv.gz | sqlite3 out.db '.import --csv /dev/stdin rides'`.
// A second run materializes into a delta-updates binding. The plane's peak RSS (its own process, not
// the connectors') is read from /proc/<pid>/status (VmHWM).
//   npx node bench/pipeline.ts [--rows N] [--only standard|delta] [--verbose: the plane's log, timed]
//   (--rows 6500000 ≈ 1 GB of CSV: the plane's RSS target; BENCH_CPU_PROF_DIR=dir writes the plane's V8 CPU profile)
// Targets (issue 16): standard ≥ 0.3× the shell pipeline, delta ≥ 0.4×, plane peak RSS < 300 MB on 1 GB.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFlagsOf } from '@sluice/runtime/launch';
import { countRides, hasRides, serveRidesFile, writeRidesCsvGz } from './rides-file.ts';
import { RIDES_COLUMNS } from './rides.ts';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const ROWS = Number(arg('--rows') ?? 500_000);
const ONLY = arg('--only');
const VERBOSE = process.argv.includes('--verbose');
const SLUICE = new URL('../plane/bin/sluice.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-pipeline-'));
const gz = join(dir, 'rides.csv.gz');

function catalog(url: string, db: string, delta: boolean): string {
  const props = RIDES_COLUMNS.map((c) => `        ${c}: {type: string}`).join('\n');
  return `
collections:
  bench/rides:
    schema:
      type: object
      properties:
${props}
      required: [ride_id]
    key: [/ride_id]
captures:
  bench/source:
    endpoint:
      connector:
        image: ghcr.io/estuary/source-http-file:dev
        config: {url: ${JSON.stringify(url)}, parser: {compression: gzip, format: {type: csv}}}
    bindings:
      - resource: {stream: rides}
        target: bench/rides
    interval: 1h
materializations:
  bench/to-sqlite:
    endpoint:
      sqlite: {path: ${JSON.stringify(db)}}
    bindings:
      - source: bench/rides
        resource: {table: rides${delta ? ', delta_updates: true' : ''}}
`;
}

function vmHwmMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds (user + system) of `pid` and, separately, of its live descendants, from /proc. */
function cpuSeconds(pid: number): { self: number; descendants: number } {
  const tick = 100; // USER_HZ
  const stats = new Map<number, { ppid: number; cpu: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch {
      // Exited meanwhile.
    }
  }
  const isDescendant = (p: number): boolean => {
    for (let q = stats.get(p)?.ppid; q !== undefined && q > 1; q = stats.get(q)?.ppid) if (q === pid) return true;
    return false;
  };
  let descendants = 0;
  for (const [p, st] of stats) if (isDescendant(p)) descendants += st.cpu;
  return { self: stats.get(pid)?.cpu ?? 0, descendants };
}

/** `sluice serve` from its start until the table holds every row. */
async function pipeline(url: string, delta: boolean): Promise<{ secs: number; rssMb: number; journalMb: number; cpu: { self: number; descendants: number } }> {
  const run = mkdtempSync(join(dir, delta ? 'delta-' : 'standard-'));
  const db = join(run, 'out.db');
  writeFileSync(join(run, 'flow.yaml'), catalog(url, db, delta));
  const started = process.hrtime.bigint();
  const prof = process.env['BENCH_CPU_PROF_DIR'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF_DIR']}`] : [];
  // The plane runs with its bin's Node flags (as `npm start` and the `sluice` command do), or BENCH_PLANE_FLAGS.
  const planeFlags = process.env['BENCH_PLANE_FLAGS'] !== undefined ? process.env['BENCH_PLANE_FLAGS'].split(' ').filter(Boolean) : nodeFlagsOf(SLUICE);
  const child = spawn(process.execPath, [...planeFlags, ...prof, SLUICE, 'serve', '--catalog', join(run, 'flow.yaml'), '--data-dir', join(run, 'data'), '--port', '0', '--ingest-port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
    if (VERBOSE) for (const line of d.toString().split('\n')) if (line) console.log(`    [${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(2)} s] ${line}`);
  });
  let rss = 0;
  let cpu = { self: 0, descendants: 0 };
  const deadline = Date.now() + 30 * 60_000;
  try {
    while (true) {
      if (child.exitCode !== null) throw new Error(`sluice serve exited ${child.exitCode}: ${stderr}`);
      rss = Math.max(rss, vmHwmMb(child.pid!));
      if (hasRides(db, ROWS)) break;
      if (Date.now() > deadline) throw new Error(`the table did not reach ${ROWS} rows within 30 minutes (has ${countRides(db)}): ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    rss = Math.max(rss, vmHwmMb(child.pid!));
    cpu = cpuSeconds(child.pid!);
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  const journalFiles = join(run, 'data', 'journals');
  const journalBytes = statSync(join(run, 'data', 'journals.db')).size + readdirSync(journalFiles).reduce((n, f) => n + statSync(join(journalFiles, f)).size, 0);
  return { secs, rssMb: rss, journalMb: journalBytes / 1e6, cpu };
}

function shell(): number {
  const db = join(dir, 'shell.db');
  const started = process.hrtime.bigint();
  const r = spawnSync('sh', ['-c', `zcat ${gz} | sqlite3 ${db} '.import --csv /dev/stdin rides'`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the shell pipeline failed: ${r.stderr}`);
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  if (countRides(db) !== ROWS) throw new Error(`the shell pipeline imported ${countRides(db)} rows, not ${ROWS}`);
  return secs;
}

try {
  const csvBytes = await writeRidesCsvGz(gz, ROWS);
  const server = await serveRidesFile(gz);
  console.log(`pipeline: ${ROWS.toLocaleString('en-US')} rows, ${(csvBytes / 1e6).toFixed(0)} MB CSV, ${(statSync(gz).size / 1e6).toFixed(0)} MB gzip; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  try {
    const peer = shell();
    console.log(`  zcat | sqlite3 .import          ${peer.toFixed(2)} s  ${Math.round(ROWS / peer).toLocaleString('en-US')} rows/s`);
    const targets = { standard: 0.3, delta: 0.4 };
    for (const kind of ['standard', 'delta'] as const) {
      if (ONLY !== undefined && ONLY !== kind) continue;
      const r = await pipeline(server.url, kind === 'delta');
      const ratio = peer / r.secs;
      const verdict = ratio >= targets[kind] ? 'meets' : 'below';
      console.log(`  sluice serve → SQLite (${kind.padEnd(8)}) ${r.secs.toFixed(2)} s  ${Math.round(ROWS / r.secs).toLocaleString('en-US')} rows/s  ${ratio.toFixed(2)}× the shell pipeline (${verdict} the ${targets[kind]}× target)  plane peak RSS ${r.rssMb.toFixed(0)} MB (${r.rssMb < 300 ? 'under' : 'over'} 300 MB)  journals ${r.journalMb.toFixed(0)} MB; CPU: plane ${r.cpu.self.toFixed(1)} s, running connectors ${r.cpu.descendants.toFixed(1)} s`);
    }
  } finally {
    server.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
