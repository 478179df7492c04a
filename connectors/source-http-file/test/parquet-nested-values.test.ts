// Values inside nested Parquet columns are the values the same column gives at the top level, exactly:
// decimals of every physical type (INT32, INT64, FIXED_LEN_BYTE_ARRAY; precision past 15 digits, negative,
// scale 0 and > 0), INT64 and UINT64 beyond 2^53, timestamps of each unit (UTC and wall-clock), dates, times,
// UUIDs and binary — inside a struct and a list (the byte writer, parquet-nested.ts, and hyparquet's objects),
// a map's value and key, a list of structs, a struct of a struct and a list of lists (hyparquet's objects).
// The files are written here by DuckDB (a devDependency) with PLAIN, DELTA (data pages v2) and dictionary
// pages; the expected text of each value comes from DuckDB's own rendering of it (VARCHAR, base64), read
// back with the file's rows, so a mistake our writer and our converters shared would show.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DatetimeNormalizer } from '../src/datetime.ts';
import { LineSink } from '../src/lines.ts';
import { readFooter, readParquetRows } from '../src/parquet.ts';
import type { ByteSource } from '../src/parquet.ts';

/** How a type's expected JSON is made from DuckDB's text of the value. */
type Kind = 'integer' | 'decimal' | 'double' | 'timestamp' | 'timestamptz' | 'date' | 'time' | 'string' | 'boolean';

/** Each type: its DuckDB type, a value per row `i` (distinct, extremes on some rows), and how its text is expected. */
const TYPES: { name: string; type: string; kind: Kind; sql: string }[] = [
  // DECIMAL(4,2) and (9,4): INT32; (18,x): INT64; (38,x) and (30,28): FIXED_LEN_BYTE_ARRAY.
  { name: 'dec4', type: 'DECIMAL(4,2)', kind: 'decimal', sql: '(((i * 37) % 19999) - 9999) * 0.01' },
  { name: 'dec9', type: 'DECIMAL(9,4)', kind: 'decimal', sql: '(((i::BIGINT * 7919) % 1999999999) - 999999999) * 0.0001' },
  { name: 'dec18', type: 'DECIMAL(18,3)', kind: 'decimal', sql: 'CASE i % 5 WHEN 0 THEN 999999999999999.999 WHEN 1 THEN -999999999999999.999 ELSE ((i::HUGEINT * 7919123456789) % 1999999999999999999 - 999999999999999999) * 0.001 END' },
  { name: 'dec18s0', type: 'DECIMAL(18,0)', kind: 'decimal', sql: 'CASE i % 3 WHEN 0 THEN -999999999999999999 ELSE (i::HUGEINT * 7919123456789) % 1999999999999999999 - 999999999999999999 END' },
  { name: 'dec38', type: 'DECIMAL(38,10)', kind: 'decimal', sql: "CASE i % 4 WHEN 0 THEN '-12345678901234567890.0123456789'::DECIMAL(38,10) WHEN 1 THEN (i / 8)::DECIMAL(38,10) ELSE ((i::HUGEINT * 12345678901234567890123) % 99999999999999999999999999999999999999 - 49999999999999999999999999999999999999) * 0.0000000001 END" },
  { name: 'dec38s0', type: 'DECIMAL(38,0)', kind: 'decimal', sql: "CASE i % 3 WHEN 0 THEN 99999999999999999999999999999999999999::DECIMAL(38,0) WHEN 1 THEN -99999999999999999999999999999999999999::DECIMAL(38,0) ELSE (i::HUGEINT * 12345678901234567890123) % 99999999999999999999999999999999999999 END" },
  { name: 'dec30', type: 'DECIMAL(30,28)', kind: 'decimal', sql: '(((i::HUGEINT * 7919) % 199999) - 99999) * 0.0000000000000000000000000001' },
  { name: 'big', type: 'BIGINT', kind: 'integer', sql: 'CASE i % 4 WHEN 0 THEN 9223372036854775807 - i WHEN 1 THEN -9223372036854775807 - 1 + (i - 1) WHEN 2 THEN 9007199254740993 + i ELSE i - 1000 END' },
  { name: 'ubig', type: 'UBIGINT', kind: 'integer', sql: '18446744073709551615 - i * 3' },
  { name: 'ts_ms', type: 'TIMESTAMP_MS', kind: 'timestamp', sql: "TIMESTAMP '1969-12-31 23:59:59' + INTERVAL (i * 7777777) MILLISECOND" },
  { name: 'ts_us', type: 'TIMESTAMP', kind: 'timestamp', sql: "TIMESTAMP '1901-12-31 23:59:59' + INTERVAL (i * 77777777777) MICROSECOND" },
  { name: 'ts_ns', type: 'TIMESTAMP_NS', kind: 'timestamp', sql: 'make_timestamp_ns(-1000000000 + i * 777777777777)' },
  { name: 'ts_s', type: 'TIMESTAMP_S', kind: 'timestamp', sql: "TIMESTAMP '1900-01-01 00:00:01' + INTERVAL (i * 7777777) SECOND" },
  { name: 'tstz', type: 'TIMESTAMPTZ', kind: 'timestamptz', sql: "TIMESTAMPTZ '2024-02-29 23:59:59.5+00' + INTERVAL (i * 3777777) MICROSECOND" },
  { name: 'day', type: 'DATE', kind: 'date', sql: "DATE '1960-02-29' + (i * 13)::INTEGER" },
  { name: 'tod', type: 'TIME', kind: 'time', sql: "TIME '00:00:00' + INTERVAL ((i * 12345678901) % 86400000000) MICROSECOND" },
  { name: 'id', type: 'UUID', kind: 'string', sql: "('00000000-0000-4000-8000-' || lpad(i::VARCHAR, 12, '0'))::UUID" },
  { name: 'bin', type: 'BLOB', kind: 'string', sql: 'unhex(md5(i::VARCHAR))' },
  { name: 'str', type: 'VARCHAR', kind: 'string', sql: "CASE WHEN i % 7 = 0 THEN 'q\"\\é ☃ ' || i ELSE 'v' || i END" },
  { name: 'flag', type: 'BOOLEAN', kind: 'boolean', sql: 'i % 3 = 0' },
  { name: 'dbl', type: 'DOUBLE', kind: 'double', sql: 'CASE WHEN i % 2 = 0 THEN i / 7 ELSE -i * 1e300 / 3 END' },
];

