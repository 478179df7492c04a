// Connectors started ahead of their sessions (Launcher.prestart, prepareMaterialization, the materialization
// thread serve and start begin before loading the plane; issue 16's start-up):
// a session takes a prestarted process of its own task and target, and every process a publication started
// ahead is either used or stopped — none is left running after the publication (failed or not) or the plane.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { until } from '@sluice/runtime/testing';
import type { EndpointRef } from '../../src/catalog/types.ts';
import { LocalPlane } from '../../src/plane.ts';
import { Launcher, unary } from '../../src/tasks/launcher.ts';
import { MemoryRecorder } from '../../src/tasks/memory-recorder.ts';
import { materializeThreads, prestartMaterializationThread } from '../../src/tasks/materialize-threads.ts';
import { tempDir } from '../journals/helpers.ts';

const SQLITE_BIN = 'materialize-sqlite.js';
const HTTP_FILE_BIN = 'source-http-file.js';
const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));

/** The test capture of three greetings, and with `toSqlite` their materialization into `<dir>/out.db`. */
function greetingsCatalog(dir: string, opts: { toSqlite: boolean }): string {
  const capture = `
collections:
  acmeCo/greetings:
    schema: {type: object, properties: {id: {type: string}, greeting: {type: string}, n: {type: integer}}, required: [id, greeting, n]}
    key: [/id]
captures:
  acmeCo/source-test:
    interval: 1h
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, count: 3}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
`;
  return opts.toSqlite ? `${capture}materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: ${JSON.stringify(join(dir, 'out.db'))}}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
` : capture;
}

/** The pids of this process's children that run `bin` (a connector's bin file name). */
function children(bin: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').some((a) => a.endsWith(bin))) out.push(Number(entry));
    } catch {
      // Exited meanwhile.
    }
  }
  return out;
}

