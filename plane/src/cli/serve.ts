// `sluice serve --catalog flow.yaml [--port 8675] [--ingest-port 8081] [--data-dir ./data]
//  [--container-engine docker|podman] [--host 127.0.0.1] [--quiet]`: the local plane. Publishes the catalog,
// runs its tasks, serves the control-plane API (/api/v1) and the ingester (/ingest), and republishes on
// SIGHUP or when the catalog file changes. SIGINT/SIGTERM stop it cleanly.
import { existsSync, watch, type FSWatcher } from 'node:fs';
import type * as Http from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { basename, dirname, resolve } from 'node:path';
import { createControlPlane, type ControlPlane } from '../control/index.ts';
import { notFound } from '../ingest/ingest.ts';
import { LocalPlane, type PublishResult } from '../plane.ts';
import { lockDataDir, type DataDirLock } from '../data-dir-lock.ts';
import { Launcher } from '../tasks/launcher.ts';
import { secureDataDir } from '../data-dir.ts';
import { parse, positiveInt, runCommand, UsageError } from './plane-common.ts';
import { forceStop, onStopSignal } from './stop-signals.ts';

// node:http with require: an ESM import builds the builtin's ESM facade, which reads every export and so loads
// undici (fetch, WebSocket) — ~50–80 ms of the plane's start-up CPU, before its connectors can start (issue 16).
const { createServer } = createRequire(import.meta.url)('node:http') as typeof Http;

export const description = 'run a catalog on this machine: tasks, journals, /ingest and the /api/v1 control plane';
const USAGE = `usage: sluice serve --catalog flow.yaml [options]

Runs a catalog on this machine: publishes it, runs its captures and materializations, serves the
control-plane API (/api/v1) and the ingester (/ingest); republishes when the catalog file changes or on
SIGHUP; stops cleanly on SIGINT or SIGTERM. One plane per data dir.
  --catalog FILE             the flow.yaml (required; reference: docs/catalog.md)
  --data-dir DIR             journals and control-plane state (default $SLUICE_DATA_DIR, else ./data)
  --port N                   the API port (default 8675; 0 picks a free one)
  --ingest-port N            the ingester's port (default 8081; the same as --port serves both on one)
  --host ADDR                the address to listen on (default 127.0.0.1)
  --container-engine E       docker or podman: run connector images in containers instead of the
                             built-in connectors as processes
  --quiet                    no progress lines from the tasks
  --allow-deletions          publish even when the catalog deletes more live specs than it adds
  -h, --help                 this help`;

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
  /** Publish even when the catalog deletes more live specs than it adds. */
  allowDeletions?: boolean;
  /** Names the process in the data dir's lock (default "sluice serve"). */
  command?: string;
  /** The data dir's lock when the caller took it already (start writes into the dir first); released on close. */
  lock?: DataDirLock;
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

/** Listens, turning the usual user-side failures (busy port, privileged port) into one clear line. */
function listen(server: Server, port: number, host: string, flag: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new UsageError(`port ${port} is in use (on ${host}); pass ${flag} with another port (0 picks a free one)`, 1));
      else if (err.code === 'EACCES') reject(new UsageError(`cannot listen on port ${port} of ${host}: permission denied; pass ${flag} with a port above 1023`, 1));
      else if (err.code === 'EADDRNOTAVAIL') reject(new UsageError(`cannot listen on ${host}: no such address on this machine; pass --host`, 1));
      else reject(err);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

const closeServer = (s: Server) => new Promise((r) => { s.close(r); s.closeAllConnections(); });

