// What the bulk load puts on the wire for each staging column type: the `INSERT BULK` declaration must name the
// staging table's own types, and the COLMETADATA + ROW tokens must carry every value exactly. The stream is the real
// one tedious encodes (Connection.execBulkLoad, with only its network edges replaced), read back with tedious's own
// token parser (a bulk-load stream has the format the server uses for result rows, MS-TDS 2.2.6.1) — except
// DECIMAL, whose parser goes through a double: its bytes are checked directly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Connection as TediousConnection } from 'tedious';
import { Collation } from 'tedious/lib/collation.js';
import DebugModule from 'tedious/lib/debug.js';
import ParserModule from 'tedious/lib/token/stream-parser.js';
import { buildTable } from '@sluice/materialize-sql';
import type { BulkTarget, SqlParam } from '@sluice/materialize-sql';
import { bulkColumn, SqlServerConnection } from '../src/sqlserver-client.ts';
import { createSqlServerDialect, USER_DDL_STAGED_AS_IS } from '../src/sqlserver-dialect.ts';
import { scaleDecimal } from '../src/values.ts';
import { FIXTURE } from './fixture.ts';

/** Latin1_General_100_BIN2_UTF8 as the server describes it: LCID 0x0409, flags BINARY2 | UTF8, version 2. */
const UTF8 = new Collation(0x0409, 0x20 | 0x40, 2, 0);
/** Latin1_General_CI_AS (code page 1252): a user-DDL varchar with its own collation. */
const CP1252 = new Collation(0x0409, 0x01 | 0x04 | 0x08, 0, 0);

// Both modules end in `module.exports = Class`: the default import is the class itself at run time, which the
// declaration files (`export default`) do not describe under NodeNext.
const Debug = DebugModule as unknown as typeof DebugModule.default;
const Parser = ParserModule as unknown as typeof ParserModule.default;

interface Captured { batches: string[]; payload: Buffer }

/** A never-connected tedious Connection whose network edges record what would be sent. */
function driver(target: BulkTarget, collations: Record<string, Collation>): { conn: SqlServerConnection; captured: Captured } {
  const tc = new TediousConnection({ server: '127.0.0.1', options: { port: 1, encrypt: false, useUTC: true } });
  const captured: Captured = { batches: [], payload: Buffer.alloc(0) };
  const edges = tc as unknown as {
    execSqlBatch(req: { sqlTextOrProcedure: string; emit(e: string, v: unknown): void; callback(err: Error | undefined, n?: number): void }): void;
    makeRequest(bulk: { callback(err: Error | undefined, n?: number): void }, type: number, payload: AsyncIterable<Buffer>): void;
  };
  edges.execSqlBatch = (req) => queueMicrotask(() => {
    captured.batches.push(req.sqlTextOrProcedure);
    if (req.sqlTextOrProcedure.startsWith('SELECT TOP 0')) {
      req.emit('columnMetadata', target.columns.map((c) => ({ colName: c.name, collation: collations[c.name] })));
    }
    req.callback(undefined, 0);
  });
  edges.makeRequest = (bulk, _type, payload) => {
    void (async () => {
      const parts: Buffer[] = [];
      for await (const p of payload) parts.push(p);
      captured.payload = Buffer.concat(parts);
      bulk.callback(undefined, (await decode(captured.payload)).rows.length);
    })().catch((err: Error) => bulk.callback(err));
  };
  return { conn: new SqlServerConnection(tc, () => undefined, { user: 'u', database: 'd' }), captured };
}

interface Decoded { columns: { colName: string; type: { name: string }; collation?: Collation; dataLength?: number; precision?: number; scale?: number }[]; rows: unknown[][] }

