// One session of a capture task over the runtime's capture driver (runtime/src/host/capture-driver.ts,
// which runs the protocol): each captured document enters its collection through CollectionWriter
// (validated, routed, UUID spliced into the connector's own text), and at each checkpoint the pending
// documents and the reduced connector state are appended in ONE journal-store transaction. Documents
// after the last checkpoint are discarded when the connector exits (flow-protocol.md §1.7).
import type { CaptureRequest, CaptureResponse, CaptureSpec, ConnectorState, JsonObject, JsonValue, UuidProducer } from '@sluice/runtime';
import { applyStateUpdate as applyState } from '@sluice/runtime';
import { type CapturedBytes, docTextOf, runCaptureDriver } from '@sluice/runtime/host';
import type { PartitionLabels } from '../journals/names.ts';
import { FRAGMENT_BYTES, type JournalStore } from '../journals/store.ts';
import type { SchemaValidators } from '../journals/validator.ts';
import type { BytesSplice } from '../journals/byte-check.ts';
import { CollectionWriter, DocumentError, partsJson, type PreparedParts } from '../journals/writer.ts';
import type { ConnectorSession } from './session.ts';

export function captureStateKey(task: string): string { return `capture/${task}/state`; }

export class CaptureDocumentError extends DocumentError {}

export interface CaptureCommitInfo {
  /** Per binding: documents and bytes written. */
  perBinding: { collection: string; docs: number; bytes: number }[];
  offsets: Record<string, number>;
  state: ConnectorState | undefined;
  /** The committed documents (only when `collectDocs` is set, for preview). */
  docs?: { collection: string; json: string }[];
}

export interface CaptureSessionOptions {
  name: string;
  spec: CaptureSpec;
  version: string;
  store: JournalStore;
  validators: SchemaValidators;
  uuids: UuidProducer;
  session: ConnectorSession<CaptureRequest, CaptureResponse>;
  signal: AbortSignal;
  /** Use this state instead of the committed one (preview's --initial-state). */
  initialState?: JsonObject;
  collectDocs?: boolean;
  onOpened?: () => void;
  onCommit?: (info: CaptureCommitInfo) => void;
}

/** The first buffer of a journal's pending lines; later ones double, up to FRAGMENT_BYTES (one fragment each). */
const FIRST_CHUNK_BYTES = 256 * 1024;
/** Buffers kept for the next checkpoint's lines (bytes in all). */
const POOL_BYTES = 2 * FRAGMENT_BYTES;

/**
 * A journal's documents since the last checkpoint, encoded at once into the UTF-8 lines the journal will
 * hold, in buffers outside the JS heap. Why: holding each document's string until the checkpoint (10k
 * documents apart for source-http-file) kept megabytes alive across the young generation's collections,
 * so every document was copied by the scavenger and promoted (the capture thread's GC was its largest
 * cost, issue 16); the bytes are the same ones the commit wrote from the strings before.
 */
class PendingJournal {
  readonly chunks: Buffer[] = [];
  buf: Buffer;
  len = 0;
  /** Bytes of every line so far (the chunks and buf). */
  bytes = 0;
  readonly collection: string;
  readonly labels: PartitionLabels;
  readonly #pool: Buffer[];
  /** Every buffer taken (whole), handed back by release(). */
  readonly #owned: Buffer[] = [];

  constructor(collection: string, labels: PartitionLabels, pool: Buffer[]) {
    this.collection = collection;
    this.labels = labels;
    this.#pool = pool;
    this.buf = this.#take(FIRST_CHUNK_BYTES);
  }

  #take(size: number): Buffer {
    const i = this.#pool.findIndex((b) => b.length >= size);
    const buf = i >= 0 ? this.#pool.splice(i, 1)[0]! : Buffer.allocUnsafeSlow(size);
    this.#owned.push(buf);
    return buf;
  }

  /** Adds one line (its pieces, see PreparedParts) and a newline; returns the line's bytes, newline included. */
  add(p: PreparedParts): number {
    // At most 3 bytes per UTF-16 unit.
    const room = 3 * (p.text.length + p.insert.length) + 1;
    if (this.len + room > this.buf.length) {
      if (this.len > 0) this.chunks.push(this.buf.subarray(0, this.len));
      this.buf = this.#take(Math.max(room, Math.min(this.buf.length * 2, FRAGMENT_BYTES)));
      this.len = 0;
    }
    const buf = this.buf;
    let o = this.len;
    if (p.at < 0) {
      o += buf.write(p.text, o, 'utf8');
    } else {
      o += buf.write(p.text.slice(0, p.at), o, 'utf8');
      o += buf.write(p.insert, o, 'utf8');
      o += buf.write(p.text.slice(p.at), o, 'utf8');
    }
    buf[o++] = 0x0a;
    const n = o - this.len;
    this.len = o;
    this.bytes += n;
    return n;
  }

  /**
   * Adds one line given as bytes: buf[start, at) + before + a new UUID + after + buf[at, end), and a newline
   * (CollectionWriter.checkBytes); returns the line's bytes, newline included.
   */
  addBytes(buf: Buffer, start: number, end: number, at: number, before: Buffer, after: Buffer, uuids: UuidProducer): number {
    const room = end - start + before.length + 36 + after.length + 1;
    if (this.len + room > this.buf.length) {
      if (this.len > 0) this.chunks.push(this.buf.subarray(0, this.len));
      this.buf = this.#take(Math.max(room, Math.min(this.buf.length * 2, FRAGMENT_BYTES)));
      this.len = 0;
    }
    const out = this.buf;
    let o = this.len;
    o += buf.copy(out, o, start, at);
    for (let k = 0; k < before.length; k++) out[o++] = before[k]!;
    o = uuids.writeNext(out, o);
    for (let k = 0; k < after.length; k++) out[o++] = after[k]!;
    // What follows the UUID is the closing braces (and any whitespace between them): a few bytes, for which a
    // loop costs less than Buffer#copy's view and native call.
    if (end - at <= 16) {
      for (let k = at; k < end; k++) out[o++] = buf[k]!;
    } else {
      o += buf.copy(out, o, at, end);
    }
    out[o++] = 0x0a;
    const n = o - this.len;
    this.len = o;
    this.bytes += n;
    return n;
  }

  /** The lines, in chunks of whole lines. */
  lines(): Buffer[] {
    return this.len > 0 ? [...this.chunks, this.buf.subarray(0, this.len)] : [...this.chunks];
  }

  /** Hands the buffers back for reuse (after the commit wrote them). */
  release(): void {
    const all = this.#owned;
    let kept = this.#pool.reduce((n, b) => n + b.length, 0);
    for (const b of all) {
      if (kept + b.length > POOL_BYTES) break;
      this.#pool.push(b);
      kept += b.length;
    }
  }
}

