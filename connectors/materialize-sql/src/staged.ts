// Streaming of the staged flow (SQL Server shape): every row of a transaction reaches its binding's temp table
// through exactly ONE bulk load per binding, fed by an async iterable that pulls from the runtime's requests only
// as fast as the driver consumes rows (backpressure end to end).
//
// A session runs one request at a time (TDS has no concurrent requests per connection; tedious has no MARS),
// and temp tables are per session, so two bindings' bulk loads can never be open together on the store session.
// Rows therefore stream live into the bulk load of the FIRST binding of the transaction; rows of any other
// binding are spilled (in memory under a byte budget shared by all bindings, then to a temp file) and bulk-loaded
// from the spill, once per binding, after the input ends. Memory is bounded by the budget, never by the
// transaction. See docs/architecture.md ("materialize-sqlserver") for why this beats the alternatives.
import { mkdtemp, open, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import type { SqlParam } from './client.ts';
import { SqlError } from './errors.ts';

export interface SpillOptions {
  /** Bytes of spilled rows kept in memory, across all bindings, before spilling to files (default 16 MiB). */
  memoryBytes?: number;
  /** Directory for spill files (default: the OS temp directory). */
  dir?: string;
}

export interface BindingStaging {
  /** Rows bulk-loaded for this binding. */
  rows: number;
  /** Rows that went through the spill (0 for the live binding). */
  spilledRows: number;
  /** Bytes written to a spill file (0 when the spill stayed in memory). */
  spilledFileBytes: number;
}

/** What one staging pass did: observable by tests and logs. */
export interface StagingStats {
  /** Binding whose rows streamed straight into its bulk load, if any. */
  live: number | undefined;
  /** Per binding, in the order the bulk loads ran. */
  bindings: Map<number, BindingStaging>;
  /** Bulk loads issued (always one per binding with rows). */
  bulkLoads: number;
  /** Largest in-memory spill footprint (estimated bytes) during the pass. */
  peakSpillMemoryBytes: number;
}

export interface Routed { binding: number; row: readonly SqlParam[] }

export interface StageOptions {
  /** One bulk load of `rows` into `binding`'s temp table; resolves with the row count once they are consumed. */
  bulk(binding: number, rows: AsyncIterable<readonly SqlParam[]>): Promise<number>;
  /** Called once, before the first bulk load (e.g. to begin the transaction); not called for an empty input. */
  beforeFirst?(): Promise<void>;
  spill?: SpillOptions;
}

const DEFAULT_SPILL_MEMORY = 16 * 1024 * 1024;
const FILE_CHUNK = 256 * 1024;
/** Rows per serialized frame in a spill file (one v8.serialize call per frame, not per row). */
const FRAME_ROWS = 256;

/** Rough in-memory size of a row (V8 strings are 1 or 2 bytes per char; count 2). */
export function estimateRowBytes(row: readonly SqlParam[]): number {
  let n = 32 + 8 * row.length;
  for (const v of row) {
    if (typeof v === 'string') n += 16 + 2 * v.length;
    else if (v instanceof Uint8Array) n += 64 + v.byteLength;
    else if (typeof v === 'bigint') n += 24;
  }
  return n;
}

class Budget {
  readonly limit: number;
  used = 0;
  peak = 0;
  constructor(limit: number) { this.limit = limit; }
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    if (this.used > this.peak) this.peak = this.used;
    return true;
  }
  give(n: number): void { this.used -= n; }
}

/** One binding's spilled rows: in memory while the shared budget allows, then appended to a temp file. */
class Spill {
  readonly #budget: Budget;
  readonly #dir: string;
  #memory: (readonly SqlParam[])[] = [];
  #memoryBytes = 0;
  #file: { dir: string; fh: FileHandle } | undefined;
  #frameRows: (readonly SqlParam[])[] = [];
  #frameBytes = 0;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  count = 0;
  fileBytes = 0;

  constructor(budget: Budget, dir: string) {
    this.#budget = budget;
    this.#dir = dir;
  }

