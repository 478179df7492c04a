// Keeps one task's shard running: start a session, report shard status and failures to the control
// recorder, restart a capture `intervalSeconds` after it exits cleanly, and back off exponentially
// (1 s doubling to 5 min) after failures. As in Flow, the failure count is reset only by a session that
// proved healthy — it committed a transaction, completed, or ran a minute without failing — not by a
// connector that merely opened: a poison document that fails every session after `opened` backs off
// 1 s → 5 min instead of retrying every second forever. From the first failure until a healthy session
// the task's controller error holds the failure message, so its status summary is `error` with it.
// Stopping aborts the running session.
import type { ControlRecorder } from '../control/recorder.ts';
import { chronoDisplay } from '../control/status.ts';
import type { ConnectorLogEvent } from './session.ts';

export interface SessionContext {
  signal: AbortSignal;
  /** The build this session runs (sent to the connector as `version`). */
  buildId: string;
  /** Call once the connector has opened: the shard is then `Ok`. */
  opened: () => void;
  /** Call when the session committed a transaction: it is healthy, and the failure count resets. */
  committed: () => void;
  /** Pass every connector log line here (connectorStatus events reach the recorder). */
  onLog: (event: ConnectorLogEvent) => void;
}

export interface TaskRunnerOptions {
  name: string;
  kind: 'capture' | 'materialization';
  buildId: string;
  recorder: ControlRecorder;
  /** Seconds between the end of a clean capture session and the next start. */
  intervalSeconds: number;
  runSession: (ctx: SessionContext) => Promise<void>;
  log?: (message: string) => void;
  /** Cap for the failure back-off, in ms (tests shorten it). */
  maxBackoffMs?: number;
  /** First back-off, in ms (default 1 s; tests shorten it). */
  baseBackoffMs?: number;
  /** A session running this long without failing is healthy (default 60 s). */
  healthyAfterMs?: number;
}

/** The delay before retrying after `failures` consecutive failures: base, doubling, capped. */
export function backoffMs(failures: number, max = 300_000, base = 1000): number {
  return Math.min(base * 2 ** Math.max(0, failures - 1), max);
}

export class TaskRunner {
  readonly options: TaskRunnerOptions;
  readonly #abort = new AbortController();
  #done: Promise<void> | undefined;
  /** Failures since the last healthy session (one that committed, completed or ran a minute). */
  failures = 0;
  sessions = 0;
  lastError: string | undefined;
  /** The build the shard runs; a touch publication moves it forward without a restart (retarget). */
  buildId: string;
  /** Fingerprint of what the shard runs (built spec + endpoint); the plane restarts the task when it changes. */
  fingerprint = '';
  #lastStatus: { message: string; fields: ConnectorLogEvent['fields'] } | undefined;

  constructor(options: TaskRunnerOptions) {
    this.options = options;
    this.buildId = options.buildId;
  }

  /**
   * Activates a newer build of an unchanged task without restarting its shard (a publication that did
   * not change the task's built spec). The connector's last status still holds, so it is reported again
   * under the new build, just after the activation.
   */
  retarget(buildId: string): void {
    if (buildId === this.buildId || this.stopped) return;
    this.buildId = buildId;
    const at = new Date();
    this.options.recorder.activated(this.options.name, buildId, at);
    if (this.#lastStatus) {
      this.options.recorder.connectorStatus(this.options.name, { ...this.#lastStatus, ts: new Date(at.getTime() + 1), buildId });
    }
  }

  start(): void {
    this.#done ??= this.#loop();
  }

  /** Stops the task and waits for its session to end. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  /** The session proved healthy: forget past failures (and clear the controller error they set). */
  #healthy(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.options.recorder.controllerRun(this.options.name, { error: null, nextRun: null, at: new Date() });
  }

  async #loop(): Promise<void> {
    const o = this.options;
    const signal = this.#abort.signal;
    o.recorder.activated(o.name, this.buildId, new Date());
    while (!signal.aborted) {
      o.recorder.shardStatus(o.name, 'Pending', new Date());
      this.sessions++;
      let healthyTimer: NodeJS.Timeout | undefined;
      try {
        await o.runSession({
          signal,
          buildId: this.buildId,
          opened: () => {
            o.recorder.shardStatus(o.name, 'Ok', new Date());
            clearTimeout(healthyTimer);
            healthyTimer = setTimeout(() => this.#healthy(), o.healthyAfterMs ?? 60_000);
            healthyTimer.unref();
          },
          committed: () => this.#healthy(),
          onLog: (e) => {
            if (e.fields.eventType === 'connectorStatus') {
              this.#lastStatus = { message: e.message, fields: e.fields };
              o.recorder.connectorStatus(o.name, { message: e.message, fields: e.fields, ts: e.ts, buildId: this.buildId });
            }
          },
        });
        clearTimeout(healthyTimer);
        if (signal.aborted) break;
        if (o.kind === 'materialization') throw new Error('the materialization connector ended its session unexpectedly');
        this.failures = 0;
        const next = new Date(Date.now() + o.intervalSeconds * 1000);
        o.recorder.controllerRun(o.name, { error: null, nextRun: next, at: new Date() });
        o.log?.(`${o.name}: session complete; next run at ${next.toISOString()}`);
        await sleep(o.intervalSeconds * 1000, signal);
      } catch (err) {
        clearTimeout(healthyTimer);
        if (signal.aborted) break;
        this.failures++;
        const message = err instanceof Error ? err.message : String(err);
        this.lastError = message;
        const delay = backoffMs(this.failures, o.maxBackoffMs, o.baseBackoffMs);
        const now = new Date();
        const nextRetry = new Date(now.getTime() + delay);
        const times = this.failures === 1 ? 'once' : `${this.failures} times in a row`;
        o.recorder.shardFailure(o.name, { message, fields: { eventType: 'shardFailure', eventTarget: o.name, error: message }, ts: now, nextRetry });
        o.recorder.shardStatus(o.name, 'Failed', now);
        // The controller error carries the failure until a session proves healthy: the status summary
        // is `error` with this message, not "waiting for task shards" between retries.
        o.recorder.controllerRun(o.name, { error: `task shard failed ${times}, next retry at ${chronoDisplay(nextRetry.toISOString())}: ${message}`, nextRun: nextRetry, at: now });
        o.log?.(`${o.name}: failed ${times}, retrying in ${formatDelay(delay)}: ${message}`);
        await sleep(delay, signal);
        if (!signal.aborted) o.recorder.activated(o.name, this.buildId, new Date());
      }
    }
  }
}

function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
