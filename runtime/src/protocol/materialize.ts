// Materialize protocol messages (JSON codec). shared/reference/flow-protocol.md §3.
import type {
  CollectionSpec, ConnectorState, ConnectorType, JsonObject, JsonValue, MaterializationSpec, RangeSpec,
  RuntimeCheckpoint, SerPolicy,
} from './specs.ts';
import type { AppliedResponse, SpecResponse } from './capture.ts';

export interface MaterializeSpecRequest { connectorType?: ConnectorType; config?: JsonObject }
export interface MaterializeValidateBinding {
  resourceConfig?: JsonObject;
  collection: CollectionSpec;
  fieldConfig?: Record<string, JsonValue>;
  backfill?: number;
  groupBy?: string[];
}
export interface MaterializeValidateRequest {
  name?: string;
  connectorType?: ConnectorType;
  config?: JsonObject;
  bindings?: MaterializeValidateBinding[];
  lastMaterialization?: MaterializationSpec;
  lastVersion?: string;
}
export interface MaterializeApplyRequest {
  materialization: MaterializationSpec;
  version?: string;
  lastMaterialization?: MaterializationSpec;
  lastVersion?: string;
  state?: JsonObject;
  dryRun?: boolean;
}
export interface MaterializeOpenRequest {
  materialization: MaterializationSpec;
  version?: string;
  range?: RangeSpec;
  state?: JsonObject;
}
/** `keyPacked`: base64 FoundationDB tuple of the key fields (in fieldSelection.keys order). */
export interface LoadRequest { binding?: number; keyPacked?: string; key?: JsonValue[] }
export interface StoreRequest {
  binding?: number;
  keyPacked?: string;
  valuesPacked?: string;
  key?: JsonValue[];
  values?: JsonValue[];
  doc?: JsonObject;
  exists?: boolean;
  delete?: boolean;
}
export interface StartCommitRequest { runtimeCheckpoint?: RuntimeCheckpoint }

export type MaterializeRequest =
  | { spec: MaterializeSpecRequest }
  | { validate: MaterializeValidateRequest }
  | { apply: MaterializeApplyRequest }
  | { open: MaterializeOpenRequest }
  | { acknowledge: JsonObject }
  | { load: LoadRequest }
  | { flush: JsonObject }
  | { store: StoreRequest }
  | { startCommit: StartCommitRequest };

export type ConstraintType =
  | 'FIELD_REQUIRED'
  | 'LOCATION_REQUIRED'
  | 'LOCATION_RECOMMENDED'
  | 'FIELD_OPTIONAL'
  | 'FIELD_FORBIDDEN'
  | 'INCOMPATIBLE'
  | 'UNSATISFIABLE';

export interface Constraint { type: ConstraintType; reason?: string; foldedField?: string }

export interface MaterializeValidatedBinding {
  resourcePath: string[];
  /** Map form of the per-field constraints (see docs/architecture.md for the choice of form). */
  constraints?: Record<string, Constraint>;
  deltaUpdates?: boolean;
  serPolicy?: SerPolicy;
  caseInsensitiveFields?: boolean;
}
export interface MaterializeValidatedResponse { bindings: MaterializeValidatedBinding[] }
export interface MaterializeOpenedResponse { runtimeCheckpoint?: RuntimeCheckpoint; disableLoadOptimization?: boolean }
export interface LoadedResponse { binding?: number; doc: JsonObject }
export interface StateResponse { state?: ConnectorState }

export type MaterializeResponse =
  | { spec: SpecResponse }
  | { validated: MaterializeValidatedResponse }
  | { applied: AppliedResponse }
  | { opened: MaterializeOpenedResponse }
  | { acknowledged: StateResponse }
  | { loaded: LoadedResponse }
  | { flushed: StateResponse }
  | { startedCommit: StateResponse };
