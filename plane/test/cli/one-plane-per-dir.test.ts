// One plane per data dir, and the refusals a newcomer meets first: the data-dir lock (live holder, stale lock,
// another host), a second plane on the same dir (in process and as real processes), a publication that would
// delete more live specs than it adds, a busy port and a missing catalog — each one line, nothing left open.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirBusyError, LOCK_FILE, lockDataDir } from '../../src/data-dir-lock.ts';
import { startPlane } from '../../src/cli/serve.ts';
import { SLUICE, TEST_CAPTURE, sluice } from './helpers.ts';

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-dir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A catalog of one collection per name, each with its own capture from the test connector. */
function catalog(names: string[]): string {
  const collections = names.map((n) => `  acmeCo/${n}:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n`).join('');
  const captures = names.map((n) => `  acmeCo/source-${n}:\n    endpoint:\n      local:\n        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]\n        config: {apiKey: k, count: 1}\n    interval: 1h\n    bindings:\n      - resource: {name: alpha}\n        target: acmeCo/${n}\n`).join('');
  return `collections:\n${collections}captures:\n${captures}`;
}

const quiet = { host: '127.0.0.1', port: 0, ingestPort: 0, log: () => undefined, watch: false };

test('lock: a live holder is refused by name; released, the dir is free again', (t) => {
  const dir = tmp(t);
  const first = lockDataDir(dir, 'sluice serve');
  assert.throws(() => lockDataDir(dir, 'sluice start'), (err: unknown) => err instanceof DataDirBusyError &&
    err.message === `data dir ${dir} is in use by sluice serve (pid ${process.pid}, since ${first.owner.since}). Stop that process, or pass --data-dir to use another dir`);
  first.release();
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  lockDataDir(dir, 'sluice start').release();
});

test('lock: a lock left by a process that is gone is replaced, and says so', (t) => {
  const dir = tmp(t);
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const pid = Number(gone.stdout);
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, host: hostname(), command: 'sluice serve', since: '2026-01-01T00:00:00.000Z', nonce: 'x' }));
  const notes: string[] = [];
  const lock = lockDataDir(dir, 'sluice serve', (m) => notes.push(m));
  t.after(() => lock.release());
  assert.equal(lock.owner.pid, process.pid);
  assert.deepEqual(notes, [`data dir ${dir}: removing a stale lock of sluice serve (pid ${pid}, since 2026-01-01T00:00:00.000Z; that process is gone)`]);
});

test('lock: a lock from another host cannot be checked here: refused, with how to remove it', (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 1, host: 'elsewhere.example', command: 'sluice serve', since: 'then', nonce: 'x' }));
  assert.throws(() => lockDataDir(dir, 'sluice serve'), {
    message: `data dir ${dir} is in use by sluice serve (pid 1 on host elsewhere.example, since then). Stop that process; if it is gone, delete ${join(dir, LOCK_FILE)}. Or pass --data-dir to use another dir`,
  });
  writeFileSync(join(dir, LOCK_FILE), 'garbage');
  assert.throws(() => lockDataDir(dir, 'sluice serve'), /is locked \(.*plane\.lock exists but is not a readable lock\)/);
});

test('startPlane: a second plane on the same dir is refused before it opens anything; the first keeps its state', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog(['a']));
  const data = join(dir, 'data');
  const first = await startPlane({ ...quiet, catalogFile: file, dataDir: data });
  try {
    assert.equal(first.first.result, 'success');
    await assert.rejects(startPlane({ ...quiet, catalogFile: file, dataDir: data }), (err: unknown) => err instanceof DataDirBusyError &&
      err.message.startsWith(`data dir ${data} is in use by sluice serve (pid ${process.pid}, since `));
    assert.deepEqual(first.control.store.all().map((r) => r.catalogName), ['acmeCo/a', 'acmeCo/source-a']);
  } finally {
    await first.close();
  }
  const again = await startPlane({ ...quiet, catalogFile: file, dataDir: data });
  await again.close();
});

