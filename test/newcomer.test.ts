// What a newcomer does first, for real: clone the repository into a temporary directory (no sibling shared/),
// `npm ci`, `npm start` to the quickstart's rows, then put `sluice` on PATH the way the README says (`npm link`,
// here into a private prefix) and run a catalog of their own from a directory outside the clone — relative
// paths, a built-in connector named by its Flow image, a SQLite file — until its rows arrive; SIGTERM stops it.
// npm ci prefers the local npm cache (--prefer-offline), so this costs about a minute on a warm cache.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const isClone = spawnSync('git', ['-C', ROOT, 'rev-parse', '--is-inside-work-tree'], { encoding: 'utf8' }).stdout.trim() === 'true';

/** Runs a command to its end; fails with its output when it exits non-zero. */
function run(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): string {
  const r = spawnSync(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${options.cwd}) exited ${r.status ?? r.signal}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r.stdout;
}

function count(db: string, table: string): number {
  try {
    const conn = new DatabaseSync(db, { readOnly: true });
    try { return Number((conn.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n); } finally { conn.close(); }
  } catch {
    return 0; // not created yet
  }
}

test('a newcomer: clone, npm ci, npm start, then sluice from PATH on a catalog outside the repository', {
  skip: isClone ? false : 'not a git checkout: nothing to clone',
  timeout: 1_200_000,
}, async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'sluice-newcomer-'));
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  const repo = join(tmp, 'sluice');
  // The committed HEAD, as a clone would get it: no node_modules, no ../shared beside it.
  run('git', ['clone', '--quiet', '--no-hardlinks', ROOT, repo], { cwd: tmp });
  assert.equal(existsSync(join(tmp, 'shared')), false);
  run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: repo });

  // The README's first command: the quickstart, to its rows (small, on free ports, exiting when done).
  const quick = run('npm', ['start', '--', '--rows', '2000', '--port', '0', '--ingest-port', '0', '--exit'], { cwd: repo });
  assert.match(quick, /done {5}2,000 rows captured into \d journals and materialized/);
  assert.equal(count(join(repo, 'data', 'quickstart.db'), 'rides'), 2000);

  // `npm link` puts sluice on PATH; a private prefix stands in for npm's global one.
  const prefix = join(tmp, 'prefix');
  run('npm', ['link', '--no-audit', '--no-fund'], { cwd: repo, env: { ...process.env, npm_config_prefix: prefix } });
  const bin = join(prefix, 'bin');
  assert.ok(existsSync(join(bin, 'sluice')), 'npm link created the sluice command');

  // The newcomer's own project, elsewhere: a CSV served over HTTP, a catalog with relative paths.
  const csv = `id,name\n${Array.from({ length: 50 }, (_, i) => `${i},name ${i}`).join('\n')}\n`;
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/csv', 'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT', 'content-length': Buffer.byteLength(csv) });
    res.end(req.method === 'HEAD' ? undefined : csv);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }));
  const project = join(tmp, 'my-project');
  mkdirSync(join(project, 'out'), { recursive: true });
  writeFileSync(join(project, 'flow.yaml'), `collections:
  me/people:
    schema: {type: object, properties: {id: {type: string}, name: {type: string}}, required: [id]}
    key: [/id]
captures:
  me/source-people:
    endpoint:
      connector:
        image: ghcr.io/estuary/source-http-file:dev
        config: {url: "http://127.0.0.1:${(server.address() as AddressInfo).port}/people.csv"}
    bindings:
      - resource: {stream: people}
        target: me/people
materializations:
  me/to-sqlite:
    endpoint:
      sqlite: {path: out/people.db}
    bindings:
      - source: me/people
        resource: {table: people}
`);
  // PATH as the newcomer's shell has it, with npm's bin dir first; `sluice` starts on whatever node comes first.
  const env = { ...process.env, PATH: [bin, ...(process.env.PATH ?? '').split(delimiter)].join(delimiter) };
  const help = spawnSync('sluice', ['--help'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^usage: sluice <command>/);

  const serve = spawn('sluice', ['serve', '--catalog', 'flow.yaml', '--data-dir', 'data', '--port', '0', '--ingest-port', '0'], { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { if (serve.exitCode === null) serve.kill('SIGKILL'); });
  let err = '';
  serve.stderr.on('data', (d: Buffer) => { err += d; });
  const db = join(project, 'out', 'people.db');
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => { clearInterval(poll); reject(new Error(`50 rows in ${db} not seen within 300 s (have ${count(db, 'people')})\nstderr:\n${err}`)); }, 300_000);
    // The rows are the event awaited; the database is read every half second until they are there.
    const poll = setInterval(() => { if (count(db, 'people') === 50) { clearInterval(poll); clearTimeout(deadline); resolve(); } }, 500);
    serve.once('exit', (code) => { clearInterval(poll); clearTimeout(deadline); reject(new Error(`sluice serve exited ${code}\n${err}`)); });
  });
  assert.ok(existsSync(join(project, 'data', 'plane.lock')), 'the data dir is the project\'s, relative to where sluice ran');
  const exited = new Promise<number | null>((r) => serve.once('exit', (code) => r(code)));
  serve.kill('SIGTERM');
  assert.equal(await exited, 0, err);
  assert.doesNotMatch(err, /\n\s+at /, 'no stack trace');
});