/** Starts the local plane (used by `serve`, `start` and end-to-end tests). */
export async function startPlane(o: ServeOptions): Promise<RunningPlane> {
  const log = o.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`));
  if (!existsSync(o.catalogFile)) throw new UsageError(`catalog ${o.catalogFile} does not exist; pass --catalog with the path of a flow.yaml`, 1);
  // Order matters: the lock first (nothing of another plane's dir is touched), then the ports (a busy one fails
  // before any state is opened or task started), then the stores and the first publication.
  const lock = o.lock ?? lockDataDir(o.dataDir, o.command ?? 'sluice serve', log);
  try {
    secureDataDir(o.dataDir, (m) => log(`warning: ${m}`));
  } catch (err) {
    lock.release();
    throw err;
  }
  let control: ControlPlane | undefined;
  let plane: LocalPlane | undefined;
  let ingest: ((req: IncomingMessage, res: ServerResponse) => Promise<boolean>) | undefined;
  // Requests are held until the first publication (below), by which time both exist.
  const api = async (req: IncomingMessage, res: ServerResponse) => control !== undefined && control.handle(req, res);
  const ingestRoute = async (req: IncomingMessage, res: ServerResponse) => ingest !== undefined && ingest(req, res);
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
  try {
    if (o.port === o.ingestPort && o.port !== 0) {
      const s = createServer(route([ingestRoute, api]));
      servers.push(s);
      apiPort = ingestPort = await listen(s, o.port, o.host, '--port and --ingest-port');
    } else {
      const a = createServer(route([api]));
      const i = createServer(route([ingestRoute]));
      servers.push(a, i);
      apiPort = await listen(a, o.port, o.host, '--port');
      ingestPort = await listen(i, o.ingestPort, o.host, '--ingest-port');
    }
    control = createControlPlane({ dataDir: o.dataDir });
    const store = control.store;
    plane = new LocalPlane({
      catalogFile: o.catalogFile, dataDir: o.dataDir, recorder: control.recorder, log,
      ...(o.quiet ? {} : { progress: o.progress ?? log }),
      ...(o.progressIntervalMs !== undefined ? { progressIntervalMs: o.progressIntervalMs } : {}),
      ...(o.backoff?.baseMs !== undefined ? { baseBackoffMs: o.backoff.baseMs } : {}),
      ...(o.backoff?.maxMs !== undefined ? { maxBackoffMs: o.backoff.maxMs } : {}),
      launcher: new Launcher(o.containerEngine ? { containerEngine: o.containerEngine } : {}),
      liveSpecNames: () => store.all().map((row) => row.catalogName),
      ...(o.allowDeletions ? { allowDeletions: true } : {}),
    });
    ingest = plane.ingestHandler();
  } catch (err) {
    await Promise.all(servers.map(closeServer));
    control?.close();
    lock.release();
    throw err;
  }
  const livePlane = plane;
  const liveControl = control;
  const publish = async () => {
    const r = await livePlane.publish();
    o.onPublish?.(r);
    return r;
  };
  const first = await publish();
  if (first.deletionsRefused) {
    // The first publication of a plane refused for deletions is almost always the wrong --data-dir: stop.
    await Promise.all(servers.map(closeServer));
    await livePlane.close();
    liveControl.close();
    lock.release();
    throw new UsageError(first.errors[0] ?? 'the publication was refused', 1);
  }
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
    plane: livePlane, control: liveControl, first,
    apiUrl: `http://${hostName}:${apiPort}/api/v1`,
    ingestUrl: `http://${hostName}:${ingestPort}/ingest`,
    republish: publish,
    async close() {
      clearTimeout(debounce);
      watcher?.close();
      await Promise.all(servers.map(closeServer));
      await livePlane.close();
      liveControl.close();
      lock.release();
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
      host: { type: 'string' }, 'container-engine': { type: 'string' }, quiet: { type: 'boolean' }, 'allow-deletions': { type: 'boolean' },
    }, USAGE);
    if (!values.catalog) throw new UsageError(`--catalog is required\n${USAGE}`);
    const engine = values['container-engine'];
    if (engine !== undefined && engine !== 'docker' && engine !== 'podman') throw new UsageError(`--container-engine must be docker or podman, got ${JSON.stringify(engine)}`);
    // The signals are taken before the first publication: a stop during it (a validate spinning, an apply
    // hanging) must not leave its connectors behind (stop-signals.ts). The plane is not closed then — nothing
    // is served yet — its connectors are killed, the data dir's lock released (forceStop), and the process dies
    // of the signal; the journals and the control plane's database are crash-safe (a kill -9 is no different).
    let running: RunningPlane | undefined;
    let republishAtReady = false;
    const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
    const dataDir = resolveDataDir(values['data-dir']);
    // Taken here rather than in startPlane, so that a stop during the first publication can release it.
    const lock = lockDataDir(dataDir, 'sluice serve', log);
    const stopped = new Promise<void>((done) => {
      onStopSignal((signal) => {
        if (running !== undefined) {
          log(`${signal}: stopping (a second stop signal forces it)`);
          void running.close().then(done);
          return;
        }
        log(`${signal} during the first publication: stopping its connectors`);
        // forceStop releases the lock, once the connectors are gone.
        void forceStop(signal, 0);
      });
    });
    process.on('SIGHUP', () => {
      if (running !== undefined) void running.republish();
      else republishAtReady = true;
    });
    try {
      running = await startPlane({
        catalogFile: resolve(values.catalog), dataDir, host: values.host ?? '127.0.0.1', log, lock,
        port: positiveInt(values.port, '--port', 8675), ingestPort: positiveInt(values['ingest-port'], '--ingest-port', 8081),
        ...(engine ? { containerEngine: engine } : {}),
        ...(values.quiet ? { quiet: true } : {}),
        ...(values['allow-deletions'] ? { allowDeletions: true } : {}),
      });
    } catch (err) {
      lock.release();
      throw err;
    }
    if (republishAtReady) void running.republish();
    process.stderr.write(`sluice: ready: serving ${values.catalog}  API: ${running.apiUrl}  ingester: ${running.ingestUrl}  data: ${resolveDataDir(values['data-dir'])}\n`);
    if (running.first.result !== 'success') process.stderr.write(`sluice: the first publication ${running.first.result}; fix the catalog and save it (or send SIGHUP) to republish\n`);
    await stopped;
    return 0;
  });
}
