// The client's bulk load through the REAL tedious code path (Connection.execBulkLoad, Readable.from over our async
// iterable, the RowTransform that validates and encodes every value into TDS row tokens), with only the two
// network edges replaced: the `INSERT BULK` batch is acknowledged at once, and the packet stream is read by a
// test-controlled "socket". This shows what a fake client cannot: the driver pulls rows as it encodes them, a
// bounded number ahead of the socket, and an error from the row source fails the bulk load with that error.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Connection as TediousConnection } from 'tedious';
import type { BulkTarget, SqlParam } from '@sluice/materialize-sql';
import { Collation } from 'tedious/lib/collation.js';
import { SqlServerConnection } from '../src/sqlserver-client.ts';

/** Latin1_General_100_BIN2_UTF8 as the server describes it: LCID 0x0409, flags BINARY2 | UTF8, version 2. */
const UTF8 = new Collation(0x0409, 0x20 | 0x40, 2, 0);

interface Internals {
  execSqlBatch(req: { callback(err: Error | undefined, rowCount?: number): void }): void;
  makeRequest(bulk: { callback(err: Error | undefined, rowCount?: number): void }, type: number, payload: AsyncIterable<Buffer>): void;
}

/** A never-connected tedious Connection whose two network edges are driven by the test. */
function driver(socket: (packets: AsyncIterator<Buffer>) => Promise<{ error?: Error; bytes: number }>, rowsSent: () => number) {
  const conn = new TediousConnection({ server: '127.0.0.1', options: { port: 1, encrypt: false, useUTC: true } });
  const edges = conn as unknown as Internals;
  edges.execSqlBatch = (req) => queueMicrotask(() => {
    // The staging table's metadata (asked for its character columns' collations), then "INSERT BULK … " accepted.
    const r = req as unknown as { sqlTextOrProcedure: string; emit(event: string, cols: unknown): void };
    if (r.sqlTextOrProcedure.startsWith('SELECT TOP 0')) r.emit('columnMetadata', target.columns.map((c) => ({ colName: c.name, collation: UTF8 })));
    req.callback(undefined, 0);
  });
  edges.makeRequest = (bulk, _type, payload) => {
    void socket(payload[Symbol.asyncIterator]()).then(
      ({ error }) => bulk.callback(error, error === undefined ? rowsSent() : undefined),
      (err: Error) => bulk.callback(err),
    );
  };
  return new SqlServerConnection(conn, () => undefined, { user: 'u', database: 'd' });
}

const target: BulkTarget = {
  name: '#flow_temp_store_0', identifier: '#flow_temp_store_0',
  columns: [
    { name: 'id', identifier: 'id', ddl: 'BIGINT', nullable: false },
    { name: 'a]b', identifier: '"a]b"', ddl: 'varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8', nullable: true },
    { name: 'ts', identifier: 'ts', ddl: 'DATETIME2', nullable: true },
    { name: 'bin', identifier: 'bin', ddl: 'VARBINARY(MAX)', nullable: true },
    { name: '_flow_delete', identifier: '_flow_delete', ddl: 'boolean', nullable: false },
  ],
};

describe('bulk load through tedious (network edges replaced)', () => {
  it('pulls rows from the async iterable as it encodes them, a bounded number ahead of a stalled socket', async () => {
    const ROWS = 5000;
    let produced = 0;
    let aheadWhileStalled = -1;
    async function* rows(): AsyncIterable<readonly SqlParam[]> {
      for (let i = 0; i < ROWS; i++) {
        produced++;
        yield [BigInt(i) * 2n ** 40n, `κόσμε ${i} ${'x'.repeat(200)}`, '2024-05-01T00:00:00.1234567Z', new Uint8Array([i & 255]), i % 3 === 0];
      }
    }
    const conn = driver(async (packets) => {
      let bytes = 0;
      const first = await packets.next(); // column metadata + first rows encoded
      bytes += first.value?.length ?? 0;
      // Stall the "socket" for many event-loop turns: the driver stops pulling once its stream buffers (a few
      // tens of KiB of encoded rows: ~170 rows of ~0.5 KiB here) are full.
      for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
      aheadWhileStalled = produced;
      for (let p = await packets.next(); p.done !== true; p = await packets.next()) bytes += p.value.length;
      return { bytes };
    }, () => produced);
    const n = await conn.bulkInsert(target, rows());
    assert.equal(n, ROWS);
    assert.equal(produced, ROWS);
    assert.ok(aheadWhileStalled > 0 && aheadWhileStalled < 1000, `the driver pulled ${aheadWhileStalled} of ${ROWS} rows while the socket was stalled`);
  });

  it('a row the driver cannot encode, or an error from the row source, fails the bulk load with that error', async () => {
    const drain = async (packets: AsyncIterator<Buffer>) => {
      try {
        for (let p = await packets.next(); p.done !== true; p = await packets.next()) { /* discard */ }
        return { bytes: 0 };
      } catch (error) { return { error: error as Error, bytes: 0 }; }
    };
    async function* failing(): AsyncIterable<readonly SqlParam[]> {
      yield [1n, 'a', null, null, false];
      throw new Error('the runtime stream broke');
    }
    await assert.rejects(driver(drain, () => 0).bulkInsert(target, failing()), /the runtime stream broke/);
    async function* wrongWidth(): AsyncIterable<readonly SqlParam[]> { yield [1n, 'a']; }
    await assert.rejects(driver(drain, () => 0).bulkInsert(target, wrongWidth()), /bulk insert into #flow_temp_store_0: a row has 2 values for 5 columns/);
    async function* badDate(): AsyncIterable<readonly SqlParam[]> { yield [1n, 'a', 'not a date', null, false]; }
    await assert.rejects(driver(drain, () => 0).bulkInsert(target, badDate()), /not a date|date-time/);
  });
});
