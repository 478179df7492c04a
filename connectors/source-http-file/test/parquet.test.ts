// Parquet through the bin, against a loopback server: files written here by DuckDB (@duckdb/node-api,
// a devDependency) with every codec, nullable and nested columns, INT64 extremes, timestamps of each
// unit, decimals and several row groups; read by Range requests and from a temporary copy; a crash and a
// resume at a row-group boundary; a corrupt footer and a truncated file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadata } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import type { JsonObject } from '@sluice/runtime';
import { applyCheckpoints, openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;

interface Proc { raw: string[]; lines: JsonObject[]; stderr: string; code: number | null; signal: string | null }

/** Runs the bin with these request lines; `killAfter` SIGKILLs it once that predicate holds. */
function run(requests: object[], options: { env?: Record<string, string>; killAfter?: (lines: JsonObject[]) => boolean } = {}): Promise<Proc> {
  const child = spawn(process.execPath, [BIN], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'debug', ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const raw: string[] = [];
  const lines: JsonObject[] = [];
  let stderr = '';
  let buf = '';
  let killed = false;
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (killed) continue;
      raw.push(line);
      lines.push(JSON.parse(line));
      if (options.killAfter?.(lines)) { killed = true; child.kill('SIGKILL'); }
    }
  });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(requests.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ raw, lines, stderr, code, signal })));
}

const docsOf = (p: Proc): JsonObject[] => p.lines.filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc'] as JsonObject);
const lastError = (p: Proc): string => (JSON.parse(p.stderr.trim().split('\n').at(-1) as string) as { msg: string }).msg;

const RICH_ROWS = 4200;
/** Every kind of column, 4200 rows in row groups of 2048 (3 row groups: DuckDB's row groups are multiples of 2048 rows). */
const RICH = `SELECT
  i::BIGINT AS id,
  CASE i % 3 WHEN 0 THEN 9223372036854775807 WHEN 1 THEN -9223372036854775808 ELSE NULL END::BIGINT AS big,
  CASE WHEN i % 4 = 0 THEN NULL ELSE i * 3 - 1 END::INTEGER AS maybe_int,
  CASE WHEN i % 4 = 1 THEN NULL WHEN i = 5 THEN 'q"\\é ☃' WHEN i = 6 THEN '2024-01-02 03:04:05' ELSE 'row-' || i END AS label,
  i % 2 = 0 AS flag,
  CASE WHEN i = 7 THEN 'nan'::DOUBLE WHEN i % 5 = 0 THEN NULL ELSE i / 4 END::DOUBLE AS ratio,
  (TIMESTAMP '2023-11-14 22:13:20' + INTERVAL (i) SECOND + INTERVAL (i * 1234) MILLISECOND)::TIMESTAMP_MS AS ts_ms,
  TIMESTAMP '2023-11-14 22:13:20' + INTERVAL (i) SECOND + INTERVAL (i * 1234567) MICROSECOND AS ts_us,
  (TIMESTAMP '2023-11-14 22:13:20' + INTERVAL (i) SECOND)::TIMESTAMP_NS + INTERVAL (i) MICROSECOND AS ts_ns,
  TIMESTAMPTZ '2023-11-14 22:13:20+00' + INTERVAL (i) HOUR AS tstz,
  DATE '2021-05-01' + i::INTEGER AS day,
  ((i * 12345 + 6789) / 100)::DECIMAL(10, 2) AS amount,
  CASE WHEN i = 3 THEN '12345678901234567890.0123456789'::DECIMAL(38, 10) ELSE (i / 8)::DECIMAL(38, 10) END AS wide,
  CASE WHEN i % 9 = 0 THEN NULL ELSE {'inner_int': CASE WHEN i % 4 = 0 THEN NULL ELSE i + 100 END, 'inner_str': 'n' || (i % 13)} END AS nested,
  CASE WHEN i % 6 = 0 THEN NULL ELSE list_transform(range(i % 4), k -> i * 10 + k) END AS tags,
  MAP {'a': i, 'b': NULL} AS attrs
FROM range(${RICH_ROWS}) t(i)`;

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
/** The documents RICH must give (without _meta). */
function richExpected(i: number): Record<string, unknown> {
  const base = Date.UTC(2023, 10, 14, 22, 13, 20) + i * 1000;
  const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 19);
  const ms = i * 1234;
  const us = i * 1234567;
  // The sanitiser's rule: the significant digits of the fraction, none when zero.
  const frac = (digits: string): string => {
    const trimmed = digits.replace(/0+$/, '');
    return trimmed ? `.${trimmed}` : '';
  };
  const wideValue = i === 3 ? '"12345678901234567890.0123456789"' : String(i / 8);
  return {
    id: i,
    big: i % 3 === 0 ? '9223372036854775807' : i % 3 === 1 ? '-9223372036854775808' : null,
    maybe_int: i % 4 === 0 ? null : i * 3 - 1,
    label: i % 4 === 1 ? null : i === 5 ? 'q"\\é ☃' : i === 6 ? '2024-01-02T03:04:05Z' : `row-${i}`,
    flag: i % 2 === 0,
    ratio: i === 7 ? null : i % 5 === 0 ? null : i / 4,
    ts_ms: `${iso(base + ms)}${frac(pad((base + ms) % 1000, 3))}Z`,
    ts_us: `${iso(base + Math.floor(us / 1000))}${frac(pad((us % 1_000_000), 6))}Z`,
    ts_ns: `${iso(base)}${frac(`${pad(i, 6)}000`)}Z`,
    tstz: `${iso(Date.UTC(2023, 10, 14, 22 + i, 13, 20))}Z`,
    day: new Date(Date.UTC(2021, 4, 1 + i)).toISOString().slice(0, 10),
    amount: Number(((i * 12345 + 6789) / 100).toFixed(2)),
    wide: JSON.parse(wideValue),
    nested: i % 9 === 0 ? null : { inner_int: i % 4 === 0 ? null : i + 100, inner_str: `n${i % 13}` },
    tags: i % 6 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => i * 10 + k),
    attrs: { a: i, b: null },
  };
}

