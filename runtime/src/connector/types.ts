// The contract between the runtime and a connector. A connector is a small adapter: it declares its
// JSON Schemas and implements a few typed methods; the runtime (serveCapture / serveMaterialize) owns
// dispatch, ordering, config validation (ajv, defaults applied), logging, errors and exit codes.
import type {
  CaptureBindingSpec, CaptureSpec, CollectionSpec, JsonObject, JsonSchema, JsonValue, MaterializationBindingSpec,
  MaterializationSpec, OAuth2Spec, RangeSpec, RuntimeCheckpoint,
} from '../protocol/specs.ts';
import type {
  AppliedResponse, CapturedResponse, CheckpointResponse, DiscoveredBinding, SourcedSchemaResponse,
} from '../protocol/capture.ts';
import type {
  MaterializeOpenedResponse, MaterializeValidatedBinding, StateResponse,
} from '../protocol/materialize.ts';
import type { TupleValue } from '../protocol/tuple.ts';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A `connectorStatus` event: the message becomes the task's user-visible status. */
  status(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry these fields too. */
  child(fields: Record<string, unknown>): Logger;
}

/** What every connector declares for `spec`. */
export interface ConnectorSpecInfo {
  /** Endpoint configuration schema; the runtime validates `config` against it (defaults applied). */
  configSchema: JsonSchema;
  /** Resource (binding) configuration schema; validated the same way per binding. */
  resourceConfigSchema: JsonSchema;
  /**
   * Keys the connector accepts beyond its schemas, by the JSON pointer of the object holding them (e.g.
   * `{'/parser': ['addValues']}`): the runtime refuses every other key the schemas do not name.
   */
  configKeysBeyondSchema?: Readonly<Record<string, readonly string[]>>;
  resourceKeysBeyondSchema?: Readonly<Record<string, readonly string[]>>;
  documentationUrl: string;
  oauth2?: OAuth2Spec;
}

export interface BaseContext<Config> {
  /** Endpoint config, validated against configSchema with defaults applied, frozen. */
  config: Config;
  log: Logger;
  /** Aborted on SIGTERM or when the session ends. */
  signal: AbortSignal;
}

// ---------------------------------------------------------------------------------------------
// Capture

export interface CaptureValidateBinding<Resource> {
  resource: Resource;
  collection: CollectionSpec;
  backfill: number;
}

export interface CaptureBinding<Resource> {
  index: number;
  resource: Resource;
  spec: CaptureBindingSpec;
  /** Opaque per-binding state key (falls back to the joined resource path when absent). */
  stateKey: string;
}

export interface CaptureOpenContext<Config, Resource> extends BaseContext<Config> {
  capture: CaptureSpec;
  bindings: CaptureBinding<Resource>[];
  /** Connector state from the last committed checkpoint; `{}` when none. */
  state: JsonObject;
  range: RangeSpec;
  version: string;
  /**
   * Only with `explicitAcknowledgements`: resolves when the runtime has acknowledged that many of the
   * oldest checkpoints. Iterate to receive each acknowledge request's count.
   */
  acknowledgements: AsyncIterable<number>;
}

/**
 * A batch of `captured` lines framed by the runtime's CapturedLinesWriter (protocol/captured-lines.ts)
 * around documents the connector serialised itself, possibly in another thread: `documents` lines, each
 * exactly what `{ captured: { binding, doc } }` would be written as and ending in `\n`. The runtime writes
 * the bytes to the stream as they are (after any buffered documents, with backpressure) and counts
 * `documents` toward the next checkpoint; it checks the framing of the first and last line.
 */
export interface CapturedLines {
  documents: number;
  /** The lines as UTF-8 bytes (CapturedLinesWriter.take; e.g. a buffer a worker thread filled and transferred). */
  lines: Uint8Array;
  /**
   * Called once the output stream has taken them (with the error if it failed), after which the connector
   * may reuse the buffer (CapturedLinesWriter.recycle, or transfer it back to the thread that fills it).
   */
  written?: (err?: Error | null) => void;
}

/** What a capture session yields; each is written as one protocol line, in order, with backpressure. */
export type CaptureOutput =
  | { captured: CapturedResponse }
  | { capturedLines: CapturedLines }
  | { checkpoint: CheckpointResponse }
  | { sourcedSchema: SourcedSchemaResponse };

