// The local plane: one journal store, the ingester's collection writers, and a runner per task.
// Every (re)load of the catalog is a publication: load → build (connector validate + field
// selection) → catalog tests → record the publication → apply and (re)start the tasks whose built spec
// changed (unchanged ones keep running on the new build; removed ones stop). A publication that fails
// to load, build or test is recorded as such and the running tasks are left as they were.
import type { CaptureSpec, JsonObject, MaterializationSpec, MaterializeRequest } from '@sluice/runtime';
import { applyCapture, applyMaterialization, buildCapture, buildMaterialization } from './build/build.ts';
import type { IncompatibleOutcome } from './build/build.ts';
import { loadCatalog } from './catalog/load.ts';
import type { BuiltCapture, BuiltMaterialization, CaptureDef, Catalog, MaterializationDef } from './catalog/types.ts';
import { publishedSpecsOf } from './control/publish.ts';
import type { ControlRecorder, JobStatusType } from './control/recorder.ts';
import { hashSpec } from './control/store.ts';
import { createIngestHandler } from './ingest/ingest.ts';
import { JournalStore } from './journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from './journals/validator.ts';
import { CollectionWriters } from './journals/writer.ts';
import { runCaptureSession } from './tasks/capture.ts';
import { runCatalogTest, type TestOutcome } from './tasks/catalog-tests.ts';
import { Launcher } from './tasks/launcher.ts';
import { materializeInThread, prepareMaterialization, releasePreparedMaterialization, runMaterializeSession, unaryInPrepared, type PreparedMaterialization } from './tasks/materialize.ts';
import { TaskRunner } from './tasks/runner.ts';
import { releaseMaterializationThread } from './tasks/materialize-threads.ts';

export interface LocalPlaneOptions {
  catalogFile: string;
  dataDir: string;
  recorder: ControlRecorder;
  launcher?: Launcher;
  log?: (message: string) => void;
  /** Cap on the failure back-off (ms); tests shorten it. */
  maxBackoffMs?: number;
  /** First failure back-off (ms; default 1 s); tests shorten it. */
  baseBackoffMs?: number;
  /** Receives the tasks' progress lines (see TaskRunnerOptions.progress); unset: none. */
  progress?: (line: string) => void;
  /** Least time between two progress lines of a task (default 5 s). */
  progressIntervalMs?: number;
  /** The names of the live specs in this data dir (the control store's), for the deletions guard. */
  liveSpecNames?: () => string[];
  /** Publish even when the catalog deletes more live specs than it adds (`--allow-deletions`). */
  allowDeletions?: boolean;
}

export interface PublishResult {
  result: JobStatusType;
  pubId?: string;
  errors: string[];
  tests: TestOutcome[];
  /** Apply results by task name (tasks started or restarted by this publication). */
  applied: { name: string; actionDescription: string }[];
  /** Tasks (re)started by this publication. */
  started: string[];
  /** Running tasks whose built spec did not change: they moved to the new build without a restart. */
  unchanged: string[];
  /** Images upgraded by this publication (SPEC, Versioning). */
  upgrades: { catalogName: string; from: string; to: string }[];
  /** Live specs this publication deletes (absent from the catalog), or would have deleted when refused. */
  deleted: string[];
  /** True when the publication was refused because it deletes more live specs than it adds. */
  deletionsRefused?: boolean;
  catalog?: Catalog;
}

export class LocalPlane {
  readonly options: LocalPlaneOptions;
  readonly store: JournalStore;
  readonly writers: CollectionWriters;
  readonly launcher: Launcher;
  readonly runners = new Map<string, TaskRunner>();
  catalog: Catalog | undefined;
  readonly #validators = new SchemaValidators();
  readonly #uuids = new UuidProducer();
  readonly #lastSpecs = new Map<string, CaptureSpec | MaterializationSpec>();
  /** Materializations' threads started ahead of their first session by the current publication, by task. */
  readonly #prepared = new Map<string, PreparedMaterialization>();
  #publishing: Promise<unknown> = Promise.resolve();

