// What the data plane reports to the control plane. Tasks, ingest and publications call these;
// the control store (plane/src/control) persists them in SQLite and the status API
// (plane/src/api) computes StatusResponse items from them. All timestamps are Date.
import type { JsonObject } from '@sluice/runtime';
import type { CatalogType } from '../catalog/types.ts';
import type { StatusTypeStatus } from './status-schemas.ts';

export type JobStatusType = StatusTypeStatus;

export interface PublishedSpec {
  catalogName: string;
  specType: CatalogType;
  /** The spec as published (its JSON), used to tell a modifying publication from a touch. */
  spec: JsonObject;
  /** Names this spec reads from or writes to (collections of a task, tasks of a collection). */
  connected: string[];
  disabled: boolean;
}

export interface PublicationOutcome {
  pubId: string;
  /** Build id of every spec in the publication, by catalog name. */
  buildIds: Map<string, string>;
  /**
   * Tasks that must run a different image than their catalog names: a materialization on an older
   * materialize-sqlserver tag is upgraded to the current version when its spec is edited (SPEC, Versioning),
   * and keeps running the upgraded image on later (touch) publications. By catalog name.
   */
  upgradedImages?: Map<string, string>;
  /** Upgrades made by this publication (its detail says so too). */
  upgrades?: { catalogName: string; from: string; to: string }[];
}

export interface ShardFailureInput {
  message: string;
  fields?: JsonObject;
  ts: Date;
  /** When failed shards will be re-activated; undefined when not retrying. */
  nextRetry?: Date;
}

export interface TaskMetricsInput {
  binding: string;
  docsRead?: number;
  bytesRead?: number;
  docsWritten?: number;
  bytesWritten?: number;
  ts: Date;
}

export interface PublishInput {
  specs: PublishedSpec[];
  detail: string;
  result: JobStatusType;
  errors?: { detail: string; catalog_name?: string; scope?: string }[];
  /** Keep live specs missing from `specs` (default false: a publication is the whole catalog; others are deleted). */
  partial?: boolean;
}

export interface ControlRecorder {
  /** Records one publication of these specs (a (re)load of the catalog); assigns the ids. */
  publish(input: PublishInput): PublicationOutcome;
  /** A task's shard was (re)started with this build. */
  activated(catalogName: string, buildId: string, at: Date): void;
  shardStatus(catalogName: string, status: 'Ok' | 'Pending' | 'Failed', at: Date): void;
  shardFailure(catalogName: string, failure: ShardFailureInput): void;
  /** A `connectorStatus` event from the connector's logs. */
  connectorStatus(catalogName: string, status: { message: string; fields?: JsonObject; ts: Date; buildId: string }): void;
  /** Result of a controller run for this spec (null error = success). */
  controllerRun(catalogName: string, result: { error: string | null; nextRun: Date | null; at: Date }): void;
  testResult(catalogName: string, result: { passing: boolean; error?: string; at: Date }): void;
  taskMetrics(catalogName: string, metrics: TaskMetricsInput): void;
}
