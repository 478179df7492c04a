// The one host-side driver of the materialize protocol (flow-protocol.md §3.4), used by the plane's
// tasks, `sluice preview` and `sluice raw materialize` alike:
//
//   open → opened; per transaction: acknowledge → (combine the transaction's documents by key) → load*
//   → acknowledged → flush → loaded* → flushed → store* → startCommit → startedCommit.
//
// The next transaction's documents are read and combined while the connector stores and commits the
// previous one (stores and `startCommit` are written by a task of their own at the pipe's pace; the loads
// of the next are held until `acknowledge` has gone out, which follows `startedCommit` at once), and only
// `flush` waits for `acknowledged`, as Flow's runtime pipelines.
//
// Documents arrive as JSON text and are parsed once (parseDocument: integers beyond ±2^53 exact); a
// document that no reduction changed is stored as its own text. Keys are packed from that one parse.
// Load optimization as Flow's runtime: a binding remembers the largest key it ever stored (persisted
// by the caller with the flushed state, before any store); a key above it cannot exist, so it is not
// loaded and is stored with `exists: false` — unless the connector opened with
// `disableLoadOptimization`. Deletions (`_meta/op = "d"`) are stored with `delete: true`; the
// connector's hardDelete setting decides what that does.
import { ProtocolError } from '../errors.ts';
import { FULL_RANGE, parseDocument, stringifyDocument } from '../protocol/documents.ts';
import { pointerResolver } from '../protocol/json-pointer.ts';
import type { MaterializeRequest, MaterializeResponse } from '../protocol/materialize.ts';
import { createPacker, type Packer } from '../protocol/pack.ts';
import type { ConnectorState, JsonObject, JsonValue, MaterializationSpec, RuntimeCheckpoint } from '../protocol/specs.ts';
import { uuidTicks } from '../protocol/uuid.ts';
import { DOC_TEXT } from './connector-process.ts';

/** What a driver needs from a running connector. */
export interface DriverSession<Req, Res> {
  /** Writes one request (awaits backpressure). */
  send(request: Req): Promise<void>;
  /** Writes one serialised request line (ending with `\n`), coalesced with its neighbours. */
  sendLine(line: string): Promise<void>;
  /** The next response; undefined once the connector has exited cleanly. Rejects when it failed. */
  recv(): Promise<Res | undefined>;
  /**
   * The next response when it has been read already (its line arrived with earlier ones), else undefined:
   * then call recv(). Lets a driver take a chunk's responses without an await each.
   */
  recvBuffered?(): Res | undefined;
  /** Closes the connector's stdin and waits for its exit; rejects if it failed. */
  close(): Promise<void>;
  kill(): void;
  /** What the driver waits for next, named in an idle-timeout error (set by the driver before each wait). */
  awaiting?: string;
}

/** One source document of a transaction: its binding and its JSON text (one line of a journal). */
export interface SourceDocument {
  binding: number;
  text: string;
  /**
   * The UTF-8 bytes `text` was decoded from, data[start, end), when it came from bytes (the plane's journal
   * chunks): an entry then keeps this range until its store instead of the string (see Entry).
   */
  data?: Buffer;
  start?: number;
  end?: number;
}

/** A transaction's input: its documents (in order) and the runtime checkpoint once they are committed. */
export interface TransactionInput {
  docs: Iterable<SourceDocument>;
  checkpoint: RuntimeCheckpoint;
}

/** Reduces `rhs` onto `lhs` (lhs came first); inputs are not modified. */
export type ReduceFn = (lhs: JsonValue, rhs: JsonValue) => JsonValue;

export interface DriverBindingOptions {
  /** The collection's reduction, or undefined when it is last-write-wins at the root (the document is replaced). */
  reduce?: ReduceFn;
  /** Documents published outside this window (UUID clocks) are read past, not materialized. */
  window?: { uuidPtr: string; notBefore?: bigint; notAfter?: bigint };
}

export interface TransactionStats {
  perBinding: { docsRead: number; bytesRead: number; stored: number; loaded: number }[];
}

