// The local plane: one journal store, the ingester's collection writers, and a runner per task.
// Every (re)load of the catalog is a publication: load → build (connector validate + field
// selection) → catalog tests → record the publication → apply → (re)start the tasks. A publication that
// fails to load, build or test is recorded as such and the running tasks are left as they were.
import type { CaptureSpec, MaterializationSpec } from '@sluice/runtime';
import { applyCapture, applyMaterialization, buildCapture, buildMaterialization } from './build/build.ts';
import { loadCatalog } from './catalog/load.ts';
import type { BuiltCapture, BuiltMaterialization, Catalog } from './catalog/types.ts';
import { publishedSpecsOf } from './control/publish.ts';
import type { ControlRecorder, JobStatusType } from './control/recorder.ts';
import { createIngestHandler } from './ingest/ingest.ts';
import { JournalStore } from './journals/store.ts';
import { UuidProducer } from './journals/uuid.ts';
import { SchemaValidators } from './journals/validator.ts';
import { CollectionWriters } from './journals/writer.ts';
import { runCaptureSession } from './tasks/capture.ts';
import { runCatalogTest, type TestOutcome } from './tasks/catalog-tests.ts';
import { Launcher } from './tasks/launcher.ts';
import { runMaterializeSession } from './tasks/materialize.ts';
import { TaskRunner } from './tasks/runner.ts';

export interface LocalPlaneOptions {
  catalogFile: string;
  dataDir: string;
  recorder: ControlRecorder;
  launcher?: Launcher;
  log?: (message: string) => void;
  /** Cap on the failure back-off (ms); tests shorten it. */
  maxBackoffMs?: number;
}

export interface PublishResult {
  result: JobStatusType;
  pubId?: string;
  errors: string[];
  tests: TestOutcome[];
  /** Apply results by task name. */
  applied: { name: string; actionDescription: string }[];
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
  #publishing: Promise<unknown> = Promise.resolve();

  constructor(options: LocalPlaneOptions) {
    this.options = options;
    this.store = JournalStore.open(options.dataDir);
    this.writers = new CollectionWriters(this.#validators, this.#uuids);
    this.launcher = options.launcher ?? new Launcher();
  }

  /** The /ingest HTTP handler over this plane's store and current collections. */
  ingestHandler() {
    return createIngestHandler({ store: () => this.store, writers: () => this.writers });
  }

  /** Publishes the catalog file; concurrent calls run one after another. */
  publish(): Promise<PublishResult> {
    const next = this.#publishing.then(() => this.#publish());
    this.#publishing = next.catch(() => undefined);
    return next;
  }

  async #publish(): Promise<PublishResult> {
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
      return { result: 'buildFailed', pubId: outcome.pubId, errors, tests: [], applied: [] };
    }

    const errors: { detail: string; catalog_name?: string }[] = [];
    const captures: BuiltCapture[] = [];
    const materializations: BuiltMaterialization[] = [];
    const buildOpts = (name: string) => {
      const last = this.#lastSpecs.get(name);
      return { launcher: this.launcher, version: '', apply: false, ...(last ? { last } : {}) };
    };
    for (const def of catalog.captures.values()) {
      if (def.disabled) continue;
      try {
        captures.push(await buildCapture(catalog, def, buildOpts(def.name)));
      } catch (err) {
        errors.push({ detail: (err as Error).message, catalog_name: def.name });
      }
    }
    for (const def of catalog.materializations.values()) {
      if (def.disabled) continue;
      try {
        materializations.push(await buildMaterialization(catalog, def, buildOpts(def.name)));
      } catch (err) {
        errors.push({ detail: (err as Error).message, catalog_name: def.name });
      }
    }
    const tests = errors.length ? [] : [...catalog.tests.values()].map((t) => runCatalogTest(catalog, t));
    const result: JobStatusType = errors.length ? 'buildFailed' : tests.some((t) => !t.passing) ? 'testFailed' : 'success';
    const testErrors = tests.filter((t) => !t.passing).map((t) => ({ detail: `test "${t.name}" failed: ${t.error ?? ''}`, catalog_name: t.name }));
    const outcome = recorder.publish({ specs: publishedSpecsOf(catalog), detail, result, errors: [...errors, ...testErrors] });
    for (const t of tests) {
      recorder.testResult(t.name, { passing: t.passing, at: new Date(), ...(t.error ? { error: t.error } : {}) });
    }
    const summary: PublishResult = { result, pubId: outcome.pubId, errors: [...errors, ...testErrors].map((e) => e.detail), tests, applied: [], catalog };
    if (result !== 'success') {
      log(`publication ${outcome.pubId} ${result}: ${summary.errors.join('; ')}`);
      return summary;
    }

