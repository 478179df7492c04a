// One session of a materialization task over the runtime's materialize driver (runtime/src/host/
// materialize-driver.ts, which runs the protocol): this side reads the source journals from the
// checkpoint (partition selectors, a transaction's share per source), and persists what the driver
// hands back — the flushed state with the bindings' largest stored keys (load optimization) before any
// store, and the runtime checkpoint with the connector's state in one journal-store commit.
//
// Exactly once: a connector that keeps the checkpoint in its destination (returned in
// `opened.runtimeCheckpoint`) is authoritative and its checkpoint is used; otherwise the plane's own
// checkpoint, committed with the connector's `startedCommit.state`, is used (recovery-log pattern).
import {
  type ConnectorState, type JsonObject, type JsonValue, type MaterializationSpec,
  type MaterializeRequest, type MaterializeResponse, type RuntimeCheckpoint, resolvePointer, timestampTicks, uuidTicks,
} from '@sluice/runtime';
import { runMaterializeDriver, type ConnectorTarget, type MaterializeDriverOptions } from '@sluice/runtime/host';
import { rebuildError, serializeError, type Thread } from '@sluice/runtime/thread';
import { materializeThreads } from './materialize-threads.ts';
import { createReducer, isLastWriteWins, type Reducer } from '../catalog/reduce.ts';
import type { JournalInfo, JournalStore } from '../journals/store.ts';
import { encodePartitionValue } from '../journals/names.ts';
import type { ConnectorSession, SessionHooks } from './session.ts';
import { driverChunks, type ChunkedTransaction, type FromThread, type JournalChunk, type ThreadStart, type ToThread } from './materialize-thread-messages.ts';
import { applyStateUpdate as applyState } from '@sluice/runtime';

export const PARTITION_LABEL_PREFIX = 'estuary.dev/field/';

export function checkpointKey(task: string): string { return `materialize/${task}/checkpoint`; }
export function connectorStateKey(task: string): string { return `materialize/${task}/state`; }

export interface MaterializeTransactionInfo {
  docsRead: number;
  bytesRead: number;
  stored: number;
  perBinding: { collection: string; docsRead: number; bytesRead: number; stored: number }[];
}

export interface MaterializeSessionOptions {
  name: string;
  spec: MaterializationSpec;
  version: string;
  store: JournalStore;
  /** The connector: a session on this thread, or one the materialization's own thread starts (materializeInThread). */
  session: ConnectorSession<MaterializeRequest, MaterializeResponse> | ThreadedConnector;
  signal: AbortSignal;
  /** End the session (gracefully) as soon as every source journal has been read through its head. */
  untilCaughtUp?: boolean;
  /**
   * Called when every source journal is read through its head: return true once more documents have
   * been committed (the session reads them next), false to end the session. Preview feeds fixtures so.
   */
  nextBatch?: () => Promise<boolean>;
  /** Most source documents read into one transaction. */
  maxTxnDocs?: number;
  /** After `opened`; `destinationCheckpoint` is the checkpoint the connector keeps in its destination, if any. */
  onOpened?: (info: { destinationCheckpoint: RuntimeCheckpoint | undefined }) => void;
  onTransaction?: (info: MaterializeTransactionInfo) => void;
  /** Connector state updates as they are committed (preview's --output-state). */
  onState?: (update: ConnectorState) => void;
  /**
   * Send keys and values as JSON (`key`/`values`, MaterializeDriverOptions.jsonKeys): only for a built-in connector
   * run as a process (Launcher.runsBuiltin); a container or `local` command gets the packed form Flow sends.
   */
  jsonKeys?: boolean;
}

/**
 * A connector that runs with the materialize driver on a thread of its own (materialize-thread.ts): the
 * per-document work (parse, combine, pack, the load/store lines) leaves the main thread, which keeps the
 * journal store and the captures. The plane's tasks run so; preview and tests may pass a session instead.
 */
export interface ThreadedConnector {
  readonly inThread: true;
  readonly target: ConnectorTarget;
  readonly hooks: SessionHooks;
  /** Kills the connector (as ConnectorSession.kill). */
  kill(): void;
  /** The thread, while the session runs (set by runMaterializeSession). */
  thread?: Thread<ToThread, FromThread>;
  /** A thread started ahead for this session (prepareMaterialization), taken when its session starts. */
  prepared?: PreparedMaterialization;
}

