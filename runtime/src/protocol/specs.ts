// Spec shapes carried inside protocol messages, as the Flow runtime sends them in the JSON codec
// (lowerCamelCase, defaults omitted). See shared/reference/flow-protocol.md §4.
// Every field a reader may see absent is optional here; decode with defaults.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
/** A JSON Schema document, kept as plain JSON. */
export type JsonSchema = JsonObject | boolean;

export type ConnectorType = 'IMAGE' | 'LOCAL' | 'SQLITE' | 'INVALID' | (string & {});

/** uint32 ranges; the full range is `{keyEnd: 4294967295, rClockEnd: 4294967295}`. */
export interface RangeSpec {
  keyBegin?: number;
  keyEnd?: number;
  rClockBegin?: number;
  rClockEnd?: number;
}

export type Exists = 'MUST' | 'MAY' | 'IMPLICIT' | 'CANNOT';

export interface Inference {
  types?: string[];
  string?: {
    contentType?: string;
    format?: string;
    contentEncoding?: string;
    /** 0 (absent) means unbounded. */
    maxLength?: number;
  };
  numeric?: { hasMinimum?: boolean; minimum?: number; hasMaximum?: boolean; maximum?: number };
  array?: { minItems?: number; hasMaxItems?: boolean; maxItems?: number; itemTypes?: string[] };
  title?: string;
  description?: string;
  default?: JsonValue;
  secret?: boolean;
  exists?: Exists;
}

export interface Projection {
  /** JSON pointer; absent (empty) for the root document. */
  ptr?: string;
  field: string;
  explicit?: boolean;
  isPartitionKey?: boolean;
  isPrimaryKey?: boolean;
  inference?: Inference;
}

export interface CollectionSpec {
  name: string;
  writeSchema?: JsonSchema;
  readSchema?: JsonSchema;
  key?: string[];
  uuidPtr?: string;
  partitionFields?: string[];
  projections?: Projection[];
  ackTemplate?: JsonValue;
  partitionTemplate?: JsonValue;
  derivation?: JsonValue;
}

export interface CaptureBindingSpec {
  resourceConfig?: JsonObject;
  resourcePath?: string[];
  collection: CollectionSpec;
  backfill?: number;
  stateKey?: string;
}

export interface NetworkPort {
  number?: number;
  protocol?: string;
  public?: boolean;
}

export interface CaptureSpec {
  name: string;
  connectorType?: ConnectorType;
  config?: JsonObject;
  bindings?: CaptureBindingSpec[];
  intervalSeconds?: number;
  shardTemplate?: JsonValue;
  recoveryLogTemplate?: JsonValue;
  networkPorts?: NetworkPort[];
  inactiveBindings?: JsonValue[];
}

export interface LabelSelector {
  labels?: { name: string; value?: string; prefix?: boolean }[];
}

export interface FieldSelection {
  keys?: string[];
  values?: string[];
  /** Field name of the root-document projection; absent when not selected. */
  document?: string;
  fieldConfig?: Record<string, JsonValue>;
}

export interface SerPolicy {
  strTruncateAfter?: number;
  nestedObjTruncateAfter?: number;
  arrayTruncateAfter?: number;
}

export interface MaterializationBindingSpec {
  resourceConfig?: JsonObject;
  resourcePath?: string[];
  collection: CollectionSpec;
  partitionSelector?: { include?: LabelSelector; exclude?: LabelSelector };
  priority?: number;
  fieldSelection?: FieldSelection;
  deltaUpdates?: boolean;
  journalReadSuffix?: string;
  notBefore?: string;
  notAfter?: string;
  backfill?: number;
  stateKey?: string;
  serPolicy?: SerPolicy;
}

export interface MaterializationSpec {
  name: string;
  connectorType?: ConnectorType;
  config?: JsonObject;
  bindings?: MaterializationBindingSpec[];
  shardTemplate?: JsonValue;
  recoveryLogTemplate?: JsonValue;
  networkPorts?: NetworkPort[];
  inactiveBindings?: JsonValue[];
}

/** `{updated, mergePatch}`: with mergePatch the update is an RFC 7396 patch onto the current state. */
export interface ConnectorState {
  updated?: JsonValue;
  mergePatch?: boolean;
}

/** consumer.Checkpoint: opaque to connectors; persisted and returned verbatim. */
export type RuntimeCheckpoint = JsonObject;

export interface OAuth2Spec {
  provider: string;
  authUrlTemplate?: string;
  accessTokenUrlTemplate?: string;
  accessTokenMethod?: string;
  accessTokenBody?: string;
  accessTokenHeaders?: Record<string, JsonValue>;
  accessTokenResponseMap?: Record<string, JsonValue>;
  refreshTokenUrlTemplate?: string;
  refreshTokenMethod?: string;
  refreshTokenBody?: string;
  refreshTokenHeaders?: Record<string, JsonValue>;
  refreshTokenResponseMap?: Record<string, JsonValue>;
}

/** The protocol number every spec response carries. */
export const PROTOCOL_VERSION = 3032023;
