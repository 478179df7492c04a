// Benchmark: materialize-sqlite through the protocol vs the sqlite3 CLI's `.import` of the same rows.
//   npx node bench/materialize-sqlite.ts            (1M documents of 12 fields, transactions of 10k)
//   BENCH_DOCS=100000 npx node bench/materialize-sqlite.ts
//   BENCH_CORE_ONLY=1 …   (only the in-process connector core: decoded stores → transactor → SQLite)
//   BENCH_CPU_PROF_DIR=/tmp/prof …   (writes a V8 CPU profile of each connector process and thread there)
//   BENCH_KEYS=random …   (keys in a random order, as the pipeline's CSV keys: each transaction first loads every
//                          key, as the runtime does for keys below the largest stored; default: ascending, no loads)
// The connector bin is spawned and driven like the Flow runtime drives it: acknowledge, flush, stores with
// keyPacked/valuesPacked tuples (+ the document for standard updates), startCommit; keys ascend, so the
// runtime's load optimization sends no loads. Baseline: the same rows as CSV imported by `sqlite3 .import`
// into a plain 12-column table, measured in the same run. Prints docs/s and the ratio for standard and delta,
// for the whole connector through the protocol (the figure the targets are about) and for the connector
// core alone in process, on one thread (what the SQL layer costs without framing and tuple decoding).
import { spawn, spawnSync } from 'node:child_process';
import { PEERS, peer } from './peers.ts';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { packTupleBase64, unpackTupleBase64 } from '@sluice/runtime';
import type { CollectionSpec, DecodedStore, JsonObject, MaterializationSpec, Projection } from '@sluice/runtime';
import { materializeSqlite } from '../connectors/materialize-sqlite/src/connector.ts';
import type { EndpointConfig, ResourceConfig } from '../connectors/materialize-sqlite/src/config.ts';

const N = Number(process.env.BENCH_DOCS ?? 1_000_000);
const HAVE_SQLITE3 = peer('materialize-sqlite', PEERS.sqlite3, 'the baseline (sqlite3 .import of the same rows) and the ratios against it');
const TXN = Number(process.env.BENCH_TXN ?? 10_000);
const RANDOM_KEYS = process.env.BENCH_KEYS === 'random';
if (!['random', 'ascending', undefined].includes(process.env.BENCH_KEYS)) throw new Error(`BENCH_KEYS must be 'random' or 'ascending', got '${process.env.BENCH_KEYS}'`);
/** Document i's key: i, or (random order) a bijection of the 32-bit integers (odd multiplier), so keys stay unique. */
const keyOf = (i: number): number => (RANDOM_KEYS ? Math.imul(i, 0x9e3779b1) >>> 0 : i);
const BIN = join(import.meta.dirname, '..', 'connectors', 'materialize-sqlite', 'bin', 'materialize-sqlite.js');
const dir = mkdtempSync(join(tmpdir(), 'bench-mat-sqlite-'));

const FIELDS: [string, string[], Record<string, unknown>?][] = [
  ['id', ['integer']], ['name', ['string']], ['email', ['string']], ['age', ['integer']], ['score', ['number']],
  ['active', ['boolean']], ['created_at', ['string'], { format: 'date-time' }], ['city', ['string']], ['country', ['string']],
  ['balance', ['number']], ['status', ['string']], ['visits', ['integer']],
];
const VALUES = FIELDS.slice(1).map(([f]) => f).sort();
const CITIES = ['Lisbon', 'Berlin', 'Osaka', 'Lima', 'Accra', 'Oslo', 'Quito', 'Perth'];
const STATUS = ['new', 'active', 'churned', 'vip'];

type Row = Record<string, string | number | boolean>;
function row(i: number): Row {
  return {
    id: keyOf(i), name: `user ${i}`, email: `user${i}@example.com`, age: 18 + (i % 70), score: (i % 1000) / 7,
    active: i % 3 !== 0, created_at: `2024-0${1 + (i % 9)}-1${i % 10}T12:${String(i % 60).padStart(2, '0')}:00Z`,
    city: CITIES[i % 8]!, country: `C${i % 50}`, balance: (i * 37 % 100000) / 100, status: STATUS[i % 4]!, visits: i % 5000,
  };
}

function collection(): CollectionSpec {
  const projections: Projection[] = [{ field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } }];
  for (const [f, types, str] of FIELDS) {
    projections.push({ field: f, ptr: `/${f}`, ...(f === 'id' ? { isPrimaryKey: true } : {}), inference: { types, exists: 'MUST', ...(str ? { string: str } : {}) } });
  }
  return { name: 'bench/users', key: ['/id'], projections };
}

/** The load requests of one transaction (random keys: the runtime loads every key; ascending: none). */
function loadLines(from: number, to: number): string {
  if (!RANDOM_KEYS) return '';
  const parts: string[] = [];
  for (let i = from; i < to; i++) parts.push(`{"load":{"keyPacked":"${packTupleBase64([keyOf(i)])}"}}\n`);
  return parts.join('');
}

/** CPU seconds (user + system) a live process has used so far, from /proc (undefined where there is none). */
function cpuSecondsOf(pid: number): number | undefined {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return undefined;
  }
}

