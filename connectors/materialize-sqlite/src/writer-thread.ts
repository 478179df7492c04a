// The SQL transactor on a writer thread. node:sqlite is synchronous, so on one thread every statement stalls
// the reading of the next requests. Here the main thread runs the runtime (stdin framing, envelopes, document
// validation) and hands each store over raw — its packed key and values and the document's JSON text, the
// runtime having deferred tuple decoding (Transactor.deferTupleDecoding) — in batches of a few typed arrays and
// one string; the writer thread (writer-worker.ts) runs the unchanged SqlTransactor over its own SQLite
// connections: tuple decoding, parameters, statements, the fence and commits. Handing rows of parameters over
// instead was measured and dropped: packing and cloning them cost as much as the SQLite work it moved.
//
// Exactly once is the SqlTransactor's, unchanged: data and checkpoint commit in one SQLite transaction on the
// writer thread. A failure there (a statement, a malformed tuple) fails the store call and so the session before
// any commit. The thread is terminated by close() (the runtime calls it on every way out of a session), when open
// fails, and never keeps the process alive while idle. Starting the thread, the channel, the mapping of its
// death to an error and the errors' round trip are the runtime's (@sluice/runtime/thread).
import { rebuildError as rebuild, threadModule } from '@sluice/runtime/thread';
import type { SerializedError, Thread } from '@sluice/runtime/thread';
import { ConfigError, PackedStore, ProtocolError } from '@sluice/runtime';
import type {
  DecodedLoad, DecodedStore, JsonObject, Logger, MaterializeOpenContext, MaterializeOpenedResponse, RuntimeCheckpoint,
  StateResponse, Transactor, TupleValue,
} from '@sluice/runtime';
import { FencedError, SqlConfigError, SqlError } from '@sluice/materialize-sql';
import type { EndpointConfig, ResourceConfig } from './config.ts';

/** What the writer thread needs to open (the context without logger and signal). */
export interface OpenInit {
  config: EndpointConfig;
  materialization: MaterializeOpenContext<EndpointConfig, ResourceConfig>['materialization'];
  bindings: MaterializeOpenContext<EndpointConfig, ResourceConfig>['bindings'];
  range: MaterializeOpenContext<EndpointConfig, ResourceConfig>['range'];
  version: string;
  state: JsonObject;
}

/**
 * Stores handed over: per store its binding, flags, line and three texts in `text` (lengths in `lens`: key,
 * values, document; -1 = no document). The values tuple usually travels as bytes instead (FLAG_VALUES_BYTES:
 * base64-decoded on the main thread into `bytes`, its length in `lens`), which balances the two threads.
 * Stores without raw tuples (the JSON key/values form) go in `decoded`.
 */
export interface StoreBatch {
  n: number;
  bindings: Int32Array;
  flags: Uint8Array;
  lines: Int32Array;
  lens: Int32Array;
  text: string;
  bytes: Uint8Array;
  decoded: { i: number; key: TupleValue[]; values: TupleValue[] }[];
}
export const FLAG_EXISTS = 1;
export const FLAG_DELETE = 2;
export const FLAG_VALUES_BYTES = 4;

export type CallOp = 'acknowledge' | 'startCommit' | 'close' | 'storeEnd' | 'loadEnd';
export type MainToWorker =
  | { t: 'open'; id: number; init: OpenInit; shared: SharedArrayBuffer }
  | { t: 'call'; id: number; op: CallOp; checkpoint?: RuntimeCheckpoint }
  | { t: 'storeBegin' }
  | { t: 'stores'; seq: number; batch: StoreBatch }
  | { t: 'loadBegin' }
  | { t: 'loads'; seq: number; loads: DecodedLoad[] }
  | { t: 'abort' };
export type WorkerToMain =
  | { t: 'reply'; id: number; result?: unknown; error?: SerializedError }
  | { t: 'failed'; error: SerializedError }
  | { t: 'loaded'; binding: number; doc: JsonObject }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error' | 'status'; msg: string; fields?: Record<string, unknown> };

