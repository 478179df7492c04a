// One session of a materialization task: open the connector, then per transaction
//   acknowledge → acknowledged → (read source journals from the checkpoint, apply partition
//   selectors, reduce by key) → load* → flush → loaded*/flushed → store* → startCommit → startedCommit
// and persist the runtime checkpoint (+ connector state) in one journal-store commit.
//
// Exactly once: a connector that keeps the checkpoint in its destination (returned in
// `opened.runtimeCheckpoint`) is authoritative and its checkpoint is used; otherwise the plane's own
// checkpoint, committed with the connector's `startedCommit.state`, is used (recovery-log pattern).
import {
  ProtocolError, type ConnectorState, type JsonObject, type JsonValue, type MaterializationSpec,
  type MaterializeRequest, type MaterializeResponse, type RuntimeCheckpoint,
} from '@sluice/runtime';
import { createReducer, type Reducer } from '../catalog/reduce.ts';
import type { JournalInfo, JournalStore } from '../journals/store.ts';
import { encodePartitionValue } from '../journals/names.ts';
import { resolvePointer } from '../journals/pointer.ts';
import { timestampTicks, uuidTicks } from '../journals/uuid.ts';
import { createPacker, type Packer } from './pack.ts';
import type { ConnectorSession } from './session.ts';
import { applyStateUpdate as applyState } from '@sluice/runtime';

export const FULL_RANGE = { keyEnd: 4294967295, rClockEnd: 4294967295 };
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
  session: ConnectorSession<MaterializeRequest, MaterializeResponse>;
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
  onOpened?: () => void;
  onTransaction?: (info: MaterializeTransactionInfo) => void;
  /** Connector state updates as they are committed (preview's --output-state). */
  onState?: (update: ConnectorState) => void;
}

interface Cursor { binding: number; journal: string; key: string; offset: number }