/** Rows in the `table` of the SQLite file `db` (0 while it cannot be read yet). */
function sqliteRows(db: string, table = 'rows'): number {
  try {
    const d = new DatabaseSync(db, { readOnly: true });
    try { return Number((d.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n); } finally { d.close(); }
  } catch {
    return 0;
  }
}

/** A catalog: source-http-file reading rows.csv from a loopback `port`, materialized into the SQLite file `db`. */
function rowsCatalog(port: number, db: string): string {
  return `
collections:
  acmeCo/rows:
    schema: {type: object, properties: {id: {type: string}}, required: [id]}
    key: [/id]
captures:
  acmeCo/source:
    interval: 1h
    endpoint:
      connector:
        image: ghcr.io/estuary/source-http-file:dev
        config: {url: "http://127.0.0.1:${port}/rows.csv", parser: {format: {type: csv}}}
    bindings:
      - resource: {stream: rows}
        target: acmeCo/rows
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: ${JSON.stringify(db)}}
    bindings:
      - source: acmeCo/rows
        resource: {table: rows}
`;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

test('a session takes a prestarted connector of its own task; releaseSpares stops the rest', async (t) => {
  const dir = tempDir(t);
  const launcher = new Launcher();
  const endpoint: EndpointRef = { kind: 'sqlite', config: { path: join(dir, 'out.db') } };
  launcher.prestart(endpoint, 'acmeCo/to-sqlite', 'materialize', 2);
  launcher.prestart({ kind: 'local', command: [process.execPath, TEST_CAPTURE], config: {}, env: {} }, 'acmeCo/source', 'capture', 2);
  assert.equal(launcher.spareCount(), 2, 'a local command is never started ahead (it is the user\'s program)');
  await until('both prestarted materialize-sqlite processes running', () => children(SQLITE_BIN).length === 2);
  const pids = children(SQLITE_BIN);

  // Another task's session does not take them.
  const other = launcher.materialize(endpoint, 'acmeCo/other');
  assert.equal(launcher.spareCount(), 2);
  await unary(other, { spec: { connectorType: 'IMAGE', config: {} } }, 'spec', 'acmeCo/other');

  const spec = await unary(launcher.materialize(endpoint, 'acmeCo/to-sqlite'), { spec: { connectorType: 'IMAGE', config: {} } }, 'spec', 'acmeCo/to-sqlite');
  assert.ok(spec['configSchema'], 'the prestarted connector answered its spec');
  assert.equal(launcher.spareCount(), 1);
  const left = await until('the used one to exit', () => { const now = children(SQLITE_BIN); return now.length === 1 ? now : undefined; });
  assert.ok(pids.includes(left[0]!), `the remaining process ${left[0]} is one of the prestarted ${pids.join(', ')}: the session took the other`);

  await launcher.releaseSpares();
  assert.equal(launcher.spareCount(), 0);
  await until('no materialize-sqlite process left', () => children(SQLITE_BIN).length === 0);
});

test('a publication whose validate fails leaves none of the connectors it started ahead running', async (t) => {
  const dir = tempDir(t);
  const catalog = join(dir, 'flow.yaml');
  writeFileSync(catalog, rowsCatalog(await closedPort(), join(dir, 'out.db')));
  const plane = new LocalPlane({ catalogFile: catalog, dataDir: join(dir, 'data'), recorder: new MemoryRecorder() });
  try {
    const result = await plane.publish();
    assert.equal(result.result, 'buildFailed', result.errors.join('; '));
    assert.match(result.errors.join('; '), /connect|refused/i);
    assert.equal(plane.launcher.spareCount(), 0);
    // Two source-http-file and two materialize-sqlite processes (validate, apply) were started ahead: all stop
    // (the sessions' connectors start only after a successful build).
    await until('every connector started ahead to exit', () => children(HTTP_FILE_BIN).length === 0 && children(SQLITE_BIN).length === 0, {
      detail: () => `still running: source-http-file ${children(HTTP_FILE_BIN).join(', ')}; materialize-sqlite ${children(SQLITE_BIN).join(', ')}`,
    });
  } finally {
    await plane.close();
  }
});

test('a publication that starts its tasks uses what it started ahead; closing the plane stops the sessions', async (t) => {
  const dir = tempDir(t);
  const catalog = join(dir, 'flow.yaml');
  writeFileSync(catalog, greetingsCatalog(dir, { toSqlite: true }));
  const plane = new LocalPlane({ catalogFile: catalog, dataDir: join(dir, 'data'), recorder: new MemoryRecorder() });
  try {
    const result = await plane.publish();
    assert.equal(result.result, 'success', result.errors.join('; '));
    assert.deepEqual(result.started, ['acmeCo/source-test', 'acmeCo/to-sqlite']);
    assert.equal(plane.launcher.spareCount(), 0, 'nothing left waiting: validate and apply went to the session\'s thread');
    // Left: the materialization's session (its thread's connector, which answered validate and apply too).
    await until('only the session\'s materialize-sqlite process running', () => children(SQLITE_BIN).length === 1, {
      detail: () => `running: ${children(SQLITE_BIN).join(', ')}`,
    });
  } finally {
    await plane.close();
  }
  await until('no materialize-sqlite process after close', () => children(SQLITE_BIN).length === 0);
});

test('Launcher.unary: a prestarted process answers the task\'s RPCs one after another, then its session', async (t) => {
  const dir = tempDir(t);
  const launcher = new Launcher();
  const endpoint: EndpointRef = { kind: 'sqlite', config: { path: join(dir, 'out.db') } };
  const task = 'acmeCo/to-sqlite';
  launcher.prestart(endpoint, task, 'materialize', 1);
  const [pid] = await until('the prestarted materialize-sqlite process running', () => { const now = children(SQLITE_BIN); return now.length === 1 ? now : undefined; });
  for (let i = 0; i < 2; i++) {
    const spec = await launcher.unary(endpoint, task, 'materialize', { spec: { connectorType: 'IMAGE', config: {} } }, 'spec');
    assert.ok(spec['configSchema'], `RPC ${i + 1} answered`);
    assert.deepEqual(children(SQLITE_BIN), [pid], `RPC ${i + 1} was served by the prestarted process, which stays for the next one`);
    assert.equal(launcher.spareCount(), 1);
  }
  // The task's next session takes it (here a unary one, which closes its stdin: the process then exits).
  await unary(launcher.materialize(endpoint, task), { spec: { connectorType: 'IMAGE', config: {} } }, 'spec', task);
  assert.equal(launcher.spareCount(), 0);
  await until('the process to exit once its stdin closed', () => children(SQLITE_BIN).length === 0);

  // Without a prestarted process, each RPC has a fresh one that exits after it (as Flow's runtime runs them).
  await launcher.unary(endpoint, task, 'materialize', { spec: { connectorType: 'IMAGE', config: {} } }, 'spec');
  assert.equal(launcher.spareCount(), 0);
  await until('the on-demand process to exit', () => children(SQLITE_BIN).length === 0);
});

test('a new task\'s validate, apply and session run in one connector process (capture and materialization)', async (t) => {
  const dir = tempDir(t);
  const csv = 'id\na\nb\nc\nd\n';
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/csv', 'last-modified': 'Wed, 25 Nov 2026 10:00:00 GMT', 'content-length': Buffer.byteLength(csv) });
    res.end(req.method === 'HEAD' ? undefined : csv);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const catalog = join(dir, 'flow.yaml');
  writeFileSync(catalog, rowsCatalog((server.address() as { port: number }).port, join(dir, 'out.db')));
  // Every source-http-file and materialize-sqlite process this test process starts, from before the publication until the
  // capture's session has committed its rows (each lives far longer than the 2 ms between looks).
  const seen = new Set<number>();
  const seenSqlite = new Set<number>();
  let watching = true;
  const watch = (async () => {
    while (watching) {
      for (const pid of children(HTTP_FILE_BIN)) seen.add(pid);
      for (const pid of children(SQLITE_BIN)) seenSqlite.add(pid);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: catalog, dataDir: join(dir, 'data'), recorder });
  try {
    const result = await plane.publish();
    assert.equal(result.result, 'success', result.errors.join('; '));
    assert.deepEqual(result.started, ['acmeCo/source', 'acmeCo/to-sqlite']);
    await until('the 4 rows in the table', () => sqliteRows(join(dir, 'out.db')) === 4, {
      detail: () => `journals ${JSON.stringify(plane.store.journals())}; events ${JSON.stringify(recorder.events.slice(-6))}`,
    });
    watching = false;
    await watch;
    assert.equal(seen.size, 1, `one source-http-file process served validate, apply and the session; saw ${[...seen].join(', ')}`);
    assert.equal(seenSqlite.size, 1, `one materialize-sqlite process served validate, apply and the session; saw ${[...seenSqlite].join(', ')}`);
  } finally {
    watching = false;
    await plane.close();
  }
  await until('no source-http-file process after close', () => children(HTTP_FILE_BIN).length === 0);
});

test('the materialization thread serve and start begin ahead is the one a new materialization takes; a publication without one ends it', async (t) => {
  const dir = tempDir(t);
  const catalog = join(dir, 'flow.yaml');
  // No materialization: the thread started ahead is ended by the publication.
  writeFileSync(catalog, greetingsCatalog(dir, { toSqlite: false }));
  const before = materializeThreads.spawned();
  prestartMaterializationThread();
  assert.equal(materializeThreads.spawned(), before + 1);
  const bare = new LocalPlane({ catalogFile: catalog, dataDir: join(dir, 'bare'), recorder: new MemoryRecorder() });
  try {
    assert.equal((await bare.publish()).result, 'success');
    await until('the unused thread to end', () => materializeThreads.live() === 0, { detail: () => `${materializeThreads.live()} thread(s) live` });
  } finally {
    await bare.close();
  }

  // A new materialization: its validate, apply and session run on the thread started ahead, and no other starts.
  writeFileSync(catalog, greetingsCatalog(dir, { toSqlite: true }));
  prestartMaterializationThread();
  const ahead = materializeThreads.spawned();
  const plane = new LocalPlane({ catalogFile: catalog, dataDir: join(dir, 'data'), recorder: new MemoryRecorder() });
  try {
    const result = await plane.publish();
    assert.equal(result.result, 'success', result.errors.join('; '));
    await until('the three greetings in the table', () => sqliteRows(join(dir, 'out.db'), 'greetings') === 3);
    assert.equal(materializeThreads.spawned(), ahead, 'the publication and the session took the thread started ahead');
    assert.equal(materializeThreads.live(), 1);
  } finally {
    await plane.close();
  }
  await until('no materialization thread after close', () => materializeThreads.live() === 0);
});