/** RICH's top-level leaves only: a flat schema, written by the byte writer (parquet-flat.ts). */
const FLAT_COLUMNS = ['id', 'big', 'maybe_int', 'label', 'flag', 'ratio', 'ts_ms', 'ts_us', 'ts_ns', 'tstz', 'day', 'amount', 'wide'];
/** The flat files: PLAIN pages (unique values) and dictionary pages (RICH's rows 0–49 over and over), data pages v1 and v2. */
const FLAT_FILES: { name: string; sql: string; row: (j: number) => number; options: string }[] = [
  { name: 'flat-plain', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH})`, row: (j) => j, options: 'COMPRESSION zstd' },
  { name: 'flat-plain-v2', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH})`, row: (j) => j, options: 'COMPRESSION snappy, PARQUET_VERSION V2' },
  { name: 'flat-dict', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH.replace(`FROM range(${RICH_ROWS}) t(i)`, `FROM (SELECT j % 50 AS i FROM range(${RICH_ROWS}) t(j))`)})`, row: (j) => j % 50, options: 'COMPRESSION gzip' },
  { name: 'flat-dict-v2', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH.replace(`FROM range(${RICH_ROWS}) t(i)`, `FROM (SELECT j % 50 AS i FROM range(${RICH_ROWS}) t(j))`)})`, row: (j) => j % 50, options: 'COMPRESSION zstd, PARQUET_VERSION V2' },
  // The other codecs of the page decompressor (parquet-decompress.ts: Node's brotli, hyparquet's snappy and LZ4, none).
  { name: 'flat-brotli', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH})`, row: (j) => j, options: 'COMPRESSION brotli' },
  { name: 'flat-lz4', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH})`, row: (j) => j, options: 'COMPRESSION lz4' },
  { name: 'flat-uncompressed', sql: `SELECT ${FLAT_COLUMNS.join(', ')} FROM (${RICH})`, row: (j) => j, options: 'COMPRESSION uncompressed' },
];
/** The decoder thread (parquet-thread.ts) off and on: the same documents, batches and checkpoints either way. */
const THREADS = [
  { label: 'main thread', env: { SLUICE_HTTP_FILE_PARQUET_THREAD: '0' } },
  { label: 'decoder thread', env: { SLUICE_HTTP_FILE_PARQUET_THREAD: '1' } },
  // The first row group on the main thread, the others on the decoder thread (big files' default; forced here).
  { label: 'main thread, then the decoder thread', env: { SLUICE_HTTP_FILE_PARQUET_THREAD: 'split' } },
];