interface BindingPlan {
  index: number;
  collection: string;
  suffix: string;
  delta: boolean;
  reducer: Reducer;
  packer: Packer;
  keyPtrs: string[];
  hasDocument: boolean;
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

async function expect<V extends string>(session: ConnectorSession<MaterializeRequest, MaterializeResponse>, variant: V, name: string): Promise<JsonObject> {
  const res = await session.recv();
  if (res === undefined) throw new ProtocolError(`${name}: connector exited while the runtime expected "${variant}"`);
  const [got] = Object.keys(res);
  if (got !== variant) throw new ProtocolError(`${name}: connector sent "${String(got)}" while the runtime expected "${variant}"`);
  return ((res as unknown as Record<string, JsonObject>)[variant]) ?? {};
}

export async function runMaterializeSession(opts: MaterializeSessionOptions): Promise<void> {
  const { name, spec, store, session, signal } = opts;
  const maxTxnDocs = opts.maxTxnDocs ?? 5000;
  const bindings: BindingPlan[] = (spec.bindings ?? []).map((b, index) => {
    const selection = b.fieldSelection ?? {};
    const plan: BindingPlan = {
      index,
      collection: b.collection.name,
      suffix: b.journalReadSuffix ?? `materialize/${name}/${(b.resourcePath ?? [String(index)]).map(encodeURIComponent).join('%2F')}`,
      delta: b.deltaUpdates === true,
      reducer: createReducer(b.collection.readSchema ?? b.collection.writeSchema ?? true),
      packer: createPacker(b.collection, selection),
      keyPtrs: b.collection.key ?? [],
      hasDocument: selection.document !== undefined,
      selects: journalSelector(b),
    };
    const window = publicationWindow(b);
    if (window) plan.window = window;
    return plan;
  });

  let connectorState = (store.getState(connectorStateKey(name)) ?? {}) as JsonValue;
  await session.send({ open: { materialization: spec, version: opts.version, range: FULL_RANGE, state: connectorState as JsonObject } });
  const opened = await expect(session, 'opened', name);
  const authoritative = opened.runtimeCheckpoint as RuntimeCheckpoint | undefined;
  const checkpoint: RuntimeCheckpoint = structuredClone(authoritative ?? (store.getState(checkpointKey(name)) as RuntimeCheckpoint | undefined) ?? {});
  const sources = ((checkpoint.sources ?? {}) as Record<string, { readThrough?: string | number }>);
  opts.onOpened?.();

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
  const setState = (update: JsonObject | undefined) => {
    const s = update as ConnectorState | undefined;
    if (s?.updated === undefined) return undefined;
    connectorState = applyState(connectorState, s);
    opts.onState?.(s);
    return connectorState;
  };

  while (true) {
    await session.send({ acknowledge: {} });
    const acked = await expect(session, 'acknowledged', name);
    const afterAck = setState(acked.state as JsonObject | undefined);
    if (afterAck !== undefined) store.setState(connectorStateKey(name), afterAck);

    // Wait for documents (or end the session once caught up / aborted).
    let batch: { cursor: Cursor; docs: ReturnType<JournalStore['read']> }[] = [];
    while (true) {
      if (signal.aborted) return await session.close();
      refreshCursors();
      batch = [];
      // Share the transaction between sources, so no binding or partition starves another.
      let budget = maxTxnDocs;
      const share = Math.max(100, Math.ceil(maxTxnDocs / Math.max(1, cursors.size)));
      for (const c of cursors.values()) {
        if (budget <= 0) break;
        const docs = store.read(c.journal, c.offset, Math.min(share, budget));
        if (docs.length > 0) {
          batch.push({ cursor: c, docs });
          budget -= docs.length;
        }
      }
      if (batch.length > 0) break;
      if (opts.nextBatch) {
        if (await opts.nextBatch()) continue;
        return await session.close();
      }
      if (opts.untilCaughtUp) return await session.close();
      await store.waitForCommit(signal, 500);
    }

    // Reduce by key per binding.
    const combined = bindings.map(() => new Map<string, JsonValue>());
    const stats = bindings.map((b) => ({ collection: b.collection, docsRead: 0, bytesRead: 0, stored: 0 }));
    for (const { cursor, docs } of batch) {
      const b = bindings[cursor.binding]!;
      const m = combined[cursor.binding]!;
      for (const d of docs) {
        const doc = JSON.parse(d.json) as JsonValue;
        // Outside the binding's notBefore/notAfter window: read past (the checkpoint advances), not materialized.
        if (b.window && !inWindow(b.window, doc)) continue;
        const k = b.packer.key(doc);
        const prev = m.get(k);
        m.set(k, prev === undefined ? doc : b.reducer.reduce(prev, doc));
        stats[cursor.binding]!.docsRead++;
        stats[cursor.binding]!.bytesRead += d.end - d.begin;
      }
    }

    // Load existing documents of standard-updates bindings.
    const loaded = bindings.map(() => new Map<string, JsonValue>());
    for (const b of bindings) {
      if (b.delta) continue;
      for (const k of combined[b.index]!.keys()) await session.send({ load: b.index === 0 ? { keyPacked: k } : { binding: b.index, keyPacked: k } });
    }
    await session.send({ flush: {} });
    while (true) {
      const res = await session.recv();
      if (res === undefined) throw new ProtocolError(`${name}: connector exited while the runtime expected "loaded" or "flushed"`);
      if ('loaded' in res) {
        const index = res.loaded.binding ?? 0;
        const b = bindings[index];
        if (b === undefined) throw new ProtocolError(`${name}: connector sent "loaded" for binding ${index}, which does not exist`);
        const k = b.packer.key(res.loaded.doc);
        if (!combined[index]!.has(k)) throw new ProtocolError(`${name}: connector sent "loaded" for a key of binding ${index} that was not loaded`);
        loaded[index]!.set(k, res.loaded.doc);
        continue;
      }
      if ('flushed' in res) {
        const s = setState(res.flushed.state as JsonObject | undefined);
        if (s !== undefined) store.setState(connectorStateKey(name), s);
        break;
      }
      throw new ProtocolError(`${name}: connector sent "${Object.keys(res)[0]}" while the runtime expected "loaded" or "flushed"`);
    }

    // Store reduced documents.
    for (const b of bindings) {
      for (const [k, doc] of combined[b.index]!) {
        const prior = loaded[b.index]!.get(k);
        const full = prior === undefined ? doc : b.reducer.reduce(prior, doc);
        const store: Record<string, JsonValue> = { keyPacked: k, valuesPacked: b.packer.values(full) };
        if (b.index !== 0) store.binding = b.index;
        if (b.hasDocument) store.doc = full;
        if (prior !== undefined) store.exists = true;
        await session.send({ store } as MaterializeRequest);
        stats[b.index]!.stored++;
      }
    }

    for (const { cursor, docs } of batch) cursor.offset = docs[docs.length - 1]!.end;
    const nextSources: Record<string, JsonValue> = { ...(sources as Record<string, JsonValue>) };
    for (const c of cursors.values()) nextSources[c.key] = { readThrough: String(c.offset) };
    Object.assign(sources, nextSources);
    const runtimeCheckpoint: RuntimeCheckpoint = { sources: nextSources, ackIntents: {} };
    await session.send({ startCommit: { runtimeCheckpoint } });
    const started = await expect(session, 'startedCommit', name);
    const afterCommit = setState(started.state as JsonObject | undefined);
    store.commit((tx) => {
      tx.setState(checkpointKey(name), runtimeCheckpoint);
      if (afterCommit !== undefined) tx.setState(connectorStateKey(name), afterCommit);
    });
    opts.onTransaction?.({
      docsRead: stats.reduce((a, s) => a + s.docsRead, 0),
      bytesRead: stats.reduce((a, s) => a + s.bytesRead, 0),
      stored: stats.reduce((a, s) => a + s.stored, 0),
      perBinding: stats,
    });
  }
}
