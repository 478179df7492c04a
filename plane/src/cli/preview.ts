// `sluice preview --catalog flow.yaml [--name task] [--fixture docs.jsonl] [--sessions N]
//  [--output-state] [--output-apply] [--initial-state json] [--timeout seconds]`, like `flowctl preview`:
// runs ONE task for real (validate, apply, open) against a temporary journal store; nothing is
// published. A capture prints `["<collection>", <doc>]` per committed document (the UUID replaced by a
// placeholder) and, with --output-state, `["connectorState", {updated, mergePatch}]` per commit.
// A materialization reads the fixture (JSON lines `["<collection>", <doc>]` with `{"commit": true}`
// between transactions, or a JSON array of transactions) and prints only state and apply output.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { applyCapture, applyMaterialization, buildCapture, buildMaterialization } from '../build/build.ts';
import { loadCatalog } from '../catalog/load.ts';
import type { Catalog } from '../catalog/types.ts';
import { JournalStore } from '../journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../journals/validator.ts';
import { CollectionWriters, DocumentError } from '../journals/writer.ts';
import { runCaptureSession } from '../tasks/capture.ts';
import { Launcher } from '../tasks/launcher.ts';
import { runMaterializeSession } from '../tasks/materialize.ts';
import { parse, positiveInt, runCommand, UsageError } from './plane-common.ts';

export const description = 'run one capture or materialization of a catalog locally and print its output (like flowctl preview)';
const USAGE = `usage: sluice preview --catalog flow.yaml [--name TASK] [options]

Runs one capture or materialization of the catalog for real (validate, apply, open) against a temporary journal
store; nothing is published. A capture prints ["<collection>", <doc>] per committed document; a materialization
reads --fixture and prints only state and apply output.
  --catalog FILE          the flow.yaml (required)
  --name TASK             the capture or materialization to run (required when the catalog has several)
  --fixture FILE          materializations: JSON lines ["<collection>", {doc}] with {"commit": true} between
                          transactions, or a JSON array of transactions
  --sessions N            split the run over N connector sessions (default 1)
  --fresh                 materializations with a sqlite endpoint: write into a temporary database instead of the
                          endpoint's (needed when that one already holds a checkpoint for the task)
  --output-state          print ["connectorState", {updated, mergePatch}] per commit
  --output-apply          print ["applied.actionDescription", "..."]
  --initial-state JSON    captures: the connector state of the first session
  --timeout SECONDS       captures: stop each session after this long (default: run until the connector ends)
  --container-engine E    docker or podman: run image connectors in containers
  -h, --help              this help`;
export const DOC_UUID_PLACEHOLDER = 'DocUUIDPlaceholder-329Bb50aa48EAa9ef';

type Out = (line: string) => void;

/** Fixture transactions: arrays of [collection, document] pairs. */
export function parseFixture(text: string, file: string): [string, JsonObject][][] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[[') || trimmed.startsWith('[\n') || trimmed === '[]') {
    try {
      const txns = JSON.parse(trimmed) as unknown;
      if (Array.isArray(txns) && txns.every((t) => Array.isArray(t) && t.every((p) => Array.isArray(p)))) return txns as [string, JsonObject][][];
    } catch {
      // fall through to JSON lines
    }
  }
  const txns: [string, JsonObject][][] = [];
  let current: [string, JsonObject][] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new UsageError(`${file}:${i + 1}: not JSON: ${(err as Error).message}`);
    }
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && v[1] !== null && typeof v[1] === 'object' && !Array.isArray(v[1])) {
      current.push([v[0], v[1] as JsonObject]);
    } else if (v !== null && typeof v === 'object' && !Array.isArray(v) && (v as JsonObject).commit === true) {
      txns.push(current);
      current = [];
    } else {
      throw new UsageError(`${file}:${i + 1}: expected ["<collection>", {document}] or {"commit": true}`);
    }
  });
  if (current.length) txns.push(current);
  return txns.filter((t) => t.length > 0);
}

