// `sluice start` (what `npm start` runs): the quickstart. Generates a realistic gzipped CSV of bike
// rides, serves it over loopback HTTP, and runs plane/src/quickstart/flow.yaml on the local plane:
// source-http-file captures it into the collection's journals, materialize-sqlite writes
// <data dir>/quickstart.db, and the ingester and control-plane API stay up. Prints what happened and
// what to try next; on a TTY it shows progress while the pipeline runs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { lockDataDir } from '../data-dir-lock.ts';
import { DEFAULT_ROWS, QUICKSTART_TEMPLATE, ridesCsvGz, serveFile, type ServedFile } from '../quickstart/index.ts';
import { parse, positiveInt, runCommand, UsageError } from './plane-common.ts';
import { forceStop, onStopSignal } from './stop-signals.ts';
import { makeDataDir, makePrivateFile } from '../data-dir.ts';
import { resolveDataDir, startPlane, type RunningPlane } from './serve.ts';

export const description = 'the quickstart: capture a CSV served over local HTTP into journals, materialize it into SQLite, keep the API and ingester up';
const USAGE = `usage: sluice start [options]

The quickstart (what \`npm start\` runs): generates a gzipped CSV of bike rides, serves it on a loopback port,
and runs the quickstart catalog on the local plane (capture into journals, materialize into
<data dir>/quickstart.db); then keeps the API and ingester up until Ctrl-C or SIGTERM.
  --data-dir DIR      where journals, state and quickstart.db go (default $SLUICE_DATA_DIR, else ./data)
  --rows N            rides to generate (default ${DEFAULT_ROWS})
  --port N            the API port (default 8675; 0 picks a free one)
  --ingest-port N     the ingester's port (default 8081)
  --exit              exit once the rows are materialized instead of staying up
  --quiet             no progress display or progress lines
  --allow-deletions   publish even when the quickstart catalog deletes more live specs of the dir than it adds
  -h, --help          this help`;
const SOURCE_LAST_MODIFIED = new Date(Date.UTC(2024, 4, 31, 23, 59, 59));