const CODECS = ['uncompressed', 'snappy', 'gzip', 'zstd', 'brotli', 'lz4'];
const BIG_ROWS = 20_000;
const BIG_GROUP = 2048;

// Tests run concurrently (each spawns the bin and waits on it); request checks filter by path.
describe('source-http-file: Parquet', { concurrency: 4 }, () => {
  let server: FileServer;
  let dir: string;
  const files = new Map<string, Buffer>();
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shf-parquet-'));
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    for (const codec of CODECS) {
      await c.run(`COPY (${RICH}) TO '${dir}/rich-${codec}.parquet' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 2048)`);
      files.set(codec, readFileSync(`${dir}/rich-${codec}.parquet`));
    }
    for (const f of FLAT_FILES) {
      await c.run(`COPY (${f.sql}) TO '${dir}/${f.name}.parquet' (FORMAT parquet, ${f.options}, ROW_GROUP_SIZE 2048)`);
      files.set(f.name, readFileSync(`${dir}/${f.name}.parquet`));
    }
    await c.run(`COPY (SELECT i AS id, 'v' || i AS value FROM range(${BIG_ROWS}) t(i)) TO '${dir}/big.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${BIG_GROUP})`);
    const big = readFileSync(`${dir}/big.parquet`);
    const rich = files.get('zstd') as Buffer;
    // Row group 1's first data page of a flat file: its compressed bytes overwritten (its header kept).
    const damaged = Buffer.from(files.get('flat-plain') as Buffer);
    const flatMeta = parquetMetadata(damaged.buffer.slice(damaged.byteOffset, damaged.byteOffset + damaged.length) as ArrayBuffer);
    const col = flatMeta.row_groups[1]?.columns[0]?.meta_data;
    const pageAt = Number(col?.data_page_offset);
    const header = { view: new DataView(damaged.buffer, damaged.byteOffset + pageAt, 256), offset: 0 };
    const pageHeader = parquetHeader(header);
    damaged.fill(0xa5, pageAt + header.offset, pageAt + header.offset + pageHeader.compressed_page_size);
    // The footer's metadata overwritten (its length and the PAR1 magic kept): a corrupt footer.
    const corrupt = Buffer.from(rich);
    const metaLength = corrupt.readUInt32LE(corrupt.length - 8);
    corrupt.fill(0xff, corrupt.length - 8 - metaLength, corrupt.length - 8);
    const routes: Record<string, Parameters<typeof startServer>[0] extends Record<string, infer R> | undefined ? R : never> = {
      // One path per resume test (they run concurrently and check their own requests).
      '/big-3-0.parquet': { body: big, slowChunk: 4096, slowDelayMs: 5 },
      '/big-1-1024.parquet': { body: big, slowChunk: 4096, slowDelayMs: 5 },
      '/big-1-1024-thread.parquet': { body: big, slowChunk: 4096, slowDelayMs: 5 },
      '/big-1-1024-split.parquet': { body: big, slowChunk: 4096, slowDelayMs: 5 },
      '/flat-damaged.parquet': { body: damaged },
      '/rich.parquet': { body: rich },
      '/rich-resume.parquet': { body: rich, slowChunk: 4096, slowDelayMs: 5 },
      '/rich-no-ranges.parquet': { body: rich, ranges: false },
      '/data.bin': { body: rich, headers: { 'content-type': 'application/octet-stream' } },
      '/data-no-ranges.bin': { body: rich, ranges: false },
      '/typed': { body: rich, headers: { 'content-type': 'application/vnd.apache.parquet' } },
      '/corrupt.parquet': { body: corrupt },
      '/truncated.parquet': { body: rich.subarray(0, Math.floor(rich.length / 2)) },
      '/rich.parquet.gz': { body: rich },
    };
    for (const codec of CODECS) routes[`/rich-${codec}.parquet`] = { body: files.get(codec) as Buffer };
    for (const f of FLAT_FILES) routes[`/${f.name}.parquet`] = { body: files.get(f.name) as Buffer };
    server = await startServer(routes);
    c.closeSync();
    db.closeSync();
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the test files have 3 or more row groups and use each codec', () => {
    for (const codec of CODECS) {
      const buf = files.get(codec) as Buffer;
      const meta = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer);
      assert.ok(meta.row_groups.length >= 3, `${codec}: ${meta.row_groups.length} row groups`);
      const used = new Set(meta.row_groups.flatMap((rg) => rg.columns.map((col) => col.meta_data?.codec)));
      assert.ok(used.has(codec === 'lz4' ? 'LZ4_RAW' : codec.toUpperCase() as 'ZSTD'), `${codec}: ${[...used].join(',')}`);
    }
  });

  for (const codec of CODECS) {
    test(`every type, ${codec}: documents as upstream maps them (RFC 3339 timestamps, exact INT64 and decimals)`, async () => {
      const url = server.url(`/rich-${codec}.parquet`);
      const p = await run([openRequest({ url })]);
      assert.equal(p.code, 0, p.stderr);
      const docs = docsOf(p);
      assert.equal(docs.length, RICH_ROWS);
      const captured = p.raw.filter((l) => l.startsWith('{"captured"'));
      for (let i = 0; i < RICH_ROWS; i++) {
        const expected = richExpected(i);
        // INT64 extremes: compared on the line's text (JSON.parse would round them).
        const line = captured[i] as string;
        const big = expected['big'];
        assert.ok(line.includes(`"big":${big ?? 'null'},`), `row ${i}: ${line}`);
        const doc = { ...docs[i] };
        delete doc['big'];
        delete expected['big'];
        assert.deepEqual(doc, { ...expected, _meta: { file: `rich-${codec}.parquet`, offset: i } }, `row ${i}`);
      }
      // The wide decimal that a double cannot hold is a string with every digit.
      assert.ok(p.raw.some((l) => l.includes('"wide":"12345678901234567890.0123456789"')));
    });
  }

  for (const threads of THREADS) {
  test(`flat schemas (the byte writer, ${threads.label}): the same documents from PLAIN and dictionary pages, data pages v1 and v2, every codec`, async () => {
    const encodings = new Set<string>();
    const pageTypes = new Set<string>();
    for (const f of FLAT_FILES) {
      const buf = files.get(f.name) as Buffer;
      const meta = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer);
      for (const rg of meta.row_groups) {
        for (const col of rg.columns) {
          for (const e of col.meta_data?.encodings ?? []) encodings.add(e);
          for (const s of col.meta_data?.encoding_stats ?? []) pageTypes.add(s.page_type);
        }
      }
      const p = await run([openRequest({ url: server.url(`/${f.name}.parquet`) })], { env: threads.env });
      assert.equal(p.code, 0, p.stderr);
      assert.match(p.stderr, new RegExp(`parquet: decoding on the ${threads.label}`), f.name);
      const docs = docsOf(p);
      assert.equal(docs.length, RICH_ROWS, f.name);
      const captured = p.raw.filter((l) => l.startsWith('{"captured"'));
      for (let j = 0; j < RICH_ROWS; j++) {
        const full = richExpected(f.row(j));
        const expected: Record<string, unknown> = {};
        for (const k of FLAT_COLUMNS) expected[k] = full[k];
        const line = captured[j] as string;
        assert.ok(line.includes(`"big":${expected['big'] ?? 'null'},`), `${f.name} row ${j}: ${line}`);
        const doc = { ...docs[j] };
        delete doc['big'];
        delete expected['big'];
        assert.deepEqual(doc, { ...expected, _meta: { file: `${f.name}.parquet`, offset: j } }, `${f.name} row ${j}`);
      }
    }
    // The files exercise what the byte writer reads in place and what it hands to hyparquet.
    for (const e of ['PLAIN', 'RLE_DICTIONARY']) assert.ok(encodings.has(e), `${e} used: ${[...encodings].join(',')}`);
    assert.ok(pageTypes.has('DATA_PAGE_V2') || encodings.has('DELTA_BINARY_PACKED'), `v2 pages written: ${[...pageTypes].join(',')} / ${[...encodings].join(',')}`);
  });

  test(`bad input (${threads.label}): a damaged page is a clear error naming its row group`, async () => {
    const p = await run([openRequest({ url: server.url('/flat-damaged.parquet') })], { env: threads.env });
    assert.equal(p.code, 1, p.stderr);
    assert.match(lastError(p), /^row group 1 of http:\/\/127\.0\.0\.1:\d+\/flat-damaged\.parquet \(rows 2048–4095\) could not be decoded: .+; the file is damaged or truncated$/);
  });
  }

  test('read by Range requests: the footer (one request: the end of the file), then one request per row group, never the whole file', async () => {
    const before = server.requests.length;
    const p = await run([openRequest({ url: server.url('/rich.parquet') })]);
    assert.equal(p.code, 0, p.stderr);
    const gets = server.requests.slice(before).filter((r) => r.method === 'GET' && r.path === '/rich.parquet');
    const rich = files.get('zstd') as Buffer;
    const groups = parquetMetadata(rich.buffer.slice(rich.byteOffset, rich.byteOffset + rich.length) as ArrayBuffer).row_groups.length;
    assert.equal(gets.length, 1 + groups, `${gets.length} GETs for ${groups} row groups: ${gets.map((g) => g.headers.range).join(', ')}`);
    for (const g of gets) assert.match(g.headers.range ?? '', /^bytes=\d+-\d+$/, 'every GET asks for a bounded range');
    assert.equal(docsOf(p).length, RICH_ROWS);
  });

  test('without Range support: a private temporary copy, removed afterwards; same documents', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'shf-parquet-tmp-'));
    try {
      const ranged = await run([openRequest({ url: server.url('/rich.parquet') })]);
      const p = await run([openRequest({ url: server.url('/rich-no-ranges.parquet') })], { env: { TMPDIR: tmp } });
      assert.equal(p.code, 0, p.stderr);
      assert.match(p.stderr, /does not support range requests: copying the Parquet file to a private temporary file/);
      assert.deepEqual(docsOf(p).map((d) => ({ ...d, _meta: null })), docsOf(ranged).map((d) => ({ ...d, _meta: null })));
      assert.deepEqual(readdirSync(tmp).filter((n) => n.startsWith('sluice-parquet-')), [], 'the temporary copy is removed');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test('detection: PAR1 magic (with and without ranges) and the Content-Type', async () => {
    for (const path of ['/data.bin', '/data-no-ranges.bin', '/typed']) {
      const p = await run([openRequest({ url: server.url(path) })]);
      assert.equal(p.code, 0, `${path}: ${p.stderr}`);
      assert.equal(docsOf(p).length, RICH_ROWS, path);
      assert.match(p.stderr, /format: parquet \(by (its first bytes, PAR1|the Content-Type)/, path);
    }
  });

  test('discover: the schema comes from the Parquet schema, with Flow formats only', async () => {
    const p = await run([{ discover: { connectorType: 'IMAGE', config: { url: server.url('/rich.parquet') } } }]);
    assert.equal(p.code, 0, p.stderr);
    const binding = ((p.lines[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[])[0] as JsonObject;
    const props = (binding['documentSchema'] as JsonObject)['properties'] as Record<string, JsonObject>;
    assert.deepEqual(props['id'], { type: ['integer', 'null'] });
    assert.deepEqual(props['ts_ns'], { type: ['string', 'null'], format: 'date-time' });
    assert.deepEqual(props['day'], { type: ['string', 'null'], format: 'date' });
    assert.equal(props['amount']?.['format'], 'number');
    assert.deepEqual(props['ratio'], { type: ['number', 'null'] });
    assert.deepEqual(props['tags'], { type: ['array', 'null'], items: { type: ['integer', 'null'] } });
    assert.deepEqual((props['nested']?.['properties'] as JsonObject)['inner_str'], { type: ['string', 'null'] });
    assert.deepEqual(props['attrs'], { type: ['object', 'null'], additionalProperties: { type: ['integer', 'null'] } });
    const formats = JSON.stringify(binding['documentSchema']).match(/"format":"[^"]+"/g) ?? [];
    for (const f of formats) assert.ok(['"format":"date-time"', '"format":"date"', '"format":"number"', '"format":"uuid"'].includes(f), f);
  });

  // Checkpoints every 2048 documents fall on row-group boundaries (row groups of 2048 rows); every 1000 (batches of
  // 256 rows) at 1024, 2048, 3072: the third is row 1024 of row group 1.
  for (const [every, records, at, threads] of [[BIG_GROUP, 3 * BIG_GROUP, { rowGroup: 3, row: 0 }, THREADS[0]], [1000, 3072, { rowGroup: 1, row: 1024 }, THREADS[0]], [1000, 3072, { rowGroup: 1, row: 1024 }, THREADS[1]], [1000, 3072, { rowGroup: 1, row: 1024 }, THREADS[2]]] as const) {
  test(`resume after a crash at row group ${at.rowGroup}, row ${at.row} (${threads?.label}): from that row group, no duplicate, no gap`, async () => {
    const env = { HTTP_FILE_CHECKPOINT_EVERY: String(every), ...threads?.env };
    const path = `/big-${at.rowGroup}-${at.row}${threads === THREADS[1] ? '-thread' : threads === THREADS[2] ? '-split' : ''}.parquet`;
    const url = server.url(path);
    const crashed = await run([openRequest({ url })], {
      env,
      // The first checkpoint starts the file; then one per row group.
      killAfter: (lines) => lines.filter((l) => 'checkpoint' in l).length === 4,
    });
    assert.equal(crashed.signal, 'SIGKILL', crashed.stderr);
    const lastCp = crashed.lines.map((l) => 'checkpoint' in l).lastIndexOf(true);
    const committed = crashed.lines.slice(0, lastCp + 1);
    const state = applyCheckpoints({}, committed.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
    const binding = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
    assert.equal(binding['records'], records);
    assert.deepEqual(binding['parquet'], at);
    const before = server.requests.length;
    const resumed = await run([openRequest({ url }, state)], { env });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.ok(resumed.stderr.includes(`resuming the Parquet file at row group ${at.rowGroup}, row ${at.row} (document ${records})`), resumed.stderr);
    // The row groups before are not fetched again: every range starts at or after that row group's first byte.
    const buf = readFileSync(`${dir}/big.parquet`);
    const meta = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length) as ArrayBuffer);
    const col = meta.row_groups[at.rowGroup]?.columns[0]?.meta_data;
    const groupStart = Number(col?.dictionary_page_offset ?? col?.data_page_offset);
    for (const r of server.requests.slice(before).filter((q) => q.method === 'GET' && q.path === path)) {
      const from = Number(/^bytes=(\d+)-/.exec(r.headers.range ?? '')?.[1] ?? 0);
      assert.ok(from >= groupStart, `range ${r.headers.range} starts before row group ${at.rowGroup} (${groupStart})`);
    }
    const all = [...committed, ...resumed.lines].filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc'] as JsonObject);
    assert.deepEqual(all.map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: BIG_ROWS }, (_, i) => i));
    assert.deepEqual(all.map((d) => d['value']), Array.from({ length: BIG_ROWS }, (_, i) => `v${i}`));
    const final = applyCheckpoints(state, resumed.lines.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
    const done = (final['bindingStateV1'] as JsonObject)['data'] as JsonObject;
    // Upstream's finished sweep; the row-group position is a mid-file extra only.
    assert.deepEqual(done, { minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false });
  });
  }

  test('resume mid row group on a schema with nested columns (leaves by the byte writer, nested ones by hyparquet): no duplicate, no gap', async () => {
    const env = { HTTP_FILE_CHECKPOINT_EVERY: '1000' };
    const url = server.url('/rich-resume.parquet');
    const crashed = await run([openRequest({ url })], { env, killAfter: (lines) => lines.filter((l) => 'checkpoint' in l).length === 4 });
    assert.equal(crashed.signal, 'SIGKILL', crashed.stderr);
    const lastCp = crashed.lines.map((l) => 'checkpoint' in l).lastIndexOf(true);
    const committed = crashed.lines.slice(0, lastCp + 1);
    const state = applyCheckpoints({}, committed.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
    const binding = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
    assert.deepEqual(binding['parquet'], { rowGroup: 1, row: 1024 });
    const resumed = await run([openRequest({ url }, state)], { env });
    assert.equal(resumed.code, 0, resumed.stderr);
    const all = [...committed, ...resumed.lines].filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc'] as JsonObject);
    assert.deepEqual(all.map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: RICH_ROWS }, (_, i) => i));
    for (let i = 0; i < RICH_ROWS; i++) {
      const expected = richExpected(i);
      const doc = all[i] as JsonObject;
      assert.deepEqual([doc['id'], doc['label'], doc['nested'], doc['tags'], doc['attrs']], [expected['id'], expected['label'], expected['nested'], expected['tags'], expected['attrs']], `row ${i}`);
    }
  });

  test('bad input: a corrupt footer is a clear error', async () => {
    const p = await run([openRequest({ url: server.url('/corrupt.parquet') })]);
    assert.equal(p.code, 1);
    assert.match(lastError(p), /the Parquet footer of http:\/\/127\.0\.0\.1:\d+\/corrupt\.parquet is corrupt \(.+\); the file is truncated or damaged/);
  });

  test('bad input: a truncated file is a clear error', async () => {
    const p = await run([openRequest({ url: server.url('/truncated.parquet') })]);
    assert.equal(p.code, 1);
    assert.match(lastError(p), /truncated\.parquet is not a readable Parquet file: it starts like one but does not end with the PAR1 footer magic: the file is truncated/);
  });

  test('bad input: a row group bigger than the memory allows is named', async () => {
    const p = await run([openRequest({ url: server.url('/rich.parquet') })], { env: { SLUICE_HTTP_FILE_PARQUET_MAX_ROW_GROUP_MB: '0' } });
    assert.equal(p.code, 1);
    assert.match(lastError(p), /^row group 0 of 3 in http:\/\/127\.0\.0\.1:\d+\/rich\.parquet \(rows 0–2047\) is \d+ MB uncompressed, more than the 0 MB one row group may take/);
  });

  test('bad input: an outer compression is refused with the reason', async () => {
    const p = await run([openRequest({ url: server.url('/rich.parquet.gz') })]);
    assert.equal(p.code, 1);
    assert.match(lastError(p), /'rich\.parquet\.gz' is a compressed Parquet file, which cannot be read by position/);
  });
});