  constructor(options: LocalPlaneOptions) {
    this.options = options;
    this.store = JournalStore.open(options.dataDir);
    this.writers = new CollectionWriters(this.#validators, this.#uuids);
    this.launcher = options.launcher ?? new Launcher();
  }

  /** The /ingest HTTP handler over this plane's store and current collections. */
  ingestHandler() {
    return createIngestHandler({ store: () => this.store, writers: () => this.writers, ...(this.options.log ? { log: this.options.log } : {}) });
  }

  /** Publishes the catalog file; concurrent calls run one after another. */
  publish(): Promise<PublishResult> {
    const next = this.#publishing.then(() => this.#publish());
    this.#publishing = next.catch(() => undefined);
    return next;
  }

  async #publish(): Promise<PublishResult> {
    try {
      return await this.#publishCatalog();
    } finally {
      // What this publication started ahead and did not use (Launcher.prestart, prepareMaterialization); not
      // awaited: they only exit.
      void this.launcher.releaseSpares();
      this.#releasePrepared();
      // The thread serve or start began ahead (cli/main.ts), when no new materialization took it.
      releaseMaterializationThread();
    }
  }

  #releasePrepared(): void {
    for (const p of this.#prepared.values()) releasePreparedMaterialization(p);
    this.#prepared.clear();
  }

  async #publishCatalog(): Promise<PublishResult> {
    const { recorder } = this.options;
    const log = this.options.log ?? (() => undefined);
    const detail = `sluice: publish ${this.options.catalogFile}`;
    let catalog: Catalog;
    try {
      catalog = await loadCatalog(this.options.catalogFile);
    } catch (err) {
      const errors = [(err as Error).message];
      const outcome = recorder.publish({ specs: [], detail, result: 'buildFailed', errors: errors.map((e) => ({ detail: e })) });
      log(`publication ${outcome.pubId} failed: ${errors[0]}`);
      return { result: 'buildFailed', pubId: outcome.pubId, errors, tests: [], applied: [], started: [], unchanged: [], upgrades: [], deleted: [] };
    }

    // A catalog is the whole set of live specs: what it leaves out is deleted. Publishing the wrong catalog
    // against a data dir (another project's ./data) would silently delete its specs, so a publication that
    // deletes more than it adds needs allowDeletions; any deletion is logged by name.
    const names = new Set(publishedSpecsOf(catalog).map((spec) => spec.catalogName));
    const live = this.options.liveSpecNames?.() ?? [];
    const deleted = live.filter((name) => !names.has(name)).sort();
    const added = [...names].filter((name) => !live.includes(name));
    if (deleted.length > added.length && this.options.allowDeletions !== true) {
      const error = `this publication of ${this.options.catalogFile} would delete ${deleted.length} live spec(s) of the data dir ${this.options.dataDir} ` +
        `and add ${added.length}: ${deleted.join(', ')}. Pass --allow-deletions to delete them, or --data-dir to use another data dir`;
      const outcome = recorder.publish({ specs: [], detail, result: 'publishFailed', errors: [{ detail: error }], partial: true });
      log(`publication ${outcome.pubId} refused: ${error}`);
      return { result: 'publishFailed', pubId: outcome.pubId, errors: [error], tests: [], applied: [], started: [], unchanged: [], upgrades: [], deleted, deletionsRefused: true };
    }

    // Each task's connector process starts now, together (Launcher.prestart): it answers the task's validate,
    // then, for a task not running yet, its apply as soon as validate's results are in, and then its session
    // (Launcher.unary keeps it for the task's next RPC). A new materialization's session runs on a thread of
    // its own: that thread starts now with its connector (prepareMaterialization), and the publication's
    // RPCs go to it (Launcher.route), so the session's connector is the one that answered them.
    for (const def of catalog.captures.values()) if (!def.disabled) this.launcher.prestart(def.endpoint, def.name, 'capture', 1);
    for (const def of catalog.materializations.values()) {
      if (def.disabled) continue;
      if (!this.runners.has(def.name) && this.launcher.prestartable(def.endpoint)) {
        const prepared = prepareMaterialization(def.name, this.launcher.target(def.endpoint, def.name));
        this.#prepared.set(def.name, prepared);
        this.launcher.route(def.endpoint, def.name, 'materialize', (request, variant) => unaryInPrepared(prepared, request as MaterializeRequest, variant));
      } else {
        this.launcher.prestart(def.endpoint, def.name, 'materialize', 1);
      }
    }

