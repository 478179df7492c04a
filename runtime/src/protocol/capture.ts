// Capture protocol messages (JSON codec). Each line is an envelope with exactly one variant key.
// shared/reference/flow-protocol.md §2.
import type {
  CaptureSpec, CollectionSpec, ConnectorState, ConnectorType, JsonObject, JsonSchema, OAuth2Spec, RangeSpec,
} from './specs.ts';

export interface CaptureSpecRequest { connectorType?: ConnectorType; config?: JsonObject }
export interface DiscoverRequest { connectorType?: ConnectorType; config?: JsonObject }
export interface CaptureValidateRequest {
  name?: string;
  connectorType?: ConnectorType;
  config?: JsonObject;
  bindings?: { resourceConfig?: JsonObject; collection: CollectionSpec; backfill?: number }[];
  lastCapture?: CaptureSpec;
  lastVersion?: string;
}
export interface CaptureApplyRequest {
  capture: CaptureSpec;
  version?: string;
  lastCapture?: CaptureSpec;
  lastVersion?: string;
  dryRun?: boolean;
}
export interface CaptureOpenRequest {
  capture: CaptureSpec;
  version?: string;
  range?: RangeSpec;
  /** Connector state; `{}` when none (absent is treated as `{}`). */
  state?: JsonObject;
}
export interface CaptureAcknowledgeRequest { checkpoints?: number }

export type CaptureRequest =
  | { spec: CaptureSpecRequest }
  | { discover: DiscoverRequest }
  | { validate: CaptureValidateRequest }
  | { apply: CaptureApplyRequest }
  | { open: CaptureOpenRequest }
  | { acknowledge: CaptureAcknowledgeRequest };

export interface SpecResponse {
  protocol: number;
  configSchema: JsonSchema;
  resourceConfigSchema: JsonSchema;
  documentationUrl: string;
  oauth2?: OAuth2Spec;
  /** Captures only; materializations must not send it. */
  resourcePathPointers?: string[];
}
export interface DiscoveredBinding {
  recommendedName: string;
  resourceConfig: JsonObject;
  documentSchema: JsonSchema;
  key?: string[];
  disable?: boolean;
  resourcePath?: string[];
}
export interface DiscoveredResponse { bindings: DiscoveredBinding[] }
export interface CaptureValidatedResponse { bindings: { resourcePath: string[] }[] }
export interface AppliedResponse { actionDescription?: string; state?: ConnectorState }
export interface CaptureOpenedResponse { explicitAcknowledgements?: boolean }
export interface CapturedResponse { binding?: number; doc: JsonObject }
export interface SourcedSchemaResponse { binding?: number; documentSchema: JsonSchema }
export interface CheckpointResponse { state?: ConnectorState }

export type CaptureResponse =
  | { spec: SpecResponse }
  | { discovered: DiscoveredResponse }
  | { validated: CaptureValidatedResponse }
  | { applied: AppliedResponse }
  | { opened: CaptureOpenedResponse }
  | { captured: CapturedResponse }
  | { sourcedSchema: SourcedSchemaResponse }
  | { checkpoint: CheckpointResponse };
