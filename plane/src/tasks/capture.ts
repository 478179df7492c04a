// One session of a capture task: open the connector with its committed state, validate each captured
// document against its collection's write schema, and at each checkpoint append the pending documents
// and the reduced connector state in ONE journal-store transaction. Documents after the last
// checkpoint are discarded when the connector exits (flow-protocol.md §1.7).
import {
  ProtocolError, type CaptureRequest, type CaptureResponse, type CaptureSpec, type ConnectorState, type JsonObject, type JsonValue,
} from '@sluice/runtime';
import type { JournalStore } from '../journals/store.ts';
import type { UuidProducer } from '../journals/uuid.ts';
import type { SchemaValidators } from '../journals/validator.ts';
import { CollectionWriter, DocumentError, type PreparedDoc } from '../journals/writer.ts';
import { FULL_RANGE } from './materialize.ts';
import type { ConnectorSession } from './session.ts';
import { applyStateUpdate as applyState } from '@sluice/runtime';

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

/** Runs until the connector exits cleanly (resolves) or fails (rejects). Aborting kills the connector. */
export async function runCaptureSession(opts: CaptureSessionOptions): Promise<void> {
  const { name, spec, store, session, signal } = opts;
  const bindings = spec.bindings ?? [];
  const writers = bindings.map((b) => new CollectionWriter(b.collection, opts.validators, opts.uuids));
  let state = (opts.initialState ?? store.getState(captureStateKey(name)) ?? {}) as JsonValue;

  const onAbort = () => session.kill();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await session.send({ open: { capture: spec, version: opts.version, range: FULL_RANGE, state: state as JsonObject } });
    const first = await session.recv();
    if (first === undefined || !('opened' in first)) {
      throw new ProtocolError(`${name}: connector sent ${first === undefined ? 'nothing' : `"${Object.keys(first)[0]}"`} before "opened"`);
    }
    const explicitAcks = first.opened.explicitAcknowledgements === true;
    opts.onOpened?.();

    let pending: { binding: number; doc: PreparedDoc }[] = [];
    let pendingBytes = new Map<string, number>();
    let pendingState: ConnectorState | undefined;
    while (true) {
      const res = await session.recv();
      if (res === undefined) return; // clean exit; uncommitted documents are dropped
      if ('captured' in res) {
        const index = res.captured.binding ?? 0;
        const writer = writers[index];
        if (writer === undefined) throw new ProtocolError(`${name}: connector captured a document for binding ${index}, but the capture has ${writers.length} binding(s)`);
        let prepared: PreparedDoc;
        try {
          prepared = writer.prepare(res.captured.doc);
        } catch (err) {
          if (!(err instanceof DocumentError)) throw err;
          // The offset the document would have had in its journal.
          const journal = (() => { try { return writer.journalOf(res.captured.doc); } catch { return `${writer.collection.name}/…`; } })();
          const offset = store.head(journal) + (pendingBytes.get(journal) ?? 0);
          throw new CaptureDocumentError(writer.collection.name,
            `capture "${name}": document at offset ${offset} of journal "${journal}" (collection "${writer.collection.name}", binding ${index}) failed validation: ${err.message}`);
        }
        pending.push({ binding: index, doc: prepared });
        pendingBytes.set(prepared.journal, (pendingBytes.get(prepared.journal) ?? 0) + Buffer.byteLength(prepared.json) + 1);
        continue;
      }
      if ('checkpoint' in res) {
        const update = res.checkpoint.state;
        if (update?.updated !== undefined) {
          state = applyState(state, update);
          pendingState = pendingState === undefined || !update.mergePatch ? update : { updated: applyState(pendingState.updated ?? {}, update) ?? null, mergePatch: pendingState.mergePatch ?? false };
        }
        const perBinding = bindings.map((b) => ({ collection: b.collection.name, docs: 0, bytes: 0 }));
        const toWrite = pending;
        const committedState = state;
        const result = store.commit((tx) => {
          for (const { binding, doc } of toWrite) {
            writers[binding]!.append(tx, doc);
            perBinding[binding]!.docs++;
            perBinding[binding]!.bytes += Buffer.byteLength(doc.json) + 1;
          }
          if (update?.updated !== undefined) tx.setState(captureStateKey(name), committedState);
        });
        const info: CaptureCommitInfo = { perBinding, offsets: result.offsets, state: pendingState };
        if (opts.collectDocs) info.docs = toWrite.map(({ binding, doc }) => ({ collection: writers[binding]!.collection.name, json: doc.json }));
        pending = [];
        pendingBytes = new Map();
        pendingState = undefined;
        opts.onCommit?.(info);
        if (explicitAcks) await session.send({ acknowledge: { checkpoints: 1 } });
        continue;
      }
      if ('sourcedSchema' in res) continue; // schema inference is not part of the local plane
      throw new ProtocolError(`${name}: connector sent "${Object.keys(res)[0]}" during a capture session; expected "captured", "sourcedSchema" or "checkpoint"`);
    }
  } catch (err) {
    session.kill();
    if (signal.aborted) return;
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