function pickTask(catalog: Catalog, name: string | undefined): { kind: 'capture' | 'materialization'; name: string } {
  const all = [...[...catalog.captures.keys()].map((n) => ({ kind: 'capture' as const, name: n })), ...[...catalog.materializations.keys()].map((n) => ({ kind: 'materialization' as const, name: n }))];
  if (name !== undefined) {
    const t = all.find((x) => x.name === name);
    if (!t) throw new UsageError(`--name ${name}: no capture or materialization of that name in ${catalog.file} (it has: ${all.map((x) => x.name).join(', ') || 'none'})`);
    return t;
  }
  if (all.length === 1) return all[0]!;
  throw new UsageError(all.length === 0 ? `${catalog.file} has no captures or materializations to preview` : `${catalog.file} has ${all.length} tasks; choose one with --name (${all.map((x) => x.name).join(', ')})`);
}

export async function previewCommand(argv: string[], out: Out = (l) => process.stdout.write(l + '\n')): Promise<number> {
  return runCommand(async () => {
    const { values } = parse(argv, {
      catalog: { type: 'string' }, name: { type: 'string' }, fixture: { type: 'string' }, sessions: { type: 'string' },
      'output-state': { type: 'boolean' }, 'output-apply': { type: 'boolean' }, 'initial-state': { type: 'string' }, timeout: { type: 'string' },
      'container-engine': { type: 'string' }, fresh: { type: 'boolean' },
    }, USAGE);
    if (!values.catalog) throw new UsageError(`--catalog is required\n${USAGE}`);
    const engine = values['container-engine'];
    if (engine !== undefined && engine !== 'docker' && engine !== 'podman') throw new UsageError(`--container-engine must be docker or podman, got ${JSON.stringify(engine)}`);
    const sessions = Math.max(1, positiveInt(values.sessions, '--sessions', 1));
    const timeoutS = positiveInt(values.timeout, '--timeout', 0);
    let initialState: JsonObject | undefined;
    if (values['initial-state'] !== undefined) {
      try {
        initialState = JSON.parse(values['initial-state']) as JsonObject;
      } catch (err) {
        throw new UsageError(`--initial-state is not JSON: ${(err as Error).message}`);
      }
    }
    const catalog = await loadCatalog(resolve(values.catalog));
    const task = pickTask(catalog, values.name);
    const launcher = new Launcher(engine ? { containerEngine: engine } : {});
    const dir = mkdtempSync(join(tmpdir(), 'sluice-preview-'));
    const store = JournalStore.open(dir, { synchronous: 'NORMAL' });
    const version = '0000000000000001';
    try {
      if (task.kind === 'capture') {
        const def = catalog.captures.get(task.name)!;
        const built = await buildCapture(catalog, def, { launcher, version, apply: false });
        const action = await applyCapture(built, { launcher, version });
        if (values['output-apply']) out(JSON.stringify(['applied.actionDescription', action]));
        const validators = new SchemaValidators();
        const uuids = new UuidProducer();
        // On a terminal, progress goes to stderr (stdout carries the documents).
        const progress = process.stderr.isTTY === true;
        const started = Date.now();
        let docsSeen = 0;
        let bytesSeen = 0;
        for (let s = 0; s < sessions; s++) {
          const ac = new AbortController();
          const timer = timeoutS > 0 ? setTimeout(() => ac.abort(), timeoutS * 1000) : undefined;
          try {
            await runCaptureSession({
              name: def.name, spec: built.spec, version, store, validators, uuids, signal: ac.signal, collectDocs: true,
              session: launcher.capture(def.endpoint, def.name),
              ...(s === 0 && initialState ? { initialState } : {}),
              onCommit: (info) => {
                for (const d of info.docs ?? []) {
                  const doc = JSON.parse(d.json) as JsonObject;
                  const meta = doc._meta;
                  if (meta !== null && typeof meta === 'object' && !Array.isArray(meta) && 'uuid' in meta) meta.uuid = DOC_UUID_PLACEHOLDER;
                  out(JSON.stringify([d.collection, doc]));
                }
                if (values['output-state'] && info.state) out(JSON.stringify(['connectorState', info.state]));
                if (progress) {
                  for (const b of info.perBinding) { docsSeen += b.docs; bytesSeen += b.bytes; }
                  const secs = Math.max((Date.now() - started) / 1000, 0.001);
                  process.stderr.write(`\r  session ${s + 1}/${sessions}: ${docsSeen.toLocaleString('en-US')} documents, ${(bytesSeen / 1024 / 1024).toFixed(1)} MB, ${Math.round(docsSeen / secs).toLocaleString('en-US')} docs/s `);
                }
              },
            });
          } finally {
            if (timer) clearTimeout(timer);
          }
        }
        if (progress && docsSeen > 0) process.stderr.write('\n');
        return 0;
      }

      let def = catalog.materializations.get(task.name)!;
      if (values.fresh) {
        // Preview into an empty database: the destination's own checkpoint (a plane's, an earlier preview's)
        // would otherwise put the fixture's documents behind it.
        if (def.endpoint.kind !== 'sqlite') throw new UsageError(`--fresh needs a sqlite endpoint; ${def.name} writes through a connector: point its endpoint config at an empty database (or schema) instead`);
        const path = join(dir, 'preview.db');
        process.stderr.write(`sluice: previewing ${def.name} into a temporary SQLite database (${path}, removed afterwards) instead of ${def.endpoint.config.path}\n`);
        def = { ...def, endpoint: { kind: 'sqlite', config: { ...def.endpoint.config, path } } };
      }
      if (!values.fixture) throw new UsageError(`previewing materialization ${def.name} needs --fixture docs.jsonl (lines ["<collection>", {document}] and {"commit": true})`);
      const fixtureFile = resolve(values.fixture);
      const txns = parseFixture(readFileSync(fixtureFile, 'utf8'), values.fixture);
      const built = await buildMaterialization(catalog, def, { launcher, version, apply: false });
      const action = await applyMaterialization(built, { launcher, version });
      if (values['output-apply']) out(JSON.stringify(['applied.actionDescription', action]));
      const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
      writers.setCollections([...catalog.collections.values()].map((c) => c.spec));
      const perSession = Math.ceil(txns.length / sessions);
      let next = 0;
      for (let s = 0; s < sessions; s++) {
        const last = Math.min(txns.length, next + perSession);
        // A destination that already holds a checkpoint for this task (a plane ran it, or an earlier preview)
        // reads the fixture from that checkpoint's offsets, which are beyond this preview's fresh journals: every
        // document would be skipped in silence. So the first session stops right after `opened` and says so.
        const stop = new AbortController();
        let held: string[] = [];
        await runMaterializeSession({
          name: def.name, spec: built.spec, version, store, signal: stop.signal,
          onOpened: ({ destinationCheckpoint }) => {
            const sources = Object.keys(destinationCheckpoint?.sources ?? {});
            if (s === 0 && sources.length > 0) { held = sources; stop.abort(); }
          },
          session: launcher.materialize(def.endpoint, def.name),
          jsonKeys: launcher.runsBuiltin(def.endpoint),
          onState: (update) => { if (values['output-state']) out(JSON.stringify(['connectorState', update])); },
          nextBatch: async () => {
            if (next >= last) return false;
            const txn = txns[next++]!;
            store.commit((tx) => {
              txn.forEach(([collection, doc], i) => {
                const writer = writers.get(collection);
                if (!writer) throw new UsageError(`${values.fixture}: transaction ${next}, document ${i}: collection "${collection}" is not in the catalog`);
                try {
                  writer.append(tx, writer.prepare(doc as JsonValue));
                } catch (err) {
                  if (err instanceof DocumentError) throw new UsageError(`${values.fixture}: transaction ${next}, document ${i} of "${collection}": ${err.message}`);
                  throw err;
                }
              });
            });
            return true;
          },
        });
        if (held.length > 0) {
          const where = def.endpoint.kind === 'sqlite' ? `the SQLite database ${def.endpoint.config.path}` : 'the destination';
          throw new UsageError(`${where} already holds a checkpoint for ${def.name} (read through ${held.length} journal(s), from a plane run or an earlier preview): ` +
            `the fixture's documents would be behind it and skipped, so nothing was previewed. ` +
            `Pass --fresh to preview into a temporary SQLite database, or point the endpoint at an empty database`, 1);
        }
      }
      return 0;
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
