// The bins on a Node older than the pinned one: `sluice` (and each connector bin) re-executes itself on the
// Node 24 that `npm ci` puts in node_modules, passing arguments, exit codes and signals through; without that
// Node it says what to do in one message. Runs with the first Node older than 24 on PATH (the system one).
// The re-executed plane leads a process group of its own (a terminal's Ctrl-C reaches it once, forwarded) and,
// on Linux, gets SIGTERM from the kernel if the launcher is killed (setpriv's parent-death signal).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parentDeathWrapper } from '../runtime/src/host/process-group.ts';
import { alive, childrenOf, until } from '@sluice/runtime/testing';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SLUICE = join(ROOT, 'plane', 'bin', 'sluice.js');
const TEST_CAPTURE = join(ROOT, 'runtime', 'bin', 'sluice-test-capture.js');
const SPINNER = join(ROOT, 'runtime', 'test', 'fixtures', 'spinning-capture.ts');
const SLOW_STOP = join(ROOT, 'test', 'fixtures', 'slow-stop.js');

/** The first `node` on PATH older than 24, or why there is none. */
function olderNode(): { node: string; version: string } | { skip: string } {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const node = join(dir, 'node');
    if (dir === '' || !existsSync(node)) continue;
    const r = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    const version = r.stdout.trim();
    if (r.status === 0 && Number(version.split('.')[0]) < 24) return { node, version };
  }
  return { skip: 'no Node older than 24 on PATH (install one, e.g. Debian\'s nodejs, to test the launcher)' };
}

const old = olderNode();
const skip = 'skip' in old ? old.skip : false;

test('on an older Node, sluice re-executes on the pinned Node: arguments, output and exit codes pass through', { skip }, () => {
  if ('skip' in old) return;
  const help = spawnSync(old.node, [SLUICE, '--help'], { encoding: 'utf8', cwd: tmpdir() });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^usage: sluice <command> \[options\]/);
  assert.equal(help.stderr, '');
  const unknown = spawnSync(old.node, [SLUICE, 'no-such-command'], { encoding: 'utf8', cwd: tmpdir() });
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /^sluice: unknown command "no-such-command"/);
  // A connector bin too: the protocol on stdin/stdout goes through untouched.
  const spec = spawnSync(old.node, [TEST_CAPTURE], { input: '{"spec":{"connectorType":"IMAGE"}}\n', encoding: 'utf8' });
  assert.equal(spec.status, 0, spec.stderr);
  assert.match(spec.stdout, /^\{"spec":\{"protocol":3032023,/);
});

test('on an older Node, the connectors sluice starts with that Node re-execute on the pinned one too (the loop guard is for one hop)', { skip }, () => {
  if ('skip' in old) return;
  // The re-executed sluice used to pass its guard (SLUICE_REEXECUTED_NODE) on to every connector it started:
  // one run with the older Node then said "needs Node.js 24" although the pinned Node was there.
  const r = spawnSync(old.node, [SLUICE, 'raw', 'spec', '--', old.node, TEST_CAPTURE], { encoding: 'utf8', cwd: tmpdir() });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\{"spec":\{"protocol":3032023,/);
});

test('on an older Node without the pinned one, the message says which Node this is and what to run', { skip }, () => {
  if ('skip' in old) return;
  // The launcher's loop guard makes it behave as if node_modules held no Node 24.
  const r = spawnSync(old.node, [SLUICE, '--help'], { encoding: 'utf8', env: { ...process.env, SLUICE_REEXECUTED_NODE: old.version } });
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `sluice: needs Node.js 24 or later; this is Node ${old.version} (${old.node}).\n` +
    `Run \`npm ci\` in ${ROOT} (it installs the pinned Node 24 into node_modules, which this command then uses), or install Node 24 (https://nodejs.org).\n`);
});