async function decode(payload: Buffer): Promise<Decoded> {
  const out: Decoded = { columns: [], rows: [] };
  const options = { useUTC: true, lowerCaseGuids: true, tdsVersion: '7_4', useColumnNames: false, columnNameReplacer: undefined, camelCaseColumns: false };
  for await (const token of Parser.parseTokens([payload], new Debug(), options as never)) {
    const t = token as { name?: string; columns?: unknown } | undefined;
    if (t?.name === 'COLMETADATA') out.columns = t.columns as Decoded['columns'];
    if (t?.name === 'ROW') out.rows.push((t.columns as { value: unknown }[]).map((c) => c.value));
  }
  return out;
}

const col = (name: string, ddl: string, nullable = true) => ({ name, identifier: `"${name}"`, ddl, nullable });

describe('bulk load encoding of staging column types', () => {
  const target: BulkTarget = {
    name: '#flow_temp_store_0', identifier: '#flow_temp_store_0',
    columns: [
      col('k', 'varchar(900) COLLATE Latin1_General_100_BIN2_UTF8', false),
      col('big', 'BIGINT'),
      col('n', 'INT'),
      col('d20', 'DECIMAL(20)'),
      col('d38', 'NUMERIC(38, 10)'),
      col('dbl', 'DOUBLE PRECISION'),
      col('b', 'BIT'),
      col('day', 'DATE'),
      col('ts', 'DATETIME2'),
      col('tod', 'TIME'),
      col('bin', 'VARBINARY(900)'),
      col('s', 'varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8'),
      col('label', 'VARCHAR(20) COLLATE Latin1_General_CI_AS'),
      col('ns', 'nvarchar(450) COLLATE Latin1_General_100_BIN2'),
      col('u', 'UNIQUEIDENTIFIER'),
      col('si', 'SMALLINT'),
      col('ti', 'TINYINT'),
      col('r', 'REAL'),
      col('dt', 'DATETIME'),
      col('sdt', 'SMALLDATETIME'),
      col('_flow_delete', 'boolean', false),
    ],
  };
  const collations: Record<string, Collation> = { k: UTF8, s: UTF8, label: CP1252, ns: UTF8 };
  const rows: SqlParam[][] = [
    ['κόσμε-1', 2n ** 62n + 1n, -2147483648, '18446744073709551615', '-1234567890123456789012345678.1234567890', 0.1, true, '2024-02-29',
      '2024-05-01T12:34:56.1234567Z', '23:59:59.9999999', new Uint8Array([0, 255, 7]), '日本語 ✓ \u{1F600}', 'café', 'ünï',
      '0e984725-c51c-4bf4-9960-e1c80e27aba0', -32768, 255, 1.5, '2024-05-01T12:34:56.127Z', '2024-05-01T12:34:00Z', false],
    ['k2', null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, true],
  ];

  it('declares the staging types in INSERT BULK and carries every value exactly', async () => {
    const { conn, captured } = driver(target, collations);
    assert.equal(await conn.bulkInsert(target, rows), 2);
    const lookups = captured.batches.filter((b) => b.startsWith('SELECT TOP 0'));
    assert.deepEqual(lookups, ['SELECT TOP 0 * FROM #flow_temp_store_0;']);
    const insert = captured.batches.find((b) => b.startsWith('insert bulk'));
    assert.equal(insert, 'insert bulk #flow_temp_store_0([k] varchar(900), [big] bigint, [n] int, [d20] decimal(20, 0), '
      + '[d38] decimal(38, 10), [dbl] float, [b] bit, [day] date, [ts] datetime2(7), [tod] time(7), [bin] varbinary(900), '
      + '[s] varchar(max), [label] varchar(20), [ns] nvarchar(450), [u] uniqueidentifier, [si] smallint, [ti] tinyint, [r] real, '
      + '[dt] datetime, [sdt] smalldatetime, [_flow_delete] bit) WITH (KEEP_NULLS)');

    const decoded = await decode(captured.payload);
    const meta = Object.fromEntries(decoded.columns.map((c) => [c.colName, c]));
    assert.equal(meta['k']!.type.name, 'VarChar');
    assert.deepEqual(meta['k']!.collation?.toBuffer(), UTF8.toBuffer(), 'varchar data is declared in the column\'s own (UTF-8) collation');
    assert.deepEqual(meta['label']!.collation?.toBuffer(), CP1252.toBuffer());
    assert.equal(meta['d38']!.precision, 38);
    assert.equal(meta['d38']!.scale, 10);

    const [r1, r2] = decoded.rows;
    assert.equal(r1![0], 'κόσμε-1', 'UTF-8 text round-trips through a varchar column with a UTF-8 collation');
    assert.equal(r1![1], (2n ** 62n + 1n).toString(), 'BIGINT beyond 2^53 is exact'); // tedious reads BIGINT as a string
    assert.equal(r1![2], -2147483648);
    assert.equal(r1![5], 0.1);
    assert.equal(r1![6], true);
    assert.equal((r1![7] as Date).toISOString(), '2024-02-29T00:00:00.000Z');
    assert.equal((r1![8] as Date & { nanosecondsDelta?: number }).toISOString(), '2024-05-01T12:34:56.123Z');
    assert.ok(Math.abs(((r1![8] as { nanosecondsDelta?: number }).nanosecondsDelta ?? 0) - 0.0004567) < 1e-9, 'DATETIME2 keeps 100 ns');
    assert.deepEqual([...(r1![10] as Buffer)], [0, 255, 7]);
    assert.equal(r1![11], '日本語 ✓ \u{1F600}', 'characters outside the BMP survive the UTF-8 column');
    assert.equal(r1![12], 'café', 'a code-page column gets its own encoding');
    assert.equal(r1![13], 'ünï');
    assert.equal(r1![14], '0e984725-c51c-4bf4-9960-e1c80e27aba0');
    assert.deepEqual(r1!.slice(15, 18), [-32768, 255, 1.5]);
    assert.equal((r1![18] as Date).toISOString(), '2024-05-01T12:34:56.127Z', 'DATETIME (1/300 s) holds .127 as .127');
    assert.equal((r1![19] as Date).toISOString(), '2024-05-01T12:34:00.000Z');
    assert.equal(r1![20], false);
    assert.deepEqual(r2!.slice(1, 20), Array(19).fill(null), 'NULLs stay NULL in every type');
    assert.equal(r2![20], true);

    // DECIMAL bytes: sign (1 = positive) then the scaled magnitude, little-endian, in 8 (p ≤ 19)… 16 bytes (p ≤ 38).
    const magnitude = (bytes: Buffer) => bytes.subarray(1).reduceRight((acc, b) => (acc << 8n) | BigInt(b), 0n) * (bytes[0] === 1 ? 1n : -1n);
    const d20 = findDecimal(captured.payload, 13, 18446744073709551615n);
    assert.equal(magnitude(d20), 18446744073709551615n, 'DECIMAL(20) holds 2^64-1 exactly (tedious\'s own Decimal would round it through a double)');
    const d38 = findDecimal(captured.payload, 17, -12345678901234567890123456781234567890n);
    assert.equal(magnitude(d38), -12345678901234567890123456781234567890n);
  });

  it('asks the server for collations once per staging table and session, and not at all without character columns', async () => {
    const { conn, captured } = driver(target, collations);
    await conn.bulkInsert(target, rows.slice(0, 1));
    await conn.bulkInsert(target, rows.slice(1));
    assert.equal(captured.batches.filter((b) => b.startsWith('SELECT TOP 0')).length, 1);
    const numeric: BulkTarget = { name: '#flow_temp_load_1', identifier: '#flow_temp_load_1', columns: [col('id', 'BIGINT', false)] };
    const other = driver(numeric, {});
    await other.conn.bulkInsert(numeric, [[1]]);
    assert.equal(other.captured.batches.filter((b) => b.startsWith('SELECT TOP 0')).length, 0);
  });

  it('fails with a clear error when the server reports no collation for a character column', async () => {
    const { conn } = driver(target, {});
    await assert.rejects(conn.bulkInsert(target, rows), /server reported no collation for character column k of #flow_temp_store_0/);
  });

  it('rejects values a staging type cannot hold, naming the field', async () => {
    const one = (ddl: string, v: SqlParam) => {
      const t: BulkTarget = { name: '#t', identifier: '#t', columns: [col('f', ddl)] };
      return driver(t, {}).conn.bulkInsert(t, [[v]]);
    };
    await assert.rejects(one('DECIMAL(5, 2)', '1234.5'), /field 'f': 1234.5 does not fit a DECIMAL\(5, 2\) column/);
    await assert.rejects(one('INT', 2 ** 31), /field 'f': 2147483648 is outside the INT range/);
    await assert.rejects(one('TINYINT', -1), /outside the TINYINT range/);
    await assert.rejects(one('DATE', '2024-02-30'), /field 'f': '2024-02-30' is not a date/);
  });

  it('has an encoder for every type the dialect stages, and for nothing it does not', () => {
    for (const base of USER_DDL_STAGED_AS_IS) {
      assert.doesNotThrow(() => bulkColumn(['varchar', 'nvarchar', 'varbinary'].includes(base) ? `${base}(10)` : base, true), base);
    }
    for (const collation of ['Latin1_General_100_BIN2_UTF8', 'Latin1_General_100_BIN2']) {
      const d = createSqlServerDialect({ collation });
      const tables = (FIXTURE.bindings ?? []).map((b, i) => buildTable(d, i, b.resourcePath ?? [], b));
      for (const c of tables.flatMap((t) => t.columns)) {
        assert.doesNotThrow(() => bulkColumn(c.mapped.stagingDdl ?? c.mapped.ddl, true), `${collation}: ${c.field}`);
      }
    }
    assert.throws(() => bulkColumn('MONEY', true), /internal error: a staging column of type MONEY has no bulk-load encoding/);
  });
});

describe('exact decimal scaling', () => {
  it('scales decimal text to the column\'s integer, rounding half away from zero past the scale', () => {
    assert.equal(scaleDecimal('18446744073709551615', 20, 0, 'f'), 18446744073709551615n);
    assert.equal(scaleDecimal('1.005', 10, 2, 'f'), 101n);
    assert.equal(scaleDecimal('-1.005', 10, 2, 'f'), -101n);
    assert.equal(scaleDecimal('1.004', 10, 2, 'f'), 100n);
    assert.equal(scaleDecimal('1e3', 10, 2, 'f'), 100000n);
    assert.equal(scaleDecimal('1.5e-7', 10, 2, 'f'), 0n);
    assert.equal(scaleDecimal('.5', 3, 0, 'f'), 1n);
    assert.equal(scaleDecimal('0.1', 38, 37, 'f'), 10n ** 36n);
    assert.throws(() => scaleDecimal('1e40', 38, 0, 'f'), /does not fit a DECIMAL\(38, 0\)/);
    assert.throws(() => scaleDecimal('abc', 38, 0, 'f'), /'abc' is not a number/);
    assert.throws(() => scaleDecimal('.', 38, 0, 'f'), /is not a number/);
  });
});

/** The DECIMAL value bytes (length byte `len`, then `len` bytes) holding `expected` in the payload. */
function findDecimal(payload: Buffer, len: number, expected: bigint): Buffer {
  const sign = expected < 0n ? 0 : 1;
  let mag = expected < 0n ? -expected : expected;
  const want = Buffer.alloc(len + 1);
  want[0] = len;
  want[1] = sign;
  for (let i = 0; i < len - 1; i++) { want[2 + i] = Number(mag & 0xffn); mag >>= 8n; }
  const at = payload.indexOf(want);
  assert.ok(at >= 0, `the payload holds DECIMAL ${expected} as ${want.toString('hex')}`);
  return payload.subarray(at + 1, at + 1 + len);
}