/** The protocol lines of one transaction's stores. */
function storeLines(from: number, to: number, withDoc: boolean): string {
  const parts: string[] = [];
  for (let i = from; i < to; i++) {
    const r = row(i);
    const key = packTupleBase64([r.id!]);
    const values = packTupleBase64(VALUES.map((f) => r[f]!));
    parts.push(withDoc
      ? `{"store":{"keyPacked":"${key}","valuesPacked":"${values}","doc":${JSON.stringify({ ...r, _meta: { uuid: 'd6f0a1c2-0000-11ef-8000-000000000000' } })}}}\n`
      : `{"store":{"keyPacked":"${key}","valuesPacked":"${values}"}}\n`);
  }
  return parts.join('');
}

async function runConnector(delta: boolean): Promise<{ seconds: number; rows: number; cpu: number | undefined }> {
  const path = join(dir, delta ? 'delta.db' : 'standard.db');
  const spec = specOf(path, delta);
  const apply = spawnSync(process.execPath, [BIN], { input: `${JSON.stringify({ apply: { materialization: spec, version: 'v1' } })}\n` });
  if (apply.status !== 0) throw new Error(`apply failed: ${apply.stderr.toString()}`);

  const prof = process.env.BENCH_CPU_PROF_DIR;
  const child = spawn(process.execPath, [...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), BIN], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const expect = async (variant: string) => {
    const r = await lines.next();
    if (r.done === true || !r.value.startsWith(`{"${variant}"`)) throw new Error(`expected ${variant}, got ${r.done === true ? 'EOF' : r.value.slice(0, 200)}`);
  };
  const write = async (text: string | Buffer) => { if (!child.stdin.write(text)) await once(child.stdin, 'drain'); };
  // The runtime's side (reducing, packing tuples) is not what we measure: build every transaction first.
  const txns: { loads: string; stores: Buffer }[] = [];
  for (let from = 0; from < N; from += TXN) {
    const to = Math.min(from + TXN, N);
    // Delta bindings are never loaded.
    txns.push({ loads: delta ? '' : loadLines(from, to), stores: Buffer.from(storeLines(from, to, !delta)) });
  }
  const started = performance.now();
  await write(`${JSON.stringify({ open: { materialization: spec, range: { keyEnd: 4294967295, rClockEnd: 4294967295 } } })}\n`);
  await expect('opened');
  for (const [t, { loads, stores }] of txns.entries()) {
    // As Flow's runtime does, the next transaction's requests follow `acknowledge` without waiting for
    // `acknowledged` (its loads, then its flush; every key is new, so nothing is loaded).
    await write(`{"acknowledge":{}}\n${loads}{"flush":{}}\n`);
    await expect('acknowledged');
    await expect('flushed');
    await write(stores);
    await write(`{"startCommit":{"runtimeCheckpoint":{"sources":{"bench/users/pivot=00;materialize/bench/mat/users":{"readThrough":"${t + 1}"}}}}}\n`);
    await expect('startedCommit');
  }
  await write('{"acknowledge":{}}\n');
  await expect('acknowledged');
  const seconds = (performance.now() - started) / 1000;
  // Measured before the exit's WAL checkpoint, as `seconds` is.
  const cpu = cpuSecondsOf(child.pid!);
  child.stdin.end();
  const [code] = await once(child, 'close') as [number];
  if (code !== 0) throw new Error(`connector exited ${code}`);
  return { seconds, rows: countRows(path), cpu };
}

