// A ControlRecorder that keeps every event in memory: used by `sluice preview` and `sluice test`
// (which publish nothing) and by tests. `sluice serve` uses the control plane's SQLite recorder.
import type { ControlRecorder, PublicationOutcome, PublishedSpec, ShardFailureInput, TaskMetricsInput, JobStatusType } from '../control/recorder.ts';
import type { JsonObject } from '@sluice/runtime';

export type RecordedEvent =
  | { type: 'publish'; pubId: string; result: JobStatusType; detail: string; specs: string[]; errors: { detail: string }[] }
  | { type: 'activated'; name: string; buildId: string }
  | { type: 'shardStatus'; name: string; status: 'Ok' | 'Pending' | 'Failed' }
  | { type: 'shardFailure'; name: string; failure: ShardFailureInput }
  | { type: 'connectorStatus'; name: string; message: string; fields?: JsonObject }
  | { type: 'controllerRun'; name: string; error: string | null; nextRun: Date | null }
  | { type: 'testResult'; name: string; passing: boolean; error?: string }
  | { type: 'taskMetrics'; name: string; metrics: TaskMetricsInput };

let lastMs = 0;
let seq = 0;
/** A 16-hex-digit id ordered by time: milliseconds (12 digits) then a 4-digit sequence. */
export function timeOrderedId(now = Date.now()): string {
  if (now <= lastMs) {
    seq++;
  } else {
    lastMs = now;
    seq = 0;
  }
  return lastMs.toString(16).padStart(12, '0') + (seq & 0xffff).toString(16).padStart(4, '0');
}

export class MemoryRecorder implements ControlRecorder {
  readonly events: RecordedEvent[] = [];

  publish(input: { specs: PublishedSpec[]; detail: string; result: JobStatusType; errors?: { detail: string; catalog_name?: string; scope?: string }[] }): PublicationOutcome {
    const pubId = timeOrderedId();
    this.events.push({ type: 'publish', pubId, result: input.result, detail: input.detail, specs: input.specs.map((s) => s.catalogName), errors: input.errors ?? [] });
    return { pubId, buildIds: new Map(input.specs.map((s) => [s.catalogName, pubId])) };
  }
  activated(name: string, buildId: string): void { this.events.push({ type: 'activated', name, buildId }); }
  shardStatus(name: string, status: 'Ok' | 'Pending' | 'Failed'): void { this.events.push({ type: 'shardStatus', name, status }); }
  shardFailure(name: string, failure: ShardFailureInput): void { this.events.push({ type: 'shardFailure', name, failure }); }
  connectorStatus(name: string, s: { message: string; fields?: JsonObject }): void {
    const e: RecordedEvent = { type: 'connectorStatus', name, message: s.message };
    if (s.fields) e.fields = s.fields;
    this.events.push(e);
  }
  controllerRun(name: string, r: { error: string | null; nextRun: Date | null }): void { this.events.push({ type: 'controllerRun', name, error: r.error, nextRun: r.nextRun }); }
  testResult(name: string, r: { passing: boolean; error?: string }): void {
    const e: RecordedEvent = { type: 'testResult', name, passing: r.passing };
    if (r.error !== undefined) e.error = r.error;
    this.events.push(e);
  }
  taskMetrics(name: string, metrics: TaskMetricsInput): void { this.events.push({ type: 'taskMetrics', name, metrics }); }

  of<T extends RecordedEvent['type']>(type: T): Extract<RecordedEvent, { type: T }>[] {
    return this.events.filter((e): e is Extract<RecordedEvent, { type: T }> => e.type === type);
  }
}
