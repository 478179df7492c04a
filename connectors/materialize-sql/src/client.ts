// The client: the only part of a SQL connector that does I/O. It executes what a Dialect renders.
// SQLite implements it over node:sqlite, SQL Server over mssql/tedious; unit tests can use a fake.

/** A value bound to a statement parameter or a bulk-loaded column. Uint8Array = binary (BLOB/VARBINARY). */
export type SqlParam = null | boolean | number | bigint | string | Uint8Array;

/** A result row: column name → value. */
export type SqlRow = Record<string, unknown>;

/** Target of a bulk insert: a (usually temp) table and its columns, in the order row values arrive. */
export interface BulkTarget {
  /** Raw table name (what a bulk-copy API wants, e.g. `#flow_temp_store_0`). */
  name: string;
  /** Quoted table identifier (what a rendered INSERT wants). */
  identifier: string;
  /** `ddl`: the column's type in that table (for a staging table, MappedType.stagingDdl ?? ddl). */
  columns: { name: string; identifier: string; ddl: string; nullable: boolean }[];
}

/**
 * One database session. Temp tables live per connection, so the transactor holds two: one for loads and
 * one for stores (or one for both: Client.loadsOnStoreConnection). Calls on one connection are never concurrent.
 */
export interface Connection {
  /** Run one statement; parameters bind positionally to the dialect's placeholders. Returns rows affected. */
  exec(sql: string, params?: readonly SqlParam[]): Promise<number>;
  /** Run a query and return every row. */
  query(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  /** Stream the rows of a query (for the load join, which may return many documents). */
  queryRows(sql: string, params?: readonly SqlParam[]): AsyncIterable<SqlRow>;
  /**
   * Insert many rows into `target` (TDS bulk copy on SQL Server, a prepared INSERT loop on SQLite).
   * Rows are consumed as they arrive (backpressure reaches the producer). Returns the number of rows.
   */
  bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number>;
  /**
   * Prepare a statement that will run many times (direct store flow). `run` may complete synchronously
   * and return the rows affected.
   */
  prepare(sql: string): PreparedStatement;
  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Close the session; rolls back an open transaction first. */
  close(): Promise<void>;
}

export interface PreparedStatement {
  /** The caller refills `params` for its next row once run returned (or resolved): never keep a reference to it. */
  run(params: readonly SqlParam[]): number | Promise<number>;
}

/** What a session's connection will be used for, so a client may size it (SQLite: its page cache). */
export interface SessionHints {
  /**
   * Whether any table the session writes has a key index (a standard binding): false when every binding has
   * delta updates (rows appended, nothing looked up).
   */
  keyed: boolean;
}

/** Opens connections to one endpoint (one database file, one server database). */
export interface Client {
  /** `hints`: given by a materialization session (open); without them a client assumes any use. */
  connect(hints?: SessionHints): Promise<Connection>;
  /**
   * A session's loads run on its store connection: one connection per session instead of two (a transaction's
   * loads end before its stores begin, and its commit before the next transaction's loads). For SQLite, whose
   * connections each have a page cache that any other connection's commit discards: the load connection read the
   * whole key index again after every store commit.
   */
  readonly loadsOnStoreConnection?: boolean;
  /**
   * Optional, for Validate (which must not change the destination): a connection that cannot write, or
   * undefined when the destination does not exist yet (so no table exists). Without it, connect() is used.
   */
  connectReadOnly?(): Promise<Connection | undefined>;
  /** Release anything shared (pools, tunnels). */
  close?(): Promise<void>;
}

/** Run `fn` inside BEGIN … COMMIT on `conn`; roll back and rethrow on any error. */
export async function inTransaction<T>(conn: Connection, fn: () => Promise<T>): Promise<T> {
  await conn.begin();
  try {
    const out = await fn();
    await conn.commit();
    return out;
  } catch (err) {
    try { await conn.rollback(); } catch { /* the original error is the one to report */ }
    throw err;
  }
}