    const errors: { detail: string; catalog_name?: string }[] = [];
    const captures: BuiltCapture[] = [];
    const materializations: BuiltMaterialization[] = [];
    const buildOpts = (name: string) => {
      const last = this.#lastSpecs.get(name);
      return { launcher: this.launcher, version: '', apply: false, ...(last ? { last } : {}) };
    };
    // Tasks build concurrently (each runs its connector's validate); results keep catalog order.
    const built = await Promise.allSettled([
      ...[...catalog.captures.values()].filter((d) => !d.disabled).map(async (def) => ({ kind: 'capture' as const, name: def.name, built: await buildCapture(catalog, def, buildOpts(def.name)) })),
      ...[...catalog.materializations.values()].filter((d) => !d.disabled).map(async (def) => ({ kind: 'materialization' as const, name: def.name, built: await buildMaterialization(catalog, def, buildOpts(def.name)) })),
    ]);
    const order = [...catalog.captures.values(), ...catalog.materializations.values()].filter((d) => !d.disabled).map((d) => d.name);
    for (const [i, r] of built.entries()) {
      if (r.status === 'rejected') errors.push({ detail: (r.reason as Error).message, catalog_name: order[i]! });
      else if (r.value.kind === 'capture') captures.push(r.value.built as BuiltCapture);
      else {
        // onIncompatibleSchemaChange (build.ts): what was done is logged; disableTask leaves the task out.
        const m = r.value.built as BuiltMaterialization & Partial<{ incompatible: IncompatibleOutcome }>;
        for (const note of m.incompatible?.notes ?? []) log(`${m.def.name}: ${note}`);
        if (m.incompatible?.disabledTask !== undefined) log(`${m.def.name}: not run: ${m.incompatible.disabledTask}`);
        else materializations.push(m);
      }
    }
    const tests = errors.length ? [] : [...catalog.tests.values()].map((t) => runCatalogTest(catalog, t));
    const result: JobStatusType = errors.length ? 'buildFailed' : tests.some((t) => !t.passing) ? 'testFailed' : 'success';
    const testErrors = tests.filter((t) => !t.passing).map((t) => ({ detail: `test "${t.name}" failed: ${t.error ?? ''}`, catalog_name: t.name }));
    const outcome = recorder.publish({ specs: publishedSpecsOf(catalog), detail, result, errors: [...errors, ...testErrors] });
    for (const t of tests) {
      recorder.testResult(t.name, { passing: t.passing, at: new Date(), ...(t.error ? { error: t.error } : {}) });
    }
    const summary: PublishResult = { result, pubId: outcome.pubId, errors: [...errors, ...testErrors].map((e) => e.detail), tests, applied: [], started: [], unchanged: [], upgrades: [], deleted: result === 'success' ? deleted : [], catalog };
    if (summary.deleted.length) log(`publication ${outcome.pubId}: deleted ${summary.deleted.length} live spec(s) no longer in the catalog: ${summary.deleted.join(', ')}`);
    if (result !== 'success') {
      log(`publication ${outcome.pubId} ${result}: ${summary.errors.join('; ')}`);
      return summary;
    }