/** Where each value is placed: the column's name suffix, its SQL from the value `x` (and the row `i`), and the value expected there. */
const SHAPES: { name: string; sql: (x: string) => string; expect: (top: unknown, i: number) => unknown }[] = [
  { name: 'top', sql: (x) => x, expect: (top) => top },
  // The byte writer's shapes (a struct of leaves, a list of one leaf).
  { name: 'st', sql: (x) => `{'a': ${x}, 'i': i}`, expect: (top, i) => ({ a: top, i: num(String(i)) }) },
  { name: 'l', sql: (x) => `[${x}, NULL]`, expect: (top) => [top, null] },
  // hyparquet's objects.
  { name: 'mv', sql: (x) => `MAP {'k': ${x}}`, expect: (top) => ({ k: top }) },
  { name: 'mk', sql: (x) => `CASE WHEN ${x} IS NULL THEN NULL ELSE MAP {${x}: i} END`, expect: (top, i) => (top === null ? null : { [keyOf(top)]: num(String(i)) }) },
  { name: 'ls', sql: (x) => `[{'a': ${x}, 'b': [${x}]}]`, expect: (top) => [{ a: top, b: [top] }] },
  { name: 'ss', sql: (x) => `{'s': {'a': ${x}}, 'l': [${x}]}`, expect: (top) => ({ s: { a: top }, l: [top] }) },
  { name: 'll', sql: (x) => `[[${x}], []]`, expect: (top) => [[top], []] },
];

const ROWS = 1200;
/** Files: PLAIN pages (v1), DELTA encodings (data pages v2), dictionary pages (37 distinct rows over and over). */
const FILES = [
  { name: 'plain', distinct: ROWS, options: 'COMPRESSION zstd' },
  { name: 'delta-v2', distinct: ROWS, options: 'COMPRESSION snappy, PARQUET_VERSION V2' },
  { name: 'dictionary', distinct: 37, options: 'COMPRESSION gzip' },
];
/** Timestamps without a time zone are wall-clock times: they take parser.defaultOffset. */
const OFFSET = '+05:30';

/** A number, tagged with its JSON text (documents are parsed with every number's source text kept). */
const num = (text: string): string => `#num:${text}`;

/** What a map key is: a string as it is, any other value as its JSON text. */
function keyOf(v: unknown): string {
  if (typeof v === 'string') return v.startsWith('#num:') ? v.slice(5) : v;
  return JSON.stringify(v);
}

/** A document with every number as `#num:<its text>`, so integers past 2^53 and decimals compare exactly. */
function parseExact(line: string): Record<string, unknown> {
  const parse = JSON.parse as (text: string, reviver: (key: string, value: unknown, context: { source?: string }) => unknown) => unknown;
  return parse(line, (_k, v, context) => (typeof v === 'number' ? num(context.source as string) : v)) as Record<string, unknown>;
}