/** Rows of `users`, read with node:sqlite (the count needs no sqlite3 CLI). */
function countRows(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try { return Number((db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n); } finally { db.close(); }
}

/** The connector core alone, in process: the transactor fed already-decoded stores (no protocol, no tuple decoding). */
async function runCore(delta: boolean): Promise<{ seconds: number; rows: number }> {
  const path = join(dir, delta ? 'core-delta.db' : 'core-standard.db');
  const spec = specOf(path, delta) as unknown as MaterializationSpec;
  const log = { debug() {}, info() {}, warn() {}, error() {}, status() {}, child() { return log; } };
  const signal = new AbortController().signal;
  const config: EndpointConfig = { path, hardDelete: false };
  const bindings = spec.bindings!.map((b, index) => ({ index, resource: b.resourceConfig as unknown as ResourceConfig, spec: b }));
  await materializeSqlite.apply({ config, log, signal, materialization: spec, bindings, version: 'v1', state: {}, dryRun: false });
  const txns: DecodedStore[][] = [];
  for (let from = 0; from < N; from += TXN) {
    const stores: DecodedStore[] = [];
    for (let i = from; i < Math.min(from + TXN, N); i++) {
      const r = row(i);
      const keyPacked = packTupleBase64([r.id!]);
      const s: DecodedStore = { binding: 0, key: unpackTupleBase64(keyPacked), values: unpackTupleBase64(packTupleBase64(VALUES.map((f) => r[f]!))), keyPacked, exists: false, delete: false };
      if (!delta) {
        s.doc = { ...r, _meta: { uuid: 'd6f0a1c2-0000-11ef-8000-000000000000' } } as JsonObject;
        s.docJson = JSON.stringify(s.doc); // as the runtime hands it over from the request line
      }
      stores.push(s);
    }
    txns.push(stores);
  }
  const started = performance.now();
  const { transactor } = await materializeSqlite.open({ config, log, signal, materialization: spec, bindings, range: {}, version: 'v1', state: {} });
  for (const [t, stores] of txns.entries()) {
    await transactor.acknowledge();
    await transactor.store((async function* () { yield* stores; })());
    await transactor.startCommit({ sources: { s: { readThrough: String(t + 1) } } });
  }
  await transactor.close?.();
  return { seconds: (performance.now() - started) / 1000, rows: N };
}

function specOf(path: string, delta: boolean) {
  return {
    name: 'bench/mat', connectorType: 'LOCAL', config: { path },
    bindings: [{
      resourceConfig: { table: 'users', ...(delta ? { delta_updates: true } : {}) }, resourcePath: ['users'], collection: collection(),
      fieldSelection: { keys: ['id'], values: VALUES, ...(delta ? {} : { document: 'flow_document' }) }, ...(delta ? { deltaUpdates: true } : {}),
    }],
  };
}

async function runImport(): Promise<{ seconds: number; rows: number }> {
  const csv = join(dir, 'rows.csv');
  const out = createWriteStream(csv);
  const cols = FIELDS.map(([f]) => f);
  for (let from = 0; from < N; from += TXN) {
    const parts: string[] = [];
    for (let i = from; i < Math.min(from + TXN, N); i++) {
      const r = row(i);
      parts.push(cols.map((c) => { const v = r[c]!; return typeof v === 'string' && /[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : String(v); }).join(','));
    }
    if (!out.write(`${parts.join('\n')}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
  const db = join(dir, 'import.db');
  writeFileSync(join(dir, 'import.sql'), `PRAGMA journal_mode=WAL;\nCREATE TABLE users (${cols.map((c) => `${c}`).join(', ')});\n.import --csv ${csv} users\n`);
  const started = performance.now();
  const r = spawnSync('sqlite3', [db, `.read ${join(dir, 'import.sql')}`]);
  const seconds = (performance.now() - started) / 1000;
  if (r.status !== 0) throw new Error(`sqlite3 .import failed: ${r.stderr.toString()}`);
  const count = spawnSync('sqlite3', [db, 'SELECT count(*) FROM users']).stdout.toString().trim();
  return { seconds, rows: Number(count) };
}

try {
  const sqliteVersion = HAVE_SQLITE3 ? spawnSync('sqlite3', ['--version']).stdout.toString().split(' ')[0] : 'absent';
  console.log(`materialize-sqlite benchmark: ${N.toLocaleString('en')} documents of ${FIELDS.length} fields, transactions of ${TXN.toLocaleString('en')}, keys ${RANDOM_KEYS ? 'in random order (standard: every key loaded first)' : 'ascending'}; sqlite3 CLI ${sqliteVersion}`);
  if (process.env.BENCH_CORE_ONLY === '1') {
    for (const d of [true, false]) { const c = await runCore(d); console.log(d ? 'delta' : 'standard', Math.round(c.rows / c.seconds)); }
  } else {
    await runAll();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function runAll(): Promise<void> {
  // Without the sqlite3 CLI the connector's figures are still measured, without the ratio.
  const imp = HAVE_SQLITE3 ? await runImport() : undefined;
  const importRate = imp ? imp.rows / imp.seconds : NaN;
  if (imp) console.log(`baseline  sqlite3 .import (CSV → plain table): ${imp.rows} rows in ${imp.seconds.toFixed(2)} s = ${Math.round(importRate).toLocaleString('en')} rows/s`);
  for (const [name, delta, target] of [['delta', true, 0.5], ['standard', false, 0.3]] as const) {
    const r = await runConnector(delta);
    if (r.rows !== N) throw new Error(`${name}: expected ${N} rows, found ${r.rows}`);
    const rate = N / r.seconds;
    const size = statSync(join(dir, delta ? 'delta.db' : 'standard.db')).size;
    const core = await runCore(delta);
    const coreRate = core.rows / core.seconds;
    const ratio = (x: number) => (imp ? `, ratio ${(x / importRate).toFixed(2)}×` : '');
    console.log(`${name.padEnd(8)}  connector core in process, one thread (decoded stores → transactor → SQLite): ${Math.round(coreRate).toLocaleString('en')} docs/s${ratio(coreRate)}`);
    console.log(`${name.padEnd(8)}  connector via protocol: ${N} docs in ${r.seconds.toFixed(2)} s = ${Math.round(rate).toLocaleString('en')} docs/s${imp ? `${ratio(rate)} of .import (target ≥ ${target}×) ${rate / importRate >= target ? 'MET' : 'NOT MET'}` : ' (no ratio: sqlite3 absent)'}; db ${(size / 1e6).toFixed(0)} MB${r.cpu === undefined ? '' : `; connector CPU ${r.cpu.toFixed(2)} s = ${(r.cpu * 1e6 / N).toFixed(1)} µs/doc`}`);
  }
}