test('SIGTERM to sluice serve started on an older Node reaches the plane: it stops, frees its dir, exits 0', { skip }, async (t) => {
  if ('skip' in old) return;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'flow.yaml'), `collections:\n  acmeCo/things:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n` +
    `captures:\n  acmeCo/source-things:\n    endpoint:\n      local:\n        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]\n        config: {apiKey: k, count: 1}\n    interval: 1h\n` +
    `    bindings:\n      - resource: {name: alpha}\n        target: acmeCo/things\n`);
  const child = spawn(old.node, [SLUICE, 'serve', '--catalog', 'flow.yaml', '--port', '0', '--ingest-port', '0', '--data-dir', 'data'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d; });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ingester URL within 120 s; stderr:\n${err}`)), 120_000);
    child.stderr.on('data', () => { if (/ingester: http:\/\/\S+/.test(err)) { clearTimeout(timer); resolve(); } });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${err}`)); });
  });
  const apiUrl = /API: (http:\/\/\S+)/.exec(err)?.[1];
  assert.ok(apiUrl, err);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, err);
  assert.equal(existsSync(join(dir, 'data', 'plane.lock')), false, 'the plane released its data dir');
  await assert.rejects(fetch(`${apiUrl}/openapi.json`), 'the API port is closed');
});

test('`npm start` passes the plane\'s declared Node flags itself, so the plane is not started twice (issue 16)', async () => {
  // Without them the launcher re-executes the bin to add them (process.execve): a second Node start, ~0.15 s of
  // CPU before the quickstart does anything. The flags are data in plane/package.json; the script must match.
  const { nodeFlagsOf } = await import('@sluice/runtime/launch');
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  assert.equal(scripts['start'], ['node', ...nodeFlagsOf(SLUICE), 'plane/bin/sluice.js', 'start'].join(' '));
});

