// The control store: live specs, publications, controller state, connector statuses, shard failures,
// task metrics and refresh tokens, in SQLite (node:sqlite, WAL) under the data dir, so status survives
// restarts. It implements ControlRecorder (what the data plane reports) and answers the status API. What a
// live spec row holds is in live-spec.ts, task metrics in task-metrics.ts, refresh tokens in
// refresh-token-rows.ts; this file opens the database and keeps the live specs and publications.
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import type {
  ControlRecorder, PublicationOutcome, PublishInput, ShardFailureInput, TaskMetricsInput,
} from './recorder.ts';
import { IdGenerator } from './ids.ts';
import { makeDataDir, makePrivateFile } from '../data-dir.ts';
import { upgradeImage } from './upgrade.ts';
import {
  type ActivationState, type LiveSpecRow, type PublicationInfo, type Row, fromRow, hashSpec, imageOf, shardRef,
} from './live-spec.ts';
import { getToken, insertToken, type RefreshTokenRow, useToken } from './refresh-token-rows.ts';
import { addTaskMetrics, type MetricsRow, taskMetrics } from './task-metrics.ts';

export type { ActivationState, AlertState, LiveSpecRow, PublicationInfo, ShardRef } from './live-spec.ts';
export { hashSpec, imageOf, shardRef } from './live-spec.ts';
export type { MetricsRow } from './task-metrics.ts';
export type { RefreshTokenRow } from './refresh-token-rows.ts';

