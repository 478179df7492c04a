// The client's file settings: a database file it creates gets 64 KiB pages, an existing file keeps its own page
// size, and the WAL is checkpointed after the same number of bytes either way (wal_autocheckpoint counts pages).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DELTA_PAGE_CACHE_BYTES, NEW_FILE_PAGE_SIZE, PAGE_CACHE_BYTES, SqliteClient, WAL_CHECKPOINT_BYTES } from '../src/sqlite-client.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-client-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

async function settings(path: string): Promise<{ pageSize: number; autocheckpoint: number; journal: string }> {
  const conn = await new SqliteClient(path).connect();
  try {
    // A table written through the connection: the page size is fixed once the file has content.
    await conn.exec('CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT)');
    await conn.begin();
    await conn.exec('INSERT OR REPLACE INTO t VALUES (?, ?)', ['a', 'b']);
    await conn.commit();
    const [p] = await conn.query('PRAGMA page_size');
    const [a] = await conn.query('PRAGMA wal_autocheckpoint');
    const [j] = await conn.query('PRAGMA journal_mode');
    return { pageSize: Number(p!.page_size), autocheckpoint: Number(a!.wal_autocheckpoint), journal: String(j!.journal_mode) };
  } finally {
    await conn.close();
  }
}

test('a new database file gets 64 KiB pages and a WAL checkpoint every WAL_CHECKPOINT_BYTES', async () => {
  const path = join(dir, 'sub', 'new.db');
  const s = await settings(path);
  assert.equal(NEW_FILE_PAGE_SIZE, 65536);
  assert.deepEqual(s, { pageSize: 65536, autocheckpoint: Math.ceil(WAL_CHECKPOINT_BYTES / 65536), journal: 'wal' });
  // Opened again, it stays as created.
  assert.deepEqual(await settings(path), s);
  // What any SQLite reader sees in the file.
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    assert.equal(Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size), 65536);
  } finally {
    db.close();
  }
});

test('an existing database file keeps its page size (4 KiB here) and its rows; the checkpoint interval is the same bytes', async () => {
  for (const journal of ['DELETE', 'WAL']) {
    const path = join(dir, `old-${journal}.db`);
    const db = new DatabaseSync(path);
    db.exec(`PRAGMA journal_mode = ${journal}`);
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (\'x\', \'y\')');
    assert.equal(Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size), 4096);
    db.close();
    assert.deepEqual(await settings(path), { pageSize: 4096, autocheckpoint: WAL_CHECKPOINT_BYTES / 4096, journal: 'wal' }, journal);
    const check = new DatabaseSync(path, { readOnly: true });
    try {
      assert.deepEqual(check.prepare('SELECT k, v FROM t ORDER BY k').all().map((r) => [r.k, r.v]), [['a', 'b'], ['x', 'y']], journal);
    } finally {
      check.close();
    }
  }
});