/**
 * A batch is handed over at this many stores or characters (and at the end of the transaction's stores). A
 * transaction's first batch is FIRST_BATCH_STORES, doubling up to BATCH_STORES, so the writer thread starts
 * soon after the main thread does.
 */
const BATCH_STORES = 512;
const FIRST_BATCH_STORES = 32;
const BATCH_CHARS = 512 * 1024;
/**
 * Batches handed over and not yet consumed before the main thread waits (bounds memory, ~4 MB); it then
 * waits until only half are left, so a writer thread that is the slower one wakes it once per 4 batches.
 */
const MAX_IN_FLIGHT = 8;

/**
 * Shared Int32 slots. Backpressure goes through shared memory, not messages, and wakes the main thread only
 * when it waits: on the 2-core VM every cross-thread wake-up (a message, or Atomics.notify to a waiter) cost
 * the writer thread 0.2–0.7 ms — with one per batch, as much as the batch's statements.
 */
export const CONSUMED = 0; // batches the writer thread has taken off its queue (or dropped)
export const FAILED = 1; // 1 once the current store()/load() failed there (the error follows as a message)
export const WAKE_AT = 2; // 0, or the CONSUMED count at which the waiting main thread wants to be woken

const writerThreads = threadModule<MainToWorker, WorkerToMain>(new URL('./writer-worker.ts', import.meta.url), {
  name: 'the SQLite writer thread',
  exitError: (code) => new SqlError(`the SQLite writer thread exited (code ${code}) before the session ended`),
});

/** Writer threads started and not yet exited (tests check that every way out ends them). */
export function liveWriterThreads(): number {
  return writerThreads.live();
}

/** Terminates every writer thread now, as if it had died (tests: a session must fail without committing). */
export async function terminateWriterThreads(): Promise<void> {
  await writerThreads.killAll();
}

/**
 * Starts the writer thread now (the bin calls this at start-up), so it loads its modules while the main
 * thread loads its own and waits for the first request, as a single thread would have done before `open`.
 * The next open() takes it; a process that serves spec/validate/apply exits with it unused (it is unref'd).
 */
export function prestartWriterThread(): void {
  if (useWriterThread()) writerThreads.prestart();
}

/** Whether sessions use the writer thread: yes unless SLUICE_SQLITE_WRITER_THREAD=0. */
export function useWriterThread(env: Record<string, string | undefined> = process.env): boolean {
  return env['SLUICE_SQLITE_WRITER_THREAD'] !== '0';
}

/** The writer thread's error as the same class with the same message (what the entry point reports). */
export function rebuildError(e: SerializedError): Error {
  return rebuild(e, () => {
    switch (e.name) {
      case 'ProtocolError': return new ProtocolError(e.message);
      case 'FencedError': return new FencedError(e.message);
      case 'SqlError': return new SqlError(e.message, typeof e.props['number'] === 'number' ? { number: e.props['number'] } : {});
      case 'SqlConfigError': return new SqlConfigError(e.message);
      case 'ConfigError': return new ConfigError(e.message);
      default: return undefined;
    }
  });
}

interface Waiter { resolve: (value: unknown) => void; reject: (err: Error) => void }


/** Packs stores for the writer thread. */
class StoreBatcher {
  n = 0;
  chars = 0;
  #bindings = new Int32Array(BATCH_STORES);
  #flags = new Uint8Array(BATCH_STORES);
  #lines = new Int32Array(BATCH_STORES);
  #lens = new Int32Array(BATCH_STORES * 3);
  #text: string[] = [];
  #bytes = Buffer.allocUnsafe(64 * 1024);
  #byteCount = 0;
  #decoded: StoreBatch['decoded'] = [];

