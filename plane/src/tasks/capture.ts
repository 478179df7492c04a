// One session of a capture task over the runtime's capture driver (runtime/src/host/capture-driver.ts,
// which runs the protocol): each captured document enters its collection through CollectionWriter
// (validated, routed, UUID spliced into the connector's own text), and at each checkpoint the pending
// documents and the reduced connector state are appended in ONE journal-store transaction. Documents
// after the last checkpoint are discarded when the connector exits (flow-protocol.md §1.7).
import type { CaptureRequest, CaptureResponse, CaptureSpec, ConnectorState, JsonObject, JsonValue, UuidProducer } from '@sluice/runtime';
import { applyStateUpdate as applyState } from '@sluice/runtime';
import { runCaptureDriver } from '@sluice/runtime/host';
import type { JournalStore } from '../journals/store.ts';
import type { SchemaValidators } from '../journals/validator.ts';
import { CollectionWriter, DocumentError, type PreparedDoc } from '../journals/writer.ts';
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

/** Runs until the connector exits cleanly (resolves) or fails (rejects). Aborting kills the connector. */
export async function runCaptureSession(opts: CaptureSessionOptions): Promise<void> {
  const { name, spec, store, session, signal } = opts;
  const bindings = spec.bindings ?? [];
  const writers = bindings.map((b) => new CollectionWriter(b.collection, opts.validators, opts.uuids));
  const state = (opts.initialState ?? store.getState(captureStateKey(name)) ?? {}) as JsonObject;

  let pending: { binding: number; doc: PreparedDoc }[] = [];
  let pendingBytes = new Map<string, number>();
  const bindingBytes = bindings.map(() => 0);
  let pendingState: ConnectorState | undefined;
  const onAbort = () => session.kill();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await runCaptureDriver({
      name, spec, version: opts.version, session, state,
      onOpened: () => opts.onOpened?.(),
      onDocument: (index, text, value) => {
        const writer = writers[index]!;
        let prepared: PreparedDoc;
        try {
          prepared = writer.prepareText(text, value);
        } catch (err) {
          if (!(err instanceof DocumentError)) throw err;
          // The offset the document would have had in its journal.
          const journal = (() => { try { return writer.journalOf(value); } catch { return `${writer.collection.name}/…`; } })();
          const offset = store.head(journal) + (pendingBytes.get(journal) ?? 0);
          throw new CaptureDocumentError(writer.collection.name,
            `capture "${name}": document at offset ${offset} of journal "${journal}" (collection "${writer.collection.name}", binding ${index}) failed validation: ${err.message}`);
        }
        pending.push({ binding: index, doc: prepared });
        const n = prepared.bytes + 1;
        pendingBytes.set(prepared.journal, (pendingBytes.get(prepared.journal) ?? 0) + n);
        bindingBytes[index]! += n;
      },
      onCheckpoint: (update, committedState) => {
        if (update?.updated !== undefined) {
          pendingState = pendingState === undefined || !update.mergePatch ? update : { updated: applyState(pendingState.updated ?? {}, update) ?? null, mergePatch: pendingState.mergePatch ?? false };
        }
        const perBinding = bindings.map((b) => ({ collection: b.collection.name, docs: 0, bytes: 0 }));
        const toWrite = pending;
        const result = store.commit((tx) => {
          for (const { binding, doc } of toWrite) {
            writers[binding]!.append(tx, doc);
            perBinding[binding]!.docs++;
          }
          if (update?.updated !== undefined) tx.setState(captureStateKey(name), committedState as JsonValue);
        });
        bindingBytes.forEach((bytes, i) => { perBinding[i]!.bytes = bytes; });
        bindingBytes.fill(0);
        const info: CaptureCommitInfo = { perBinding, offsets: result.offsets, state: pendingState };
        if (opts.collectDocs) info.docs = toWrite.map(({ binding, doc }) => ({ collection: writers[binding]!.collection.name, json: doc.json }));
        pending = [];
        pendingBytes = new Map();
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