    // Activate: stop the old shards, switch the ingester to the new collections, apply and start.
    await Promise.all([...this.runners.values()].map((r) => r.stop()));
    this.runners.clear();
    this.catalog = catalog;
    this.writers.setCollections([...catalog.collections.values()].map((c) => c.spec));
    for (const c of catalog.collections.values()) recorder.controllerRun(c.name, { error: null, nextRun: null, at: new Date() });
    for (const t of catalog.tests.values()) recorder.controllerRun(t.name, { error: null, nextRun: null, at: new Date() });
    const tasks: { built: BuiltCapture | BuiltMaterialization; kind: 'capture' | 'materialization' }[] = [
      ...captures.map((built) => ({ built, kind: 'capture' as const })),
      ...materializations.map((built) => ({ built, kind: 'materialization' as const })),
    ];
    for (const { built, kind } of tasks) {
      const name = built.def.name;
      const buildId = outcome.buildIds.get(name) ?? outcome.pubId;
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
        continue;
      }
      this.#lastSpecs.set(name, built.spec);
      recorder.controllerRun(name, { error: null, nextRun: null, at: new Date() });
      this.#startTask(built, kind, buildId);
    }
    log(`publication ${outcome.pubId}: ${catalog.collections.size} collection(s), ${captures.length} capture(s), ${materializations.length} materialization(s), ${tests.length} test(s) passed`);
    return summary;
  }

  #startTask(built: BuiltCapture | BuiltMaterialization, kind: 'capture' | 'materialization', buildId: string): void {
    const { recorder } = this.options;
    const name = built.def.name;
    const runner = new TaskRunner({
      name, kind, buildId, recorder,
      intervalSeconds: kind === 'capture' ? (built as BuiltCapture).def.intervalSeconds : 0,
      ...(this.options.log ? { log: this.options.log } : {}),
      ...(this.options.maxBackoffMs !== undefined ? { maxBackoffMs: this.options.maxBackoffMs } : {}),
      runSession: async (ctx) => {
        if (kind === 'capture') {
          const spec = built.spec as CaptureSpec;
          await runCaptureSession({
            name, spec, version: buildId, store: this.store, validators: this.#validators, uuids: this.#uuids, signal: ctx.signal,
            session: this.launcher.capture(built.def.endpoint, name, { onLog: ctx.onLog }),
            onOpened: ctx.opened,
            onCommit: (info) => {
              for (const b of info.perBinding) {
                if (b.docs > 0) recorder.taskMetrics(name, { binding: b.collection, docsWritten: b.docs, bytesWritten: b.bytes, ts: new Date() });
              }
            },
          });
        } else {
          const spec = built.spec as MaterializationSpec;
          const session = this.launcher.materialize(built.def.endpoint, name, { onLog: ctx.onLog });
          // A graceful stop waits for the open transaction; a connector that hangs is killed.
          const kill = () => setTimeout(() => session.kill(), 10_000).unref();
          ctx.signal.addEventListener('abort', kill, { once: true });
          try {
            await runMaterializeSession({
              name, spec, version: buildId, store: this.store, signal: ctx.signal, session,
              onOpened: ctx.opened,
              onTransaction: (info) => {
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
    this.runners.set(name, runner);
    runner.start();
  }

  /** Stops every task and closes the store. */
  async close(): Promise<void> {
    await this.#publishing;
    await Promise.all([...this.runners.values()].map((r) => r.stop()));
    this.runners.clear();
    this.store.close();
  }
}