/** How many condensed entries of publication history each spec keeps (newest first). */
export const HISTORY_LIMIT = 5;
const DAY_MS = 24 * 3600 * 1000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS live_specs (
  catalog_name TEXT PRIMARY KEY,
  live_spec_id TEXT NOT NULL,
  spec_type TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  connected_json TEXT NOT NULL,
  disabled INTEGER NOT NULL,
  last_pub_id TEXT NOT NULL,
  last_build_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  controller_updated_at TEXT NOT NULL,
  controller_error TEXT,
  controller_failures INTEGER NOT NULL DEFAULT 0,
  controller_next_run TEXT,
  history_json TEXT NOT NULL,
  activation_json TEXT NOT NULL,
  alerts_json TEXT NOT NULL,
  passing INTEGER,
  connector_status_json TEXT,
  image_override TEXT
);
CREATE TABLE IF NOT EXISTS publications (
  id TEXT PRIMARY KEY,
  created TEXT NOT NULL,
  completed TEXT NOT NULL,
  detail TEXT NOT NULL,
  result TEXT NOT NULL,
  errors_json TEXT NOT NULL,
  specs_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shard_failures (
  catalog_name TEXT NOT NULL,
  build_id TEXT NOT NULL,
  ts TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS shard_failures_by_name ON shard_failures (catalog_name, build_id, ts);
CREATE TABLE IF NOT EXISTS task_metrics (
  task TEXT NOT NULL,
  binding TEXT NOT NULL,
  docs_read INTEGER NOT NULL DEFAULT 0,
  bytes_read INTEGER NOT NULL DEFAULT 0,
  docs_written INTEGER NOT NULL DEFAULT 0,
  bytes_written INTEGER NOT NULL DEFAULT 0,
  last_ts TEXT,
  PRIMARY KEY (task, binding)
);
CREATE TABLE IF NOT EXISTS refresh_tokens (
  id TEXT PRIMARY KEY,
  hash TEXT NOT NULL,
  subject TEXT NOT NULL,
  role TEXT NOT NULL,
  prefixes_json TEXT NOT NULL,
  multi_use INTEGER NOT NULL,
  valid_for_seconds INTEGER NOT NULL,
  uses INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  detail TEXT NOT NULL
);
`;

/** The control store's file in the data dir (its presence is what `token create` calls plane state). */
export const CONTROL_DB = 'control.db';

export class ControlStore implements ControlRecorder {
  readonly db: DatabaseSync;
  readonly ids: IdGenerator;

  constructor(dataDir: string) {
    makeDataDir(dataDir);
    // Refresh-token hashes: private from its creation (SQLite gives -wal/-shm the database file's mode).
    makePrivateFile(join(dataDir, CONTROL_DB));
    this.db = new DatabaseSync(join(dataDir, CONTROL_DB));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
    const max = this.db.prepare(`SELECT max(id) AS id FROM (
      SELECT max(id) AS id FROM publications UNION ALL SELECT max(live_spec_id) FROM live_specs UNION ALL SELECT max(id) FROM refresh_tokens)`).get() as Row | undefined;
    this.ids = new IdGenerator(typeof max?.id === 'string' ? max.id : undefined);
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  // ---- ControlRecorder ----

  publish(input: PublishInput): PublicationOutcome {
    return this.transaction(() => {
      const now = new Date();
      const ts = now.toISOString();
      const pubId = this.ids.next(now.getTime());
      const errors = input.errors ?? [];
      const buildIds = new Map<string, string>();
      const upgrades: { catalogName: string; from: string; to: string }[] = [];
      const ok = input.result === 'success';
      const names = new Set(input.specs.map((s) => s.catalogName));

      for (const s of input.specs) {
        const prev = this.get(s.catalogName);
        const hash = hashSpec(s.spec);
        if (!ok) {
          // A failed publication changes no live spec; existing specs record it in their history.
          if (prev) {
            const specErrors = errors.filter((e) => e.catalog_name === undefined || e.catalog_name === s.catalogName);
            this.pushHistory(prev, { id: pubId, created: ts, completed: ts, detail: input.detail, result: { type: input.result }, errors: specErrors });
            this.db.prepare('UPDATE live_specs SET history_json = ? WHERE catalog_name = ?').run(JSON.stringify(prev.history), s.catalogName);
          }
          continue;
        }
        buildIds.set(s.catalogName, pubId);
        const modified = !prev || prev.specType !== s.specType || this.hashOf(s.catalogName) !== hash;
        let detail = input.detail;
        let imageOverride = prev?.imageOverride ?? null;
        if (modified) {
          imageOverride = null;
          // Editing (not creating) a materialization on an older connector version upgrades it.
          if (prev && s.specType === 'materialization') {
            const image = imageOf(s.spec);
            const up = image === undefined ? null : upgradeImage(image);
            if (up) {
              imageOverride = up.image;
              upgrades.push({ catalogName: s.catalogName, from: up.from, to: up.to });
              detail = `${input.detail}; upgraded ${up.connector} from ${up.from} to ${up.to}`;
            }
          }
        }
        const info: PublicationInfo = { id: pubId, created: ts, completed: ts, detail, result: { type: 'success' } };
        if (!modified) info.is_touch = true;
        if (!prev) {
          const row: LiveSpecRow = {
            catalogName: s.catalogName, liveSpecId: this.ids.next(now.getTime()), specType: s.specType, spec: s.spec,
            connected: s.connected, disabled: s.disabled, lastPubId: pubId, lastBuildId: pubId, createdAt: ts, updatedAt: ts,
            controllerUpdatedAt: ts, controllerError: null, controllerFailures: 0, controllerNextRun: null,
            history: [], activation: {}, alerts: {}, passing: null, connectorStatus: null, imageOverride,
          };
          this.pushHistory(row, info);
          this.autoActivate(row, pubId, ts);
          this.insert(row, hash);
        } else {
          this.pushHistory(prev, info);
          prev.spec = s.spec;
          prev.connected = s.connected;
          prev.disabled = s.disabled;
          prev.specType = s.specType;
          if (modified) prev.lastPubId = pubId;
          prev.lastBuildId = pubId;
          prev.updatedAt = ts;
          prev.controllerUpdatedAt = ts;
          prev.imageOverride = imageOverride;
          if (modified && s.specType === 'test') prev.passing = null; // a changed test must run again
          this.autoActivate(prev, pubId, ts);
          this.insert(prev, hash);
        }
      }
      if (ok && input.partial !== true) {
        for (const r of this.db.prepare('SELECT catalog_name FROM live_specs').all() as Row[]) {
          const name = String(r.catalog_name);
          if (!names.has(name)) this.deleteSpec(name);
        }
      }
      this.db.prepare('INSERT INTO publications (id, created, completed, detail, result, errors_json, specs_json) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(pubId, ts, ts, input.detail + upgrades.map((u) => `; upgraded ${u.catalogName} from ${u.from} to ${u.to}`).join(''), input.result, JSON.stringify(errors), JSON.stringify([...names]));
      const upgradedImages = new Map<string, string>();
      for (const s of input.specs) {
        const o = ok ? this.get(s.catalogName)?.imageOverride : null;
        if (o) upgradedImages.set(s.catalogName, o);
      }
      return { pubId, buildIds, upgradedImages, upgrades };
    });
  }

  /** Collections and disabled tasks have nothing to start: the control plane activates them itself. */
  private autoActivate(row: LiveSpecRow, buildId: string, ts: string): void {
    if (row.specType === 'collection' || (row.disabled && row.specType !== 'test')) this.applyActivation(row, buildId, ts);
  }

  private applyActivation(row: LiveSpecRow, buildId: string, ts: string): void {
    const a = row.activation;
    a.last_activated = buildId;
    a.last_activated_at = ts;
    delete a.next_retry;
  }

  activated(catalogName: string, buildId: string, at: Date): void {
    this.update(catalogName, (row) => this.applyActivation(row, buildId, at.toISOString()));
  }

  shardStatus(catalogName: string, status: 'Ok' | 'Pending' | 'Failed', at: Date): void {
    this.update(catalogName, (row) => {
      const ts = at.toISOString();
      const cur = row.activation.shard_status;
      if (cur && cur.status === status) {
        cur.count = (cur.count ?? 1) + 1; // the schema leaves count optional; the store always writes it
        cur.last_ts = ts;
      } else {
        row.activation.shard_status = { status, first_ts: ts, last_ts: ts, count: 1 };
      }
      const alert = row.alerts.shard_failed;
      if (status === 'Ok' && alert && alert.state === 'firing') {
        alert.state = 'resolved';
        alert.resolved_at = ts;
        alert.last_ts = ts;
      }
    });
  }

  shardFailure(catalogName: string, failure: ShardFailureInput): void {
    this.update(catalogName, (row) => {
      const ts = failure.ts.toISOString();
      const build = row.activation.last_activated ?? row.lastBuildId;
      const f: NonNullable<ActivationState['last_failure']> = { shard: shardRef(catalogName, build), ts, message: failure.message };
      if (failure.fields) f.fields = failure.fields;
      row.activation.last_failure = f;
      if (failure.nextRetry) row.activation.next_retry = failure.nextRetry.toISOString();
      else delete row.activation.next_retry;
      this.db.prepare('INSERT INTO shard_failures (catalog_name, build_id, ts) VALUES (?, ?, ?)').run(catalogName, build, ts);
      const alert = row.alerts.shard_failed;
      if (alert && alert.state === 'firing') {
        alert.count += 1;
        alert.last_ts = ts;
        alert.error = failure.message;
      } else {
        row.alerts.shard_failed = { state: 'firing', spec_type: row.specType, first_ts: ts, last_ts: ts, error: failure.message, count: 1, resolved_at: null };
      }
    });
  }

  connectorStatus(catalogName: string, status: { message: string; fields?: JsonObject; ts: Date; buildId: string }): void {
    this.update(catalogName, (row) => {
      row.connectorStatus = { shard: shardRef(catalogName, status.buildId), ts: status.ts.toISOString(), message: status.message, fields: status.fields ?? {} };
    });
  }

  controllerRun(catalogName: string, result: { error: string | null; nextRun: Date | null; at: Date }): void {
    this.update(catalogName, (row) => {
      row.controllerError = result.error;
      row.controllerFailures = result.error === null ? 0 : row.controllerFailures + 1;
      row.controllerNextRun = result.nextRun ? result.nextRun.toISOString() : null;
      row.controllerUpdatedAt = result.at.toISOString();
    });
  }

  testResult(catalogName: string, result: { passing: boolean; error?: string; at: Date }): void {
    this.update(catalogName, (row) => {
      const ts = result.at.toISOString();
      row.passing = result.passing;
      row.controllerUpdatedAt = ts;
      const alert = row.alerts.test_failed;
      if (!result.passing) {
        const error = result.error ?? 'test failed';
        if (alert && alert.state === 'firing') { alert.count += 1; alert.last_ts = ts; alert.error = error; }
        else row.alerts.test_failed = { state: 'firing', spec_type: 'test', first_ts: ts, last_ts: ts, error, count: 1, resolved_at: null };
      } else if (alert && alert.state === 'firing') {
        alert.state = 'resolved';
        alert.resolved_at = ts;
        alert.last_ts = ts;
      }
    });
  }

  taskMetrics(catalogName: string, m: TaskMetricsInput): void {
    addTaskMetrics(this.db, catalogName, m);
  }

  // ---- queries ----

  get(catalogName: string): LiveSpecRow | undefined {
    const r = this.db.prepare('SELECT * FROM live_specs WHERE catalog_name = ?').get(catalogName) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  all(): LiveSpecRow[] {
    return (this.db.prepare('SELECT * FROM live_specs ORDER BY catalog_name').all() as Row[]).map(fromRow);
  }

  /** Failures over the last 24 hours for the currently activated build. */
  recentFailureCount(row: LiveSpecRow, now: Date): number {
    const build = row.activation.last_activated;
    if (build === undefined) return 0;
    const since = new Date(now.getTime() - DAY_MS).toISOString();
    const r = this.db.prepare('SELECT count(*) AS n FROM shard_failures WHERE catalog_name = ? AND build_id = ? AND ts > ?').get(row.catalogName, build, since) as Row;
    return Number(r.n);
  }

  failureTotal(task: string): number {
    const r = this.db.prepare('SELECT count(*) AS n FROM shard_failures WHERE catalog_name = ?').get(task) as Row;
    return Number(r.n);
  }

  metrics(prefix: string): MetricsRow[] {
    return taskMetrics(this.db, prefix);
  }

  publications(): { id: string; created: string; detail: string; result: string; errors: JsonValue; specs: string[] }[] {
    return (this.db.prepare('SELECT * FROM publications ORDER BY id').all() as Row[]).map((r) => ({
      id: String(r.id), created: String(r.created), detail: String(r.detail), result: String(r.result),
      errors: JSON.parse(String(r.errors_json)) as JsonValue, specs: JSON.parse(String(r.specs_json)) as string[],
    }));
  }

  // ---- refresh tokens ----

  insertToken(t: RefreshTokenRow): void {
    insertToken(this.db, t);
  }

  getToken(id: string): RefreshTokenRow | undefined {
    return getToken(this.db, id);
  }

  /** Compare-and-set of a token's hash (so a refresh token is used once even under concurrent exchanges). */
  useToken(id: string, expectedHash: string, newHash: string, now: Date): boolean {
    return useToken(this.db, id, expectedHash, newHash, now);
  }

  // ---- internals ----

  private hashOf(catalogName: string): string | undefined {
    const r = this.db.prepare('SELECT spec_hash FROM live_specs WHERE catalog_name = ?').get(catalogName) as Row | undefined;
    return r ? String(r.spec_hash) : undefined;
  }

  private deleteSpec(name: string): void {
    this.db.prepare('DELETE FROM live_specs WHERE catalog_name = ?').run(name);
    this.db.prepare('DELETE FROM shard_failures WHERE catalog_name = ?').run(name);
  }

  private pushHistory(row: LiveSpecRow, info: PublicationInfo): void {
    const head = row.history[0];
    const same = head && (head.is_touch ?? false) === (info.is_touch ?? false) && head.detail === info.detail
      && head.result?.type === info.result?.type && JSON.stringify(head.errors ?? []) === JSON.stringify(info.errors ?? []);
    if (head && same) {
      const count = (head.count ?? 1) + 1;
      row.history[0] = { ...info, count };
    } else {
      const entry = { ...info };
      if (entry.errors && entry.errors.length === 0) delete entry.errors;
      row.history.unshift(entry);
      row.history.length = Math.min(row.history.length, HISTORY_LIMIT);
    }
  }

  private insert(row: LiveSpecRow, hash: string): void {
    this.db.prepare(`INSERT OR REPLACE INTO live_specs (catalog_name, live_spec_id, spec_type, spec_json, spec_hash, connected_json, disabled,
        last_pub_id, last_build_id, created_at, updated_at, controller_updated_at, controller_error, controller_failures, controller_next_run,
        history_json, activation_json, alerts_json, passing, connector_status_json, image_override)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      row.catalogName, row.liveSpecId, row.specType, JSON.stringify(row.spec), hash, JSON.stringify(row.connected), row.disabled ? 1 : 0,
      row.lastPubId, row.lastBuildId, row.createdAt, row.updatedAt, row.controllerUpdatedAt, row.controllerError, row.controllerFailures,
      row.controllerNextRun, JSON.stringify(row.history), JSON.stringify(row.activation), JSON.stringify(row.alerts),
      row.passing === null ? null : row.passing ? 1 : 0, row.connectorStatus ? JSON.stringify(row.connectorStatus) : null, row.imageOverride,
    );
  }

  /** Read-modify-write of one live spec; reports for specs that are not live (deleted meanwhile) are dropped. */
  private update(catalogName: string, fn: (row: LiveSpecRow) => void): void {
    this.transaction(() => {
      const row = this.get(catalogName);
      if (!row) return;
      fn(row);
      this.insert(row, this.hashOf(catalogName)!);
    });
  }
}