  add(s: DecodedStore): void {
    const i = this.n;
    if (i === this.#bindings.length) this.#grow();
    this.#bindings[i] = s.binding;
    let flags = (s.exists ? FLAG_EXISTS : 0) | (s.delete ? FLAG_DELETE : 0);
    this.#lines[i] = s instanceof PackedStore ? s.line : 0;
    let key = '';
    let values = '';
    let valuesLength = 0;
    if (s instanceof PackedStore) {
      key = s.keyPacked;
      values = s.valuesPacked;
      const bytes = this.#base64(values);
      if (bytes >= 0) {
        flags |= FLAG_VALUES_BYTES;
        valuesLength = bytes;
        values = '';
      } else {
        valuesLength = values.length;
      }
    } else {
      this.#decoded.push({ i, key: s.key, values: s.values });
    }
    this.#flags[i] = flags;
    const doc = s.docJson ?? (s.doc === undefined ? undefined : JSON.stringify(s.doc));
    this.#lens[i * 3] = key.length;
    this.#lens[i * 3 + 1] = valuesLength;
    this.#lens[i * 3 + 2] = doc === undefined ? -1 : doc.length;
    this.#text.push(key, values);
    if (doc !== undefined) this.#text.push(doc);
    this.chars += key.length + values.length + (doc?.length ?? 0);
    this.n++;
  }

  /**
   * Decodes base64 `text` onto `bytes`: the byte count, or -1 when it is not clean base64 (then the text is
   * sent and the writer thread reports the exact error unpackTupleBase64 gives).
   */
  #base64(text: string): number {
    if (text.length % 4 !== 0) return -1;
    const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
    const expected = (text.length / 4) * 3 - padding;
    if (this.#byteCount + expected + 3 > this.#bytes.length) {
      const next = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, this.#byteCount + expected + 3));
      this.#bytes.copy(next, 0, 0, this.#byteCount);
      this.#bytes = next;
    }
    const written = this.#bytes.write(text, this.#byteCount, 'base64');
    if (written !== expected) return -1;
    this.#byteCount += written;
    return written;
  }

  #grow(): void {
    const size = this.#bindings.length * 2;
    const grow = <T extends Int32Array | Uint8Array>(a: T, n: number): T => {
      const next = new (a.constructor as new (n: number) => T)(n);
      next.set(a);
      return next;
    };
    this.#bindings = grow(this.#bindings, size);
    this.#flags = grow(this.#flags, size);
    this.#lines = grow(this.#lines, size);
    this.#lens = grow(this.#lens, size * 3);
  }

  take(): StoreBatch {
    const n = this.n;
    const batch: StoreBatch = {
      n,
      bindings: this.#bindings.slice(0, n),
      flags: this.#flags.slice(0, n),
      lines: this.#lines.slice(0, n),
      lens: this.#lens.slice(0, n * 3),
      text: this.#text.join(''),
      bytes: Uint8Array.prototype.slice.call(this.#bytes, 0, this.#byteCount),
      decoded: this.#decoded,
    };
    this.n = 0;
    this.chars = 0;
    this.#byteCount = 0;
    this.#text = [];
    this.#decoded = [];
    return batch;
  }
}

/** The main thread's side: a Transactor that forwards to the SqlTransactor on the writer thread. */
export class WriterThreadTransactor implements Transactor {
  readonly deferTupleDecoding = true;
  readonly #thread: Thread<MainToWorker, WorkerToMain>;
  readonly #log: Logger;
  readonly #calls = new Map<number, Waiter>();
  #nextId = 1;
  #posted = 0;
  readonly #shared = new Int32Array(new SharedArrayBuffer(12));
  /** A failure of the current store()/load() on the writer thread, or the thread's death. */
  #failure: Error | null = null;
  #dead = false;
  #closing = false;
  #batcher = new StoreBatcher();
  #loaded: ((binding: number, doc: JsonObject) => Promise<void>) | null = null;
  #loadedChain: Promise<void> = Promise.resolve();

