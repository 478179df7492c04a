// Structs of leaves and lists of a leaf written as bytes from their pages (parquet-nested.ts) against the
// same files read through hyparquet's objects and the converters (nestedBytes: false): the documents must be
// the same bytes, for files DuckDB writes here with null and empty lists, null elements, null structs and
// null fields, required and optional columns, plain and dictionary pages, data pages v1 and v2, several
// codecs and row groups, and from a row inside a row group (a resume). A few rows are also checked against
// values written out here, so a mistake both paths shared would show.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { LineSink } from '../src/lines.ts';
import { readFooter, readParquetRows } from '../src/parquet.ts';
import type { ByteSource } from '../src/parquet.ts';

const ROWS = 5000;
/** Every shape the byte writer reads, and two it leaves to hyparquet (a map, a list of structs). */
const SQL = `SELECT
  i AS id,
  CASE WHEN i % 7 = 0 THEN NULL ELSE {'n': CASE WHEN i % 5 = 0 THEN NULL ELSE i * 3 END, 's': 'v' || (i % 11), 'd': (i / 8)::DECIMAL(12, 3),
    't': TIMESTAMP '2024-02-29 23:59:59' + INTERVAL (i) SECOND, 'b': i % 2 = 0, 'big': CASE WHEN i % 3 = 0 THEN 9223372036854775807 ELSE -i END::BIGINT} END AS st,
  {'x': i, 'y': 'always'} AS st_full,
  CASE WHEN i % 6 = 0 THEN NULL WHEN i % 6 = 1 THEN [] ELSE list_transform(range(i % 9), k -> CASE WHEN k = 2 THEN NULL ELSE i * 10 + k END) END AS ints,
  list_transform(range(i % 4), k -> 'w' || ((i + k) % 5)) AS words,
  CASE WHEN i % 10 = 3 THEN NULL ELSE list_transform(range(i % 3), k -> (i * 7 + k) / 100)::DECIMAL(10, 2)[] END AS amounts,
  list_transform(range(i % 3), k -> TIMESTAMPTZ '2023-01-01 00:00:00+00' + INTERVAL (i * 1000 + k) MILLISECOND) AS stamps,
  range(i % 40) AS long_list,
  MAP {'k': i} AS m,
  [{'p': i, 'q': 'z'}] AS list_of_structs
FROM range(${ROWS}) t(i)`;

const FILES = [
  { name: 'zstd-v1', options: 'COMPRESSION zstd' },
  { name: 'snappy-v2', options: 'COMPRESSION snappy, PARQUET_VERSION V2' },
  { name: 'gzip-v1-dict', options: 'COMPRESSION gzip', dict: true },
  { name: 'uncompressed-v2-dict', options: 'COMPRESSION uncompressed, PARQUET_VERSION V2', dict: true },
];

function sourceOf(bytes: Buffer): ByteSource {
  return { byteLength: bytes.length, read: async (a, b) => Buffer.from(bytes.subarray(a, b)), close: async () => {} };
}

/** The file's documents from `startRow`, as one text, and the columns hyparquet decoded as objects. */
async function read(bytes: Buffer, nestedBytes: boolean, startRow = 0): Promise<{ text: string; objectColumns: Set<string> }> {
  const source = sourceOf(bytes);
  const metadata = await readFooter(source, 'test.parquet');
  const sink = new LineSink(0, 'test.parquet', startRow, startRow);
  const parts: string[] = [];
  const objectColumns = new Set<string>();
  const take = (): void => {
    const t = sink.take();
    if (t) {
      parts.push(Buffer.from(t.lines).toString('utf8'));
      sink.recycle(t.lines.buffer as ArrayBuffer);
    }
  };
  for await (const _ of readParquetRows(source, metadata, {
    datetimes: new DatetimeNormalizer('+00:00'), defaultOffset: '+00:00', file: 'test.parquet', startRow, sink, batchRows: 97, nestedBytes,
    onObjectColumns: (_g, names) => names.forEach((n) => objectColumns.add(n)),
  })) take();
  take();
  return { text: parts.join(''), objectColumns };
}

const docOf = (line: string): Record<string, unknown> => (JSON.parse(line) as { captured: { doc: Record<string, unknown> } }).captured.doc;
const docs = (text: string): Record<string, unknown>[] => text.trim().split('\n').map(docOf);