  async add(row: readonly SqlParam[]): Promise<void> {
    this.count++;
    if (this.#file === undefined) {
      const size = estimateRowBytes(row);
      if (this.#budget.take(size)) {
        this.#memory.push(row);
        this.#memoryBytes += size;
        return;
      }
      await this.#toFile();
    }
    this.#frameRows.push(row);
    this.#frameBytes += estimateRowBytes(row);
    if (this.#frameRows.length >= FRAME_ROWS || this.#frameBytes >= FILE_CHUNK) {
      this.#frame();
      if (this.#pendingBytes >= FILE_CHUNK) await this.#flush();
    }
  }

  /** Serialize the rows gathered so far as one length-prefixed frame. */
  #frame(): void {
    if (this.#frameRows.length === 0) return;
    const body = serialize(this.#frameRows);
    this.#frameRows = [];
    this.#frameBytes = 0;
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32LE(body.length, 0);
    this.#pending.push(head, body);
    this.#pendingBytes += 4 + body.length;
  }

  async #flush(): Promise<void> {
    this.#frame();
    if (this.#pendingBytes === 0 || this.#file === undefined) return;
    const buf = Buffer.concat(this.#pending, this.#pendingBytes);
    this.#pending = [];
    this.#pendingBytes = 0;
    await this.#file.fh.write(buf);
    this.fileBytes += buf.length;
  }

  /** Move the in-memory rows to a new file; later rows go straight to it. */
  async #toFile(): Promise<void> {
    const dir = await mkdtemp(join(this.#dir, 'sluice-spill-'));
    this.#file = { dir, fh: await open(join(dir, 'rows'), 'w+') };
    for (const row of this.#memory) {
      this.#frameRows.push(row);
      if (this.#frameRows.length >= FRAME_ROWS) this.#frame();
    }
    this.#memory = [];
    this.#budget.give(this.#memoryBytes);
    this.#memoryBytes = 0;
    await this.#flush();
  }

  /** The rows in arrival order (read back from the file in chunks when spilled to disk). */
  async *rows(): AsyncGenerator<readonly SqlParam[]> {
    if (this.#file === undefined) {
      // Hand rows out one by one, releasing memory as the bulk load consumes them.
      while (this.#memory.length > 0) {
        const batch = this.#memory;
        this.#memory = [];
        for (let i = 0; i < batch.length; i++) {
          const row = batch[i]!;
          batch[i] = [];
          const size = estimateRowBytes(row);
          this.#memoryBytes -= size;
          this.#budget.give(size);
          yield row;
        }
      }
      return;
    }
    await this.#flush();
    const fh = this.#file.fh;
    let position = 0;
    let rest = Buffer.alloc(0);
    const chunk = Buffer.allocUnsafe(FILE_CHUNK);
    while (true) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      let buf = rest.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([rest, chunk.subarray(0, bytesRead)]);
      let at = 0;
      while (buf.length - at >= 4) {
        const len = buf.readUInt32LE(at);
        if (buf.length - at - 4 < len) break;
        const frame = deserialize(buf.subarray(at + 4, at + 4 + len)) as SqlParam[][];
        at += 4 + len;
        for (const row of frame) yield row;
      }
      // Copy the partial frame: `chunk` is reused by the next read.
      buf = buf.subarray(at);
      rest = Buffer.from(buf);
    }
    if (rest.length > 0) throw new SqlError(`spill file ${join(this.#file.dir, 'rows')} ends inside a row (${rest.length} bytes left)`);
  }

  async dispose(): Promise<void> {
    this.#budget.give(this.#memoryBytes);
    this.#memoryBytes = 0;
    this.#memory = [];
    this.#pending = [];
    this.#frameRows = [];
    const f = this.#file;
    this.#file = undefined;
    if (f !== undefined) {
      await f.fh.close().catch(() => undefined);
      await rm(f.dir, { recursive: true, force: true });
    }
  }
}

/**
 * Route every item of `input` to its binding and bulk-load each binding's rows exactly once. Items for which
 * `route` returns undefined are skipped. `route` runs as items are pulled, so it may also record per-binding
 * state (and its errors fail the bulk load that is pulling). Bulk loads run one after another: the live binding
 * (the first routed item's) while the input is read, then each spilled binding in ascending order.
 */
export async function stageByBinding<I>(input: AsyncIterable<I>, route: (item: I) => Routed | undefined, opts: StageOptions): Promise<StagingStats> {
  const budget = new Budget(opts.spill?.memoryBytes ?? DEFAULT_SPILL_MEMORY);
  const dir = opts.spill?.dir ?? tmpdir();
  const stats: StagingStats = { live: undefined, bindings: new Map(), bulkLoads: 0, peakSpillMemoryBytes: 0 };
  const spills = new Map<number, Spill>();
  const it = input[Symbol.asyncIterator]();
  try {
    let first: Routed | undefined;
    while (first === undefined) {
      const r = await it.next();
      if (r.done === true) return stats;
      first = route(r.value);
    }
    const live = first.binding;
    stats.live = live;
    await opts.beforeFirst?.();
    let liveRows = 0;
    let inputDone = false;
    const head = first;
    async function* liveStream(): AsyncGenerator<readonly SqlParam[]> {
      liveRows++;
      yield head.row;
      while (true) {
        const r = await it.next();
        if (r.done === true) { inputDone = true; return; }
        const x = route(r.value);
        if (x === undefined) continue;
        if (x.binding === live) {
          liveRows++;
          yield x.row;
        } else {
          let s = spills.get(x.binding);
          if (s === undefined) spills.set(x.binding, (s = new Spill(budget, dir)));
          await s.add(x.row);
        }
      }
    }
    stats.bulkLoads++;
    const loaded = await opts.bulk(live, liveStream());
    if (!inputDone) throw new SqlError(`the bulk load of binding ${live} finished before its rows did (${liveRows} pulled, ${loaded} reported)`);
    stats.bindings.set(live, { rows: liveRows, spilledRows: 0, spilledFileBytes: 0 });
    for (const b of [...spills.keys()].sort((x, y) => x - y)) {
      const s = spills.get(b)!;
      stats.bulkLoads++;
      let n = 0;
      const counted = async function* (): AsyncGenerator<readonly SqlParam[]> { for await (const row of s.rows()) { n++; yield row; } };
      await opts.bulk(b, counted());
      if (n !== s.count) throw new SqlError(`the bulk load of binding ${b} consumed ${n} of its ${s.count} spilled rows`);
      stats.bindings.set(b, { rows: s.count, spilledRows: s.count, spilledFileBytes: s.fileBytes });
      await s.dispose();
    }
    return stats;
  } finally {
    stats.peakSpillMemoryBytes = budget.peak;
    for (const s of spills.values()) await s.dispose();
  }
}