export function materializeInThread(target: ConnectorTarget, hooks: SessionHooks = {}, prepared?: PreparedMaterialization): ThreadedConnector {
  const c: ThreadedConnector = { inThread: true, target, hooks, kill: () => c.thread?.post({ t: 'kill' }), ...(prepared ? { prepared } : {}) };
  return c;
}

/** A materialization's thread and first connector, started ahead of its session (prepareMaterialization). */
export interface PreparedMaterialization {
  readonly task: string;
  readonly target: ConnectorTarget;
  readonly thread: Thread<ToThread, FromThread>;
  /** unaryInPrepared's requests awaiting their answer, by id. */
  readonly pending: Map<number, { resolve: (v: JsonObject) => void; reject: (err: Error) => void }>;
}

/**
 * Starts a materialization's thread and, from it, the connector of its first session now — a publication
 * about to start the task calls this before its validate and apply: the thread's start (~0.3 s: an isolate,
 * Node's bootstrap, the imports) and the connector's (a Node start, ~0.3 s of CPU) overlap the publication's
 * RPCs instead of following them (issue 16: they were the time from the ready line to the first row). The
 * connector reads nothing until the session sends `open`. Pass it to materializeInThread; one not taken must
 * be released (releasePreparedMaterialization).
 */
export function prepareMaterialization(task: string, target: ConnectorTarget): PreparedMaterialization {
  const thread = materializeThreads.start();
  thread.post({ t: 'prespawn', target, name: task });
  const pending: PreparedMaterialization['pending'] = new Map();
  // Until its session takes the thread (runInThread sets its own handlers): the answers to unaryInPrepared.
  thread.onMessage((m) => {
    if (m.t !== 'unaryReply') return;
    const w = pending.get(m.id);
    pending.delete(m.id);
    if (m.error !== undefined) w?.reject(rebuildError(m.error));
    else w?.resolve(m.value ?? {});
  });
  thread.onEnd((failure) => {
    for (const w of pending.values()) w.reject(failure ?? new Error(`${task}: the materialization thread ended before answering`));
    pending.clear();
  });
  return { task, target, thread, pending };
}

let unaryIds = 0;
/**
 * A unary RPC (validate, apply) answered by the prepared thread's connector — the process its session then
 * takes, so a new materialization costs one connector start, not two (Launcher.route).
 */
export function unaryInPrepared(p: PreparedMaterialization, request: MaterializeRequest, variant: string): Promise<JsonObject> {
  const id = unaryIds++;
  // The thread owes an answer: it keeps the process alive until then (an idle thread does not).
  p.thread.hold();
  return new Promise<JsonObject>((resolve, reject) => {
    p.pending.set(id, { resolve, reject });
    p.thread.post({ t: 'unary', id, request, variant });
  }).finally(() => p.thread.release());
}

/** Ends a prepared thread no session took: it stops its connector first (which has read no request), then ends. */
export function releasePreparedMaterialization(p: PreparedMaterialization): void {
  const { thread } = p;
  thread.onEnd(() => undefined);
  thread.onMessage((m) => { if (m.t === 'end') void thread.terminate(); });
  thread.post({ t: 'release' });
}

type Callbacks = Pick<MaterializeDriverOptions, 'onOpened' | 'onAcknowledged' | 'onFlushed' | 'onStartedCommit'>;

