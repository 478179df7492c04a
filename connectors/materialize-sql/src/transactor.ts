// The SQL transactor: loads batched into one join per flush; stores batched into one database transaction
// that also writes the runtime checkpoint under the fence (exactly once).
import { AsyncQueue, parseDocument } from '@sluice/runtime';
import type { DecodedLoad, DecodedStore, JsonObject, RuntimeCheckpoint, Transactor } from '@sluice/runtime';
import type { BulkTarget, Connection, PreparedStatement, SqlParam } from './client.ts';
import type { Dialect } from './dialect.ts';
import type { Column, Table } from './table.ts';
import type { Fence } from './fence.ts';
import { commitCheckpoint } from './fence.ts';
import { SqlError } from './errors.ts';
import { stageByBinding } from './staged.ts';
import type { SpillOptions, StagingStats } from './staged.ts';

export interface SqlTransactorOptions {
  dialect: Dialect;
  /** Session for loads (holds the load temp tables). */
  loadConn: Connection;
  /** Session for stores and commits (holds the store temp tables, if staged). */
  storeConn: Connection;
  /** Tables by binding index. */
  tables: Table[];
  fence: Fence;
  /** Delete rows of deletion documents (standard tables) instead of storing them. */
  hardDelete: boolean;
  /**
   * `no_flow_document`: standard tables without a document column are loaded too, the dialect's loadQuery rebuilding
   * each document from the table's root-level columns. Top-level nulls of fields whose schema excludes null are
   * removed from rebuilt documents (a NULL column means the field was absent), as upstream.
   */
  rebuildDocuments?: boolean;
  /** Direct flow: load keys buffered per binding before a bulk insert (bounds memory). */
  batchRows?: number;
  /**
   * Staged flow: rows of bindings other than the one streaming live are spilled (memory budget, then a temp
   * file) so each binding gets exactly one bulk load per transaction (see staged.ts).
   */
  spill?: SpillOptions;
}

function bulkTarget(t: { name: string; identifier: string }, columns: Column[], extra: BulkTarget['columns'] = []): BulkTarget {
  return {
    name: t.name,
    identifier: t.identifier,
    columns: [...columns.map((c) => ({ name: c.field, identifier: c.identifier, ddl: c.mapped.stagingDdl ?? c.mapped.ddl, nullable: c.nullable })), ...extra],
  };
}

/** The `_flow_delete` flag column of staged store tables. */
export const FLOW_DELETE_COLUMN = '_flow_delete';

interface StagedState { hasData: boolean; needsMerge: boolean }

/**
 * `for await (const item of input) await each(item)`, without a promise per item where none is needed: items the
 * runtime's queue already holds are taken synchronously (AsyncQueue.shiftNow), and `each` is awaited only when it
 * returns a promise. A direct-flow store of SQLite runs synchronously, so a whole queued batch goes through in one
 * turn (the per-item promise hops were ~0.3 s of a 500k-document transaction stream's CPU, issue 16).
 */
export async function forEachItem<T>(input: AsyncIterable<T>, each: (item: T) => void | Promise<void>): Promise<void> {
  const queue = input instanceof AsyncQueue ? (input as AsyncQueue<T>) : undefined;
  const it = input[Symbol.asyncIterator]();
  let done = false;
  try {
    while (true) {
      let item = queue === undefined ? undefined : queue.shiftNow();
      if (item === undefined) {
        const r = await it.next();
        if (r.done === true) {
          done = true;
          return;
        }
        item = r.value;
      }
      const p = each(item);
      if (p !== undefined) await p;
    }
  } finally {
    // As for-await does when its body throws: the source learns that the rest will not be read.
    if (!done) await it.return?.();
  }
}

/** Direct flow, per binding: the statements, prepared once per session. */
interface DirectStoreState {
  write: PreparedStatement;
  del: PreparedStatement | undefined;
}