describe('Parquet structs and lists through the byte writer', () => {
  let dir = '';
  const files = new Map<string, Buffer>();
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shf-parquet-nested-'));
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    // st_full NOT NULL: a required struct.
    await c.run(`CREATE TABLE t AS ${SQL}`);
    await c.run('CREATE TABLE r (id BIGINT, st_full STRUCT(x BIGINT, y VARCHAR) NOT NULL, words VARCHAR[] NOT NULL)');
    await c.run('INSERT INTO r SELECT id, st_full, words FROM t');
    for (const f of FILES) {
      // Dictionary pages: the same 50 rows over and over.
      const select = f.dict ? `SELECT t.* FROM range(${ROWS / 50}) r(j), t WHERE t.id < 50` : 'SELECT * FROM t ORDER BY id';
      await c.run(`COPY (${select}) TO '${dir}/${f.name}.parquet' (FORMAT parquet, ${f.options}, ROW_GROUP_SIZE 1024)`);
      files.set(f.name, readFileSync(`${dir}/${f.name}.parquet`));
    }
    await c.run(`COPY r TO '${dir}/required.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1024)`);
    files.set('required', readFileSync(`${dir}/required.parquet`));
    c.closeSync();
    db.closeSync();
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const f of [...FILES.map((x) => x.name), 'required']) {
    test(`${f}: the same documents as through hyparquet's objects; only the map and the list of structs left to it`, async () => {
      const bytes = files.get(f) as Buffer;
      const objects = await read(bytes, false);
      const written = await read(bytes, true);
      assert.equal(docs(written.text).length, ROWS);
      assert.ok(written.text === objects.text, 'the byte writer and hyparquet give the same bytes');
      const expectObjects = f === 'required' ? [] : ['m', 'list_of_structs'];
      assert.deepEqual([...written.objectColumns].sort(), expectObjects.sort());
      assert.ok(objects.objectColumns.has('st_full'), 'nestedBytes: false decodes the struct as objects');
    });
  }

  test('from a row inside a row group (a resume): the tail of the whole read', async () => {
    for (const f of ['zstd-v1', 'snappy-v2']) {
      const bytes = files.get(f) as Buffer;
      const whole = docs((await read(bytes, true)).text);
      for (const start of [1, 1023, 1500, ROWS - 1]) {
        const tail = docs((await read(bytes, true, start)).text);
        assert.deepEqual(tail, whole.slice(start), `${f} from row ${start}`);
      }
    }
  });

  test('values as written out here', async () => {
    const lines = (await read(files.get('zstd-v1') as Buffer, true)).text.trim().split('\n');
    const expected = (i: number): Record<string, unknown> => ({
      id: i,
      st: i % 7 === 0 ? null : {
        n: i % 5 === 0 ? null : i * 3, s: `v${i % 11}`, d: Number((i / 8).toFixed(3)),
        t: new Date(Date.UTC(2024, 1, 29, 23, 59, 59) + i * 1000).toISOString().replace('.000Z', 'Z'), b: i % 2 === 0,
        big: i % 3 === 0 ? '9223372036854775807' : -i,
      },
      st_full: { x: i, y: 'always' },
      ints: i % 6 === 0 ? null : i % 6 === 1 ? [] : Array.from({ length: i % 9 }, (_, k) => (k === 2 ? null : i * 10 + k)),
      words: Array.from({ length: i % 4 }, (_, k) => `w${(i + k) % 5}`),
      amounts: i % 10 === 3 ? null : Array.from({ length: i % 3 }, (_, k) => Number(((i * 7 + k) / 100).toFixed(2))),
      stamps: Array.from({ length: i % 3 }, (_, k) => {
        const ms = Date.UTC(2023, 0, 1) + i * 1000 + k;
        return new Date(ms).toISOString().replace(/\.?0*Z$/, 'Z');
      }),
      long_list: Array.from({ length: i % 40 }, (_, k) => k),
      m: { k: i },
      list_of_structs: [{ p: i, q: 'z' }],
    });
    for (const i of [0, 1, 2, 3, 5, 7, 8, 13, 42, 1023, 1024, 4999]) {
      // A value beyond 2^53 stays exact: compared as its text.
      const doc = docOf((lines[i] as string).replace(/:9223372036854775807\b/g, ':"9223372036854775807"'));
      delete doc['_meta'];
      assert.deepEqual(doc, expected(i), `row ${i}`);
    }
  });
});
