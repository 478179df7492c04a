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
// `disableLoadOptimization`. A delta-updates binding never loads; its largest key is kept as unknown
// (MAX_KEY_UNKNOWN) once it stored anything. Deletions (`_meta/op = "d"`) are stored with `delete: true`; the
// connector's hardDelete setting decides what that does.
import { ProtocolError } from '../errors.ts';
import { FULL_RANGE, parseDocument, stringifyDocument } from '../protocol/documents.ts';
import { pointerResolver } from '../protocol/json-pointer.ts';
import type { MaterializeRequest, MaterializeResponse } from '../protocol/materialize.ts';
import { createPacker, type Packer } from '../protocol/pack.ts';
import { createBytePacker, type BytePacker } from '../protocol/pack-bytes.ts';
import type { ConnectorState, JsonObject, JsonValue, MaterializationSpec, RuntimeCheckpoint } from '../protocol/specs.ts';
import { uuidTicks } from '../protocol/uuid.ts';
import { DOC_TEXT } from './connector-process.ts';
import { Arena, base64Into, base64Length, CombineTable, DELETION, LOADED, REDUCED } from './combine-table.ts';

/** What a driver needs from a running connector. */
export interface DriverSession<Req, Res> {
  /** Writes one request (awaits backpressure). */
  send(request: Req): Promise<void>;
  /** Writes one serialised request line (ending with `\n`), coalesced with its neighbours. */
  sendLine(line: string): Promise<void>;
  /**
   * Writes serialised request lines as UTF-8 bytes (each ending with `\n`), after any lines sendLine
   * buffered. The bytes are the session's until `written` is called; then the caller may reuse them.
   * Optional: without it the driver decodes its lines and calls sendLine.
   */
  sendLines?(bytes: Uint8Array, written: (err?: Error | null) => void): Promise<void>;
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
  /** The document's text; may be left out when `data` holds its bytes. */
  text?: string;
  /**
   * The document's UTF-8 bytes, data[start, end), when it came as bytes (the plane's journal chunks):
   * they are packed from (pack-bytes.ts) and stored as they are, and decoded only for the parse path.
   */
  data?: Buffer;
  start?: number;
  end?: number;
}

/** A transaction's input: its documents (in order) and the runtime checkpoint once they are committed. */
export interface TransactionInput {
  /** The documents, unless `chunks` holds them. */
  docs?: Iterable<SourceDocument>;
  /** Or: the documents as whole lines (each ending with `\n`) of buffers, in order (the plane's journal chunks). */
  chunks?: { binding: number; data: Buffer }[];
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
  /**
   * Send `load`/`store` keys and values as JSON arrays (`key`, `values`: Flow's key_json/values_json) built from
   * slices of the documents' bytes, instead of packed tuples (`keyPacked`, `valuesPacked`). Only for connectors
   * whose runtime reads that form exactly as it reads the packed one (this runtime's serveMaterialize: the
   * plane's built-in connectors); Flow's own runtime sends the packed form, and the upstream connectors read only
   * it. Keys are still packed internally (combining and the load optimization compare tuple bytes).
   */
  jsonKeys?: boolean;
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

function isMaxKeyUnknown(key: Buffer): boolean {
  return key.length === 1 && key[0] === 0xff;
}

/** Store lines built as UTF-8 bytes, sent ~64 KiB at a time (no string per line to build, join and encode). */
class LineOut {
  buf: Buffer;
  len = 0;
  readonly #session: DriverSession<MaterializeRequest, MaterializeResponse>;
  /** Buffers the pipe has written, for the next batches. */
  readonly #spare: Buffer[] = [];

  constructor(session: DriverSession<MaterializeRequest, MaterializeResponse>) {
    this.#session = session;
    this.buf = Buffer.allocUnsafeSlow(LINE_BATCH + 4096);
  }