/** Runs the driver on the connector's thread, serving its callbacks here; resolves or rejects as the driver does. */
async function runInThread(c: ThreadedConnector, start: ThreadStart, cb: Callbacks, next: () => Promise<ChunkedTransaction | undefined>, recycle: (buffers: ArrayBuffer[]) => void): Promise<void> {
  // The prepared thread, if it was started for this very task and target and is still alive (its connector is
  // used only if it matches too: materialize-thread.ts).
  const ready = c.prepared;
  delete c.prepared;
  const usable = ready !== undefined && ready.task === start.name && JSON.stringify(ready.target) === JSON.stringify(c.target) && !ready.thread.ended;
  if (ready !== undefined && !usable) releasePreparedMaterialization(ready);
  const thread = usable ? ready.thread : materializeThreads.start();
  c.thread = thread;
  thread.hold();
  const asBuffer = (k: Uint8Array) => Buffer.from(k.buffer, k.byteOffset, k.byteLength);
  try {
    await new Promise<void>((resolve, reject) => {
      thread.onEnd((failure) => reject(failure ?? new Error(`${start.name}: the materialization thread ended before its session did`)));
      thread.onMessage((m) => {
        if (m.t === 'log') {
          c.hooks.onLog?.(m.event);
        } else if (m.t === 'unaryReply') {
          // The publication's RPCs were all answered before its session started: nothing waits for one.
        } else if (m.t === 'recycle') {
          recycle(m.buffers);
        } else if (m.t === 'end') {
          if (m.error === undefined) resolve();
          else reject(rebuildError(m.error));
        } else {
          let answer: Promise<ChunkedTransaction | undefined>;
          switch (m.fn) {
            case 'opened': answer = Promise.resolve(cb.onOpened?.(m.arg)).then(() => undefined); break;
            case 'next': answer = next(); break;
            case 'acknowledged': answer = Promise.resolve(cb.onAcknowledged?.(m.arg)).then(() => undefined); break;
            case 'flushed': answer = Promise.resolve(cb.onFlushed?.(m.arg.state, m.arg.maxKeys?.map(asBuffer))).then(() => undefined); break;
            case 'startedCommit': answer = Promise.resolve(cb.onStartedCommit?.(m.arg.checkpoint, m.arg.state, m.arg.stats)).then(() => undefined); break;
          }
          answer.then(
            // The journal bytes move to the thread (readLines gives each chunk a buffer of its own).
            (value) => thread.post({ t: 'reply', id: m.id, ...(value === undefined ? {} : { value }) }, value?.chunks.map((ch) => ch.data.buffer as ArrayBuffer)),
            (err: unknown) => thread.post({ t: 'reply', id: m.id, error: serializeError(err) }),
          );
        }
      });
      thread.post({ t: 'start', start });
    });
  } finally {
    thread.release();
    await thread.terminate();
    delete c.thread;
  }
}

interface Cursor { binding: number; journal: string; key: string; offset: number }

interface BindingPlan {
  index: number;
  collection: string;
  suffix: string;
  reducer: Reducer;
  /** No `merge` anywhere in the schema: a later document replaces the earlier one whole. */
  lastWriteWins: boolean;
  selects: (j: JournalInfo) => boolean;
  /** `notBefore`/`notAfter` as UUID clocks: documents published outside the window are skipped. */
  window?: { uuidPtr: string; notBefore?: bigint; notAfter?: bigint };
}

/** The binding's publication-time window, if it has one (Flow compares each document's UUID clock). */
export function publicationWindow(b: NonNullable<MaterializationSpec['bindings']>[number]): BindingPlan['window'] {
  if (b.notBefore === undefined && b.notAfter === undefined) return undefined;
  const w: NonNullable<BindingPlan['window']> = { uuidPtr: b.collection.uuidPtr ?? '/_meta/uuid' };
  if (b.notBefore !== undefined) w.notBefore = timestampTicks(b.notBefore);
  if (b.notAfter !== undefined) w.notAfter = timestampTicks(b.notAfter);
  return w;
}

/** True when the document was published inside the window (documents without a v1 UUID are kept). */
export function inWindow(window: NonNullable<BindingPlan['window']>, doc: JsonValue): boolean {
  const uuid = resolvePointer(doc, window.uuidPtr);
  const ticks = typeof uuid === 'string' ? uuidTicks(uuid) : undefined;
  if (ticks === undefined) return true;
  return !((window.notBefore !== undefined && ticks < window.notBefore) || (window.notAfter !== undefined && ticks > window.notAfter));
}

export function journalSelector(spec: MaterializationSpec['bindings'] extends (infer B)[] | undefined ? B : never): (j: JournalInfo) => boolean {
  const group = (labels: { name: string; value?: string }[] | undefined) => {
    const m = new Map<string, Set<string>>();
    for (const l of labels ?? []) {
      if (!l.name.startsWith(PARTITION_LABEL_PREFIX)) continue;
      const field = l.name.slice(PARTITION_LABEL_PREFIX.length);
      if (!m.has(field)) m.set(field, new Set());
      m.get(field)!.add(l.value ?? '');
    }
    return m;
  };
  const include = group(spec.partitionSelector?.include?.labels);
  const exclude = group(spec.partitionSelector?.exclude?.labels);
  return (j) => {
    for (const [field, values] of include) if (!values.has(j.labels[field] ?? encodePartitionValue(null))) return false;
    for (const [field, values] of exclude) if (values.has(j.labels[field] ?? encodePartitionValue(null))) return false;
    return true;
  };
}