export interface CaptureConnector<Config = JsonObject, Resource = JsonObject> extends ConnectorSpecInfo {
  /** JSON pointers into the resource config that form the resource path (e.g. `["/stream"]`). */
  resourcePathPointers: string[];
  /** When true, `opened.explicitAcknowledgements` is sent and acknowledge requests are delivered. */
  explicitAcknowledgements?: boolean;

  discover(ctx: BaseContext<Config>): Promise<DiscoveredBinding[]>;
  /**
   * Optional: check the endpoint. Return one resource path per binding, in order; when omitted the
   * runtime derives each from resourcePathPointers.
   */
  validate?(ctx: BaseContext<Config> & { name: string; bindings: CaptureValidateBinding<Resource>[] }): Promise<string[][] | void>;
  /** Optional: returns the action description (empty = nothing done). */
  apply?(ctx: BaseContext<Config> & { capture: CaptureSpec; lastCapture?: CaptureSpec; version: string; dryRun: boolean }): Promise<string>;
  /** One session: yield documents and checkpoints; returning ends the session (exit 0). */
  open(ctx: CaptureOpenContext<Config, Resource>): AsyncIterable<CaptureOutput>;
}

// ---------------------------------------------------------------------------------------------
// Materialize

export interface MaterializeValidateBindingContext<Resource> {
  resource: Resource;
  collection: CollectionSpec;
  fieldConfig: Record<string, JsonValue>;
  backfill: number;
  groupBy?: string[];
}

export interface MaterializeBinding<Resource> {
  index: number;
  resource: Resource;
  spec: MaterializationBindingSpec;
}

/** A load with its key decoded from `keyPacked` (elements in fieldSelection.keys order). */
export interface DecodedLoad {
  binding: number;
  key: TupleValue[];
  keyPacked: string;
}

/** A store with key and values decoded from the packed tuples. */
export interface DecodedStore {
  binding: number;
  key: TupleValue[];
  values: TupleValue[];
  keyPacked: string;
  /** The raw `valuesPacked` (set by the runtime when the transactor defers tuple decoding; see Transactor). */
  valuesPacked?: string;
  doc?: JsonObject | undefined;
  /**
   * The document exactly as the request's JSON text held it (set with `doc` when the request came from
   * a JSON line): a destination that stores the document as JSON text writes this instead of
   * re-serialising `doc` (same document; numbers keep every digit they were sent with).
   */
  docJson?: string;
  exists: boolean;
  delete: boolean;
}

/**
 * The per-session transaction driver. The runtime calls, per transaction:
 * acknowledge() → (load(loads, loaded) once, only after the previous commit is acknowledged) →
 * store(stores) once → startCommit(checkpoint). A transactor never sees protocol ordering errors.
 */
export interface Transactor {
  /** Read every load of this transaction; call `loaded` for each key that exists (at most once each). */
  load(loads: AsyncIterable<DecodedLoad>, loaded: (binding: number, doc: JsonObject) => Promise<void>): Promise<void>;
  /** Stage every store of this transaction (stream them: bulk load, backpressure). */
  store(stores: AsyncIterable<DecodedStore>): Promise<void>;
  /** Commit the staged stores with the runtime checkpoint, atomically where the destination allows. */
  startCommit(runtimeCheckpoint: RuntimeCheckpoint): Promise<StateResponse | void>;
  /** Called at the start of each transaction, after the previous startCommit; completes the previous commit. */
  acknowledge(): Promise<StateResponse | void>;
  /** Release connections; called once at the end of the session, also after errors. */
  close?(): Promise<void>;
}

export interface MaterializeOpenContext<Config, Resource> extends BaseContext<Config> {
  materialization: MaterializationSpec;
  bindings: MaterializeBinding<Resource>[];
  range: RangeSpec;
  version: string;
  state: JsonObject;
}

export interface MaterializeConnector<Config = JsonObject, Resource = JsonObject> extends ConnectorSpecInfo {
  validate(ctx: BaseContext<Config> & {
    name: string;
    bindings: MaterializeValidateBindingContext<Resource>[];
    lastMaterialization?: MaterializationSpec;
  }): Promise<MaterializeValidatedBinding[]>;
  apply(ctx: BaseContext<Config> & {
    materialization: MaterializationSpec;
    bindings: MaterializeBinding<Resource>[];
    lastMaterialization?: MaterializationSpec;
    version: string;
    state: JsonObject;
    dryRun: boolean;
  }): Promise<AppliedResponse>;
  open(ctx: MaterializeOpenContext<Config, Resource>): Promise<{ transactor: Transactor; opened: MaterializeOpenedResponse }>;
}
