// `dbt_job_trigger`: run a dbt Cloud job after transactions commit, as upstream's materializations do. Every
// acknowledgement (each follows a committed transaction; the first one of a session follows the recovered commit)
// asks for a run: at once when the last run is at least `interval` ago, else one run is scheduled for
// last run + interval, and further asks wait for it. A run first lists the job's running runs (dbt API v2) unless
// `mode` is `ignore`: `skip` (default) then does nothing while one is running, `replace` cancels them; then it POSTs
// the job-run request with `cause` (default "Estuary Flow"). Failures are logged and never fail the materialization.
import type { Logger } from '@sluice/runtime';
import type { DbtJobTrigger } from './config.ts';
import { parseGoDuration } from './config.ts';

const CONTENT_TYPE = 'application/json;charset=UTF-8';
const RUNNING = 3;

export interface DbtTriggerOptions {
  /** For tests: the clock (ms). */
  now?: () => number;
  /** For tests: run `fn` after `ms`; returns a cancel function. Default: an unref'd timer. */
  schedule?: (fn: () => void, ms: number) => () => void;
  /** For tests: the HTTP client. Default: the global fetch. */
  fetch?: typeof fetch;
}

/** Whether the trigger is complete enough to run (upstream's Enabled: ids, key and a URL or legacy prefix). */
export function dbtTriggerEnabled(c: DbtJobTrigger | undefined): c is DbtJobTrigger {
  return c !== undefined && c.job_id !== '' && c.account_id !== '' && c.api_key !== ''
    && ((c.access_url ?? '') !== '' || (c.account_prefix ?? '') !== '');
}

interface DbtResponse { status?: { is_success?: boolean; user_message?: string }; data?: unknown }

export class DbtJobTriggerRunner {
  readonly #cfg: DbtJobTrigger;
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #schedule: (fn: () => void, ms: number) => () => void;
  readonly #fetch: typeof fetch;
  #lastRun = Number.NEGATIVE_INFINITY;
  #scheduled = false;
  #cancel: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(cfg: DbtJobTrigger, log: Logger, opts: DbtTriggerOptions = {}) {
    this.#cfg = cfg;
    this.#log = log;
    this.#intervalMs = parseGoDuration(cfg.interval ?? '30m');
    this.#now = opts.now ?? Date.now;
    this.#schedule = opts.schedule ?? ((fn, ms) => { const t = setTimeout(fn, ms); t.unref(); return () => clearTimeout(t); });
    this.#fetch = opts.fetch ?? fetch;
  }

  /** The base URL of the dbt Cloud API (upstream: access_url, else the legacy account prefix's host). */
  get baseUrl(): string {
    const url = this.#cfg.access_url ?? '';
    return url !== '' ? url.replace(/\/+$/, '') : `https://${this.#cfg.account_prefix ?? ''}.us1.dbt.com`;
  }

  /** A transaction was committed and acknowledged: run now, or schedule one run after the interval. */
  notify(): void {
    if (this.#closed || this.#scheduled) return;
    const since = this.#now() - this.#lastRun;
    if (since >= this.#intervalMs && this.#running === undefined) {
      this.#run();
      return;
    }
    this.#scheduled = true;
    const at = Math.max(0, this.#lastRun + this.#intervalMs - this.#now());
    this.#cancel = this.#schedule(() => {
      this.#cancel = undefined;
      const go = () => { this.#scheduled = false; if (!this.#closed) this.#run(); };
      if (this.#running !== undefined) void this.#running.then(go);
      else go();
    }, at);
  }

  /** The run in progress, if any (tests await it). */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  #run(): void {
    this.#lastRun = this.#now();
    this.#running = this.trigger().catch((err: unknown) => {
      this.#log.error('dbt job trigger failed', { error: err instanceof Error ? err.message : String(err), job: this.#cfg.job_id });
    }).finally(() => { this.#running = undefined; });
  }

  /** One trigger, as upstream's JobTrigger: list running runs (unless ignore), skip or cancel them, then run the job. */
  async trigger(): Promise<void> {
    const { account_id: account, job_id: job } = this.#cfg;
    const mode = this.#cfg.mode ?? 'skip';
    const base = `${this.baseUrl}/api/v2/accounts/${encodeURIComponent(account)}`;
    if (mode !== 'ignore') {
      const list = await this.#request('GET', `${base}/runs?job_definition_id=${encodeURIComponent(job)}&status=${RUNNING}`);
      const runs = Array.isArray(list.data) ? (list.data as { id?: number }[]) : [];
      if (mode === 'skip' && runs.length > 0) {
        this.#log.debug('dbt job trigger skipped: a run of the job is in progress', { runs: runs.map((r) => r.id) });
        return;
      }
      if (mode === 'replace') {
        for (const r of runs) await this.#request('POST', `${base}/runs/${encodeURIComponent(String(r.id))}/cancel`);
      }
    }
    await this.#request('POST', `${base}/jobs/${encodeURIComponent(job)}/run`, { cause: (this.#cfg.cause ?? '') === '' ? 'Estuary Flow' : this.#cfg.cause! });
    this.#log.info('triggered dbt job', { job, mode });
  }

  async #request(method: string, url: string, body?: object): Promise<DbtResponse> {
    const res = await this.#fetch(url, {
      method,
      headers: { Authorization: `Bearer ${this.#cfg.api_key}`, 'Content-Type': CONTENT_TYPE, Accept: CONTENT_TYPE, 'User-Agent': 'Sluice materialize-sqlserver' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    let parsed: DbtResponse;
    try {
      parsed = JSON.parse(text) as DbtResponse;
    } catch {
      throw new Error(`dbt API ${method} ${url.split('?')[0]} answered HTTP ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    if (parsed.status?.is_success !== true) {
      throw new Error(`dbt API ${method} ${url.split('?')[0]} failed (HTTP ${res.status}): ${parsed.status?.user_message ?? 'no message'}`);
    }
    return parsed;
  }

  /** Session end: nothing more is scheduled; a run in progress completes. */
  close(): void {
    this.#closed = true;
    this.#cancel?.();
    this.#cancel = undefined;
  }
}