    // Activate. A task whose built spec and endpoint are unchanged keeps its running shard and only
    // moves to the new build; changed tasks are restarted (after their apply), new ones started, and
    // tasks no longer in the catalog (removed or disabled) stopped.
    const upgraded = outcome.upgradedImages ?? new Map<string, string>();
    for (const u of outcome.upgrades ?? []) {
      summary.upgrades.push(u);
      log(`${u.catalogName}: upgraded from ${u.from} to ${u.to}`);
    }
    const tasks: { built: BuiltCapture | BuiltMaterialization; kind: 'capture' | 'materialization' }[] = [
      ...captures.map((built) => ({ built, kind: 'capture' as const })),
      ...materializations.map((built) => ({ built, kind: 'materialization' as const })),
    ];
    const wanted = new Set(tasks.map((t) => t.built.def.name));
    await Promise.all([...this.runners].filter(([name]) => !wanted.has(name)).map(async ([name, runner]) => {
      this.runners.delete(name);
      this.#lastSpecs.delete(name);
      await runner.stop();
      log(`${name}: stopped (no longer in the catalog, or disabled)`);
    }));
    this.catalog = catalog;
    this.writers.setCollections([...catalog.collections.values()].map((c) => c.spec));
    for (const c of catalog.collections.values()) recorder.controllerRun(c.name, { error: null, nextRun: null, at: new Date() });
    for (const t of catalog.tests.values()) recorder.controllerRun(t.name, { error: null, nextRun: null, at: new Date() });
    // Tasks activate concurrently: each one's stop, apply and start are independent of the others'.
    const activate = async (task: (typeof tasks)[number]): Promise<void> => {
      const kind = task.kind;
      let built = task.built;
      const name = built.def.name;
      const buildId = outcome.buildIds.get(name) ?? outcome.pubId;
      try {
        // The control plane upgraded this task's image (SPEC, Versioning): build it with the image it
        // will run, so validate, apply and the sessions all talk to the upgraded connector.
        const image = upgraded.get(name);
        if (image !== undefined && built.def.endpoint.kind === 'connector' && built.def.endpoint.image !== image) {
          const def = { ...built.def, endpoint: { ...built.def.endpoint, image } };
          const opts = buildOpts(name);
          built = kind === 'capture'
            ? await buildCapture(catalog, def as CaptureDef, opts)
            : await buildMaterialization(catalog, def as MaterializationDef, opts);
        }
      } catch (err) {
        const message = (err as Error).message;
        recorder.controllerRun(name, { error: `build with the upgraded image failed: ${message}`, nextRun: null, at: new Date() });
        summary.errors.push(message);
        log(`${name}: build with the upgraded image failed: ${message}`);
        return;
      }
      const fingerprint = hashSpec({ spec: built.spec, endpoint: built.def.endpoint } as unknown as JsonObject);
      const running = this.runners.get(name);
      if (running && running.fingerprint === fingerprint) {
        // Keeps its controller state too (e.g. a capture's next scheduled run).
        running.retarget(buildId);
        summary.unchanged.push(name);
        return;
      }
      if (running) {
        this.runners.delete(name);
        await running.stop();
      }
      try {
        const last = this.#lastSpecs.get(name);
        const applyOpts = { launcher: this.launcher, version: buildId, ...(last ? { last } : {}) };
        const actionDescription = kind === 'capture'
          ? await applyCapture(built as BuiltCapture, applyOpts)
          : await applyMaterialization(built as BuiltMaterialization, applyOpts);
        summary.applied.push({ name, actionDescription });
        if (actionDescription) log(`${name}: applied: ${actionDescription}`);
      } catch (err) {
        const message = (err as Error).message;
        recorder.controllerRun(name, { error: `apply failed: ${message}`, nextRun: null, at: new Date() });
        summary.errors.push(message);
        log(`${name}: apply failed: ${message}`);
        return;
      }
      this.#lastSpecs.set(name, built.spec);
      recorder.controllerRun(name, { error: null, nextRun: null, at: new Date() });
      this.#startTask(built, kind, buildId, fingerprint);
      summary.started.push(name);
    };
    const activating = Promise.all(tasks.map(activate));
    await activating;
    summary.started.sort();
    summary.unchanged.sort();
    summary.applied.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    log(`publication ${outcome.pubId}: ${catalog.collections.size} collection(s), ${captures.length} capture(s), ${materializations.length} materialization(s), ${tests.length} test(s) passed; started ${summary.started.length} task(s), ${summary.unchanged.length} unchanged`);
    return summary;
  }

  #startTask(built: BuiltCapture | BuiltMaterialization, kind: 'capture' | 'materialization', buildId: string, fingerprint: string): void {
    const { recorder } = this.options;
    const name = built.def.name;
    const runner = new TaskRunner({
      name, kind, buildId, recorder,
      intervalSeconds: kind === 'capture' ? (built as BuiltCapture).def.intervalSeconds : 0,
      ...(this.options.log ? { log: this.options.log } : {}),
      ...(this.options.maxBackoffMs !== undefined ? { maxBackoffMs: this.options.maxBackoffMs } : {}),
      ...(this.options.baseBackoffMs !== undefined ? { baseBackoffMs: this.options.baseBackoffMs } : {}),
      ...(this.options.progress ? { progress: this.options.progress } : {}),
      ...(this.options.progressIntervalMs !== undefined ? { progressIntervalMs: this.options.progressIntervalMs } : {}),
      runSession: async (ctx) => {
        if (kind === 'capture') {
          const spec = built.spec as CaptureSpec;
          await runCaptureSession({
            name, spec, version: ctx.buildId, store: this.store, validators: this.#validators, uuids: this.#uuids, signal: ctx.signal,
            session: this.launcher.capture(built.def.endpoint, name, { onLog: ctx.onLog }),
            onOpened: ctx.opened,
            onCommit: (info) => {
              ctx.committed(info.perBinding.reduce((m, b) => ({ docs: m.docs + b.docs, bytes: m.bytes + b.bytes }), { docs: 0, bytes: 0 }));
              for (const b of info.perBinding) {
                if (b.docs > 0) recorder.taskMetrics(name, { binding: b.collection, docsWritten: b.docs, bytesWritten: b.bytes, ts: new Date() });
              }
            },
          });
        } else {
          const spec = built.spec as MaterializationSpec;
          // The materialization's per-document work runs on a thread of its own (materializeInThread), so
          // that the captures on this thread do not starve it.
          // The first session takes the thread its publication started ahead (prepareMaterialization), if any.
          const prepared = this.#prepared.get(name);
          this.#prepared.delete(name);
          const session = materializeInThread(this.launcher.target(built.def.endpoint, name), { onLog: ctx.onLog }, prepared);
          // A graceful stop waits for the open transaction; a connector that hangs is killed.
          const kill = () => setTimeout(() => session.kill(), 10_000).unref();
          ctx.signal.addEventListener('abort', kill, { once: true });
          try {
            await runMaterializeSession({
              name, spec, version: ctx.buildId, store: this.store, signal: ctx.signal, session,
              jsonKeys: this.launcher.runsBuiltin(built.def.endpoint),
              onOpened: ctx.opened,
              onTransaction: (info) => {
                ctx.committed(info.perBinding.reduce((m, b) => ({ docs: m.docs + b.docsRead, bytes: m.bytes + b.bytesRead }), { docs: 0, bytes: 0 }));
                for (const b of info.perBinding) {
                  if (b.docsRead > 0) recorder.taskMetrics(name, { binding: b.collection, docsRead: b.docsRead, bytesRead: b.bytesRead, docsWritten: b.stored, ts: new Date() });
                }
              },
            });
          } finally {
            ctx.signal.removeEventListener('abort', kill);
          }
        }
      },
    });
    runner.fingerprint = fingerprint;
    this.runners.set(name, runner);
    runner.start();
  }

  /** Stops every task and closes the store. */
  async close(): Promise<void> {
    await this.#publishing;
    await Promise.all([...this.runners.values()].map((r) => r.stop()));
    this.runners.clear();
    await this.launcher.releaseSpares();
    this.#releasePrepared();
    this.store.close();
  }
}