export interface MaterializeDriverOptions {
  /** Names the task in errors. */
  name: string;
  spec: MaterializationSpec;
  version: string;
  session: DriverSession<MaterializeRequest, MaterializeResponse>;
  /** The last committed connector state. */
  state: JsonObject;
  /** The caller's own committed checkpoint (used unless the connector returns one in `opened`). */
  checkpoint: RuntimeCheckpoint;
  /** Per binding (by index): the largest key ever stored, persisted; undefined when none was persisted. */
  maxKeys: (Buffer | undefined)[];
  bindingOptions?: (index: number) => DriverBindingOptions;
  /**
   * The next transaction, given the checkpoint the last one ended at; undefined ends the session
   * (gracefully: the pending commit is acknowledged, then stdin is closed).
   */
  nextTransaction: (from: RuntimeCheckpoint) => Promise<TransactionInput | undefined>;
  /** After `opened`, with the checkpoint the session resumes from. */
  onOpened?: (opened: { checkpoint: RuntimeCheckpoint; authoritative: boolean; disableLoadOptimization: boolean }) => void | Promise<void>;
  /** Every response as received (sluice raw prints them). */
  onResponse?: (response: MaterializeResponse) => void;
  /** `acknowledged.state` (non-transactional). */
  onAcknowledged?: (state: ConnectorState) => void | Promise<void>;
  /**
   * After `flushed`, before any store: persist the flushed state and, when they moved (else undefined),
   * every binding's largest key durably (a key stored after this may exist in the destination).
   */
  onFlushed?: (state: ConnectorState | undefined, maxKeys: Buffer[] | undefined) => void | Promise<void>;
  /** After `startedCommit`: persist the checkpoint with the connector's state, atomically. */
  onStartedCommit?: (checkpoint: RuntimeCheckpoint, state: ConnectorState | undefined, stats: TransactionStats) => void | Promise<void>;
}

/** A binding's max key when it is in the checkpoint but none was persisted: larger than any tuple (Flow: 0xff). */
export const MAX_KEY_UNKNOWN = Buffer.from([0xff]);

interface Entry {
  keyPacked: string;
  /**
   * The combined document, for a binding that reduces; undefined for a last-write-wins binding, whose entry
   * keeps only what its store needs (below): a parsed document held across the transaction's round trips
   * outlives V8's young generation and costs a full collection later.
   */
  value: JsonValue | undefined;
  /** The document's own text, while no reduction changed it (undefined when `src` holds its bytes). */
  text: string | undefined;
  /**
   * Last-write-wins: the document's UTF-8 bytes src[start, end) (a journal chunk) and its packed values'
   * bytes in the transaction's arena at [valuesAt, valuesEnd), taken at combine time, with whether it is a
   * deletion. Bytes, not strings: a transaction's entries live until its stores are sent, and strings held
   * that long were copied by every young-generation collection and promoted (the materialization thread's
   * GC was its largest cost, issue 16).
   */
  src: Buffer | undefined;
  start: number;
  end: number;
  valuesAt: number;
  valuesEnd: number;
  deletion?: boolean;
  loaded: boolean;
}

/** Packed values of a transaction's entries, back to back in one buffer outside the JS heap (reused). */
class ValuesArena {
  buf: Buffer;
  len = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  /** Appends `bytes`; returns where they start. */
  add(bytes: Uint8Array): number {
    if (this.len + bytes.length > this.buf.length) {
      const next = Buffer.allocUnsafeSlow(Math.max(2 * this.buf.length, this.len + bytes.length));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    const at = this.len;
    this.buf.set(bytes, at);
    this.len += bytes.length;
    return at;
  }
}

interface Plan {
  index: number;
  packer: Packer;
  delta: boolean;
  hasDocument: boolean;
  reduce: ReduceFn | undefined;
  window: DriverBindingOptions['window'];
  uuidAt: ((doc: JsonValue | undefined) => JsonValue | undefined) | undefined;
  prefix: string;
}

/** True when a document is a deletion (Flow: `_meta/op` is "d"). */
export function isDeletion(doc: JsonValue): boolean {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return false;
  const meta = doc['_meta'];
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta) && meta['op'] === 'd';
}

