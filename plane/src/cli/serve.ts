// `sluice serve --catalog flow.yaml [--port 8675] [--ingest-port 8081] [--data-dir ./data]
//  [--container-engine docker|podman] [--host 127.0.0.1] [--quiet]`: the local plane. Publishes the catalog,
// runs its tasks, serves the control-plane API (/api/v1) and the ingester (/ingest), and republishes on
// SIGHUP or when the catalog file changes. SIGINT/SIGTERM stop it cleanly.
import { watch, type FSWatcher } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, resolve } from 'node:path';
import { createControlPlane, type ControlPlane } from '../control/index.ts';
import { notFound } from '../ingest/ingest.ts';
import { LocalPlane, type PublishResult } from '../plane.ts';
import { Launcher } from '../tasks/launcher.ts';
import { secureDataDir } from '../data-dir.ts';
import { parse, positiveInt, runCommand, UsageError } from './plane-common.ts';

export const description = 'run a catalog on this machine: tasks, journals, /ingest and the /api/v1 control plane';
const USAGE = 'usage: sluice serve --catalog flow.yaml [--port 8675] [--ingest-port 8081] [--data-dir DIR] [--host 127.0.0.1] [--container-engine docker|podman] [--quiet]';

export interface ServeOptions {
  catalogFile: string;
  dataDir: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Same as `port` to serve both on one listener. */
  ingestPort: number;
  containerEngine?: 'docker' | 'podman';
  log?: (message: string) => void;
  /** Republish when the catalog file changes (default true). */
  watch?: boolean;
  /** Observes every publication. */
  onPublish?: (result: PublishResult) => void;
  /** How long an early request waits for the first publication before a 503 (default READY_HOLD_MS). */
  readyHoldMs?: number;
  /** No progress lines (`--quiet`). */
  quiet?: boolean;
  /** Where progress lines go (default: `log`). */
  progress?: (line: string) => void;
  /** Least time between two progress lines of a task (default 5 s). */
  progressIntervalMs?: number;
  /** Task failure back-off: first delay and cap, in ms (default 1 s and 5 min; tests shorten them). */
  backoff?: { baseMs?: number; maxMs?: number };
}

export interface RunningPlane {
  plane: LocalPlane;
  control: ControlPlane;
  apiUrl: string;
  ingestUrl: string;
  first: PublishResult;
  republish(): Promise<PublishResult>;
  close(): Promise<void>;
}

/** How long a request that arrives before the first publication has finished waits for it. */
export const READY_HOLD_MS = 60_000;

/** True when `p` settles within `ms`. */
function within(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void p.then(() => { clearTimeout(timer); resolve(true); });
  });
}

function notReady(res: ServerResponse): void {
  const body = JSON.stringify({ status: 503, error: 'the plane is starting: the catalog is still being published; retry in a few seconds' });
  res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'retry-after': '5', 'cache-control': 'no-store' });
  res.end(body);
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

