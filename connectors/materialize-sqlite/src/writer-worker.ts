// The writer thread (see writer-thread.ts): opens the SQL transactor over its own SQLite connections and runs
// what the main thread forwards, in order. Stores arrive raw and become PackedStores here, so their tuples
// are decoded on this thread (a malformed one fails store() with the runtime's ProtocolError, same message).
import { serializeError, serveThread } from '@sluice/runtime/thread';
import { PackedStore } from '@sluice/runtime';
import type { DecodedLoad, DecodedStore, JsonObject, Logger, RuntimeCheckpoint, Transactor } from '@sluice/runtime';
import { sqlMaterializeConnector } from '@sluice/materialize-sql';
import { sqliteEndpoint } from './connector.ts';
import { CONSUMED, FAILED, FLAG_DELETE, FLAG_EXISTS, FLAG_VALUES_BYTES, WAKE_AT } from './writer-thread.ts';
import type { MainToWorker, StoreBatch, WorkerToMain } from './writer-thread.ts';

const connector = sqlMaterializeConnector(sqliteEndpoint);
const abort = new AbortController();
let transactor: Transactor | undefined;
/** Shared with the main thread: batches consumed, failure flag (see writer-thread.ts). */
let shared: Int32Array<ArrayBufferLike> = new Int32Array(2);

/** A batch was taken off the queue (or dropped): wakes the main thread only if it waits for this count. */
function consumed(): void {
  const count = Atomics.add(shared, CONSUMED, 1) + 1;
  const wakeAt = Atomics.load(shared, WAKE_AT);
  if (wakeAt !== 0 && count >= wakeAt) Atomics.notify(shared, CONSUMED);
}

/** The current store()/load() failed: the main thread stops handing batches over. */
function failed(err: unknown): void {
  Atomics.store(shared, FAILED, 1);
  Atomics.notify(shared, CONSUMED);
  post({ t: 'failed', error: serializeError(err) });
}

function post(m: WorkerToMain): void {
  port.post(m);
}

