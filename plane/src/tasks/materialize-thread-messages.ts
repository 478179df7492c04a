// What the plane's main thread and a materialization's own thread (materialize-thread.ts) say to each
// other, and the journal bytes a transaction carries between them. Kept apart from both sides so that
// each imports only what it needs (the thread loads no journal store, the main thread no driver loop).
import type { ConnectorState, JsonObject, JsonSchema, MaterializationSpec, MaterializeRequest, RuntimeCheckpoint } from '@sluice/runtime';
import type { ConnectorTarget, TransactionStats } from '@sluice/runtime/host';
import type { SerializedError } from '@sluice/runtime/thread';
import type { ConnectorLogEvent } from './session.ts';

/** A source journal's share of a transaction: whole lines (each ending with "\n"), `docs` of them. */
export interface JournalChunk {
  binding: number;
  data: Uint8Array;
  docs: number;
}

/** A transaction as read from the journals: its chunks in order and the checkpoint once it is committed. */
export interface ChunkedTransaction {
  chunks: JournalChunk[];
  checkpoint: RuntimeCheckpoint;
}

/** A transaction's chunks as the materialize driver reads them (whole lines; Buffers over the same bytes). */
export function driverChunks(chunks: JournalChunk[]): { binding: number; data: Buffer }[] {
  return chunks.map((c) => ({ binding: c.binding, data: Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength) }));
}

/** How the thread rebuilds each binding's options (functions cannot cross; the schema and window can). */
export interface ThreadBinding {
  /** The read schema, when the binding reduces (not last-write-wins at the root). */
  reduceSchema?: JsonSchema;
  window?: { uuidPtr: string; notBefore?: bigint; notAfter?: bigint };
}

export interface ThreadStart {
  name: string;
  target: ConnectorTarget;
  spec: MaterializationSpec;
  version: string;
  state: JsonObject;
  checkpoint: RuntimeCheckpoint;
  /** Per binding: the persisted largest stored key (bytes), if any. */
  maxKeys: (Uint8Array | undefined)[];
  bindings: ThreadBinding[];
  /** Keys and values as JSON (MaterializeDriverOptions.jsonKeys). */
  jsonKeys?: boolean;
}

/** The driver's callbacks, run on the main thread (they touch the journal store). */
export interface ThreadCalls {
  opened: { checkpoint: RuntimeCheckpoint; authoritative: boolean; disableLoadOptimization: boolean };
  next: RuntimeCheckpoint;
  acknowledged: ConnectorState;
  flushed: { state: ConnectorState | undefined; maxKeys: Uint8Array[] | undefined };
  startedCommit: { checkpoint: RuntimeCheckpoint; state: ConnectorState | undefined; stats: TransactionStats };
}

export type ToThread =
  | { t: 'start'; start: ThreadStart }
  /** The answer to a call: `next` answers with a ChunkedTransaction or undefined (the session ends). */
  | { t: 'reply'; id: number; value?: ChunkedTransaction; error?: SerializedError }
  | { t: 'kill' }
  /** Start the session's connector now (before `start`): a task about to start (tasks/materialize.ts prepare). */
  | { t: 'prespawn'; target: ConnectorTarget; name: string }
  /** Not needed after all: stop the prespawned connector and answer `end`. */
  | { t: 'release' }
  /** A unary RPC (the publication's validate, apply) for the prespawned connector; answered by `unaryReply`. */
  | { t: 'unary'; id: number; request: MaterializeRequest; variant: string };

export type FromThread =
  | { [F in keyof ThreadCalls]: { t: 'call'; id: number; fn: F; arg: ThreadCalls[F] } }[keyof ThreadCalls]
  | { t: 'log'; event: ConnectorLogEvent }
  /** A committed transaction's journal bytes, handed back (transferred) for the store to read into again. */
  | { t: 'recycle'; buffers: ArrayBuffer[] }
  /** The answer to `unary`: the response's variant member, or the error. */
  | { t: 'unaryReply'; id: number; value?: JsonObject; error?: SerializedError }
  /** The session ended: cleanly, or with the error it failed with. */
  | { t: 'end'; error?: SerializedError };
