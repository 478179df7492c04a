// What the control store holds of one live spec (a row of live_specs): its status as the API reports it
// (publication history, activation, alerts, connector status) and the helpers that make and read it.
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import type { CatalogType } from '../catalog/types.ts';
import type { ActivationStatus, ControllerAlertStatus, PublicationInfoStatus, ShardRefStatus } from './status-schemas.ts';

/** A row as node:sqlite returns it. */
export type Row = Record<string, string | number | null>;

// The status members are the API's (schemas/api, written in status-schemas.ts): their types come from there.
/** What the store keeps of a status object: the schema's members, without the nulls the API allows but the store never writes. */
type Stored<T> = { [K in keyof T]: Exclude<T[K], null> };

export type PublicationInfo = PublicationInfoStatus;
export type ShardRef = ShardRefStatus;
export type ActivationState = Stored<Omit<ActivationStatus, 'recent_failure_count'>>;
export type AlertState = ControllerAlertStatus;

/** Everything the store knows about one live spec. */
export interface LiveSpecRow {
  catalogName: string;
  liveSpecId: string;
  specType: CatalogType;
  spec: JsonObject;
  connected: string[];
  disabled: boolean;
  lastPubId: string;
  lastBuildId: string;
  createdAt: string;
  updatedAt: string;
  controllerUpdatedAt: string;
  controllerError: string | null;
  controllerFailures: number;
  controllerNextRun: string | null;
  history: PublicationInfo[];
  activation: ActivationState;
  alerts: Record<string, AlertState>;
  /** Tests only: null until the first result. */
  passing: boolean | null;
  connectorStatus: { shard: ShardRef; ts: string; message: string; fields: JsonObject } | null;
  /** The image the data plane runs instead of the catalog's, after an upgrade. */
  imageOverride: string | null;
}

export function shardRef(name: string, build: string): ShardRef {
  return { name, keyBegin: '00000000', rClockBegin: '00000000', build };
}

export function fromRow(r: Row): LiveSpecRow {
  return {
    catalogName: String(r.catalog_name), liveSpecId: String(r.live_spec_id), specType: String(r.spec_type) as CatalogType,
    spec: JSON.parse(String(r.spec_json)) as JsonObject, connected: JSON.parse(String(r.connected_json)) as string[],
    disabled: r.disabled === 1, lastPubId: String(r.last_pub_id), lastBuildId: String(r.last_build_id),
    createdAt: String(r.created_at), updatedAt: String(r.updated_at), controllerUpdatedAt: String(r.controller_updated_at),
    controllerError: r.controller_error === null ? null : String(r.controller_error), controllerFailures: Number(r.controller_failures),
    controllerNextRun: r.controller_next_run === null ? null : String(r.controller_next_run),
    history: JSON.parse(String(r.history_json)) as PublicationInfo[],
    activation: JSON.parse(String(r.activation_json)) as ActivationState,
    alerts: JSON.parse(String(r.alerts_json)) as Record<string, AlertState>,
    passing: r.passing === null ? null : r.passing === 1,
    connectorStatus: r.connector_status_json === null ? null : JSON.parse(String(r.connector_status_json)) as LiveSpecRow['connectorStatus'],
    imageOverride: r.image_override === null ? null : String(r.image_override),
  };
}

/** Stable hash of a spec's JSON (member order does not matter). */
export function hashSpec(spec: JsonValue): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex');
}

function canonicalJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => v[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k]!)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The connector image of a task spec: a MaterializationDef/CaptureDef (`endpoint.image`) or catalog JSON (`endpoint.connector.image`). */
export function imageOf(spec: JsonObject): string | undefined {
  const ep = spec.endpoint;
  if (ep === null || typeof ep !== 'object' || Array.isArray(ep)) return undefined;
  if (typeof ep.image === 'string') return ep.image;
  const c = ep.connector;
  if (c !== null && typeof c === 'object' && !Array.isArray(c) && typeof c.image === 'string') return c.image;
  return undefined;
}