/** The JSON value expected for DuckDB's text of a value (null: SQL NULL). */
function expected(kind: Kind, text: string | null): unknown {
  if (text === null) return null;
  switch (kind) {
    case 'integer': return num(text);
    case 'decimal': {
      // A number when the double nearest it prints back as the same value, else the string of every digit of the scale.
      const canonical = text.includes('.') ? text.replace(/\.?0+$/, '') : text;
      return String(Number(canonical)) === canonical ? num(canonical) : text;
    }
    case 'double': return num(String(Number(text)));
    // DuckDB writes `YYYY-MM-DD HH:MM:SS[.fraction]`, the fraction without trailing zeros: RFC 3339 with the offset.
    case 'timestamp': return `${text.replace(' ', 'T')}${OFFSET}`;
    case 'timestamptz': return `${text.replace(' ', 'T').replace(/\+00$/, '')}Z`;
    case 'date': return text;
    // Microseconds: always six digits (upstream's form).
    case 'time': {
      const [hms, frac = ''] = text.split('.');
      return `${hms}.${frac.padEnd(6, '0')}`;
    }
    case 'string': return text;
    case 'boolean': return text === 'true';
  }
}

function sourceOf(bytes: Buffer): ByteSource {
  return { byteLength: bytes.length, read: async (a, b) => Buffer.from(bytes.subarray(a, b)), close: async () => {} };
}

/** The file's documents as lines; `nestedBytes: false` reads every nested column through hyparquet's objects. */
async function readLines(bytes: Buffer, nestedBytes: boolean): Promise<string[]> {
  const source = sourceOf(bytes);
  const metadata = await readFooter(source, 'test.parquet');
  const sink = new LineSink(0, 'test.parquet', 0, 0);
  const parts: string[] = [];
  const take = (): void => {
    const t = sink.take();
    if (t) {
      parts.push(Buffer.from(t.lines).toString('utf8'));
      sink.recycle(t.lines.buffer as ArrayBuffer);
    }
  };
  for await (const _ of readParquetRows(source, metadata, {
    datetimes: new DatetimeNormalizer(OFFSET), defaultOffset: OFFSET, file: 'test.parquet', startRow: 0, sink, nestedBytes,
  })) take();
  take();
  return parts.join('').trim().split('\n');
}

const docOf = (line: string): Record<string, unknown> => {
  const doc = (parseExact(line) as { captured: { doc: Record<string, unknown> } }).captured.doc;
  delete doc['_meta'];
  return doc;
};

/** Rows of `i` and every type's value: `distinct` different rows, repeated to ROWS. */
const valuesSql = (distinct: number): string => `SELECT j AS i, ${TYPES.map((t) => t.name).join(', ')}
  FROM range(${ROWS}) r(j), (SELECT i AS k, ${TYPES.map((t) => `CASE WHEN i % 11 = 5 THEN NULL ELSE (${t.sql})::${t.type} END AS ${t.name}`).join(', ')} FROM range(${distinct}) t(i)) v
  WHERE v.k = j % ${distinct}`;

async function writeFile(c: DuckDBConnection, path: string, distinct: number, options: string): Promise<void> {
  const columns = TYPES.flatMap((t) => SHAPES.map((s) => `${s.sql(t.name)} AS ${t.name}_${s.name}`));
  await c.run(`COPY (SELECT i, ${columns.join(', ')} FROM (${valuesSql(distinct)}) ORDER BY i) TO '${path}' (FORMAT parquet, ${options}, ROW_GROUP_SIZE 2048)`);
}