function inWindow(plan: Plan, doc: JsonValue): boolean {
  const w = plan.window!;
  const uuid = plan.uuidAt!(doc);
  const ticks = typeof uuid === 'string' ? uuidTicks(uuid) : undefined;
  if (ticks === undefined) return true;
  return !((w.notBefore !== undefined && ticks < w.notBefore) || (w.notAfter !== undefined && ticks > w.notAfter));
}

function variantOf(res: object): string {
  return Object.keys(res)[0] ?? '?';
}

/** Runs one materialize session until nextTransaction ends it (resolves) or something fails (rejects). */
export async function runMaterializeDriver(o: MaterializeDriverOptions): Promise<void> {
  const { session, name } = o;
  const specBindings = o.spec.bindings ?? [];
  const plans: Plan[] = specBindings.map((b, index) => {
    const extra = o.bindingOptions?.(index) ?? {};
    return {
      index,
      packer: createPacker(b.collection, b.fieldSelection ?? {}),
      delta: b.deltaUpdates === true,
      hasDocument: (b.fieldSelection?.document ?? '') !== '',
      reduce: extra.reduce,
      window: extra.window,
      uuidAt: extra.window ? pointerResolver(extra.window.uuidPtr) : undefined,
      prefix: index === 0 ? '' : `"binding":${index},`,
    };
  });
  const recv = async (awaiting: string): Promise<MaterializeResponse> => {
    session.awaiting = awaiting;
    const res = session.recvBuffered?.() ?? await session.recv();
    if (res === undefined) throw new ProtocolError(`${name}: connector exited while the runtime expected ${awaiting}`);
    o.onResponse?.(res);
    return res;
  };
  const expect = async <V extends 'opened' | 'acknowledged' | 'startedCommit'>(variant: V): Promise<JsonObject> => {
    const res = await recv(`"${variant}"`);
    const got = variantOf(res);
    if (got !== variant) throw new ProtocolError(`${name}: connector sent "${got}" while the runtime expected "${variant}"`);
    return ((res as unknown as Record<string, JsonObject>)[variant]) ?? {};
  };

  await session.send({ open: { materialization: o.spec, version: o.version, range: { ...FULL_RANGE }, state: o.state } });
  const opened = await expect('opened');
  const authoritative = opened['runtimeCheckpoint'] as RuntimeCheckpoint | undefined;
  const disableLoadOptimization = opened['disableLoadOptimization'] === true;
  let checkpoint: RuntimeCheckpoint = structuredClone(authoritative ?? o.checkpoint);
  // A binding without a persisted max key: if it was read before (its journals are in the checkpoint)
  // keys may exist anywhere, so everything is loaded; a new binding has stored nothing.
  const readSuffixes = new Set(Object.keys(checkpoint.sources ?? {}).map((k) => k.split(';')[1] ?? ''));
  const maxKeys: Buffer[] = specBindings.map((b, i) => {
    const persisted = o.maxKeys[i];
    if (persisted !== undefined) return persisted;
    return b.journalReadSuffix !== undefined && readSuffixes.has(b.journalReadSuffix) ? MAX_KEY_UNKNOWN : Buffer.alloc(0);
  });
  await o.onOpened?.({ checkpoint, authoritative: authoritative !== undefined, disableLoadOptimization });

  /** A transaction combined by key: its entries per binding, stats, the keys above each max, and its load lines. */
  interface Combined {
    input: TransactionInput;
    combined: Map<string, Entry>[];
    stats: TransactionStats;
    nextMax: (Buffer | undefined)[];
    /** Load lines not yet sent (combined before `acknowledge` went out), in order. */
    loads: string[];
    /** The packed values of its last-write-wins entries. */
    arena: ValuesArena;
  }
  // Arenas of transactions whose stores were sent, for the next ones (fresh memory costs a page fault per
  // 4 KiB on first touch; two transactions are in flight at most).
  const arenas: ValuesArena[] = [];
  // Combine by key (loads are sent as keys are first seen — the connector stages them — once `acknowledge`
  // has gone out; before that they are kept and sent after it).
  const combine = async (input: TransactionInput, sendLoads: boolean): Promise<Combined> => {
    const combined = plans.map(() => new Map<string, Entry>());
    const stats: TransactionStats = { perBinding: plans.map(() => ({ docsRead: 0, bytesRead: 0, stored: 0, loaded: 0 })) };
    const nextMax: (Buffer | undefined)[] = plans.map(() => undefined);
    const loads: string[] = [];
    const arena = arenas.pop() ?? new ValuesArena(1024 * 1024);
    arena.len = 0;
    let n = 0;
    for (const d of input.docs) {
      // Let the event loop run now and then: the previous transaction's stores may still be on their way
      // to the connector (they are written without waiting for the pipe, see below).
      if ((++n & 127) === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const plan = plans[d.binding];
      if (plan === undefined) throw new ProtocolError(`${name}: a source document names binding ${d.binding}, but the materialization has ${plans.length}`);
      const value = parseDocument(d.text);
      if (plan.window !== undefined && !inWindow(plan, value)) continue;
      const s = stats.perBinding[d.binding]!;
      s.docsRead++;
      s.bytesRead += d.text.length + 1;
      const keyBytes = plan.packer.keyBytes(value);
      const keyPacked = keyBytes.toString('base64');
      const map = combined[d.binding]!;
      const prev = map.get(keyPacked);
      if (prev !== undefined) {
        if (plan.reduce === undefined) {
          prev.text = d.data === undefined ? d.text : undefined;
          prev.src = d.data;
          prev.start = d.start ?? 0;
          prev.end = d.end ?? 0;
          const packed = plan.packer.valuesView(value);
          prev.valuesAt = arena.add(packed);
          prev.valuesEnd = prev.valuesAt + packed.length;
          prev.deletion = isDeletion(value);
        } else {
          prev.value = plan.reduce(prev.value!, value);
          prev.text = undefined;
        }
        continue;
      }
      if (plan.reduce === undefined) {
        const packed = plan.packer.valuesView(value);
        const valuesAt = arena.add(packed);
        map.set(keyPacked, {
          keyPacked, value: undefined, text: d.data === undefined ? d.text : undefined, src: d.data, start: d.start ?? 0, end: d.end ?? 0,
          valuesAt, valuesEnd: valuesAt + packed.length, deletion: isDeletion(value), loaded: false,
        });
      } else {
        map.set(keyPacked, { keyPacked, value, text: d.text, src: undefined, start: 0, end: 0, valuesAt: -1, valuesEnd: -1, loaded: false });
      }
      // Load optimization: a key above the largest ever stored cannot exist.
      const max = maxKeys[d.binding]!;
      let load = !plan.delta;
      if (Buffer.compare(keyBytes, max) > 0) {
        const nm = nextMax[d.binding];
        if (nm === undefined || Buffer.compare(keyBytes, nm) > 0) nextMax[d.binding] = keyBytes;
        if (!disableLoadOptimization) load = false;
      }
      if (!load) continue;
      const line = `{"load":{${plan.prefix}"keyPacked":"${keyPacked}"}}\n`;
      if (sendLoads) await session.sendLine(line);
      else loads.push(line);
    }
    return { input, combined, stats, nextMax, loads, arena };
  };
  /** Sends the load lines a transaction combined before `acknowledge` went out. */
  const sendHeldLoads = async (t: Combined): Promise<void> => {
    for (const line of t.loads) await session.sendLine(line);
    t.loads = [];
  };

  await session.send({ acknowledge: {} });
  const first = await o.nextTransaction(checkpoint);
  let txn = first === undefined ? undefined : await combine(first, true);
  while (true) {
    if (txn === undefined) {
      const acked = await expect('acknowledged');
      if (acked['state'] !== undefined) await o.onAcknowledged?.(acked['state'] as ConnectorState);
      await session.close();
      return;
    }
    const { input, combined, stats, nextMax, arena } = txn;

    const acked = await expect('acknowledged');
    if (acked['state'] !== undefined) await o.onAcknowledged?.(acked['state'] as ConnectorState);
    await session.send({ flush: {} });
    let flushedState: ConnectorState | undefined;
    while (true) {
      const res = await recv('"loaded" or "flushed"');
      if ('loaded' in res) {
        const index = res.loaded.binding ?? 0;
        const plan = plans[index];
        if (plan === undefined) throw new ProtocolError(`${name}: connector sent "loaded" for binding ${index}, which does not exist`);
        const text = (res.loaded as { [DOC_TEXT]?: string })[DOC_TEXT];
        const doc = text !== undefined ? parseDocument(text) : (res.loaded.doc as JsonValue);
        const keyPacked = plan.packer.key(doc);
        const entry = combined[index]!.get(keyPacked);
        if (entry === undefined) throw new ProtocolError(`${name}: connector sent "loaded" for a key of binding ${index} that was not loaded`);
        if (entry.loaded) throw new ProtocolError(`${name}: connector sent "loaded" twice for one key of binding ${index}`);
        entry.loaded = true;
        stats.perBinding[index]!.loaded++;
        if (plan.reduce !== undefined) {
          entry.value = plan.reduce(doc, entry.value!);
          entry.text = undefined;
        }
        continue;
      }
      if ('flushed' in res) {
        flushedState = res.flushed.state;
        break;
      }
      throw new ProtocolError(`${name}: connector sent "${variantOf(res)}" while the runtime expected "loaded" or "flushed"`);
    }
    let moved = false;
    for (let i = 0; i < plans.length; i++) {
      if (nextMax[i] === undefined) continue;
      maxKeys[i] = nextMax[i]!;
      moved = true;
    }
    await o.onFlushed?.(flushedState, moved ? maxKeys : undefined);

    // Stores and startCommit are written by a task of their own, at the pace the pipe takes them, while the
    // next transaction is combined below (it yields every 128 documents): on two cores the connector's stores
    // and the plane's combine overlap instead of alternating, and what waits for the pipe stays bounded.
    checkpoint = input.checkpoint;
    const commitAt = checkpoint;
    const startSent = (async () => {
      for (const plan of plans) {
        const s = stats.perBinding[plan.index]!;
        for (const e of combined[plan.index]!.values()) {
          const valuesPacked = e.valuesAt >= 0 ? arena.buf.toString('base64', e.valuesAt, e.valuesEnd) : plan.packer.values(e.value!);
          let line = `{"store":{${plan.prefix}"keyPacked":"${e.keyPacked}","valuesPacked":"${valuesPacked}"`;
          if (plan.hasDocument) line += `,"doc":${e.text ?? (e.src !== undefined ? e.src.toString('utf8', e.start, e.end) : stringifyDocument(e.value!))}`;
          if (e.loaded) line += ',"exists":true';
          if (e.deletion ?? isDeletion(e.value!)) line += ',"delete":true';
          await session.sendLine(`${line}}}\n`);
          s.stored++;
        }
      }
      await session.send({ startCommit: { runtimeCheckpoint: commitAt } });
      if (arenas.length < 2) arenas.push(arena);
    })();
    startSent.catch(() => undefined);
    // While the connector commits, the next transaction is read and combined (its loads are held until
    // `acknowledge` has gone out, as the protocol orders them). nextTransaction may wait for documents:
    // `startedCommit` is then handled first, so a commit is never persisted late for want of input.
    const nextInput = o.nextTransaction(checkpoint);
    const startedP = expect('startedCommit');
    nextInput.catch(() => undefined);
    startedP.catch(() => undefined);
    let next: Combined | undefined;
    let nextDone = false;
    const first = await Promise.race([nextInput.then(() => 'next' as const), startedP.then(() => 'started' as const)]);
    if (first === 'next') {
      const got = await nextInput;
      nextDone = true;
      next = got === undefined ? undefined : await combine(got, false);
    }
    await startSent;
    const started = await startedP;
    await o.onStartedCommit?.(checkpoint, started['state'] as ConnectorState | undefined, stats);
    await session.send({ acknowledge: {} });
    if (nextDone) {
      if (next !== undefined) await sendHeldLoads(next);
    } else {
      const got = await nextInput;
      next = got === undefined ? undefined : await combine(got, true);
    }
    txn = next;
  }
}