  /** Starts the writer thread and opens the transactor there; terminates the thread if that fails. */
  static async open(ctx: MaterializeOpenContext<EndpointConfig, ResourceConfig>): Promise<{ transactor: Transactor; opened: MaterializeOpenedResponse }> {
    const t = new WriterThreadTransactor(ctx.log);
    const onAbort = () => t.#post({ t: 'abort' });
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const init: OpenInit = { config: ctx.config, materialization: ctx.materialization, bindings: ctx.bindings, range: ctx.range, version: ctx.version, state: ctx.state };
      const opened = await t.#call({ t: 'open', id: 0, init, shared: t.#shared.buffer as SharedArrayBuffer }) as MaterializeOpenedResponse;
      return { transactor: t, opened };
    } catch (err) {
      ctx.signal.removeEventListener('abort', onAbort);
      await t.#terminate();
      throw err;
    }
  }

  private constructor(log: Logger) {
    this.#log = log;
    // The prestarted thread when it is healthy (prestartWriterThread), else a new one.
    this.#thread = writerThreads.start();
    this.#thread.onMessage((m) => this.#onMessage(m));
    // Its uncaught error or unasked-for exit (SqlError "exited (code N)"); undefined after #terminate().
    this.#thread.onEnd((err) => this.#die(err ?? new SqlError('the SQLite writer thread is closed')));
  }

  /** Keeps the process alive only while the writer thread has work or owes an answer. */
  #hold(): void {
    this.#thread.hold();
  }

  #release(): void {
    this.#thread.release();
  }

  #onMessage(m: WorkerToMain): void {
    switch (m.t) {
      case 'failed':
        this.#failure ??= rebuildError(m.error);
        return;
      case 'reply': {
        const w = this.#calls.get(m.id);
        if (w === undefined) return;
        this.#calls.delete(m.id);
        this.#release();
        if (m.error !== undefined) w.reject(rebuildError(m.error));
        else w.resolve(m.result);
        return;
      }
      case 'loaded': {
        const loaded = this.#loaded;
        if (loaded === null) return;
        // In order, with the runtime's backpressure; a failure fails the load (seen at loadEnd).
        this.#loadedChain = this.#loadedChain.then(() => loaded(m.binding, m.doc));
        this.#loadedChain.catch((err: unknown) => {
          this.#failure ??= err as Error;
        });
        return;
      }
      case 'log': {
        const fields = m.fields;
        if (m.level === 'status') this.#log.status(m.msg, fields);
        else this.#log[m.level](m.msg, fields);
        return;
      }
    }
  }

  #die(err: Error): void {
    if (this.#dead) return;
    this.#dead = true;
    const failure = this.#closing ? new SqlError('the SQLite writer thread is closed') : (this.#failure ??= err);
    for (const w of this.#calls.values()) w.reject(failure);
    this.#calls.clear();
  }

  async #terminate(): Promise<void> {
    this.#closing = true;
    if (!this.#dead) await this.#thread.terminate();
  }

  #post(m: MainToWorker, transfer?: ArrayBuffer[]): void {
    if (!this.#dead) this.#thread.post(m, transfer);
  }

  #call(m: Extract<MainToWorker, { id: number }>): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#failure ?? new SqlError('the SQLite writer thread is closed'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.#hold();
      this.#post({ ...m, id });
    });
  }

  #throwIfFailed(): void {
    if (this.#failure !== null) throw this.#failure;
    if (this.#dead) throw new SqlError('the SQLite writer thread is closed');
  }

  /** Hands the gathered stores over. */
  #flush(): void {
    if (this.#batcher.n === 0 || this.#dead) return;
    const batch = this.#batcher.take();
    this.#posted++;
    this.#post({ t: 'stores', seq: this.#posted, batch }, [batch.bindings.buffer, batch.flags.buffer, batch.lines.buffer, batch.lens.buffer, batch.bytes.buffer] as ArrayBuffer[]);
  }

  /** The writer thread failed the current store()/load(): its call's answer carries the error. */
  get #writerFailed(): boolean {
    return Atomics.load(this.#shared, FAILED) !== 0;
  }

  /**
   * When MAX_IN_FLIGHT batches are queued on the writer thread, waits until half of them are consumed (woken
   * through shared memory, once).
   */
  async #roomForMore(): Promise<void> {
    if (this.#posted - Atomics.load(this.#shared, CONSUMED) < MAX_IN_FLIGHT) return;
    const target = this.#posted - MAX_IN_FLIGHT / 2;
    this.#hold();
    try {
      while (true) {
        Atomics.store(this.#shared, WAKE_AT, target);
        const consumed = Atomics.load(this.#shared, CONSUMED);
        if (consumed >= target || this.#writerFailed) return;
        this.#throwIfFailed();
        // Re-checked at least every second (a writer that died cannot notify).
        const w = Atomics.waitAsync(this.#shared, CONSUMED, consumed, 1000);
        if (w.async) await w.value;
      }
    } finally {
      Atomics.store(this.#shared, WAKE_AT, 0);
      this.#release();
    }
  }

  async store(stores: AsyncIterable<DecodedStore>): Promise<void> {
    this.#throwIfFailed();
    Atomics.store(this.#shared, FAILED, 0);
    this.#post({ t: 'storeBegin' });
    let limit = FIRST_BATCH_STORES;
    for await (const s of stores) {
      this.#throwIfFailed();
      // The writer failed: stop handing stores over; storeEnd answers with its error.
      if (this.#writerFailed) break;
      this.#batcher.add(s);
      if (this.#batcher.n >= limit || this.#batcher.chars >= BATCH_CHARS) {
        this.#flush();
        if (limit < BATCH_STORES) limit *= 2;
        await this.#roomForMore();
      }
    }
    this.#flush();
    await this.#call({ t: 'call', id: 0, op: 'storeEnd' });
    this.#throwIfFailed();
  }

  async load(loads: AsyncIterable<DecodedLoad>, loaded: (binding: number, doc: JsonObject) => Promise<void>): Promise<void> {
    this.#throwIfFailed();
    Atomics.store(this.#shared, FAILED, 0);
    this.#loaded = loaded;
    this.#loadedChain = Promise.resolve();
    try {
      this.#post({ t: 'loadBegin' });
      let batch: DecodedLoad[] = [];
      const send = (): void => {
        this.#posted++;
        this.#post({ t: 'loads', seq: this.#posted, loads: batch });
        batch = [];
      };
      for await (const l of loads) {
        this.#throwIfFailed();
        if (this.#writerFailed) break;
        batch.push({ binding: l.binding, key: l.key, keyPacked: l.keyPacked });
        if (batch.length >= BATCH_STORES) {
          send();
          await this.#roomForMore();
        }
      }
      if (batch.length > 0) send();
      await this.#call({ t: 'call', id: 0, op: 'loadEnd' });
      await this.#loadedChain;
      this.#throwIfFailed();
    } finally {
      this.#loaded = null;
    }
  }

  async acknowledge(): Promise<StateResponse | void> {
    this.#throwIfFailed();
    return await this.#call({ t: 'call', id: 0, op: 'acknowledge' }) as StateResponse | undefined;
  }

  async startCommit(runtimeCheckpoint: RuntimeCheckpoint): Promise<StateResponse | void> {
    this.#throwIfFailed();
    return await this.#call({ t: 'call', id: 0, op: 'startCommit', checkpoint: runtimeCheckpoint }) as StateResponse | undefined;
  }

  /** Closes the transactor on the writer thread (rolling back an open transaction), then ends the thread. */
  async close(): Promise<void> {
    if (this.#dead) return;
    try {
      await this.#call({ t: 'call', id: 0, op: 'close' });
    } finally {
      await this.#terminate();
    }
  }
}