export class SqlTransactor implements Transactor {
  readonly #o: SqlTransactorOptions;
  readonly #batch: number;
  #inTxn = false;
  #closed = false;
  #prepared = new Map<string, PreparedStatement>();
  #staged = new Map<number, StagedState>();
  #loadTablesCreated = false;
  #storeTablesCreated = false;
  #loadSql: string | undefined;
  #stagingStats: { load?: StagingStats; store?: StagingStats } = {};
  #stripNulls = new Map<number, string[]>();

  constructor(options: SqlTransactorOptions) {
    this.#o = options;
    this.#batch = options.batchRows ?? 10_000;
    this.#loadSql = options.dialect.templates.loadQuery(options.tables.filter((t) => this.#loadable(t)));
    for (const t of options.tables) {
      if (t.deltaUpdates || t.document !== undefined || !this.#loadable(t)) continue;
      const strip = t.columns.filter((c) => /^\/[^/]+$/.test(c.projection.ptr ?? '') && !(c.projection.inference?.types ?? []).includes('null')).map((c) => c.field);
      if (strip.length > 0) this.#stripNulls.set(t.binding, strip);
    }
  }

  /** Standard tables with a document column, and without one when documents are rebuilt from columns. */
  #loadable(t: Table): boolean {
    return !t.deltaUpdates && (t.document !== undefined || this.#o.rebuildDocuments === true);
  }

  #parseLoaded(row: Record<string, unknown>): { binding: number; doc: JsonObject } {
    const binding = Number(row.binding);
    const text = row.doc;
    // Exact: an integer beyond ±2^53 in the stored document comes back as the same digits (a bigint).
    const doc = parseDocument(typeof text === 'string' ? text : Buffer.from(text as Uint8Array).toString('utf8')) as JsonObject;
    const strip = this.#stripNulls.get(binding);
    if (strip !== undefined) for (const f of strip) if (doc[f] === null) delete doc[f];
    return { binding, doc };
  }