/** Per binding (by index) the persisted largest stored key, base64; see runtime/host materialize-driver. */
export function maxKeysKey(task: string): string { return `materialize/${task}/maxKeys`; }

/** Source documents per transaction (Flow closes a transaction by time and size; the plane by both counts). */
const DEFAULT_TXN_DOCS = 20_000;
const DEFAULT_TXN_BYTES = 8 * 1024 * 1024;
/** The first transaction's most documents (then ×4 per transaction up to the maximum). */
const FIRST_TXN_DOCS = 1000;

export async function runMaterializeSession(opts: MaterializeSessionOptions): Promise<void> {
  const { name, spec, store, session, signal } = opts;
  const maxTxnDocs = opts.maxTxnDocs ?? DEFAULT_TXN_DOCS;
  // A session's first transactions are small and grow ×4 up to the maximum: the first rows reach the
  // destination within a transaction's round trip of the first commit (the quickstart shows rows sooner),
  // and the later, large transactions keep the per-transaction cost (round trips, fsyncs) amortised.
  let txnDocs = opts.maxTxnDocs ?? Math.min(FIRST_TXN_DOCS, maxTxnDocs);
  const bindings: BindingPlan[] = (spec.bindings ?? []).map((b, index) => {
    const schema = b.collection.readSchema ?? b.collection.writeSchema ?? true;
    const plan: BindingPlan = {
      index,
      collection: b.collection.name,
      suffix: b.journalReadSuffix ?? `materialize/${name}/${(b.resourcePath ?? [String(index)]).map(encodeURIComponent).join('%2F')}`,
      reducer: createReducer(schema),
      lastWriteWins: isLastWriteWins(schema),
      selects: journalSelector(b),
    };
    const window = publicationWindow(b);
    if (window) plan.window = window;
    return plan;
  });
  // The driver decides loads by the binding's journal read suffix: give it the one the plane reads with.
  const driverSpec: MaterializationSpec = { ...spec, bindings: (spec.bindings ?? []).map((b, i) => ({ ...b, journalReadSuffix: bindings[i]!.suffix })) };
  let connectorState = (store.getState(connectorStateKey(name)) ?? {}) as JsonValue;
  const persistedMax = store.getState(maxKeysKey(name));
  const maxKeys = bindings.map((_, i) => {
    const v = Array.isArray(persistedMax) ? persistedMax[i] : undefined;
    return typeof v === 'string' ? Buffer.from(v, 'base64') : undefined;
  });
  const applyConnectorState = (s: ConnectorState | undefined) => {
    if (s?.updated === undefined) return undefined;
    connectorState = applyState(connectorState, s);
    opts.onState?.(s);
    return connectorState;
  };

  let sources: Record<string, { readThrough?: string | number }> = {};
  const cursors = new Map<string, Cursor>();
  const refreshCursors = () => {
    for (const b of bindings) {
      for (const j of store.journals(b.collection)) {
        const key = `${j.name};${b.suffix}`;
        if (cursors.has(key) || !b.selects(j)) continue;
        cursors.set(key, { binding: b.index, journal: j.name, key, offset: Number(sources[key]?.readThrough ?? 0) });
      }
    }
  };

  const callbacks: Callbacks = {
    onOpened: ({ checkpoint, authoritative }) => {
      sources = structuredClone((checkpoint.sources ?? {}) as Record<string, { readThrough?: string | number }>);
      opts.onOpened?.({ destinationCheckpoint: authoritative ? checkpoint : undefined });
    },
    onAcknowledged: (s) => {
      const next = applyConnectorState(s);
      if (next !== undefined) store.setState(connectorStateKey(name), next);
    },
    onFlushed: (s, keys) => {
      const next = applyConnectorState(s);
      if (next === undefined && keys === undefined) return;
      store.commit((tx) => {
        if (next !== undefined) tx.setState(connectorStateKey(name), next);
        if (keys !== undefined) tx.setState(maxKeysKey(name), keys.map((k) => k.toString('base64')));
      });
    },
    onStartedCommit: (checkpoint, s, stats) => {
      const afterCommit = applyConnectorState(s);
      store.commit((tx) => {
        tx.setState(checkpointKey(name), checkpoint);
        if (afterCommit !== undefined) tx.setState(connectorStateKey(name), afterCommit);
      });
      const perBinding = stats.perBinding.map((b, i) => ({ collection: bindings[i]!.collection, docsRead: b.docsRead, bytesRead: b.bytesRead, stored: b.stored }));
      opts.onTransaction?.({
        docsRead: perBinding.reduce((a, s) => a + s.docsRead, 0),
        bytesRead: perBinding.reduce((a, s) => a + s.bytesRead, 0),
        stored: perBinding.reduce((a, s) => a + s.stored, 0),
        perBinding,
      });
    },
  };
  const checkpoint = (store.getState(checkpointKey(name)) as RuntimeCheckpoint | undefined) ?? {};
  const readTransaction = async (): Promise<ChunkedTransaction | undefined> => {
    // Wait for documents (or end the session once caught up / aborted).
    while (true) {
      if (signal.aborted) return undefined;
      refreshCursors();
      const chunks: JournalChunk[] = [];
      const read: { cursor: Cursor; end: number }[] = [];
      // Share the transaction between sources, so no binding or partition starves another.
      let budget = txnDocs;
      let bytes = DEFAULT_TXN_BYTES;
      const share = Math.max(1000, Math.ceil(txnDocs / Math.max(1, cursors.size)));
      for (const c of cursors.values()) {
        if (budget <= 0 || bytes <= 0) break;
        const got = store.readLines(c.journal, c.offset, Math.min(share, budget), bytes);
        if (got.docs === 0) continue;
        chunks.push({ binding: c.binding, data: got.data, docs: got.docs });
        budget -= got.docs;
        const end = got.end;
        bytes -= end - c.offset;
        read.push({ cursor: c, end });
      }
      if (read.length > 0) {
        for (const { cursor, end } of read) cursor.offset = end;
        const next: Record<string, JsonValue> = { ...(sources as Record<string, JsonValue>) };
        for (const c of cursors.values()) next[c.key] = { readThrough: String(c.offset) };
        sources = next as typeof sources;
        txnDocs = Math.min(maxTxnDocs, txnDocs * 4);
        return { chunks, checkpoint: { sources: next, ackIntents: {} } };
      }
      if (opts.nextBatch) {
        if (await opts.nextBatch()) continue;
        return undefined;
      }
      if (opts.untilCaughtUp) return undefined;
      await store.waitForCommit(signal, 500);
    }
  };
  if ('inThread' in session) {
    await runInThread(session, {
      name, target: session.target, spec: driverSpec, version: opts.version, state: connectorState as JsonObject, checkpoint, maxKeys,
      ...(opts.jsonKeys === true ? { jsonKeys: true } : {}),
      bindings: bindings.map((b, i) => {
        const schema = (spec.bindings ?? [])[i]!.collection;
        return { ...(b.lastWriteWins ? {} : { reduceSchema: schema.readSchema ?? schema.writeSchema ?? true }), ...(b.window ? { window: b.window } : {}) };
      }),
    }, callbacks, readTransaction, (buffers) => store.recycle(buffers));
    return;
  }
  await runMaterializeDriver({
    name, spec: driverSpec, version: opts.version, session, state: connectorState as JsonObject, checkpoint, maxKeys,
    ...(opts.jsonKeys === true ? { jsonKeys: true } : {}),
    bindingOptions: (i) => {
      const b = bindings[i]!;
      return { ...(b.lastWriteWins ? {} : { reduce: (l: JsonValue, r: JsonValue) => b.reducer.reduce(l, r) }), ...(b.window ? { window: b.window } : {}) };
    },
    ...callbacks,
    nextTransaction: async () => {
      const txn = await readTransaction();
      return txn === undefined ? undefined : { chunks: driverChunks(txn.chunks), checkpoint: txn.checkpoint };
    },
  });
}

