// The SQLite client over node:sqlite (synchronous underneath; the Connection interface is async so the
// core is the same for networked databases). WAL mode with synchronous=NORMAL (64 KiB pages in files it
// creates, 64 MiB page cache, checkpoints per ~156 MiB of WAL, temp store in memory): a commit survives a
// process crash; a power loss may lose the last commits, but data and the runtime checkpoint roll back
// together (one transaction), so the runtime replays them and exactly-once holds. A busy timeout covers
// the rare moment two instances (a zombie and its successor) touch the same file. Checkpoints run on a thread
// of their own once the WAL is worth it (wal-checkpointer.ts); the main connection's automatic checkpoint
// stays as the bound.
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { StatementSync } from 'node:sqlite';
import type { BulkTarget, Client, Connection, PreparedStatement, SessionHints, SqlParam, SqlRow } from '@sluice/materialize-sql';
import { SqlConfigError, SqlError } from '@sluice/materialize-sql';
import { makeDirs } from '@sluice/runtime/private-dir';
import type { Logger } from '@sluice/runtime';
import { WalCheckpointer } from './wal-checkpointer.ts';

export interface SqliteClientOptions {
  /** Milliseconds to wait for a lock held by another connection. */
  busyTimeoutMs?: number;
  /**
   * WAL bytes after a commit from which checkpoints move to a thread (default CHECKPOINT_THREAD_AFTER_BYTES);
   * `false`: never, every checkpoint runs on the committing thread as SQLite does by itself.
   */
  checkpointThreadAfterBytes?: number | false | undefined;
  /** Where a failed checkpoint thread is reported (a warning: checkpoints go on without it). */
  log?: Pick<Logger, 'warn'>;
}

/** What a writable connection tells its client: each commit, and its close. */
interface ConnectionEvents {
  committed(): void;
  closed(): Promise<void>;
}

function sqlError(err: unknown, sql: string): SqlError {
  const e = err as { message?: string; errcode?: number };
  return new SqlError(`${e.message ?? String(err)} (in: ${sql.length > 300 ? `${sql.slice(0, 300)}…` : sql})`, { cause: err, ...(e.errcode === undefined ? {} : { number: e.errcode }) });
}

type Bindable = null | number | bigint | string | Uint8Array;

/**
 * Rows per multi-row INSERT of bulkInsert (the load keys): measured with node:sqlite, 500k TEXT keys into an
 * in-memory temp table, 32 rows a statement took about half the time of one row a statement (0.50 vs 0.97 s).
 */
const BULK_ROWS = 32;
/** SQLite's historical SQLITE_MAX_VARIABLE_NUMBER (newer builds allow 32766): stay under it. */
const MAX_PARAMETERS = 999;

/** node:sqlite binds booleans itself (as 1/0), so parameters pass through without a copy. */
function bind(params: readonly SqlParam[]): Bindable[] {
  return params as Bindable[];
}

class SqliteConnection implements Connection {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, StatementSync>();
  readonly #events: ConnectionEvents | undefined;
  #inTxn = false;

  constructor(db: DatabaseSync, events?: ConnectionEvents) {
    this.#db = db;
    this.#events = events;
  }