describe('Parquet nested values: exact, and the same as at the top level', () => {
  let dir = '';
  const files = new Map<string, Buffer>();
  /** Per file: each row's expected document (DuckDB's text of each value, made into our JSON form). */
  const expectedDocs = new Map<string, Record<string, unknown>[]>();
  let db: DuckDBInstance;
  let c: DuckDBConnection;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shf-parquet-values-'));
    db = await DuckDBInstance.create(':memory:');
    c = await db.connect();
    // TIMESTAMPTZ as text in UTC.
    await c.run(`SET TimeZone = 'UTC'`);
    for (const f of FILES) {
      const path = `${dir}/${f.name}.parquet`;
      await writeFile(c, path, f.distinct, f.options);
      files.set(f.name, readFileSync(path));
      const texts = TYPES.map((t) => (t.type === 'BLOB' ? `to_base64(${t.name})` : `${t.name}::VARCHAR`));
      const rows = (await c.runAndReadAll(`SELECT i, ${texts.join(', ')} FROM (${valuesSql(f.distinct)}) ORDER BY i`)).getRows();
      expectedDocs.set(f.name, rows.map((row) => {
        const i = Number(row[0]);
        const doc: Record<string, unknown> = { i: num(String(i)) };
        TYPES.forEach((t, k) => {
          const top = expected(t.kind, row[k + 1] as string | null);
          for (const s of SHAPES) doc[`${t.name}_${s.name}`] = s.expect(top, i);
        });
        return doc;
      }));
    }
  });
  after(() => {
    c?.closeSync();
    db?.closeSync();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const f of FILES) {
    for (const nestedBytes of [true, false]) {
      test(`${f.name}, ${nestedBytes ? 'structs and lists by the byte writer' : 'every nested column through hyparquet'}: every value as DuckDB renders it, at every depth`, async () => {
        const lines = await readLines(files.get(f.name) as Buffer, nestedBytes);
        const want = expectedDocs.get(f.name) as Record<string, unknown>[];
        assert.equal(lines.length, ROWS);
        for (let r = 0; r < ROWS; r++) {
          const doc = docOf(lines[r] as string);
          const exp = want[r] as Record<string, unknown>;
          if (JSON.stringify(doc) === JSON.stringify(exp)) continue;
          for (const key of Object.keys(exp)) assert.deepEqual(doc[key], exp[key], `row ${r}, column ${key}: ${lines[r]}`);
          assert.deepEqual(doc, exp, `row ${r}`);
        }
      });
    }
  }

  test('the values checked include what a double cannot hold (so the test can fail on a rounding)', () => {
    const docs = expectedDocs.get('plain') as Record<string, unknown>[];
    const tops = (name: string): unknown[] => docs.map((d) => d[`${name}_top`]);
    // Decimals past 15 significant digits stay strings; INT64/UINT64 past 2^53 stay exact integers.
    assert.ok(tops('dec38').includes('-12345678901234567890.0123456789'));
    assert.ok(tops('dec18s0').includes('-999999999999999999'));
    assert.ok(tops('dec30').some((v) => typeof v === 'string' && v.startsWith('0.0000000000000000000000')));
    assert.ok(tops('big').includes(num('9007199254740995')));
    assert.ok(tops('big').includes(num('9223372036854775807')));
    assert.ok(tops('big').includes(num('-9223372036854775808')));
    assert.ok(tops('ubig').includes(num('18446744073709551615')));
    assert.ok(tops('ts_ns').some((v) => typeof v === 'string' && /\.\d{9}\+05:30$/.test(v)), 'nanosecond timestamps with nine digits');
    assert.ok(tops('ts_us').some((v) => typeof v === 'string' && v.startsWith('19')), 'timestamps before 1970');
  });

  test('map keys: strings as stored (not rewritten as datetimes), other types as their value\'s text, order and odd names kept', async () => {
    const path = `${dir}/keys.parquet`;
    await c.run(`COPY (SELECT
      MAP {'2024-01-02 03:04:05': '2024-01-02 03:04:05', '__proto__': 'p', 'a"b\\c': 'q', '10': 'x', '2': 'y'} AS s,
      MAP {DATE '5874897-12-31': 1, DATE '2024-02-29': 2} AS d,
      MAP {1.50::DECIMAL(4,2): 'a', -12345678901234567890.0123456789::DECIMAL(38,10): 'b'} AS dec,
      MAP {9007199254740993::BIGINT: true} AS big,
      MAP {TIMESTAMPTZ '2024-01-01 00:00:00.25+00': 1} AS ts,
      MAP {unhex('00ff10'): 1} AS bin,
      MAP {true: 1} AS flag,
      MAP {1.5::DOUBLE: 1} AS dbl
    ) TO '${path}' (FORMAT parquet)`);
    const bytes = readFileSync(path);
    for (const nestedBytes of [true, false]) {
      const [line] = await readLines(bytes, nestedBytes);
      const text = (line as string).slice((line as string).indexOf('"doc":') + 6, (line as string).indexOf(',"_meta"'));
      assert.equal(text, `{"s":{"2024-01-02 03:04:05":"2024-01-02T03:04:05${OFFSET}","__proto__":"p","a\\"b\\\\c":"q","10":"x","2":"y"},`
        + '"d":{"2145042905":1,"2024-02-29":2},'
        + '"dec":{"1.5":"a","-12345678901234567890.0123456789":"b"},'
        + '"big":{"9007199254740993":true},'
        + '"ts":{"2024-01-01T00:00:00.25Z":1},'
        + '"bin":{"AP8Q":1},'
        + '"flag":{"true":1},'
        + '"dbl":{"1.5":1}');
      // And it is one JSON object per line.
      assert.ok(parseExact(line as string));
    }
  });

  test('a map whose entries are not named key and value (other writers name them freely) is read as a map', async () => {
    const path = `${dir}/names.parquet`;
    await c.run(`COPY (SELECT MAP {'a': 1.5::DECIMAL(4,2), 'b': NULL} AS m) TO '${path}' (FORMAT parquet)`);
    // The footer's names `key` and `value` (thrift strings: a length byte, then the bytes) renamed in place, same lengths.
    const bytes = readFileSync(path);
    const len = bytes.readUInt32LE(bytes.length - 8);
    const footer = bytes.subarray(bytes.length - 8 - len, bytes.length - 8);
    const renamed = footer.toString('latin1').replaceAll('\x03key', '\x03kez').replaceAll('\x05value', '\x05valuf');
    assert.notEqual(renamed, footer.toString('latin1'));
    Buffer.from(renamed, 'latin1').copy(footer);
    for (const nestedBytes of [true, false]) {
      const [line] = await readLines(bytes, nestedBytes);
      assert.deepEqual(docOf(line as string), { m: { a: num('1.5'), b: null } });
    }
  });

  test('unsigned 32-bit integers from 2^31 up in DELTA_BINARY_PACKED pages: exact where the byte writer reads them, refused where hyparquet would change them', async () => {
    // hyparquet reads such a page's first value modulo 2^32 of its zigzag form: DuckDB's 4294967295 became 2147483647.
    const values = "(4294967295 - i * 7)::UINTEGER";
    const rows = 2100;
    const want = (await c.runAndReadAll(`SELECT (${values})::VARCHAR FROM range(${rows}) t(i) ORDER BY i`)).getRows().map((r) => num(r[0] as string));
    const v2 = `${dir}/uint-v2.parquet`;
    await c.run(`COPY (SELECT ${values} AS top, {'a': ${values}} AS st, [${values}] AS l FROM range(${rows}) t(i) ORDER BY i) TO '${v2}' (FORMAT parquet, PARQUET_VERSION V2, ROW_GROUP_SIZE 2048)`);
    const lines = await readLines(readFileSync(v2), true);
    assert.equal(lines.length, rows);
    lines.forEach((line, i) => assert.deepEqual(docOf(line), { top: want[i], st: { a: want[i] }, l: [want[i]] }, `row ${i}`));
    await assert.rejects(readLines(readFileSync(v2), false), /column 'st\.a' holds unsigned 32-bit integers from 2\^31 up in DELTA_BINARY_PACKED pages.*PARQUET_VERSION V1/);
    // In a map (hyparquet's objects): refused with data pages v2, exact with v1, and values below 2^31 are read either way.
    const mapOf = async (sql: string, version: string): Promise<string[]> => {
      const path = `${dir}/uint-map-${version}.parquet`;
      await c.run(`COPY (SELECT MAP {'k': ${sql}} AS m FROM range(${rows}) t(i) ORDER BY i) TO '${path}' (FORMAT parquet, PARQUET_VERSION ${version})`);
      return readLines(readFileSync(path), true);
    };
    await assert.rejects(mapOf(values, 'V2'), /column 'm\.key_value\.value' holds unsigned 32-bit integers/);
    (await mapOf(values, 'V1')).forEach((line, i) => assert.deepEqual(docOf(line), { m: { k: want[i] } }, `row ${i}`));
    (await mapOf('(2147483647 - i)::UINTEGER', 'V2')).forEach((line, i) => assert.deepEqual(docOf(line), { m: { k: num(String(2147483647 - i)) } }, `row ${i}`));
  });

  test('a field named __proto__ inside a list of structs: a clear error, not a lost value', async () => {
    const path = `${dir}/proto.parquet`;
    await c.run(`COPY (SELECT {'__proto__': 3, 'b': 1} AS top_struct, [{'__proto__': 1, 'constructor': 2}] AS ls) TO '${path}' (FORMAT parquet)`);
    await assert.rejects(readLines(readFileSync(path), true), /Parquet column 'ls\.element' has a field named '__proto__' .*rename the field in the file/);
    // The byte writer reads a top-level struct of leaves field by field: that name is kept.
    await c.run(`COPY (SELECT {'__proto__': 3, 'b': 1} AS top_struct) TO '${path}' (FORMAT parquet)`);
    const [line] = await readLines(readFileSync(path), true);
    assert.deepEqual(docOf(line as string), { top_struct: { ['__proto__']: num('3'), b: num('1') } });
  });
});
