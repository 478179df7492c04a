// StatusResponse items computed from what the store observed, and the summary rules of
// shared/reference/control-plane.md §3 (first match wins).
import type { JsonObject } from '@sluice/runtime';
import type { ControlStore, LiveSpecRow } from './store.ts';
import type { StatusSummaryTypeStatus } from './status-schemas.ts';

export type SummaryStatus = StatusSummaryTypeStatus;
export interface Summary { status: SummaryStatus; message: string }

/** Rule 7: this many Pending checks in a row turn a warning into an error. */
export const PENDING_CHECKS_LIMIT = 20;

const CONTROLLER_TYPE = { capture: 'Capture', collection: 'Collection', materialization: 'Materialization', test: 'Test' } as const;

/** The ControllerStatus object of a live spec (type-tagged). */
export function controllerStatus(store: ControlStore, row: LiveSpecRow, now: Date): JsonObject {
  const publications: JsonObject = { history: row.history as unknown as JsonObject[] };
  if (row.lastPubId) publications.max_observed_pub_id = row.lastPubId;
  const alerts = row.alerts as unknown as JsonObject;
  if (row.specType === 'test') {
    if (row.passing === null) return { type: 'Uninitialized' };
    const t: JsonObject = { type: 'Test', passing: row.passing, publications };
    if (Object.keys(alerts).length > 0) t.alerts = alerts;
    return t;
  }
  const activation: JsonObject = { ...(row.activation as unknown as JsonObject) };
  const recent = store.recentFailureCount(row, now);
  if (recent > 0) activation.recent_failure_count = recent;
  const out: JsonObject = { type: CONTROLLER_TYPE[row.specType], publications, activation };
  if (Object.keys(alerts).length > 0) out.alerts = alerts;
  return out;
}

/** A connector status is current when it was emitted by the latest build after the last activation. */
function connectorStatusIsCurrent(row: LiveSpecRow): boolean {
  const cs = row.connectorStatus;
  const at = row.activation.last_activated_at;
  return cs !== null && cs.shard.build === row.lastBuildId && at !== undefined && Date.parse(cs.ts) > Date.parse(at);
}

export function summaryOf(row: LiveSpecRow | undefined, status: JsonObject | undefined): Summary {
  // 1. No controller state yet.
  if (!row || !status) return { status: 'warning', message: 'Pending controller initialization' };
  // 2. The last controller run failed.
  if (row.controllerError !== null) return { status: 'error', message: row.controllerError };
  // 3. Tests report their result.
  if (status.type === 'Uninitialized') return { status: 'warning', message: 'pending controller initialization' };
  if (status.type === 'Test') return status.passing === true ? { status: 'ok', message: 'Test passed' } : { status: 'error', message: 'Test failed' };
  const a = row.activation;
  // 4. The latest build is not yet running in the data plane.
  if (a.last_activated !== row.lastBuildId || a.last_activated_at === undefined) return { status: 'warning', message: 'pending data-plane activation' };
  // 5. Disabled tasks.
  if (row.disabled && row.specType !== 'collection') return { status: 'taskDisabled', message: 'Task shards are disabled' };
  // 6. A shard failure not yet handled.
  if (a.next_retry !== undefined) {
    const at = a.last_failure ? ` at ${chronoDisplay(a.last_failure.ts)}` : '';
    return { status: 'error', message: `task shard failed${at}, next retry at ${chronoDisplay(a.next_retry)}` };
  }
  // 7. Shard status checks.
  const ss = a.shard_status;
  if (ss?.status === 'Pending') {
    return (ss.count ?? 1) <= PENDING_CHECKS_LIMIT
      ? { status: 'warning', message: 'waiting for task shards to be ready' }
      : { status: 'error', message: 'task shards have been pending for a long time' };
  }
  if (ss?.status === 'Failed') return { status: 'error', message: 'one or more task shards are failed' };
  // 8. The connector's own status.
  if (row.connectorStatus !== null && !row.disabled) {
    if (!connectorStatusIsCurrent(row)) return { status: 'warning', message: 'waiting on connector status' };
    return { status: 'ok', message: row.connectorStatus.message };
  }
  // 9.
  return { status: 'ok', message: 'Ok' };
}

/** One StatusResponse item, with optional members omitted as the reference describes. */
export function statusResponse(store: ControlStore, row: LiveSpecRow, opts: { short: boolean; now?: Date }): JsonObject {
  const now = opts.now ?? new Date();
  const cs = controllerStatus(store, row, now);
  const out: JsonObject = {
    catalog_name: row.catalogName,
    live_spec_id: row.liveSpecId,
    spec_type: row.specType,
    summary: summaryOf(row, cs) as unknown as JsonObject,
    last_pub_id: row.lastPubId,
    last_build_id: row.lastBuildId,
    controller_next_run: row.controllerNextRun,
    live_spec_updated_at: row.updatedAt,
    controller_updated_at: row.controllerUpdatedAt,
  };
  if (row.disabled && row.specType !== 'collection' && row.specType !== 'test') out.disabled = true;
  if (!opts.short) {
    // A stale connector status (older build, or before the last activation) is not reported.
    if (row.connectorStatus && connectorStatusIsCurrent(row)) out.connector_status = row.connectorStatus as unknown as JsonObject;
    out.controller_status = cs;
  }
  if (row.controllerError !== null) out.controller_error = row.controllerError;
  if (row.controllerFailures > 0) out.controller_failures = row.controllerFailures;
  return out;
}

/** chrono's Display of a UTC DateTime: `2024-02-03 06:07:08 UTC` (fraction shown only when non-zero). */
export function chronoDisplay(iso: string): string {
  const d = new Date(iso);
  const s = d.toISOString(); // 2024-02-03T06:07:08.123Z
  const frac = s.slice(20, 23);
  return `${s.slice(0, 10)} ${s.slice(11, 19)}${frac === '000' ? '' : '.' + frac} UTC`;
}

/** Names one hop upstream or downstream of `name` (edges from PublishedSpec.connected, both directions). */
export function connectedNames(rows: LiveSpecRow[], name: string): string[] {
  const out = new Set<string>();
  for (const r of rows) {
    if (r.catalogName === name) for (const c of r.connected) out.add(c);
    else if (r.connected.includes(name)) out.add(r.catalogName);
  }
  out.delete(name);
  return [...out];
}