  #stmt(sql: string): StatementSync {
    let s = this.#cache.get(sql);
    if (s === undefined) {
      try { s = this.#db.prepare(sql); } catch (err) { throw sqlError(err, sql); }
      if (this.#cache.size > 256) this.#cache.clear();
      this.#cache.set(sql, s);
    }
    return s;
  }

  async exec(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    const s = this.#stmt(sql);
    try { return Number(s.run(...bind(params)).changes); } catch (err) { throw sqlError(err, sql); }
  }

  async query(sql: string, params: readonly SqlParam[] = []): Promise<SqlRow[]> {
    const s = this.#stmt(sql);
    try { return s.all(...bind(params)) as SqlRow[]; } catch (err) { throw sqlError(err, sql); }
  }

  async *queryRows(sql: string, params: readonly SqlParam[] = []): AsyncIterable<SqlRow> {
    const s = this.#stmt(sql);
    let it: Iterator<unknown>;
    try { it = s.iterate(...bind(params)); } catch (err) { throw sqlError(err, sql); }
    while (true) {
      let r: IteratorResult<unknown>;
      try { r = it.next(); } catch (err) { throw sqlError(err, sql); }
      if (r.done === true) return;
      yield r.value as SqlRow;
    }
  }

  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    // The load keys' temp table (no index, in memory): BULK_ROWS rows a statement, the rest one by one. A multi-row
    // statement opens a statement journal, but appending to a temp table changes only its last page (unlike stores,
    // see sqlite-dialect.ts). Anonymous `?`: see sqlite-dialect.ts.
    const width = target.columns.length;
    const head = `INSERT INTO ${target.identifier} (${target.columns.map((c) => c.identifier).join(', ')}) VALUES `;
    const row = `(${target.columns.map(() => '?').join(', ')})`;
    const perStatement = Math.max(1, Math.min(BULK_ROWS, Math.floor(MAX_PARAMETERS / width)));
    const oneSql = `${head}${row};`;
    const manySql = `${head}${Array.from({ length: perStatement }, () => row).join(', ')};`;
    const one = this.#stmt(oneSql);
    const many = perStatement > 1 ? this.#stmt(manySql) : undefined;
    const params: Bindable[] = [];
    let gathered = 0;
    let n = 0;
    const add = (r: readonly SqlParam[]): void => {
      if (many === undefined) {
        try { one.run(...bind(r)); } catch (err) { throw sqlError(err, oneSql); }
        return;
      }
      for (const v of r) params.push(v as Bindable);
      if (++gathered === perStatement) {
        try { many.run(...params); } catch (err) { throw sqlError(err, manySql); }
        params.length = 0;
        gathered = 0;
      }
    };
    if (Symbol.iterator in rows) for (const r of rows) { add(r); n++; }
    else for await (const r of rows) { add(r); n++; }
    for (let i = 0; i < gathered; i++) {
      try { one.run(...params.slice(i * width, (i + 1) * width)); } catch (err) { throw sqlError(err, oneSql); }
    }
    return n;
  }

  prepare(sql: string): PreparedStatement {
    const s = this.#stmt(sql);
    return {
      run(params: readonly SqlParam[]): number {
        try { return Number(s.run(...bind(params)).changes); } catch (err) { throw sqlError(err, sql); }
      },
    };
  }