  /** Makes room for n more bytes. */
  ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(2 * this.buf.length, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  ascii(text: string): void {
    this.ensure(text.length);
    const b = this.buf;
    let at = this.len;
    for (let i = 0; i < text.length; i++) b[at++] = text.charCodeAt(i);
    this.len = at;
  }

  utf8(text: string): void {
    this.ensure(3 * text.length);
    this.len += this.buf.write(text, this.len, 'utf8');
  }

  bytes(src: Buffer, start: number, end: number): void {
    const n = end - start;
    this.ensure(n);
    if (n > 64) {
      this.len += src.copy(this.buf, this.len, start, end);
      return;
    }
    // A short slice (a key's or values' JSON): copied by a loop, Buffer#copy's argument handling costs more.
    const b = this.buf;
    let at = this.len;
    for (let i = start; i < end; i++) b[at++] = src[i]!;
    this.len = at;
  }

  base64(src: Uint8Array, start: number, end: number): void {
    this.ensure(base64Length(end - start));
    this.len = base64Into(src, start, end, this.buf, this.len);
  }

  /** Sends what was built, if any; resolves when the pipe has room again. */
  flush(): Promise<void> {
    if (this.len === 0) return Promise.resolve();
    const s = this.#session;
    if (s.sendLines === undefined) {
      const line = this.buf.toString('utf8', 0, this.len);
      this.len = 0;
      return s.sendLine(line);
    }
    const sent = this.buf;
    const bytes = sent.subarray(0, this.len);
    const spare = this.#spare;
    this.buf = spare.pop() ?? Buffer.allocUnsafeSlow(LINE_BATCH + 4096);
    this.len = 0;
    return s.sendLines(bytes, (err) => {
      if (!err && spare.length < 4 && sent.length === LINE_BATCH + 4096) spare.push(sent);
    });
  }
}

/** Store lines are handed to the connector's pipe in batches of about this many bytes. */
const LINE_BATCH = 64 * 1024;

interface Plan {
  index: number;
  packer: Packer;
  /** Packs from the document's bytes: a last-write-wins binding without a window (else the document is parsed). */
  bytes: BytePacker | undefined;
  delta: boolean;
  hasDocument: boolean;
  reduce: ReduceFn | undefined;
  window: DriverBindingOptions['window'];
  uuidAt: ((doc: JsonValue | undefined) => JsonValue | undefined) | undefined;
  /** A load line up to its key: `{"load":{"binding":N,"keyPacked":"` (JSON form: `…"key":`). */
  loadHead: string;
  /** A store line up to its key, as loadHead. */
  storeHead: string;
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
  const json = o.jsonKeys === true;
  const plans: Plan[] = specBindings.map((b, index) => {
    const extra = o.bindingOptions?.(index) ?? {};
    const bindingMember = index === 0 ? '' : `"binding":${index},`;
    const keyMember = json ? '"key":' : '"keyPacked":"';
    return {
      index,
      packer: createPacker(b.collection, b.fieldSelection ?? {}),
      bytes: extra.reduce === undefined && extra.window === undefined ? createBytePacker(b.collection, b.fieldSelection ?? {}) : undefined,
      delta: b.deltaUpdates === true,
      hasDocument: (b.fieldSelection?.document ?? '') !== '',
      reduce: extra.reduce,
      window: extra.window,
      uuidAt: extra.window ? pointerResolver(extra.window.uuidPtr) : undefined,
      loadHead: `{"load":{${bindingMember}${keyMember}`,
      storeHead: `{"store":{${bindingMember}${keyMember}`,
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
    /** Per binding, over one arena (keys and last-write-wins values). */
    tables: CombineTable[];
    /** The journal chunks its entries' document bytes are in (CombineTable.src indexes them). */
    srcs: Buffer[];
    stats: TransactionStats;
    /** Per binding: the entry with the largest key above the binding's max, or -1. */
    nextMax: number[];
    /** Loads not yet sent (combined before `acknowledge` went out), in order: binding and entry, in pairs. */
    loads: number[];
  }
  // Tables (and their arena) of transactions whose stores were sent, for the next ones (fresh memory costs
  // a page fault per 4 KiB on first touch; two transactions are in flight at most).
  const spareTables: CombineTable[][] = [];
  const out = new LineOut(session);
  // Load lines go through their own buffer: a transaction's loads are written while the previous one's stores
  // may still be on their way (out); both are flushed before the request that must follow them.
  const loadsOut = new LineOut(session);
  // Combine by key (loads are sent as keys are first seen — the connector stages them — once `acknowledge`
  // has gone out; before that they are kept and sent after it).
  const combine = async (input: TransactionInput, sendLoads: boolean): Promise<Combined> => {
    let tables = spareTables.pop();
    if (tables === undefined) {
      const arena = new Arena(1024 * 1024);
      tables = plans.map(() => new CombineTable(arena));
    } else {
      if (tables.length > 0) tables[0]!.arena.len = 0;
      for (const t of tables) t.reset();
    }
    const arena = tables[0]?.arena;
    const srcs: Buffer[] = [];
    let lastData: Buffer | undefined;
    let src = -1;
    const stats: TransactionStats = { perBinding: plans.map(() => ({ docsRead: 0, bytesRead: 0, stored: 0, loaded: 0 })) };
    const nextMax = plans.map(() => -1);
    const loads: number[] = [];
    /** Combines one document (its bytes data[start, end), or its text). */
    const add = (binding: number, data: Buffer | undefined, start: number, end: number, docText: string | undefined): void => {
      const plan = plans[binding];
      if (plan === undefined) throw new ProtocolError(`${name}: a source document names binding ${binding}, but the materialization has ${plans.length}`);
      const table = tables[binding]!;
      if (data !== undefined && data !== lastData) {
        lastData = data;
        src = srcs.length;
        srcs.push(data);
      }
      const bp = plan.bytes;
      let value: JsonValue | undefined;
      let text: string | undefined;
      let e: number;
      let isNew = false;
      const valuesAt = arena!.len;
      if (bp !== undefined && data !== undefined && (json ? bp.jsonInto(data, start, end, arena!) : bp.packInto(data, start, end, arena!))) {
        // The fast path: key and values packed (or their JSON written) from the document's bytes, straight into the arena.
        const valuesEnd = arena!.len;
        e = table.find(bp.key.buf, bp.key.len);
        if (e < 0) {
          e = table.insert(bp.key.buf, bp.key.len);
          isNew = true;
        }
        table.valuesAt[e] = valuesAt;
        table.valuesEnd[e] = valuesEnd;
        if (json) table.keyJsonEnd[e] = valuesAt + bp.jsonKeyLen;
        table.flags[e] = (table.flags[e]! & ~DELETION) | (bp.deletion ? DELETION : 0);
        table.src[e] = src;
        table.start[e] = start;
        table.end[e] = end;
        table.texts[e] = undefined;
      } else {
        arena!.len = valuesAt;
        text = docText ?? data?.toString('utf8', start, end);
        if (text === undefined) throw new ProtocolError(`${name}: a source document of binding ${binding} has neither text nor bytes`);
        value = parseDocument(text);
        if (plan.window !== undefined && !inWindow(plan, value)) return;
        const k = plan.packer.keyView(value);
        e = table.find(k, k.length);
        if (e < 0) {
          e = table.insert(k, k.length);
          isNew = true;
        }
        if (plan.reduce === undefined) {
          if (json) {
            table.valuesAt[e] = arena!.len;
            arena!.pushUtf8(plan.packer.keyJson(value));
            table.keyJsonEnd[e] = arena!.len;
            arena!.pushUtf8(plan.packer.valuesJson(value));
          } else {
            const packed = plan.packer.valuesView(value);
            table.valuesAt[e] = arena!.add(packed, 0, packed.length);
          }
          table.valuesEnd[e] = arena!.len;
          table.flags[e] = (table.flags[e]! & ~DELETION) | (isDeletion(value) ? DELETION : 0);
          table.src[e] = data !== undefined ? src : -1;
          table.start[e] = start;
          table.end[e] = end;
          table.texts[e] = data !== undefined ? undefined : text;
        } else if (isNew) {
          if (json) {
            // The key's JSON for its load and store (the values are written from the combined document).
            table.valuesAt[e] = arena!.len;
            arena!.pushUtf8(plan.packer.keyJson(value));
            table.keyJsonEnd[e] = table.valuesEnd[e] = arena!.len;
          }
          table.docs[e] = value;
          table.src[e] = data !== undefined ? src : -1;
          table.start[e] = start;
          table.end[e] = end;
          table.texts[e] = data !== undefined ? undefined : text;
        } else {
          table.docs[e] = plan.reduce(table.docs[e]!, value);
          table.flags[e] = table.flags[e]! | REDUCED;
          table.texts[e] = undefined;
        }
      }
      const s = stats.perBinding[binding]!;
      s.docsRead++;
      s.bytesRead += (data !== undefined ? end - start : (text ?? '').length) + 1;
      // A delta-updates binding never loads: no largest key to track (see the flush below).
      if (!isNew || plan.delta) return;
      // Load optimization: a key above the largest ever stored cannot exist.
      let load = true;
      if (table.compareKey(e, maxKeys[binding]!) > 0) {
        const nm = nextMax[binding]!;
        if (nm < 0 || table.compareKeys(e, nm) > 0) nextMax[binding] = e;
        if (!disableLoadOptimization) load = false;
      }
      if (!load) return;
      if (sendLoads) writeLoad(binding, table, e);
      else loads.push(binding, e);
    };
    let n = 0;
    // Let the event loop run now and then: the previous transaction's stores may still be on their way
    // to the connector (they are written without waiting for the pipe, see below).
    const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
    if (input.chunks !== undefined) {
      // Whole lines of journal chunks, read here: no object per document.
      for (const c of input.chunks) {
        const data = c.data;
        let i = 0;
        while (i < data.length) {
          const nl = data.indexOf(10, i);
          if (nl === -1) throw new ProtocolError(`${name}: a journal chunk of binding ${c.binding} does not end with a newline`);
          add(c.binding, data, i, nl, undefined);
          i = nl + 1;
          if ((++n & 127) === 0) await pause();
          if (loadsOut.len >= LINE_BATCH) await loadsOut.flush();
        }
      }
    } else {
      for (const d of input.docs ?? []) {
        add(d.binding, d.data, d.start ?? 0, d.end ?? 0, d.text);
        if ((++n & 127) === 0) await pause();
        if (loadsOut.len >= LINE_BATCH) await loadsOut.flush();
      }
    }
    return { input, tables, srcs, stats, nextMax, loads };
  };
  /** Writes a load line for entry e of a binding's table (sent with loadsOut's next flush). */
  const writeLoad = (binding: number, table: CombineTable, e: number): void => {
    loadsOut.ascii(plans[binding]!.loadHead);
    if (json) {
      loadsOut.bytes(table.arena.buf, table.valuesAt[e]!, table.keyJsonEnd[e]!);
      loadsOut.ascii('}}\n');
      return;
    }
    const at = table.keyAt[e]!;
    loadsOut.base64(table.arena.buf, at, at + table.keyLen[e]!);
    loadsOut.ascii('"}}\n');
  };
  /** Sends the loads a transaction combined before `acknowledge` went out. */
  const sendHeldLoads = async (t: Combined): Promise<void> => {
    const loads = t.loads;
    for (let i = 0; i < loads.length; i += 2) {
      writeLoad(loads[i]!, t.tables[loads[i]!]!, loads[i + 1]!);
      if (loadsOut.len >= LINE_BATCH) await loadsOut.flush();
    }
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
    const { input, tables, srcs, stats, nextMax } = txn;

    const acked = await expect('acknowledged');
    if (acked['state'] !== undefined) await o.onAcknowledged?.(acked['state'] as ConnectorState);
    await loadsOut.flush();
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
        const k = plan.packer.keyView(doc);
        const table = tables[index]!;
        const e = table.find(k, k.length);
        if (e < 0) throw new ProtocolError(`${name}: connector sent "loaded" for a key of binding ${index} that was not loaded`);
        if ((table.flags[e]! & LOADED) !== 0) throw new ProtocolError(`${name}: connector sent "loaded" twice for one key of binding ${index}`);
        table.flags[e] = table.flags[e]! | LOADED;
        stats.perBinding[index]!.loaded++;
        if (plan.reduce !== undefined) {
          table.docs[e] = plan.reduce(doc, table.docs[e]!);
          table.flags[e] = table.flags[e]! | REDUCED;
          table.texts[e] = undefined;
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
      if (plans[i]!.delta) {
        // A delta-updates binding's largest key is "unknown" from its first store on: should the binding become
        // a standard one later, it loads every key. Tracking the real largest key served nothing (a delta binding
        // never loads) and moved it nearly every transaction: one more durable commit of the plane per transaction,
        // awaited before the stores (issue 16).
        if (tables[i]!.count > 0 && !isMaxKeyUnknown(maxKeys[i]!)) {
          maxKeys[i] = MAX_KEY_UNKNOWN;
          moved = true;
        }
        continue;
      }
      if (nextMax[i]! < 0) continue;
      maxKeys[i] = tables[i]!.keyBytes(nextMax[i]!);
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
        const table = tables[plan.index]!;
        const a = table.arena.buf;
        const lww = plan.reduce === undefined;
        const head = plan.storeHead;
        for (let e = 0; e < table.count; e++) {
          const flags = table.flags[e]!;
          out.ascii(head);
          if (json) {
            const keyEnd = table.keyJsonEnd[e]!;
            out.bytes(a, table.valuesAt[e]!, keyEnd);
            out.ascii(',"values":');
            if (lww) out.bytes(a, keyEnd, table.valuesEnd[e]!);
            else out.utf8(plan.packer.valuesJson(table.docs[e]!));
          } else {
            const keyAt = table.keyAt[e]!;
            out.base64(a, keyAt, keyAt + table.keyLen[e]!);
            out.ascii('","valuesPacked":"');
            if (lww) {
              out.base64(a, table.valuesAt[e]!, table.valuesEnd[e]!);
            } else {
              const packed = plan.packer.valuesView(table.docs[e]!);
              out.base64(packed, 0, packed.length);
            }
            out.ascii('"');
          }
          if (plan.hasDocument) {
            out.ascii(',"doc":');
            const text = table.texts[e];
            if ((flags & REDUCED) === 0 && table.src[e]! >= 0) out.bytes(srcs[table.src[e]!]!, table.start[e]!, table.end[e]!);
            else if ((flags & REDUCED) === 0 && text !== undefined) out.utf8(text);
            else out.utf8(stringifyDocument(table.docs[e]!));
          }
          if ((flags & LOADED) !== 0) out.ascii(',"exists":true');
          if (lww ? (flags & DELETION) !== 0 : isDeletion(table.docs[e]!)) out.ascii(',"delete":true');
          out.ascii('}}\n');
          s.stored++;
          if (out.len >= LINE_BATCH) await out.flush();
        }
      }
      await out.flush();
      await session.send({ startCommit: { runtimeCheckpoint: commitAt } });
      if (spareTables.length < 2) spareTables.push(tables);
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