  #table(binding: number): Table {
    const t = this.#o.tables[binding];
    if (t === undefined) throw new SqlError(`binding ${binding} is out of range (${this.#o.tables.length} bindings)`);
    return t;
  }

  #params(columns: Column[], values: unknown[], what: string, t: Table): SqlParam[] {
    const out: SqlParam[] = new Array(columns.length);
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i]!;
      try {
        out[i] = c.mapped.toParam(values[i] as never);
      } catch (cause) {
        throw new SqlError(`${t.path.join('.')}: cannot write ${what} field '${c.field}' (${c.mapped.ddl}): ${(cause as Error).message}`, { cause });
      }
    }
    return out;
  }

  /** A store's parameters: keys, values, document (Table.columns order). */
  #rowOf(t: Table, s: DecodedStore): SqlParam[] {
    const row: SqlParam[] = [];
    this.#pushRow(row, t, s);
    return row;
  }

  /** Appends a store's parameters (keys, values, document: Table.columns order) to `out`. */
  #pushRow(out: SqlParam[], t: Table, s: DecodedStore): void {
    this.#pushParams(out, t.keys, s.key, 'key', t, s.key);
    this.#pushParams(out, t.values, s.values, 'value', t, s.key);
    const d = t.document;
    if (d === undefined) return;
    // The document as sent (no re-serialisation, and no parse where `doc` is lazy) when the column takes JSON text.
    if (s.docJson !== undefined && d.mapped.fromJsonText !== undefined) {
      out.push(d.mapped.fromJsonText(s.docJson));
      return;
    }
    const doc = s.doc;
    if (doc === undefined) throw new SqlError(`${t.path.join('.')}: a store has no document although the document field '${d.field}' is selected`);
    out.push(d.mapped.toParam(doc));
  }

  #pushParams(out: SqlParam[], columns: Column[], values: unknown[], what: string, t: Table, key?: unknown[]): void {
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i]!;
      try {
        out.push(c.mapped.toParam(values[i] as never));
      } catch (cause) {
        // Which document (collection and key) and which field, so a poison document can be found and fixed.
        const source = t.collection === undefined ? '' : ` (collection ${t.collection})`;
        const doc = key === undefined ? '' : ` of the document with key ${JSON.stringify(key, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x))}`;
        throw new SqlError(`${t.path.join('.')}${source}: cannot write ${what} field '${c.field}' (${c.mapped.ddl})${doc}: ${(cause as Error).message}`, { cause });
      }
    }
  }

  /** What the last staged load and store did (bulk loads, spills): for tests and diagnostics. */
  get stagingStats(): { load?: StagingStats; store?: StagingStats } {
    return this.#stagingStats;
  }

  async load(loads: AsyncIterable<DecodedLoad>, loaded: (binding: number, doc: JsonObject) => Promise<void>): Promise<void> {
    // Loads and stores on one connection (Client.loadsOnStoreConnection): the protocol's phases keep them apart.
    if (this.#inTxn && this.#o.loadConn === this.#o.storeConn) throw new SqlError('internal error: a load began while the store transaction was open on the same connection');
    if (this.#o.dialect.storeFlow === 'staged') return this.#loadStaged(loads, loaded);
    const { dialect, loadConn } = this.#o;
    const tpl = dialect.templates;
    const buffers = new Map<number, SqlParam[][]>();
    let any = false;
    const flushKeys = async (binding: number, rows: SqlParam[][]) => {
      const t = this.#table(binding);
      await loadConn.bulkInsert(bulkTarget(tpl.loadTable(t), t.keys), rows);
      rows.length = 0;
    };
    let begun = false;
    try {
      const add = (l: DecodedLoad, t: Table): Promise<void> | undefined => {
        any = true;
        let buf = buffers.get(l.binding);
        if (buf === undefined) buffers.set(l.binding, (buf = []));
        buf.push(this.#params(t.keys, l.key, 'key', t));
        return buf.length >= this.#batch ? flushKeys(l.binding, buf) : undefined;
      };
      await forEachItem(loads, (l) => {
        const t = this.#table(l.binding);
        if (!this.#loadable(t)) throw new SqlError(`${t.path.join('.')}: received a load for a binding that cannot be loaded (delta updates or no document)`);
        if (begun) return add(l, t);
        return (async () => {
          await this.#ensureLoadTables();
          await loadConn.begin();
          begun = true;
          await add(l, t);
        })();
      });
      if (!any) return;
      for (const [b, rows] of buffers) if (rows.length > 0) await flushKeys(b, rows);
      if (this.#loadSql !== undefined) {
        for await (const row of loadConn.queryRows(this.#loadSql)) {
          const { binding, doc } = this.#parseLoaded(row);
          await loaded(binding, doc);
        }
      }
      for (const b of buffers.keys()) await loadConn.exec(tpl.truncateLoad(this.#table(b)));
      await loadConn.commit();
      begun = false;
    } finally {
      if (begun) await loadConn.rollback().catch(() => undefined);
    }
  }

  async #ensureLoadTables(): Promise<void> {
    if (this.#loadTablesCreated) return;
    for (const t of this.#o.tables) {
      if (this.#loadable(t)) await this.#o.loadConn.exec(this.#o.dialect.templates.createLoadTable(t));
    }
    this.#loadTablesCreated = true;
  }

  async #ensureStoreTables(): Promise<void> {
    if (this.#storeTablesCreated) return;
    const tpl = this.#o.dialect.templates;
    if (tpl.createStoreTable === undefined) throw new SqlError(`dialect ${this.#o.dialect.name} has a staged store flow but no createStoreTable template`);
    for (const t of this.#o.tables) await this.#o.storeConn.exec(tpl.createStoreTable(t));
    this.#storeTablesCreated = true;
  }

  #prepare(sql: string | undefined, what: string): PreparedStatement {
    if (sql === undefined) throw new SqlError(`dialect ${this.#o.dialect.name} has a direct store flow but no ${what} template`);
    let p = this.#prepared.get(sql);
    if (p === undefined) this.#prepared.set(sql, (p = this.#o.storeConn.prepare(sql)));
    return p;
  }

  async #begin(): Promise<void> {
    if (this.#inTxn) return;
    if (this.#o.dialect.storeFlow === 'staged') await this.#ensureStoreTables();
    await this.#o.storeConn.begin();
    this.#inTxn = true;
  }

  async store(stores: AsyncIterable<DecodedStore>): Promise<void> {
    await this.#begin();
    if (this.#o.dialect.storeFlow === 'staged') return this.#storeStaged(stores);
    const tpl = this.#o.dialect.templates;
    const hardDelete = this.#o.hardDelete;
    // Per binding: statements prepared once per session.
    const states: (DirectStoreState | undefined)[] = [];
    // One parameter array, refilled per row: a statement's run() has bound (copied) them when it returns or
    // resolves, and the next row waits for that.
    const row: SqlParam[] = [];
    await forEachItem(stores, (s) => {
      // Closed meanwhile (the session ended): never run a statement after the rollback.
      if (this.#closed) throw new SqlError('the transactor was closed while storing; the transaction was rolled back');
      let st = states[s.binding];
      const t = this.#table(s.binding);
      if (st === undefined) {
        const one = t.deltaUpdates ? tpl.storeInsert?.(t) : tpl.storeUpsert?.(t);
        const write = this.#prepare(one, t.deltaUpdates ? 'storeInsert' : 'storeUpsert');
        const del = !t.deltaUpdates && hardDelete ? this.#prepare(tpl.storeDelete?.(t), 'storeDelete') : undefined;
        st = { write, del };
        states[s.binding] = st;
      }
      if (hardDelete && s.delete) {
        // With hard deletes a deletion of a key never stored is skipped, standard or delta (as upstream).
        if (!s.exists) return undefined;
        if (st.del !== undefined) {
          const r = st.del.run(this.#params(t.keys, s.key, 'key', t));
          return typeof r === 'number' ? undefined : r.then(() => undefined);
        }
      }
      row.length = 0;
      this.#pushRow(row, t, s);
      const r = st.write.run(row);
      return typeof r === 'number' ? undefined : r.then(() => undefined);
    });
  }

  /** Read the load join's rows and hand each document to the runtime. */
  async #emitLoaded(loaded: (binding: number, doc: JsonObject) => Promise<void>): Promise<void> {
    if (this.#loadSql === undefined) return;
    for await (const row of this.#o.loadConn.queryRows(this.#loadSql)) {
      const { binding, doc } = this.#parseLoaded(row);
      await loaded(binding, doc);
    }
  }

  /**
   * Staged loads: each binding's keys reach its load temp table through ONE bulk load fed as the runtime sends
   * them (other bindings' keys spill meanwhile), then one load query, truncates and commit.
   */
  async #loadStaged(loads: AsyncIterable<DecodedLoad>, loaded: (binding: number, doc: JsonObject) => Promise<void>): Promise<void> {
    const { dialect, loadConn } = this.#o;
    const tpl = dialect.templates;
    let begun = false;
    try {
      const stats = await stageByBinding(loads, (l) => {
        const t = this.#table(l.binding);
        if (!this.#loadable(t)) throw new SqlError(`${t.path.join('.')}: received a load for a binding that cannot be loaded (delta updates or no document)`);
        return { binding: l.binding, row: this.#params(t.keys, l.key, 'key', t) };
      }, {
        beforeFirst: async () => {
          await this.#ensureLoadTables();
          await loadConn.begin();
          begun = true;
        },
        bulk: (b, rows) => {
          const t = this.#table(b);
          return loadConn.bulkInsert(bulkTarget(tpl.loadTable(t), t.keys), rows);
        },
        ...(this.#o.spill === undefined ? {} : { spill: this.#o.spill }),
      });
      this.#stagingStats.load = stats;
      if (!begun) return;
      await this.#emitLoaded(loaded);
      for (const b of stats.bindings.keys()) await loadConn.exec(tpl.truncateLoad(this.#table(b)));
      await loadConn.commit();
      begun = false;
    } finally {
      if (begun) await loadConn.rollback().catch(() => undefined);
    }
  }

  /**
   * Staged stores: each binding's rows reach its store temp table through ONE bulk load fed as the runtime
   * sends them (rows of other bindings spill meanwhile). Per binding: whether any row is stored, and whether
   * any stored key existed or is deleted (→ MERGE at commit, else INSERT … SELECT).
   */
  async #storeStaged(stores: AsyncIterable<DecodedStore>): Promise<void> {
    const { dialect, storeConn, hardDelete } = this.#o;
    const tpl = dialect.templates;
    const flag = { name: FLOW_DELETE_COLUMN, identifier: dialect.quoteIdentifier(FLOW_DELETE_COLUMN), ddl: 'boolean', nullable: false };
    if (tpl.storeTable === undefined) throw new SqlError(`dialect ${dialect.name} has a staged store flow but no storeTable template`);
    const storeTable = tpl.storeTable;
    this.#stagingStats.store = await stageByBinding(stores, (s) => {
      const t = this.#table(s.binding);
      // With hard deletes a deletion of a key never stored is skipped, standard or delta (as upstream).
      if (hardDelete && s.delete && !s.exists) return undefined;
      const del = hardDelete && !t.deltaUpdates && s.delete;
      const row: SqlParam[] = this.#rowOf(t, s);
      row.push(del);
      let state = this.#staged.get(s.binding);
      if (state === undefined) this.#staged.set(s.binding, (state = { hasData: false, needsMerge: false }));
      state.hasData = true;
      if (s.exists || del) state.needsMerge = true;
      return { binding: s.binding, row };
    }, {
      bulk: (b, rows) => {
        const t = this.#table(b);
        return storeConn.bulkInsert(bulkTarget(storeTable(t), t.columns, [flag]), rows);
      },
      ...(this.#o.spill === undefined ? {} : { spill: this.#o.spill }),
    });
  }

  async startCommit(runtimeCheckpoint: RuntimeCheckpoint): Promise<void> {
    await this.#begin();
    const { storeConn, dialect, fence } = this.#o;
    const tpl = dialect.templates;
    try {
      if (dialect.storeFlow === 'staged') {
        for (const [b, state] of this.#staged) {
          if (!state.hasData) continue;
          const t = this.#table(b);
          const sql = state.needsMerge && !t.deltaUpdates ? tpl.mergeFromStore?.(t) : tpl.copyFromStore?.(t);
          if (sql === undefined) throw new SqlError(`dialect ${dialect.name} lacks the merge/copy template for its staged store flow`);
          await storeConn.exec(sql);
          await storeConn.exec(tpl.truncateStore!(t));
        }
        this.#staged.clear();
      }
      await commitCheckpoint(storeConn, dialect, fence, runtimeCheckpoint);
      await storeConn.commit();
      this.#inTxn = false;
    } catch (err) {
      this.#inTxn = false;
      this.#staged.clear();
      await storeConn.rollback().catch(() => undefined);
      throw err;
    }
  }

  /** Commits are synchronous in startCommit: nothing is left to complete. */
  async acknowledge(): Promise<void> {}

  async close(): Promise<void> {
    this.#closed = true;
    const { loadConn, storeConn } = this.#o;
    if (this.#inTxn) await storeConn.rollback().catch(() => undefined);
    this.#inTxn = false;
    await loadConn.close();
    if (storeConn !== loadConn) await storeConn.close();
  }
}