test('deletions: publishing a catalog that deletes more live specs than it adds is refused and names them; --allow-deletions deletes', async (t) => {
  const dir = tmp(t);
  const data = join(dir, 'data');
  const mine = join(dir, 'mine.yaml');
  const other = join(dir, 'other.yaml');
  writeFileSync(mine, catalog(['a', 'b']));
  writeFileSync(other, catalog(['z']));
  const first = await startPlane({ ...quiet, catalogFile: mine, dataDir: data });
  await first.close();

  // The wrong catalog for this dir: 4 live specs would go, 2 come.
  await assert.rejects(startPlane({ ...quiet, catalogFile: other, dataDir: data }), {
    message: `this publication of ${other} would delete 4 live spec(s) of the data dir ${data} and add 2: acmeCo/a, acmeCo/b, acmeCo/source-a, acmeCo/source-b. ` +
      'Pass --allow-deletions to delete them, or --data-dir to use another data dir',
  });
  // Refused: nothing was deleted and the dir is free again.
  const lookAgain = await startPlane({ ...quiet, catalogFile: mine, dataDir: data });
  try {
    assert.deepEqual(lookAgain.first.deleted, []);
    // A republish that drops specs is refused too, and the running tasks stay.
    writeFileSync(mine, catalog(['a']));
    const refused = await lookAgain.republish();
    assert.equal(refused.result, 'publishFailed');
    assert.equal(refused.deletionsRefused, true);
    assert.deepEqual([...lookAgain.plane.runners.keys()].sort(), ['acmeCo/source-a', 'acmeCo/source-b']);
  } finally {
    await lookAgain.close();
  }

  const logs: string[] = [];
  const allowed = await startPlane({ ...quiet, catalogFile: other, dataDir: data, allowDeletions: true, log: (m) => logs.push(m) });
  t.after(() => allowed.close());
  assert.equal(allowed.first.result, 'success');
  assert.deepEqual(allowed.first.deleted, ['acmeCo/a', 'acmeCo/b', 'acmeCo/source-a', 'acmeCo/source-b']);
  assert.ok(logs.some((l) => l.endsWith(': deleted 4 live spec(s) no longer in the catalog: acmeCo/a, acmeCo/b, acmeCo/source-a, acmeCo/source-b')), logs.join('\n'));
  assert.deepEqual(allowed.control.store.all().map((r) => r.catalogName), ['acmeCo/source-z', 'acmeCo/z']);
});

async function busyPort(t: { after: (fn: () => Promise<void>) => void }): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => { server.close(() => r()); }));
  return (server.address() as AddressInfo).port;
}

test('busy port: one line naming the port and the flag; nothing opened, the dir left free', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog(['a']));
  const port = await busyPort(t);
  for (const [opts, flag] of [[{ port, ingestPort: 0 }, '--port'], [{ port: 0, ingestPort: port }, '--ingest-port']] as const) {
    const data = join(dir, `data-${flag}`);
    await assert.rejects(startPlane({ ...quiet, ...opts, catalogFile: file, dataDir: data }), {
      message: `port ${port} is in use (on 127.0.0.1); pass ${flag} with another port (0 picks a free one)`,
    });
    // Nothing but the (empty) dir: no lock left, no journals or control store opened.
    assert.deepEqual(readdirSync(data), []);
  }
});

test('sluice serve (the process): a busy port and a missing catalog exit 1 with one line, no stack trace', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog(['a']));
  const port = await busyPort(t);
  const busy = await sluice(['serve', '--catalog', file, '--data-dir', join(dir, 'data'), '--port', String(port), '--ingest-port', '0']);
  assert.equal(busy.code, 1, busy.stderr);
  assert.deepEqual(busy.stderrLines, [`sluice: port ${port} is in use (on 127.0.0.1); pass --port with another port (0 picks a free one)`]);
  const missing = await sluice(['serve', '--catalog', join(dir, 'missing.yaml'), '--data-dir', join(dir, 'data')]);
  assert.equal(missing.code, 1, missing.stderr);
  assert.deepEqual(missing.stderrLines, [`sluice: catalog ${join(dir, 'missing.yaml')} does not exist; pass --catalog with the path of a flow.yaml`]);
});

test('sluice start beside a running sluice serve on the same dir: refused, naming the serve process', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog(['a']));
  const data = join(dir, 'data');
  const serve = spawn(process.execPath, [SLUICE, 'serve', '--catalog', file, '--data-dir', data, '--port', '0', '--ingest-port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { if (serve.exitCode === null) serve.kill('SIGKILL'); });
  let err = '';
  serve.stderr.on('data', (d: Buffer) => { err += d; });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sluice serve did not print its ingester URL within 120 s; stderr:\n${err}`)), 120_000);
    serve.stderr.on('data', () => { if (err.includes('ingester: http://')) { clearTimeout(timer); resolve(); } });
    serve.once('exit', (code) => { clearTimeout(timer); reject(new Error(`sluice serve exited ${code}: ${err}`)); });
  });
  const second = await sluice(['start', '--data-dir', data, '--port', '0', '--ingest-port', '0', '--rows', '10', '--exit']);
  assert.equal(second.code, 1, second.stderr);
  assert.match(second.stderr, new RegExp(`^sluice: data dir ${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by sluice serve \\(pid ${serve.pid}, since [^)]+\\)\\. Stop that process, or pass --data-dir to use another dir\\n$`));
  assert.equal(second.stdout, '');
  const exited = new Promise<number | null>((r) => serve.once('exit', (code) => r(code)));
  serve.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(existsSync(join(data, LOCK_FILE)), false, 'the lock is released on SIGTERM');
});