  async begin(): Promise<void> {
    // IMMEDIATE: take the write lock now, so a transaction never fails half-way to upgrade its lock.
    this.#db.exec('BEGIN IMMEDIATE');
    this.#inTxn = true;
  }
  async commit(): Promise<void> {
    this.#db.exec('COMMIT');
    this.#inTxn = false;
    this.#events?.committed();
  }
  async rollback(): Promise<void> {
    if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
    this.#inTxn = false;
  }
  async close(): Promise<void> {
    if (!this.#db.isOpen) return;
    if (this.#inTxn || this.#db.isTransaction) { try { this.#db.exec('ROLLBACK'); } catch { /* closing anyway */ } }
    this.#cache.clear();
    this.#db.close();
    await this.#events?.closed();
  }
}

/** Page cache of a connection (see connect()): 64 MiB, allocated only as used. */
export const PAGE_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * Page cache of a session whose tables all have delta updates (SessionHints.keyed false): appending rows reads
 * no page twice but the rightmost path of each table, so a larger cache only holds pages written once. See
 * connect().
 */
export const DELTA_PAGE_CACHE_BYTES = 8 * 1024 * 1024;

/** The page size of database files this client creates (SQLite's default is 4096); see connect(). */
export const NEW_FILE_PAGE_SIZE = 65536;
/** WAL bytes between automatic checkpoints (40,000 pages of 4 KiB: ~156 MiB); see connect(). */
export const WAL_CHECKPOINT_BYTES = 40_000 * 4096;

/**
 * WAL bytes from which a client's checkpoints move to a thread (see wal-checkpointer.ts). Below it the thread's
 * start (~0.1 s of CPU) would cost more than the checkpoints it takes over; a session of the bench's 500k rows
 * passes it at its first commit.
 */
export const CHECKPOINT_THREAD_AFTER_BYTES = 16 * 1024 * 1024;

/** A client for one SQLite database file. */
export class SqliteClient implements Client {
  /**
   * One connection per session. With two, every store commit (WAL: another connection committed) emptied the
   * load connection's page cache, so each transaction's load join read the whole key index again (~13 MB for the
   * bench's 500k keys: 27 × 197 pages of 64 KiB), into a second 64 MiB cache. Standard replay of 500k documents,
   * alternated, load 15–21: sys 1.83–2.11 → 1.49–1.65 s, minor faults ~59.5k → 48–50k (docs/architecture.md).
   */
  readonly loadsOnStoreConnection = true;
  readonly path: string;
  readonly #busyTimeoutMs: number;
  readonly #threadAfterBytes: number | false;
  readonly #log: Pick<Logger, 'warn'> | undefined;
  /** Writable connections open now: the checkpoint thread closes after the last one. */
  #open = 0;
  #checkpointer: WalCheckpointer | undefined;
  /** A checkpoint thread failed: this client does not start another. */
  #threadFailed = false;

  constructor(path: string, options: SqliteClientOptions = {}) {
    if (path.trim() === '') throw new SqlConfigError(`endpoint 'path' is empty: set it to the SQLite database file to write, e.g. "data/out.db"`);
    this.path = path === ':memory:' ? path : resolve(path);
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 60_000;
    this.#threadAfterBytes = this.path === ':memory:' ? false : (options.checkpointThreadAfterBytes ?? CHECKPOINT_THREAD_AFTER_BYTES);
    this.#log = options.log;
  }

  /** The checkpoint thread of this client's open connections, if it runs (tests and diagnostics). */
  get checkpointer(): WalCheckpointer | undefined {
    return this.#checkpointer;
  }

  #committed(): void {
    if (this.#checkpointer !== undefined) {
      this.#checkpointer.afterCommit();
      return;
    }
    if (this.#threadAfterBytes === false || this.#threadFailed) return;
    // One stat per commit until the thread runs; the WAL file keeps its size when SQLite restarts it.
    const wal = statSync(`${this.path}-wal`, { throwIfNoEntry: false });
    if (wal === undefined || wal.size < this.#threadAfterBytes) return;
    this.#checkpointer = new WalCheckpointer(this.path, (err) => {
      this.#threadFailed = true;
      this.#log?.warn('the WAL checkpoint thread failed; checkpoints run on the main thread from now on', { path: this.path, error: err.message });
    });
    this.#checkpointer.afterCommit();
  }

  async #closed(): Promise<void> {
    if (--this.#open > 0 || this.#checkpointer === undefined) return;
    const checkpointer = this.#checkpointer;
    this.#checkpointer = undefined;
    await checkpointer.close();
  }

  /** Validate must not create the file: read-only, or nothing when the file does not exist yet. */
  async connectReadOnly(): Promise<Connection | undefined> {
    if (this.path !== ':memory:' && !existsSync(this.path)) return undefined;
    try {
      return new SqliteConnection(new DatabaseSync(this.path, { readOnly: true, timeout: this.#busyTimeoutMs }));
    } catch (cause) {
      throw new SqlConfigError(`cannot open SQLite database '${this.path}' to validate: ${(cause as Error).message}. Check that 'path' names a readable SQLite file`, { cause });
    }
  }

  async connect(hints?: SessionHints): Promise<Connection> {
    let db: DatabaseSync;
    try {
      // makeDirs, not mkdirSync(recursive): that never returns for a path under /proc (the apply hung).
      if (this.path !== ':memory:') makeDirs(dirname(this.path), 0o777);
      db = new DatabaseSync(this.path, { timeout: this.#busyTimeoutMs });
      // Before anything writes the file (switching to WAL writes its header): a new database gets 64 KiB
      // pages; an existing file keeps its own (SQLite ignores page_size once the file has content).
      // Why 64 KiB: with random keys every transaction dirties most pages of the key index, and each dirty
      // page is written to the WAL at COMMIT (and again by the checkpoint); fewer, larger pages cost less per
      // byte (frame headers, checksums, the WAL index, the B-tree's page handling). Measured on a recorded
      // 500k-document pipeline session (random TEXT keys, 14 columns): connector CPU 10.2–13.6 s at 4 KiB
      // (load 4–8) → 8.2–9.8 s at 64 KiB (load 2–5); in its profile statements 3.3 → 2.6 s, COMMIT 2.5 → 1.2 s,
      // the close's checkpoint 0.6 → 0.2 s, the load join 0.7 → 0.5 s. Loads that find every key (the same
      // session replayed into the full table) are not slower: 13.2 s → 12.2–12.5 s. Statements writing several
      // rows would be 5× slower with these pages (see sqlite-dialect.ts): stores are single-row statements.
      db.exec(`PRAGMA page_size = ${NEW_FILE_PAGE_SIZE}`);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      // A 10k-document transaction of a standard table is ~4 MB: with the default 2 MB page cache it
      // spills to the WAL mid-transaction, and the default auto-checkpoint (1000 pages) then runs after
      // every commit (each checkpoint ends with an fsync). 64 MiB of cache (allocated only as used) and a
      // checkpoint per ~160 MB of WAL: measured 1.6× the rows/s of the defaults for 14-column upserts
      // (40 MB → 160 MB alone: +4%). The WAL file may reach that size. Past CHECKPOINT_THREAD_AFTER_BYTES
      // of WAL a thread checkpoints after each commit (#committed); this automatic checkpoint then stays as
      // the bound and finds little left to copy.
      // Sessions whose tables all have delta updates (no key index: rows are appended) get 8 MiB instead: the
      // cache then fills with appended pages that are never read again, and each 4 KiB of it first touched costs
      // a page fault (~8 µs in this VM). Replaying the recorded 500k-document delta session: minor faults
      // 39–44k → 25–28k, RSS −50 MB, connector CPU (see docs/architecture.md). A transaction larger than the
      // cache spills its dirty pages to the WAL before COMMIT, as SQLite does; it writes nothing more.
      db.exec(`PRAGMA cache_size = ${-(hints?.keyed === false ? DELTA_PAGE_CACHE_BYTES : PAGE_CACHE_BYTES) / 1024}`);
      // wal_autocheckpoint counts pages: the same ~156 MiB whatever the file's page size (2,500 pages of
      // 64 KiB, 40,000 of 4 KiB).
      const pageSize = Number((db.prepare('PRAGMA page_size').get() as { page_size: number | bigint }).page_size);
      db.exec(`PRAGMA wal_autocheckpoint = ${Math.ceil(WAL_CHECKPOINT_BYTES / pageSize)}`);
      // The load keys' temp tables (one transaction's keys) and any statement journal in memory, not in temp
      // files. (When stores were 32-row statements, each opened a statement journal that spilled to a temp
      // file: this pragma took the connector's CPU on a recorded 500k-row session from 14.5 s to 11.0 s.
      // Single-row upserts open none.)
      db.exec('PRAGMA temp_store = MEMORY');
    } catch (cause) {
      throw new SqlConfigError(`cannot open SQLite database '${this.path}': ${(cause as Error).message}. Check that 'path' names a writable file`, { cause });
    }
    this.#open++;
    return new SqliteConnection(db, { committed: () => this.#committed(), closed: () => this.#closed() });
  }
}
