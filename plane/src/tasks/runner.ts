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
  /**
   * Call when the session committed a transaction, with the documents and bytes it moved: the session
   * is healthy (the failure count resets), and progress lines count them.
   */
  committed: (moved?: { docs: number; bytes: number }) => void;
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
  /**
   * Receives progress lines: while documents move, one at most every `progressIntervalMs` (documents
   * and bytes so far in the session, current rate); one when a session that moved documents ends.
   * Nothing while idle. Unset: no progress lines (`--quiet`).
   */
  progress?: (line: string) => void;
  /** Default 5 s. */
  progressIntervalMs?: number;
}

// Thousands separators by hand for whole numbers: the first toLocaleString of a process loads ICU's locale data
// (~30 ms of the plane's main thread, at the first session's last line; issue 16). Same text as en-US.
const count = (n: number) => (Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : n.toLocaleString('en-US'));
function size(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** Documents and bytes a session moved, and the lines that report them. */
class SessionProgress {
  readonly #started = performance.now();
  docs = 0;
  bytes = 0;
  #lineAt = performance.now();
  #lineDocs = 0;
  #lineBytes = 0;
  readonly #verb: string;

  constructor(kind: 'capture' | 'materialization') {
    this.#verb = kind === 'capture' ? 'captured' : 'materialized';
  }

  /** Adds a commit's counts; returns a progress line when one is due. */
  add(docs: number, bytes: number, intervalMs: number): string | undefined {
    this.docs += docs;
    this.bytes += bytes;
    const now = performance.now();
    const secs = (now - this.#lineAt) / 1000;
    if (secs * 1000 < intervalMs || this.docs === this.#lineDocs) return undefined;
    const rate = (this.docs - this.#lineDocs) / secs;
    const mbs = (this.bytes - this.#lineBytes) / secs / 1024 / 1024;
    this.#lineAt = now;
    this.#lineDocs = this.docs;
    this.#lineBytes = this.bytes;
    return `${this.#verb} ${count(this.docs)} documents (${size(this.bytes)}) so far; now ${count(Math.round(rate))} docs/s, ${mbs.toFixed(1)} MB/s`;
  }

  /** The session's final line, or undefined when it moved nothing. */
  final(how: string): string | undefined {
    if (this.docs === 0) return undefined;
    const secs = (performance.now() - this.#started) / 1000;
    return `session ${how}: ${this.#verb} ${count(this.docs)} documents (${size(this.bytes)}) in ${secs.toFixed(1)} s (${count(Math.round(this.docs / Math.max(secs, 0.001)))} docs/s)`;
  }
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
      const progress = new SessionProgress(o.kind);
      const final = (how: string) => {
        const line = progress.final(how);
        if (line !== undefined) o.progress?.(`${o.name}: ${line}`);
      };
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
          committed: (moved) => {
            this.#healthy();
            if (moved === undefined || o.progress === undefined) return;
            const line = progress.add(moved.docs, moved.bytes, o.progressIntervalMs ?? 5000);
            if (line !== undefined) o.progress(`${o.name}: ${line}`);
          },
          onLog: (e) => {
            if (e.fields.eventType === 'connectorStatus') {
              this.#lastStatus = { message: e.message, fields: e.fields };
              o.recorder.connectorStatus(o.name, { message: e.message, fields: e.fields, ts: e.ts, buildId: this.buildId });
            }
          },
        });
        clearTimeout(healthyTimer);
        if (signal.aborted) {
          final('stopped');
          break;
        }
        if (o.kind === 'materialization') throw new Error('the materialization connector ended its session unexpectedly');
        final('complete');
        this.failures = 0;
        const next = new Date(Date.now() + o.intervalSeconds * 1000);
        o.recorder.controllerRun(o.name, { error: null, nextRun: next, at: new Date() });
        o.log?.(`${o.name}: session complete; next run at ${next.toISOString()}`);
        await sleep(o.intervalSeconds * 1000, signal);
      } catch (err) {
        clearTimeout(healthyTimer);
        final(signal.aborted ? 'stopped' : 'failed');
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
