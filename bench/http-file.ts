// Benchmark: source-http-file capturing a generated CSV (gzip and zstd) over loopback HTTP through
// the protocol (spawned bin, stdout to /dev/null), against Miller (`mlr --icsv --ojsonl cat`), DuckDB
// (`read_csv` of the same file to JSON lines, 2 threads, whole process; skipped with a note when
// @duckdb/node-api is missing) and decompression alone (`zcat`, `zstd -dc`) on the same files, plus csv-parse vs our tokenizer to objects on
// the same rows (the path discover and errorThreshold take), and the opt-in parser thread (SLUICE_HTTP_FILE_WORKER=1) beside the
// default (one JS thread; zlib works on Node's threadpool). A reference line runs the connector's open() in a child
// process without the runtime, to separate the connector's cost from the runtime's.
//   npx node bench/http-file.ts [--rows N] [--only-open | --only-protocol | --only-parquet] [--runs N] [--cpu-prof-dir DIR]
//   (Parquet: the same rides as Parquet, zstd, against DuckDB read_parquet → JSON lines, the default beside the opt-in
//   decoder thread SLUICE_HTTP_FILE_PARQUET_THREAD=1 and the opt-in split (=split: the first row group on the main
//   thread, the others on the decoder thread), each run --runs times (default 5), alternated, medians
//   reported; --only-parquet runs only that)
//   (default 500000 rows ≈ 80 MB; 6500000 rows ≈ 1 GB; --only-open skips the runtime and the baselines,
//   for checking the connector's memory on big files; --only-protocol runs only the capture through the
//   protocol, for profiling; --cpu-prof-dir makes the connector processes write V8 CPU profiles there)
// CPU seconds (user + system, every thread) are printed beside wall time: on a shared machine they move
// less than wall time, and they show what Miller's parallelism costs.
import { spawn, spawnSync } from 'node:child_process';
import { PEERS, peer } from './peers.ts';
import { closeSync, createReadStream, createWriteStream, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { parse as csvParse } from 'csv-parse/sync';
import { CsvRecordParser } from '../connectors/source-http-file/src/csv.ts';
import { DatetimeNormalizer } from '../connectors/source-http-file/src/datetime.ts';
import { nodeFlagsOf } from '@sluice/runtime/launch';
import { createHttpFileConnector } from '../connectors/source-http-file/src/index.ts';
import { ridesCsv } from './rides.ts';

// Child mode: the connector's open() in-process, JSON lines to stdout, no runtime.
if (process.argv[2] === '--in-process-child') {
  const url = process.argv[3] as string;
  const noop = (): void => {};
  const log = { debug: noop, info: noop, warn: noop, error: noop, status: noop, child: () => log };
  const ctx = {
    config: { url }, log, signal: new AbortController().signal, state: {}, range: {}, version: '',
    capture: { name: 'bench/http' }, bindings: [{ index: 0, resource: { stream: 'rides' }, spec: { collection: { name: 'bench/rides' } }, stateKey: 'rides' }],
    acknowledgements: (async function* () {})(),
  };
  let buf = '';
  let docs = 0;
  for await (const out of createHttpFileConnector().open(ctx as any)) {
    if ('captured' in out) docs++;
    // Lines framed by the runtime's CapturedLinesWriter go out as the runtime writes them.
    if ('capturedLines' in out) {
      const c = out.capturedLines;
      docs += c.documents;
      // Bytes (reused buffers): written as they are, then handed back for reuse.
      writeSync(1, buf);
      buf = '';
      writeSync(1, c.lines);
      c.written?.(null);
    } else buf += `${JSON.stringify(out)}\n`;
    if (buf.length > 65536) { writeSync(1, buf); buf = ''; }
  }
  writeSync(1, buf);
  process.stderr.write(`captured ${docs} documents\n`);
  if (process.env['BENCH_MEM']) process.stderr.write(`${JSON.stringify(process.memoryUsage())} ${JSON.stringify((await import('node:v8')).getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_size / 1e6)]))}\n`);
  process.exit(0);
}

// Child mode: DuckDB (`@duckdb/node-api`, a root devDependency), the peer a user would pick: read_csv of
// the same compressed file written as JSON lines to stdout, 2 threads. Timed as a whole process.
if (process.argv[2] === '--duckdb-child') {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const connection = await instance.connect();
  const file = (process.argv[3] as string).replaceAll("'", "''");
  await connection.run(`COPY (SELECT * FROM read_csv('${file}')) TO '/dev/stdout' (FORMAT json, USE_TMP_FILE false)`);
  connection.closeSync();
  process.exit(0);
}

/** Whether the DuckDB peer can run; otherwise how to get it (printed, and the peer is skipped). */
async function duckdbMissing(): Promise<string | null> {
  try {
    await import('@duckdb/node-api');
    return null;
  } catch (err) {
    return `DuckDB peer skipped: @duckdb/node-api is not installed (${(err as Error).message.split('\n')[0]}); install it with \`npm install\` at the repository root (it is a root devDependency) or \`npm install -D @duckdb/node-api\``;
  }
}

const argRows = process.argv.indexOf('--rows');
const ROWS = argRows > 0 ? Number(process.argv[argRows + 1]) : 500_000;
const ONLY_OPEN = process.argv.includes('--only-open');
const ONLY_PROTOCOL = process.argv.includes('--only-protocol');
/** `--only-parquet`: only the Parquet comparison (the rides data as Parquet, zstd) against DuckDB. */
const ONLY_PARQUET = process.argv.includes('--only-parquet');
const argProf = process.argv.indexOf('--cpu-prof-dir');
/** `--cpu-prof-dir DIR`: the spawned connector processes write V8 CPU profiles there. */
const PROF_FLAGS = argProf > 0 ? ['--cpu-prof', `--cpu-prof-dir=${process.argv[argProf + 1]}`] : [];
const BIN = new URL('../connectors/source-http-file/bin/source-http-file.js', import.meta.url).pathname;
const SELF = new URL(import.meta.url).pathname;
/** The V8 flags the connector declares (package.json `sluice.nodeFlags`), passed to every child we spawn. */
const V8_FLAGS = nodeFlagsOf(BIN);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-http-file-'));
const csvPath = join(dir, 'rides.csv');

/** The rides CSV (bench/rides.ts) at csvPath. */
async function generate(): Promise<void> {
  const out = createWriteStream(csvPath);
  for (const chunk of ridesCsv(ROWS)) if (!out.write(chunk)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/**
 * Runs a shell command with stdout to /dev/null; returns wall seconds, CPU seconds (user + system, all
 * its processes and threads) and peak RSS (MB) from /usr/bin/time.
 */
function timed(cmd: string): { secs: number; cpu: number; rssMb: number } {
  const start = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', 'sh', '-c', `${cmd} > /dev/null`], { encoding: 'utf8' });
  const secs = seconds(start);
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  const [user, sys, maxKb] = (r.stderr.trim().split('\n').at(-1) ?? '').split(' ').map(Number) as [number, number, number];
  return { secs, cpu: user + sys, rssMb: maxKb / 1024 };
}

const CLOCK_TICKS = 100;
/** User + system CPU seconds of a live process (all threads), from /proc/<pid>/stat; null once it is gone. */
function cpuOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

async function serve(): Promise<{ url: (name: string) => string; close: () => void }> {
  const lastModified = new Date().toUTCString();
  const server = http.createServer((req, res) => {
    const path = join(dir, (req.url ?? '/').slice(1));
    let size: number;
    try { size = statSync(path).size; } catch { res.writeHead(404); res.end(); return; }
    // Range requests as a file server answers them (the Parquet reader asks for `bytes=a-b`).
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
      res.writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}`, 'last-modified': lastModified, 'accept-ranges': 'bytes' });
      if (req.method === 'HEAD') { res.end(); return; }
      createReadStream(path, { start, end, highWaterMark: 64 * 1024 }).pipe(res);
      return;
    }
    res.writeHead(200, { 'content-length': size, 'last-modified': lastModified, 'accept-ranges': 'bytes' });
    if (req.method === 'HEAD') { res.end(); return; }
    createReadStream(path, { highWaterMark: 64 * 1024 }).pipe(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return { url: (name) => `http://127.0.0.1:${port}/${name}`, close: () => server.close() };
}

/** Captures `url` in a child process (the bin through the protocol, or open() alone); stdout to /dev/null. */
async function capture(url: string, inProcess = false, env: Record<string, string> = {}): Promise<{ secs: number; cpu: number; rssMb: number; docs: number }> {
  const request = { open: { capture: { name: 'bench/http', config: { url }, bindings: [{ resourceConfig: { stream: 'rides' }, resourcePath: ['rides'], collection: { name: 'bench/rides' } }] }, state: {} } };
  const devnull = openSync('/dev/null', 'w');
  const start = process.hrtime.bigint();
  const child = spawn(process.execPath, [...V8_FLAGS, ...PROF_FLAGS, ...(inProcess ? [SELF, '--in-process-child', url] : [BIN])], { stdio: ['pipe', devnull, 'pipe'], env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin?.end(`${JSON.stringify(request)}\n`);
  let peakKb = 0;
  let cpu = 0;
  const poll = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch { /* exited */ }
    // Sampled every 20 ms: the last sample misses at most the final 20 ms.
    cpu = cpuOf(child.pid as number) ?? cpu;
  }, 20);
  const [code] = await once(child, 'close') as [number];
  clearInterval(poll);
  const secs = seconds(start);
  if (code !== 0) throw new Error(`capture of ${url} failed (${code}): ${stderr}`);
  const m = /captured (\d+) documents/.exec(stderr);
  return { secs, cpu, rssMb: peakKb / 1024, docs: m ? Number(m[1]) : -1 };
}

/** Our tokenizer to objects (the object sink: discover, errorThreshold) on the UTF-8 bytes, against csv-parse on the text. */
function parseCoreBench(bytes: Buffer, text: string): { ours: number; csvParse: number } {
  const t1 = process.hrtime.bigint();
  const p = new CsvRecordParser({ config: {}, datetimes: new DatetimeNormalizer() });
  let n = 0;
  const step = 64 * 1024;
  for (let i = 0; i < bytes.length; i += step) n += p.push(bytes.subarray(i, i + step)).length;
  n += p.end().length;
  const ours = n / seconds(t1);
  const t2 = process.hrtime.bigint();
  const rows = csvParse(text, { columns: true, relax_column_count: true }) as unknown[];
  return { ours, csvParse: rows.length / seconds(t2) };
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** Wall, CPU and peak RSS of one process run, measured the same way for every tool. */
interface RunFigures { secs: number; cpu: number; rssMb: number }

/**
 * Runs `argv` under /usr/bin/time (its rusage: user + system CPU of every thread and child, peak RSS) with
 * `input` on stdin and stdout to /dev/null; wall time is spawn to exit, taken here. Every tool of the Parquet
 * comparison is run this way, so none pays a cost the other does not (no shell for either).
 */
async function timedRun(argv: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}): Promise<RunFigures & { stderr: string }> {
  const timeFile = join(dir, `time-${process.pid}.txt`);
  const devnull = openSync('/dev/null', 'w');
  const start = process.hrtime.bigint();
  const child = spawn('/usr/bin/time', ['-f', '%U %S %M', '-o', timeFile, ...argv], { stdio: ['pipe', devnull, 'pipe'], env: { ...process.env, ...options.env }, cwd: options.cwd });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin?.end(options.input ?? '');
  const [code] = await once(child, 'close') as [number];
  const secs = seconds(start);
  closeSync(devnull);
  if (code !== 0) throw new Error(`${argv.join(' ')} failed (${code}): ${stderr}`);
  const [user, sys, maxKb] = (readFileSync(timeFile, 'utf8').trim().split('\n').at(-1) ?? '').split(' ').map(Number) as [number, number, number];
  return { secs, cpu: user + sys, rssMb: maxKb / 1024, stderr };
}

const argRuns = process.argv.indexOf('--runs');
/** `--runs N`: the Parquet comparison's runs per tool (alternated; the figures are their medians). */
const RUNS = argRuns > 0 ? Number(process.argv[argRuns + 1]) : 5;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a positive integer, got '${process.argv[argRuns + 1]}'`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] as number : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/**
 * The rides data as Parquet (zstd, DuckDB's default row groups of 122,880 rows), captured by the bin over
 * loopback HTTP (Range requests), against DuckDB reading the same file locally with read_parquet and
 * writing JSON lines (2 threads; @duckdb/node-api in a child process, so its start is counted as ours is).
 * One run is noise on a shared machine: each tool runs RUNS times (--runs N), alternated (ours, the decoder
 * thread, DuckDB, ours, …) so a change in load hits all of them alike, each process measured the same way
 * (timedRun); the figures are medians, the ratio is DuckDB's median wall over ours.
 */
async function parquetBench(server: { url: (name: string) => string }): Promise<void> {
  if (!peer('http-file', PEERS.time, 'the Parquet comparison (it measures every process with /usr/bin/time)')) return;
  const parquetPath = join(dir, 'rides.parquet');
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (SELECT * FROM read_csv('${csvPath}', header = true)) TO '${parquetPath}' (FORMAT parquet, COMPRESSION zstd)`);
  c.closeSync();
  db.closeSync();
  const size = statSync(parquetPath).size;
  const url = server.url('rides.parquet');
  const request = `${JSON.stringify({ open: { capture: { name: 'bench/http', config: { url }, bindings: [{ resourceConfig: { stream: 'rides' }, resourcePath: ['rides'], collection: { name: 'bench/rides' } }] }, state: {} } })}\n`;
  const ourRun = async (env: Record<string, string>): Promise<RunFigures> => {
    const r = await timedRun([process.execPath, ...V8_FLAGS, ...PROF_FLAGS, BIN], { input: request, env: { LOG_LEVEL: 'info', ...env } });
    const m = /captured (\d+) documents/.exec(r.stderr);
    if (!m || Number(m[1]) !== ROWS) throw new Error(`parquet: captured ${m?.[1] ?? 'no'} documents, expected ${ROWS}: ${r.stderr}`);
    return r;
  };
  const script = `import { DuckDBInstance } from '@duckdb/node-api'; const db = await DuckDBInstance.create(':memory:', { threads: '2' }); const c = await db.connect(); await c.run("COPY (SELECT * FROM read_parquet('${parquetPath.replaceAll("'", "''")}')) TO '/dev/stdout' (FORMAT json)");`;
  const repo = new URL('..', import.meta.url).pathname;
  const oursRuns: RunFigures[] = [];
  const threadRuns: RunFigures[] = [];
  const splitRuns: RunFigures[] = [];
  const duckRuns: RunFigures[] = [];
  const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ')[0] as string;
  // One uncounted run of each first: a changed source is compiled into Node's compile cache by the first run
  // after the change, and the first DuckDB run reads its native library from disk.
  await ourRun({});
  await timedRun([process.execPath, '--input-type=module', '-e', script], { cwd: repo });
  const loadBefore = load();
  for (let i = 0; i < RUNS; i++) {
    oursRuns.push(await ourRun({}));
    // The opt-in decoder thread (SLUICE_HTTP_FILE_PARQUET_THREAD=1: row groups decoded on a second thread) beside the default.
    threadRuns.push(await ourRun({ SLUICE_HTTP_FILE_PARQUET_THREAD: '1' }));
    // The opt-in split (SLUICE_HTTP_FILE_PARQUET_THREAD=split: the first row group here, the others on the decoder thread).
    splitRuns.push(await ourRun({ SLUICE_HTTP_FILE_PARQUET_THREAD: 'split' }));
    duckRuns.push(await timedRun([process.execPath, '--input-type=module', '-e', script], { cwd: repo }));
  }
  const loadAfter = load();
  const summary = (runs: RunFigures[]): RunFigures & { range: string } => ({
    secs: median(runs.map((r) => r.secs)), cpu: median(runs.map((r) => r.cpu)), rssMb: Math.max(...runs.map((r) => r.rssMb)),
    range: `${fmt(Math.min(...runs.map((r) => r.secs)), 2)}–${fmt(Math.max(...runs.map((r) => r.secs)), 2)} s`,
  });
  const [ours, threaded, split, duck] = [summary(oursRuns), summary(threadRuns), summary(splitRuns), summary(duckRuns)];
  // Each round's ratio too (DuckDB's run over ours in the same round): how steady the verdict is.
  const rounds = oursRuns.map((r, i) => (duckRuns[i] as RunFigures).secs / r.secs);
  const rate = (secs: number): number => ROWS / secs;
  const ratio = duck.secs / ours.secs;
  console.log([
    `parquet: medians of ${RUNS} alternated runs per tool (--runs N), after one uncounted run of each (load average ${loadBefore} before, ${loadAfter} after); wall = spawn to exit, CPU = user + system of every thread (/usr/bin/time), peak RSS = the highest of the runs`,
    `parquet (zstd, ${fmt(size / 1e6, 1)} MB): source-http-file  ${fmt(rate(ours.secs))} rows/s, peak RSS ${fmt(ours.rssMb, 1)} MB${size >= 1e9 ? ` (target on a 1 GB file < 200 MB: ${ours.rssMb < 200 ? 'met' : 'NOT met'})` : ''}, ${fmt(ours.secs, 2)} s (${ours.range}), CPU ${fmt(ours.cpu, 2)} s`,
    `parquet:   (decoder thread, SLUICE_HTTP_FILE_PARQUET_THREAD=1: ${fmt(rate(threaded.secs))} rows/s, peak RSS ${fmt(threaded.rssMb, 1)} MB, ${fmt(threaded.secs, 2)} s (${threaded.range}), CPU ${fmt(threaded.cpu, 2)} s → ${fmt(ours.secs / threaded.secs, 2)}× the default)`,
    `parquet:   (split, SLUICE_HTTP_FILE_PARQUET_THREAD=split: ${fmt(rate(split.secs))} rows/s, peak RSS ${fmt(split.rssMb, 1)} MB, ${fmt(split.secs, 2)} s (${split.range}), CPU ${fmt(split.cpu, 2)} s → ${fmt(ours.secs / split.secs, 2)}× the default)`,
    `parquet: DuckDB read_parquet → JSON lines (2 threads, local file)  ${fmt(rate(duck.secs))} rows/s, peak RSS ${fmt(duck.rssMb, 1)} MB, ${fmt(duck.secs, 2)} s (${duck.range}), CPU ${fmt(duck.cpu, 2)} s → source-http-file = ${fmt(ratio, 2)}× DuckDB's rows/s (target ≥ 1×: ${ratio >= 1 ? 'met' : 'NOT met'}; each round: ${rounds.map((x) => `${fmt(x, 2)}×`).join(' ')}; decoder thread: ${fmt(duck.secs / threaded.secs, 2)}×; split: ${fmt(duck.secs / split.secs, 2)}×)`,
    '',
  ].join('\n'));
}

async function main(): Promise<void> {
  console.log(`generating ${fmt(ROWS)} rows in ${dir} … (connector children run with ${V8_FLAGS.join(' ') || 'no V8 flags'})`);
  await generate();
  if (ONLY_PARQUET) {
    const server = await serve();
    try {
      await parquetBench(server);
    } finally {
      server.close();
    }
    return;
  }
  const rawBytes = statSync(csvPath).size;
  await pipeline(createReadStream(csvPath), createGzip({ level: 6 }), createWriteStream(`${csvPath}.gz`));
  const haveZstd = peer('http-file', PEERS.zstd, 'the zstd-compressed runs');
  // /usr/bin/time measures the peers' CPU and memory: without it, or without Miller, those lines are skipped.
  const haveTime = peer('http-file', PEERS.time, "Miller's and the decompressors' timings");
  const haveMiller = peer('http-file', PEERS.miller, 'the Miller comparison (the baseline of the ≥ 2× target)') && haveTime;
  const haveZcat = peer('http-file', PEERS.zcat, "the gzip decompressor's timing");
  if (haveZstd) {
    const z = spawnSync('zstd', ['-q', '-3', '-f', csvPath, '-o', `${csvPath}.zst`]);
    if (z.status !== 0) throw new Error(`zstd failed: ${z.stderr.toString()}`);
  }
  console.log(`CSV ${fmt(rawBytes / 1e6, 1)} MB (${fmt(rawBytes / ROWS)} bytes/row), gzip ${fmt(statSync(`${csvPath}.gz`).size / 1e6, 1)} MB${haveZstd ? `, zstd ${fmt(statSync(`${csvPath}.zst`).size / 1e6, 1)} MB` : ''}\n`);
  const duckdbSkip = await duckdbMissing();
  if (duckdbSkip !== null) console.log(duckdbSkip);
  const server = await serve();
  try {
    for (const [kind, file, decompressCmd, mlrCmd] of [
      ['gzip', 'rides.csv.gz', `zcat ${csvPath}.gz`, `mlr --icsv --ojsonl --gzin cat ${csvPath}.gz`],
      ['zstd', 'rides.csv.zst', `zstd -dc ${csvPath}.zst`, `mlr --icsv --ojsonl --prepipe 'zstd -dc' cat ${csvPath}.zst`],
    ] as const) {
      if (kind === 'zstd' && !haveZstd) continue;
      // The same capture with the opt-in parser thread (SLUICE_HTTP_FILE_WORKER=1), beside the default.
      const threaded = await capture(server.url(file), false, { SLUICE_HTTP_FILE_WORKER: '1' });
      if (threaded.docs !== ROWS) throw new Error(`parser thread: captured ${threaded.docs} documents, expected ${ROWS}`);
      const threadLine = `${kind}:   (parser thread, SLUICE_HTTP_FILE_WORKER=1: ${fmt(ROWS / threaded.secs)} rows/s, peak RSS ${fmt(threaded.rssMb, 1)} MB, ${fmt(threaded.secs, 2)} s, CPU ${fmt(threaded.cpu, 2)} s)`;
      if (ONLY_PROTOCOL) {
        const ours = await capture(server.url(file));
        if (ours.docs !== ROWS) throw new Error(`captured ${ours.docs} documents, expected ${ROWS}`);
        console.log(`${kind}: source-http-file  ${fmt(ROWS / ours.secs)} rows/s, peak RSS ${fmt(ours.rssMb, 1)} MB, ${fmt(ours.secs, 2)} s, CPU ${fmt(ours.cpu, 2)} s (${fmt(ROWS / ours.cpu)} rows per CPU second) → the parser thread = ${fmt(ours.secs / threaded.secs, 2)}× this`);
        console.log(threadLine);
        continue;
      }
      const direct = await capture(server.url(file), true);
      if (direct.docs !== ROWS) throw new Error(`open() alone captured ${direct.docs} documents, expected ${ROWS}`);
      if (ONLY_OPEN) {
        console.log(`${kind}: open() without the runtime: ${fmt(ROWS / direct.secs)} rows/s, ${fmt(rawBytes / 1e6 / direct.secs, 1)} MB/s, peak RSS ${fmt(direct.rssMb, 1)} MB, ${fmt(direct.secs, 2)} s`);
        continue;
      }
      const ours = await capture(server.url(file));
      if (ours.docs !== ROWS) throw new Error(`captured ${ours.docs} documents, expected ${ROWS}`);
      const mlr = haveMiller ? timed(mlrCmd) : undefined;
      const duck = duckdbSkip === null && haveTime ? timed(`${process.execPath} ${SELF} --duckdb-child ${csvPath}.${kind === 'gzip' ? 'gz' : 'zst'}`) : null;
      const dec = haveTime && (kind !== 'gzip' || haveZcat) ? timed(decompressCmd) : undefined;
      const rate = (s: number): number => ROWS / s;
      console.log([
        `${kind}: source-http-file  ${fmt(rate(ours.secs))} rows/s, ${fmt(rawBytes / 1e6 / ours.secs, 1)} MB/s (uncompressed), peak RSS ${fmt(ours.rssMb, 1)} MB${rawBytes >= 1e9 ? ` (target on a 1 GB file < 150 MB: ${ours.rssMb < 150 ? 'met' : 'NOT met'})` : ''}, ${fmt(ours.secs, 2)} s, CPU ${fmt(ours.cpu, 2)} s`,
        `${threadLine.slice(0, -1)} → ${fmt(ours.secs / threaded.secs, 2)}× the default)`,
        `${kind}:   (open() without the runtime: ${fmt(rate(direct.secs))} rows/s, peak RSS ${fmt(direct.rssMb, 1)} MB, ${fmt(direct.secs, 2)} s, CPU ${fmt(direct.cpu, 2)} s)`,
        ...(mlr === undefined ? [] : [`${kind}: Miller            ${fmt(rate(mlr.secs))} rows/s, ${fmt(rawBytes / 1e6 / mlr.secs, 1)} MB/s, peak RSS ${fmt(mlr.rssMb, 1)} MB, ${fmt(mlr.secs, 2)} s, CPU ${fmt(mlr.cpu, 2)} s → source-http-file = ${fmt(mlr.secs / ours.secs, 2)}× Miller's rows/s (target ≥ 2.5×: ${mlr.secs / ours.secs >= 2.5 ? 'met' : 'NOT met'}; open() alone: ${fmt(mlr.secs / direct.secs, 2)}×); CPU per row: Miller/ours = ${fmt(mlr.cpu / ours.cpu, 2)}`]),
        duck === null ? `${kind}: ${duckdbSkip ?? "DuckDB skipped (no /usr/bin/time to measure it)"}` : `${kind}: DuckDB (2 threads) ${fmt(rate(duck.secs))} rows/s, peak RSS ${fmt(duck.rssMb, 1)} MB, ${fmt(duck.secs, 2)} s, CPU ${fmt(duck.cpu, 2)} s → source-http-file = ${fmt(duck.secs / ours.secs, 2)}× DuckDB's rows/s (target ≥ 1.5×: ${duck.secs / ours.secs >= 1.5 ? 'met' : 'NOT met'})`,
        ...(dec === undefined ? [] : [`${kind}: ${decompressCmd.split(' /')[0]}  ${fmt(rawBytes / 1e6 / dec.secs, 1)} MB/s, ${fmt(dec.secs, 2)} s → source-http-file takes ${fmt(ours.secs / dec.secs, 1)}× the time of decompression alone`]),
        '',
      ].join('\n'));
    }
    if (!ONLY_OPEN && !ONLY_PROTOCOL) await parquetBench(server);
  } finally {
    server.close();
  }
  if (ONLY_OPEN || ONLY_PROTOCOL) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  // The first 40 MB (whole rows) of the decoded file: csv-parse's sync API needs it in one string.
  const head = Buffer.alloc(Math.min(rawBytes, 40_000_000));
  const fd = openSync(csvPath, 'r');
  readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  const whole = head.subarray(0, head.lastIndexOf(10) + 1);
  const core = parseCoreBench(whole, whole.toString('utf8'));
  console.log(`CSV to objects (discover, errorThreshold): our tokenizer ${fmt(core.ours)} rows/s, csv-parse (columns: true) ${fmt(core.csvParse)} rows/s → ${fmt(core.ours / core.csvParse, 2)}×`);
  rmSync(dir, { recursive: true, force: true });
}

try {
  await main();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