function safeFields(fields: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (fields === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? { name: v.name, message: v.message } : v;
  return out;
}

function logger(base: Record<string, unknown> = {}): Logger {
  const send = (level: 'debug' | 'info' | 'warn' | 'error' | 'status') => (msg: string, fields?: Record<string, unknown>) => {
    const merged = Object.keys(base).length === 0 ? fields : { ...base, ...fields };
    try {
      post({ t: 'log', level, msg, ...(merged === undefined ? {} : { fields: safeFields(merged)! }) });
    } catch {
      post({ t: 'log', level, msg });
    }
  };
  return { debug: send('debug'), info: send('info'), warn: send('warn'), error: send('error'), status: send('status'), child: (f) => logger({ ...base, ...f }) };
}

/**
 * A queue of forwarded batches read as one async iterable by the transactor. A batch counts as consumed
 * (room for the main thread to hand over another) when the transactor starts on it.
 */
class Feed<B, T> implements AsyncIterable<T> {
  readonly #batches: { items: T[] }[] = [];
  #ended = false;
  #failure: Error | null = null;
  #dropping = false;
  #wake: (() => void) | null = null;
  readonly #unpack: (b: B) => T[];

  constructor(unpack: (b: B) => T[]) {
    this.#unpack = unpack;
  }

  push(batch: B): void {
    if (this.#dropping) {
      consumed();
      return;
    }
    this.#batches.push({ items: this.#unpack(batch) });
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  /** The session is closing: the consumer's next read throws (it never sees an end it could commit). */
  fail(err: Error): void {
    this.#failure = err;
    this.drop();
    this.#wake?.();
  }

  /** The consumer is gone (failed or returned): acknowledge what is queued and what still comes. */
  drop(): void {
    this.#dropping = true;
    for (let n = this.#batches.splice(0).length; n > 0; n--) consumed();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    try {
      while (true) {
        if (this.#failure !== null) throw this.#failure;
        const b = this.#batches[0];
        if (b === undefined) {
          if (this.#ended) return;
          await new Promise<void>((resolve) => { this.#wake = resolve; });
          this.#wake = null;
          continue;
        }
        // Taken off the queue: room for the main thread to hand over another.
        this.#batches.shift();
        consumed();
        for (let i = 0; i < b.items.length; i++) {
          yield b.items[i]!;
          if (this.#failure !== null) throw this.#failure;
        }
      }
    } finally {
      this.drop();
    }
  }
}

function unpackStores(b: StoreBatch): DecodedStore[] {
  const out: DecodedStore[] = new Array(b.n);
  const { bindings, flags, lines, lens, text, bytes } = b;
  let pos = 0;
  let bytePos = 0;
  let d = 0;
  for (let i = 0; i < b.n; i++) {
    const kl = lens[i * 3]!;
    const vl = lens[i * 3 + 1]!;
    const dl = lens[i * 3 + 2]!;
    const f = flags[i]!;
    const keyPacked = text.slice(pos, pos += kl);
    let valuesPacked = '';
    let valuesBytes: Uint8Array | undefined;
    if ((f & FLAG_VALUES_BYTES) !== 0) {
      valuesBytes = bytes.subarray(bytePos, bytePos += vl);
    } else {
      valuesPacked = text.slice(pos, pos += vl);
    }
    const docJson = dl < 0 ? undefined : text.slice(pos, pos += dl);
    const fallback = b.decoded[d];
    if (fallback !== undefined && fallback.i === i) {
      d++;
      const s: DecodedStore = { binding: bindings[i]!, key: fallback.key, values: fallback.values, keyPacked, exists: (f & FLAG_EXISTS) !== 0, delete: (f & FLAG_DELETE) !== 0 };
      if (docJson !== undefined) {
        s.docJson = docJson;
        s.doc = JSON.parse(docJson) as JsonObject;
      }
      out[i] = s;
    } else {
      out[i] = new PackedStore({
        binding: bindings[i]!, keyPacked, valuesPacked, exists: (f & FLAG_EXISTS) !== 0, delete: (f & FLAG_DELETE) !== 0, line: lines[i]!,
        ...(valuesBytes === undefined ? {} : { valuesBytes }), ...(docJson === undefined ? {} : { docJson }),
      });
    }
  }
  return out;
}

let stores: Feed<StoreBatch, DecodedStore> | null = null;
let storing: Promise<unknown> | null = null;
let loads: Feed<DecodedLoad[], DecodedLoad> | null = null;
let loading: Promise<unknown> | null = null;

/** Runs `op` and answers call `id` with its result or error. */
function answer(id: number, op: () => Promise<unknown>): void {
  op().then(
    (result) => post({ t: 'reply', id, ...(result === undefined ? {} : { result }) }),
    (err: unknown) => post({ t: 'reply', id, error: serializeError(err) }),
  );
}

function need(): Transactor {
  if (transactor === undefined) throw new Error('the writer thread has no open transactor');
  return transactor;
}

const port = serveThread<MainToWorker, WorkerToMain>('materialize-sqlite/src/writer-worker.ts', (m) => {
  switch (m.t) {
    case 'open':
      shared = new Int32Array(m.shared);
      answer(m.id, async () => {
        const { transactor: t, opened } = await connector.open({ ...m.init, log: logger(), signal: abort.signal });
        transactor = t;
        return opened;
      });
      return;
    case 'storeBegin': {
      const feed = new Feed<StoreBatch, DecodedStore>(unpackStores);
      stores = feed;
      storing = need().store(feed);
      // Tell the main thread at once, so it stops handing stores over.
      storing.catch(failed);
      return;
    }
    case 'stores':
      stores?.push(m.batch);
      return;
    case 'loadBegin': {
      const feed = new Feed<DecodedLoad[], DecodedLoad>((b) => b);
      loads = feed;
      loading = need().load(feed, async (binding: number, doc: JsonObject) => post({ t: 'loaded', binding, doc }));
      loading.catch(failed);
      return;
    }
    case 'loads':
      loads?.push(m.loads);
      return;
    case 'abort':
      abort.abort();
      return;
    case 'call':
      switch (m.op) {
        case 'storeEnd': {
          const done = storing;
          stores?.end();
          stores = null;
          storing = null;
          answer(m.id, async () => { await done; });
          return;
        }
        case 'loadEnd': {
          const done = loading;
          loads?.end();
          loads = null;
          loading = null;
          answer(m.id, async () => { await done; });
          return;
        }
        case 'acknowledge':
          answer(m.id, async () => need().acknowledge());
          return;
        case 'startCommit':
          answer(m.id, async () => need().startCommit(m.checkpoint as RuntimeCheckpoint));
          return;
        case 'close':
          answer(m.id, async () => {
            abort.abort();
            const closing = new Error('the session ended before this transaction was committed');
            stores?.fail(closing);
            loads?.fail(closing);
            await transactor?.close?.();
            transactor = undefined;
          });
          return;
      }
  }
});