function tableCount(db: string, table: string): number {
  try {
    const conn = new DatabaseSync(db, { readOnly: true });
    try {
      return (conn.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
    } finally {
      conn.close();
    }
  } catch {
    return 0;
  }
}

function electricRides(db: string): number {
  try {
    const conn = new DatabaseSync(db, { readOnly: true });
    try {
      return (conn.prepare("SELECT count(*) AS n FROM rides WHERE rideable_type = 'electric_bike'").get() as { n: number }).n;
    } finally {
      conn.close();
    }
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** How to run sluice from the working directory: `npx sluice` inside the repository, else `sluice` (on PATH). */
function sluiceCommand(): string {
  const repo = fileURLToPath(new URL('../../../', import.meta.url));
  return `${process.cwd()}/`.startsWith(repo) ? 'npx sluice' : 'sluice';
}

/** A path relative to the working directory when it is below it, else absolute. */
function shown(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel === '' ? '.' : rel.startsWith('..') ? p : rel;
}

const fmt = (n: number) => n.toLocaleString('en-US');
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

export interface StartHooks {
  /** Called once the quickstart is materialized and the API and ingester are up (tests drive it here). */
  onReady?: (running: RunningPlane) => Promise<void>;
}

export async function startCommand(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), hooks: StartHooks = {}): Promise<number> {
  return runCommand(async () => {
    const { values } = parse(argv, {
      'data-dir': { type: 'string' }, rows: { type: 'string' }, port: { type: 'string' }, 'ingest-port': { type: 'string' }, exit: { type: 'boolean' }, quiet: { type: 'boolean' },
      'allow-deletions': { type: 'boolean' },
    }, USAGE);
    const rows = positiveInt(values.rows, '--rows', DEFAULT_ROWS);
    if (rows === 0) throw new UsageError('--rows must be at least 1');
    const dataDir = resolveDataDir(values['data-dir']);
    const tty = process.stdout.isTTY === true;
    const started = Date.now();
    // While the pipeline fills up, the plane's lines would interleave with the progress display: they are kept
    // (SLUICE_VERBOSE=1 prints them) until the quickstart is up; from then on every line is printed as `serve`
    // prints it — republishes after an edit of the catalog, failures, stopped tasks.
    let live = false;
    const log = (m: string) => { if (live || process.env.SLUICE_VERBOSE) process.stderr.write(`${new Date().toISOString()} ${m}\n`); };
    const port = positiveInt(values.port, '--port', 8675);
    const ingestPort = positiveInt(values['ingest-port'], '--ingest-port', 8081);

    // The lock comes before anything is written into the dir (the catalog copy another plane may be watching).
    const lock = lockDataDir(dataDir, 'sluice start', (m) => out(`  note     ${m}\n`));
    let file: ServedFile | undefined;
    let running: RunningPlane | undefined;
    // The signals are taken before the plane starts (stop-signals.ts): a stop during its first publication
    // kills its connectors, releases the lock and dies of the signal (as serve does); once the plane runs, a
    // signal ends the wait below and the plane is closed.
    let signalled: string | undefined;
    let interrupt!: () => void;
    const interrupted = new Promise<void>((resolve) => { interrupt = resolve; });
    const giveBack = onStopSignal((signal) => {
      if (running === undefined) {
        out(`  stopped  on ${signal}, during the first publication\n`);
        void forceStop(signal, 0); // it releases the lock, once the connectors are gone
        return;
      }
      signalled ??= signal;
      interrupt();
    });
    try {
      // The data dir is private (data-dir.ts): create what the quickstart puts there private too.
      makeDataDir(join(dataDir, 'quickstart'));
      const body = ridesCsvGz(rows);
      file = await serveFile({ body, path: '/rides.csv.gz', contentType: 'application/gzip', lastModified: SOURCE_LAST_MODIFIED });
      const db = join(dataDir, 'quickstart.db');
      makePrivateFile(db);
      const catalogFile = join(dataDir, 'quickstart', 'flow.yaml');
      // The URL's port changes per run; the file's content does not (same Last-Modified and ETag).
      writeFileSync(catalogFile, readFileSync(QUICKSTART_TEMPLATE, 'utf8').replaceAll('${QUICKSTART_URL}', file.url).replaceAll('${QUICKSTART_DB}', db), { mode: 0o600 });
      out(`Sluice quickstart\n  source   ${file.url}  (${fmt(rows)} rides, ${mb(body.length)} gzipped CSV, generated)\n  catalog  ${catalogFile}\n`);
      running = await startPlane({
        catalogFile, dataDir, host: '127.0.0.1', log, port, ingestPort, lock, command: 'sluice start',
        // On a terminal the one-line status below shows progress; elsewhere each task prints its lines.
        quiet: values.quiet === true || tty, progress: (m) => out(`  progress ${m}\n`),
        ...(values['allow-deletions'] ? { allowDeletions: true } : {}),
      });
    } catch (err) {
      giveBack();
      await file?.close();
      lock.release();
      throw err;
    }
    const served = file;
    const plane = running;
    const db = join(dataDir, 'quickstart.db');
    const catalogFile = join(dataDir, 'quickstart', 'flow.yaml');
    // The handler is in before the ready line: a supervisor that signals as soon as it reads the line must
    // reach it, not Node's default action, which kills the process without closing the plane. A signal while
    // the quickstart still runs stops it there; afterwards it ends the wait below.
    out(`  ready    ingester ${running.ingestUrl} · API ${running.apiUrl}\n`);
    const stop = async () => {
      giveBack();
      await plane.close();
      await served.close();
    };
    const stoppedEarly = () => {
      if (tty && !values.quiet) process.stdout.write('\n');
      out(`  stopped  on ${signalled ?? 'a signal'}, before the quickstart finished\n`);
      return 0;
    };
    try {
      if (running.first.result !== 'success') {
        throw new UsageError(`the quickstart catalog did not publish (${running.first.result}):\n  ${running.first.errors.join('\n  ')}`, 1);
      }
      const t = running.first.tests[0];
      out(`  publish  ${running.first.pubId}: 1 collection, 1 capture, 1 materialization; test ${t?.name ?? ''} ${t?.passing ? 'passed' : 'FAILED'}\n`);
      for (const a of running.first.applied) {
        const tables = [...a.actionDescription.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([\w.]+)"?/g)].map((m) => m[1]);
        if (tables.length) out(`  apply    ${a.name}: created tables ${tables.join(', ')}\n`);
        else if (a.actionDescription) out(`  apply    ${a.name}: ${a.actionDescription.split('\n')[0]}\n`);
      }

      // Progress until every row is materialized.
      const deadline = Date.now() + 300_000;
      let materialized = 0;
      while (true) {
        materialized = tableCount(db, 'rides');
        const journals = running.plane.store.journals('quickstart/rides');
        const bytes = journals.reduce((a, j) => a + j.head, 0);
        if (tty) {
          const secs = (Date.now() - started) / 1000;
          if (!values.quiet) process.stdout.write(`\r  running  journals ${mb(bytes)} · materialized ${fmt(materialized)}/${fmt(rows)} rows · ${fmt(Math.round(materialized / Math.max(secs, 0.001)))} rows/s   `);
        }
        // Done when every row is in `rides` and `electric_rides` holds every electric ride.
        if (materialized >= rows && tableCount(db, 'electric_rides') >= electricRides(db)) break;
        const failure = [...running.plane.runners.values()].find((r) => r.failures > 0);
        if (failure) throw new UsageError(`${failure.options.name} failed: ${failure.lastError ?? 'unknown error'}`, 1);
        if (Date.now() > deadline) throw new UsageError(`the quickstart did not finish in 5 minutes (${fmt(materialized)} of ${fmt(rows)} rows materialized)`, 1);
        if (signalled !== undefined) return stoppedEarly();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise((r) => { timer = setTimeout(r, 200); }), interrupted]);
        clearTimeout(timer);
        if (signalled !== undefined) return stoppedEarly();
      }
      if (tty && !values.quiet) process.stdout.write('\n');
      const secs = (Date.now() - started) / 1000;
      const journals = running.plane.store.journals('quickstart/rides');
      const electric = tableCount(db, 'electric_rides');
      const rel = shown(db);
      const sampleDoc = JSON.stringify({ 'quickstart/rides': [{ ride_id: 'R9999999', rideable_type: 'electric_bike', started_at: '2024-06-01T08:00:00Z', ended_at: '2024-06-01T08:20:00Z', start_station: 'Grand Army Plaza', end_station: 'W 21 St & 6 Ave', member: 'true', duration_s: '1200', distance_km: '5.10', fare_usd: '0.00' }] });
      const apiBase = running.apiUrl.replace(/\/api\/v1$/, '');
      out(`  done     ${fmt(rows)} rows captured into ${journals.length} journals and materialized in ${secs.toFixed(1)} s\n`);
      for (const j of journals) out(`           ${j.name}  ${fmt(j.head)} bytes\n`);
      out(`  sqlite   ${rel}: table rides (${fmt(materialized)} rows), electric_rides (${fmt(electric)} rows)\n\n`);
      out(`Up on localhost:\n  ingester  ${running.ingestUrl}\n  API       ${running.apiUrl}\n\nTry next:\n`);
      out(`  sqlite3 ${rel} "SELECT rideable_type, count(*), round(avg(duration_s)) FROM rides GROUP BY 1"\n`);
      out(`  curl -s -X POST ${running.ingestUrl} -H 'Content-Type: application/json' \\\n    -d '${sampleDoc}'\n`);
      out(`  sqlite3 ${rel} "SELECT ride_id, duration_s FROM electric_rides WHERE ride_id = 'R9999999'"   # a moment later\n`);
      out(`  ${sluiceCommand()} token create --data-dir ${shown(dataDir)} --port ${new URL(apiBase).port}   # prints how to exchange it for an access token ($TOKEN)\n`);
      out(`  curl -s '${running.apiUrl}/catalog/status?name=quickstart/to-sqlite' -H "Authorization: Bearer $TOKEN"   # every route: plane/src/api/README.md\n`);
      out(`  edit ${shown(catalogFile)} and save: the plane republishes it\n`);
      await hooks.onReady?.(running);
      if (values.exit) return 0;
      live = true;
      out('\nPress Ctrl-C to stop.\n');
      await interrupted;
      return 0;
    } finally {
      await stop();
    }
  });
}