test('sluice run from PATH starts once on Node 24: its shebang passes the plane\'s declared Node flags (env -S)', async () => {
  // `#!/usr/bin/env node` cannot pass them, so the launcher re-executed the bin to add them (process.execve): a
  // second Node start, measured +0.23 s of CPU per command at load 12–19 (0.52 s → 0.75 s for `--help`). On a Node
  // older than 24 first on PATH the re-execution on the pinned Node stays (the sources are TypeScript, and that
  // Node has no execve); the launcher then runs with the plane's heap flags too.
  const { nodeFlagsOf } = await import('@sluice/runtime/launch');
  const shebang = readFileSync(SLUICE, 'utf8').split('\n', 1)[0];
  assert.equal(shebang, `#!/usr/bin/env -S ${['node', ...nodeFlagsOf(SLUICE)].join(' ')}`);
  // Run as a command (the kernel reads the shebang), with this Node 24 first on PATH.
  const r = spawnSync(SLUICE, ['--help'], { encoding: 'utf8', cwd: tmpdir(), env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^usage: sluice <command> \[options\]/);
});

test('sluice run from PATH with an older Node first on it re-executes on the pinned Node, with the flags', { skip }, () => {
  if ('skip' in old) return;
  const r = spawnSync(SLUICE, ['--help'], { encoding: 'utf8', cwd: tmpdir(), env: { ...process.env, PATH: `${dirname(old.node)}${delimiter}${process.env.PATH ?? ''}` } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^usage: sluice <command> \[options\]/);
});

/**
 * `sluice serve` on the older Node (the launcher, re-executing the plane on the pinned Node) with a capture whose
 * connector spins in synchronous code once opened; resolves once that connector runs, with the pids of all three.
 */
async function launchedServe(t: TestContext, detached: boolean) {
  if ('skip' in old) throw new Error('unreachable');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-launch-'));
  const pids: number[] = [];
  t.after(() => {
    for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  });
  const pidFile = join(dir, 'spinner.pid');
  writeFileSync(join(dir, 'flow.yaml'), `collections:\n  acmeCo/things:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n` +
    `captures:\n  acmeCo/spinning:\n    endpoint:\n      local:\n        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(SPINNER)}]\n        config: {apiKey: k}\n` +
    `        env: {SPIN_PID_FILE: ${JSON.stringify(pidFile)}}\n    bindings:\n      - resource: {name: alpha}\n        target: acmeCo/things\n`);
  const launcher = spawn(old.node, [SLUICE, 'serve', '--catalog', 'flow.yaml', '--port', '0', '--ingest-port', '0', '--data-dir', 'data'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], detached });
  pids.push(launcher.pid!);
  let err = '';
  launcher.stderr.on('data', (d: Buffer) => { err += d; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => launcher.once('exit', (code, signal) => r({ code, signal })));
  const spinner = await until('the capture\'s connector to spin', () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined), { detail: () => `stderr:\n${err}` });
  pids.push(spinner);
  const [plane] = childrenOf(launcher.pid!);
  assert.ok(plane !== undefined && childrenOf(plane).includes(spinner), 'launcher → plane → connector');
  pids.push(plane);
  return { dir, launcher, exited, plane, spinner, stderr: () => err };
}

test('Ctrl-C at a terminal (SIGINT to the whole process group) stops a plane started on an older Node once, cleanly: exit 0', { skip }, async (t) => {
  const s = await launchedServe(t, true);
  // As a terminal does: the signal goes to every process of the foreground group.
  process.kill(-s.launcher.pid!, 'SIGINT');
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
  assert.equal(existsSync(join(s.dir, 'data', 'plane.lock')), false, 'the plane released its data dir');
  await until(`the plane's connector (pid ${s.spinner}) to be gone`, () => !alive(s.spinner), { ms: 30_000 });
});

test('the launcher killed with SIGKILL: the plane it started on the pinned Node stops cleanly (parent-death SIGTERM), its connector with it', { skip }, async (t) => {
  if (parentDeathWrapper() === null) {
    t.skip('no setpriv with --pdeathsig here (Linux, util-linux 2.33+): the plane would run on as an orphan');
    return;
  }
  const s = await launchedServe(t, false);
  await until('the plane\'s ready line', () => s.stderr().includes('sluice: ready: '), { detail: s.stderr });
  s.launcher.kill('SIGKILL');
  await s.exited;
  await until('the plane to start its clean stop', () => s.stderr().includes('SIGTERM: stopping'), { ms: 60_000, detail: s.stderr });
  // The kernel sends that SIGTERM again for each thread of the launcher as they exit (a forced stop took the
  // repeats for a second stop signal and left the lock: the next test makes the repeat certain).
  await until(`the plane (pid ${s.plane}) to stop`, () => !alive(s.plane), { ms: 60_000, detail: s.stderr });
  assert.doesNotMatch(s.stderr(), /stopped \d+ connector process/, 'a forced stop');
  assert.equal(existsSync(join(s.dir, 'data', 'plane.lock')), false, `the plane released its data dir; its stderr:\n${s.stderr()}`);
  await until(`the plane's connector (pid ${s.spinner}) to be gone`, () => !alive(s.spinner), { ms: 30_000 });
});

test('the launcher killed with SIGKILL: a repeat of the parent-death SIGTERM (the kernel sends one per thread of the launcher) does not force the stop', { skip }, async (t) => {
  if ('skip' in old) return;
  if (parentDeathWrapper() === null) {
    t.skip('no setpriv with --pdeathsig here (Linux, util-linux 2.33+)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-launch-'));
  const done = join(dir, 'stop-done');
  const pids: number[] = [];
  t.after(() => {
    for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  });
  // A bin like sluice whose clean stop lasts until `done` exists (plane's own stop is too quick to hit every time).
  const launcher = spawn(old.node, [SLOW_STOP], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, STOP_DONE: done } });
  pids.push(launcher.pid!);
  let err = '';
  launcher.stderr.on('data', (d: Buffer) => { err += d; });
  await until('the re-executed bin\'s ready line', () => err.includes('ready\n'), { detail: () => err });
  const [child] = childrenOf(launcher.pid!);
  assert.ok(child !== undefined, 'launcher → the bin on the pinned Node');
  pids.push(child);
  launcher.kill('SIGKILL');
  await until('the bin to start its clean stop (the parent-death SIGTERM)', () => err.includes('SIGTERM: stopping\n'), { detail: () => err });
  // Another SIGTERM, as the kernel sends for each further thread of the dead launcher (or a late one of them).
  process.kill(child, 'SIGTERM');
  await until('the repeat to be taken as the launcher\'s death, or the bin to die of it', () => err.includes('SIGTERM again') || !alive(child), { detail: () => err });
  assert.match(err, /sluice: SIGTERM again, from the launcher's death \(the kernel sends one per thread of it\): the stop goes on; SIGINT forces it\n/);
  assert.ok(alive(child), `the clean stop goes on; stderr:\n${err}`);
  writeFileSync(done, '');
  await until('the clean stop to end', () => err.includes('stopped cleanly\n'), { detail: () => err });
});