/** Starts the local plane (used by `serve`, `start` and end-to-end tests). */
export async function startPlane(o: ServeOptions): Promise<RunningPlane> {
  const log = o.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`));
  secureDataDir(o.dataDir, (m) => log(`warning: ${m}`));
  const control = createControlPlane({ dataDir: o.dataDir });
  const plane = new LocalPlane({
    catalogFile: o.catalogFile, dataDir: o.dataDir, recorder: control.recorder, log,
    ...(o.quiet ? {} : { progress: o.progress ?? log }),
    ...(o.progressIntervalMs !== undefined ? { progressIntervalMs: o.progressIntervalMs } : {}),
    ...(o.backoff?.baseMs !== undefined ? { baseBackoffMs: o.backoff.baseMs } : {}),
    ...(o.backoff?.maxMs !== undefined ? { maxBackoffMs: o.backoff.maxMs } : {}),
    launcher: new Launcher(o.containerEngine ? { containerEngine: o.containerEngine } : {}),
  });
  const ingest = plane.ingestHandler();
  const api = (req: IncomingMessage, res: ServerResponse) => control.handle(req, res);
  // Readiness: the ports open first (so a busy port is found before anything starts), but no request
  // is served before the first publication has finished: a request arriving earlier waits for it (a
  // client that waits for the port and then ingests succeeds), and one still waiting after
  // READY_HOLD_MS is answered 503 with Retry-After.
  let ready = false;
  let markReady!: () => void;
  const readyPromise = new Promise<void>((r) => { markReady = () => { ready = true; r(); }; });
  const route = (handlers: ((req: IncomingMessage, res: ServerResponse) => Promise<boolean>)[]) => (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (!ready && !(await within(readyPromise, o.readyHoldMs ?? READY_HOLD_MS))) return notReady(res);
      for (const h of handlers) if (await h(req, res)) return;
      notFound(res);
    })().catch((err: unknown) => {
      log(`http: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  };
  const servers: Server[] = [];
  let apiPort: number;
  let ingestPort: number;
  if (o.port === o.ingestPort && o.port !== 0) {
    const s = createServer(route([ingest, api]));
    servers.push(s);
    apiPort = ingestPort = await listen(s, o.port, o.host);
  } else {
    const a = createServer(route([api]));
    const i = createServer(route([ingest]));
    servers.push(a, i);
    apiPort = await listen(a, o.port, o.host);
    ingestPort = await listen(i, o.ingestPort, o.host);
  }
  const publish = async () => {
    const r = await plane.publish();
    o.onPublish?.(r);
    return r;
  };
  const first = await publish();
  markReady();

  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  if (o.watch !== false) {
    try {
      // Watch the directory, not the file: editors often save by renaming a new file over the old one.
      const name = basename(o.catalogFile);
      watcher = watch(dirname(o.catalogFile), (_event, changed) => {
        if (changed !== null && changed !== name) return;
        clearTimeout(debounce);
        debounce = setTimeout(() => {
          log(`${o.catalogFile} changed: republishing`);
          void publish();
        }, 300);
      });
    } catch (err) {
      log(`cannot watch ${o.catalogFile} (${(err as Error).message}); send SIGHUP to republish`);
    }
  }
  const hostName = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    plane, control, first,
    apiUrl: `http://${hostName}:${apiPort}/api/v1`,
    ingestUrl: `http://${hostName}:${ingestPort}/ingest`,
    republish: publish,
    async close() {
      clearTimeout(debounce);
      watcher?.close();
      await Promise.all(servers.map((s) => new Promise((r) => { s.close(r); s.closeAllConnections(); })));
      await plane.close();
      control.close();
    },
  };
}

export function resolveDataDir(flag: string | undefined): string {
  return resolve(flag ?? process.env.SLUICE_DATA_DIR ?? './data');
}

export async function serveCommand(argv: string[]): Promise<number> {
  return runCommand(async () => {
    const { values } = parse(argv, {
      catalog: { type: 'string' }, port: { type: 'string' }, 'ingest-port': { type: 'string' }, 'data-dir': { type: 'string' },
      host: { type: 'string' }, 'container-engine': { type: 'string' }, quiet: { type: 'boolean' },
    }, USAGE);
    if (!values.catalog) throw new UsageError(`--catalog is required\n${USAGE}`);
    const engine = values['container-engine'];
    if (engine !== undefined && engine !== 'docker' && engine !== 'podman') throw new UsageError(`--container-engine must be docker or podman, got ${JSON.stringify(engine)}`);
    const running = await startPlane({
      catalogFile: resolve(values.catalog), dataDir: resolveDataDir(values['data-dir']), host: values.host ?? '127.0.0.1',
      port: positiveInt(values.port, '--port', 8675), ingestPort: positiveInt(values['ingest-port'], '--ingest-port', 8081),
      ...(engine ? { containerEngine: engine } : {}),
      ...(values.quiet ? { quiet: true } : {}),
    });
    process.stderr.write(`sluice: ready: serving ${values.catalog}  API: ${running.apiUrl}  ingester: ${running.ingestUrl}  data: ${resolveDataDir(values['data-dir'])}\n`);
    if (running.first.result !== 'success') process.stderr.write(`sluice: the first publication ${running.first.result}; fix the catalog and save it (or send SIGHUP) to republish\n`);
    await new Promise<void>((done) => {
      process.on('SIGHUP', () => { void running.republish(); });
      const stop = () => { void running.close().then(done); };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    return 0;
  });
}