test('the page cache is 64 MiB unless every table of the session has delta updates (8 MiB); a transaction larger than it keeps every row, or none', async () => {
  const path = join(dir, 'cache.db');
  const cacheOf = async (hints?: { keyed: boolean }) => {
    const conn = await new SqliteClient(path).connect(hints);
    try {
      return Number((await conn.query('PRAGMA cache_size'))[0]!.cache_size);
    } finally {
      await conn.close();
    }
  };
  assert.equal(PAGE_CACHE_BYTES, 64 * 1024 * 1024);
  assert.equal(DELTA_PAGE_CACHE_BYTES, 8 * 1024 * 1024);
  // Negative: KiB (SQLite's form for a cache given in bytes rather than pages).
  assert.equal(await cacheOf(), -65536, 'no hints (apply, validate, other callers)');
  assert.equal(await cacheOf({ keyed: true }), -65536, 'a session with a standard table');
  assert.equal(await cacheOf({ keyed: false }), -8192, 'a session of delta tables only');

  // 30 MB of rows in one transaction through the small cache: its dirty pages spill to the WAL before COMMIT.
  const conn = await new SqliteClient(path, { checkpointThreadAfterBytes: false }).connect({ keyed: false });
  const rowText = (i: number) => `${i}:${'x'.repeat(12_000)}`;
  try {
    await conn.exec('CREATE TABLE d (n INTEGER NOT NULL, v TEXT NOT NULL)');
    await conn.begin();
    for (let i = 0; i < 2500; i++) await conn.exec('INSERT INTO d (n, v) VALUES (?, ?)', [i, rowText(i)]);
    assert.ok(statSync(`${path}-wal`).size > DELTA_PAGE_CACHE_BYTES, 'pages spilled to the WAL before COMMIT');
    await conn.commit();
    // Rolled back after spilling: none of it stays.
    await conn.begin();
    for (let i = 2500; i < 5000; i++) await conn.exec('INSERT INTO d (n, v) VALUES (?, ?)', [i, rowText(i)]);
    await conn.rollback();
  } finally {
    await conn.close();
  }
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const r = db.prepare('SELECT count(*) AS n, sum(length(v)) AS bytes, min(n) AS lo, max(n) AS hi FROM d').get() as Record<string, number>;
    const bytes = Array.from({ length: 2500 }, (_, i) => rowText(i).length).reduce((a, b) => a + b, 0);
    assert.deepEqual({ ...r }, { n: 2500, bytes, lo: 0, hi: 2499 });
    assert.ok(bytes > 3 * DELTA_PAGE_CACHE_BYTES, 'the transaction must be larger than the cache');
    const bad = db.prepare('SELECT count(*) AS n FROM d WHERE v <> n || \':\' || printf(\'%.*c\', 12000, \'x\')').get() as { n: number };
    assert.equal(bad.n, 0, 'every row holds what was written');
  } finally {
    db.close();
  }
});

test('bulkInsert writes every row in order, whatever the count and width (multi-row statements and the rest)', async () => {
  const conn = await new SqliteClient(':memory:').connect();
  try {
    for (const width of [1, 2, 40]) {
      const columns = Array.from({ length: width }, (_, i) => ({ name: `c${i}`, identifier: `c${i}`, ddl: 'TEXT', nullable: true }));
      await conn.exec(`CREATE TEMP TABLE t${width} (seq INTEGER PRIMARY KEY, ${columns.map((c) => `${c.identifier} ${c.ddl}`).join(', ')})`);
      for (const count of [0, 1, 31, 32, 33, 64, 100]) {
        await conn.exec(`DELETE FROM temp.t${width}`);
        const rows = Array.from({ length: count }, (_, r) => columns.map((_c, i) => (i === 0 && r % 7 === 3 ? null : `r${r}c${i}`)));
        // From an async iterable, as the transactor's loads arrive.
        const n = await conn.bulkInsert({ name: `t${width}`, identifier: `temp.t${width}`, columns }, (async function* () { yield* rows; })());
        assert.equal(n, count, `width ${width}, ${count} rows`);
        const got = await conn.query(`SELECT ${columns.map((c) => c.identifier).join(', ')} FROM temp.t${width} ORDER BY seq`);
        assert.deepEqual(got.map((r) => columns.map((c) => r[c.name])), rows, `width ${width}, ${count} rows`);
      }
    }
  } finally {
    await conn.close();
  }
});

test('a path whose directory cannot be made (under /proc) fails with a config error, and does not hang', () => {
  // In a child process: Node's mkdirSync(dir, {recursive: true}) never returns there, and a spinning synchronous
  // call would stop this test's own deadline from firing.
  const client = new URL('../src/sqlite-client.ts', import.meta.url).href;
  const script = `import { SqliteClient } from ${JSON.stringify(client)};
    try { await new SqliteClient('/proc/sluice-no-such-dir/x.db').connect(); console.log('opened'); }
    catch (err) { console.log(err.name + ': ' + err.message); }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.error, undefined, `connect() did not return within 60 s (signal ${r.signal})`);
  assert.equal(r.stdout.trim(), "SqlConfigError: cannot open SQLite database '/proc/sluice-no-such-dir/x.db': ENOENT: no such file or directory, mkdir '/proc/sluice-no-such-dir'. Check that 'path' names a writable file");
});