/** Runs until the connector exits cleanly (resolves) or fails (rejects). Aborting kills the connector. */
export async function runCaptureSession(opts: CaptureSessionOptions): Promise<void> {
  const { name, spec, store, session, signal } = opts;
  const bindings = spec.bindings ?? [];
  const writers = bindings.map((b) => new CollectionWriter(b.collection, opts.validators, opts.uuids));
  const state = (opts.initialState ?? store.getState(captureStateKey(name)) ?? {}) as JsonObject;

  /** The documents since the last checkpoint, by journal (bytes), and as text when collectDocs is set. */
  let pending = new Map<string, PendingJournal>();
  let pendingDocs: { collection: string; json: string }[] = [];
  const pool: Buffer[] = [];
  const bindingDocs = bindings.map(() => 0);
  const bindingBytes = bindings.map(() => 0);
  let pendingState: ConnectorState | undefined;
  const onDocument = (index: number, text: string, value: JsonValue): void => {
    const writer = writers[index]!;
    let prepared: PreparedParts;
    try {
      prepared = writer.prepareParts(text, value);
    } catch (err) {
      if (!(err instanceof DocumentError)) throw err;
      // The offset the document would have had in its journal.
      const journal = (() => { try { return writer.journalOf(value); } catch { return `${writer.collection.name}/…`; } })();
      const offset = store.head(journal) + (pending.get(journal)?.bytes ?? 0);
      throw new CaptureDocumentError(writer.collection.name,
        `capture "${name}": document at offset ${offset} of journal "${journal}" (collection "${writer.collection.name}", binding ${index}) failed validation: ${err.message}`);
    }
    let lines = pending.get(prepared.journal);
    if (lines === undefined) pending.set(prepared.journal, lines = new PendingJournal(writer.collection.name, prepared.labels, pool));
    const n = lines.add(prepared);
    if (opts.collectDocs) pendingDocs.push({ collection: writer.collection.name, json: partsJson(prepared) });
    bindingDocs[index]!++;
    bindingBytes[index]! += n;
  };
  const splice: BytesSplice = { at: 0, kind: 0 };
  const onDocumentBytes = (index: number, d: CapturedBytes): void => {
    const writer = writers[index]!;
    if (!writer.checkBytes(d.buf, d.start, d.end, splice)) {
      onDocument(index, docTextOf(d), d.doc);
      return;
    }
    const journal = writer.unpartitionedJournal();
    let lines = pending.get(journal);
    if (lines === undefined) pending.set(journal, lines = new PendingJournal(writer.collection.name, {}, pool));
    const [before, after] = writer.insertsOf(splice);
    bindingDocs[index]!++;
    bindingBytes[index]! += lines.addBytes(d.buf, d.start, d.end, splice.at, before, after, opts.uuids);
  };
  const onAbort = () => session.kill();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await runCaptureDriver({
      name, spec, version: opts.version, session, state,
      onOpened: () => opts.onOpened?.(),
      onDocument,
      // The documents' bytes straight into the journal's (preview's collectDocs wants their text: not then).
      ...(opts.collectDocs ? {} : { onDocumentBytes }),
      onCheckpoint: (update, committedState) => {
        if (update?.updated !== undefined) {
          pendingState = pendingState === undefined || !update.mergePatch ? update : { updated: applyState(pendingState.updated ?? {}, update) ?? null, mergePatch: pendingState.mergePatch ?? false };
        }
        const toWrite = pending;
        const result = store.commit((tx) => {
          for (const [journal, lines] of toWrite) {
            for (const chunk of lines.lines()) tx.appendBytes(journal, lines.collection, lines.labels, chunk);
          }
          if (update?.updated !== undefined) tx.setState(captureStateKey(name), committedState as JsonValue);
        });
        const perBinding = bindings.map((b, i) => ({ collection: b.collection.name, docs: bindingDocs[i]!, bytes: bindingBytes[i]! }));
        bindingDocs.fill(0);
        bindingBytes.fill(0);
        const info: CaptureCommitInfo = { perBinding, offsets: result.offsets, state: pendingState };
        if (opts.collectDocs) info.docs = pendingDocs;
        for (const lines of toWrite.values()) lines.release();
        pending = new Map();
        pendingDocs = [];
        pendingState = undefined;
        opts.onCommit?.(info);
      },
    });
  } catch (err) {
    session.kill();
    if (signal.aborted) return;
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
