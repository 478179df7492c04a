// A stop signal never leaves a connector behind (plane/src/cli/stop-signals.ts), with the real bin and a real
// connector busy in synchronous code (runtime/test/fixtures/spinning-capture.ts: no signal handler of its runs,
// it never reads the end of its stdin). Every wait is for an event — a pid file, an exit, a pid gone from /proc.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, type TestContext } from 'node:test';
import { alive, childrenOf, until } from '@sluice/runtime/testing';
import { parentDeathWrapper } from '../../../runtime/src/host/process-group.ts';
import { SLUICE } from './helpers.ts';

const SPINNER = fileURLToPath(new URL('../../../runtime/test/fixtures/spinning-capture.ts', import.meta.url));

function setup(t: TestContext, spinAt: 'validate' | 'open', extra = '') {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stop-'));
  const pids: number[] = [];
  t.after(() => {
    for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  });
  const pidFile = join(dir, 'spinner.pid');
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  acmeCo/greetings:
    schema: {type: object, properties: {id: {type: string}}, required: [id]}
    key: [/id]
captures:
  acmeCo/spinning:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(SPINNER)}]
        config: {apiKey: k}
        env: {SPIN_PID_FILE: ${JSON.stringify(pidFile)}, SPIN_AT: ${spinAt}}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
${extra}`);
  return { dir, pids, pidFile };
}

function run(args: string[], pids: number[]) {
  const child = spawn(process.execPath, [SLUICE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  pids.push(child.pid!);
  let output = '';
  child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, output: () => output };
}

async function spinnerOf(pidFile: string, pids: number[], output: () => string): Promise<number> {
  const pid = await until(`the connector's pid file ${pidFile}`, () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined), { detail: () => `output:\n${output()}` });
  pids.push(pid);
  return pid;
}

test('serve: SIGTERM during the first publication (a validate spinning) kills its connectors, releases the data dir, dies of SIGTERM', async (t) => {
  const { dir, pids, pidFile } = setup(t, 'validate');
  const serve = run(['serve', '--catalog', join(dir, 'flow.yaml'), '--port', '0', '--ingest-port', '0', '--data-dir', join(dir, 'data')], pids);
  const spinner = await spinnerOf(pidFile, pids, serve.output);
  // The spinner, and the connectors started ahead for the publication's next RPCs (Launcher.prestart).
  const connectors = childrenOf(serve.child.pid!);
  pids.push(...connectors);
  assert.ok(connectors.includes(spinner), `the spinning validate is a child of serve (children: ${connectors.join(', ')})`);
  serve.child.kill('SIGTERM');
  const { code, signal } = await serve.exited;
  assert.deepEqual({ code, signal }, { code: null, signal: 'SIGTERM' }, serve.output());
  assert.match(serve.output(), /SIGTERM during the first publication: stopping its connectors\n/);
  assert.equal(existsSync(join(dir, 'data', 'plane.lock')), false, 'the data dir lock was released');
  for (const pid of connectors) await until(`connector ${pid} of the stopped plane to be gone`, () => !alive(pid), { ms: 30_000 });
});

test('preview: SIGINT while its capture spins stops the connector (SIGTERM, then SIGKILL) and dies of SIGINT', async (t) => {
  const { dir, pids, pidFile } = setup(t, 'open');
  const preview = run(['preview', '--catalog', join(dir, 'flow.yaml'), '--name', 'acmeCo/spinning'], pids);
  const spinner = await spinnerOf(pidFile, pids, preview.output);
  preview.child.kill('SIGINT');
  const { code, signal } = await preview.exited;
  assert.deepEqual({ code, signal }, { code: null, signal: 'SIGINT' }, preview.output());
  assert.match(preview.output(), /sluice: SIGINT: stopped 1 connector process\n/);
  await until(`the spinning connector (pid ${spinner}) to be gone`, () => !alive(spinner), { ms: 30_000 });
});

test('serve killed with SIGKILL: its connectors die with it — the capture spinning in synchronous code, and the materialization\'s, started from a worker thread (parent-death signal)', async (t) => {
  if (parentDeathWrapper() === null) {
    t.skip('no setpriv with --pdeathsig on this machine (Linux, util-linux 2.33+): orphans run until their next read or write');
    return;
  }
  const { dir, pids, pidFile } = setup(t, 'open', `materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
`);
  const serve = run(['serve', '--catalog', join(dir, 'flow.yaml'), '--port', '0', '--ingest-port', '0', '--data-dir', join(dir, 'data')], pids);
  const spinner = await spinnerOf(pidFile, pids, serve.output);
  const cmdline = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { return ''; } };
  const materializer = await until('the materialization\'s connector (materialize-sqlite) to run', () => childrenOf(serve.child.pid!).find((pid) => cmdline(pid).includes('materialize-sqlite')), { detail: serve.output });
  const connectors = childrenOf(serve.child.pid!);
  pids.push(...connectors);
  assert.ok(connectors.includes(spinner));
  serve.child.kill('SIGKILL');
  await serve.exited;
  for (const pid of connectors) await until(`connector ${pid}${pid === materializer ? ' (materialize-sqlite)' : pid === spinner ? ' (the spinning capture)' : ''} of the killed plane to be gone`, () => !alive(pid), { ms: 30_000 });
});

test('serve: a second SIGINT during the clean stop forces it — the spinning connector killed, the data dir released, dies of SIGINT', async (t) => {
  // Dying of a signal skips `exit` handlers, where the lock is otherwise released: forceStop releases it itself.
  const { dir, pids, pidFile } = setup(t, 'open');
  const serve = run(['serve', '--catalog', join(dir, 'flow.yaml'), '--port', '0', '--ingest-port', '0', '--data-dir', join(dir, 'data')], pids);
  const spinner = await spinnerOf(pidFile, pids, serve.output);
  await until('serve\'s ready line', () => serve.output().includes('sluice: ready: '), { detail: serve.output });
  serve.child.kill('SIGINT');
  // The clean stop waits for the spinner (SIGTERM, which it cannot handle, then SIGKILL after a grace period).
  await until('serve to start its clean stop', () => /SIGINT: stopping \(a second stop signal forces it\)\n/.test(serve.output()), { detail: serve.output });
  serve.child.kill('SIGINT');
  const { code, signal } = await serve.exited;
  assert.deepEqual({ code, signal }, { code: null, signal: 'SIGINT' }, serve.output());
  assert.equal(existsSync(join(dir, 'data', 'plane.lock')), false, `the data dir lock was released; output:\n${serve.output()}`);
  await until(`the spinning connector (pid ${spinner}) to be gone`, () => !alive(spinner), { ms: 30_000 });
});

test('forceStop releases the data-dir lock the process holds before it dies of the signal (death by a signal skips `exit` handlers)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stop-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lockModule = new URL('../../src/data-dir-lock.ts', import.meta.url).href;
  const signalsModule = new URL('../../src/cli/stop-signals.ts', import.meta.url).href;
  const script = `const { lockDataDir } = await import(${JSON.stringify(lockModule)});
const { installStopSignals, forceStop } = await import(${JSON.stringify(signalsModule)});
installStopSignals();
lockDataDir(process.argv[1], 'a forced process');
await forceStop('SIGTERM', 0);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, join(dir, 'data')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  assert.deepEqual({ code, signal }, { code: null, signal: 'SIGTERM' }, err);
  assert.equal(existsSync(join(dir, 'data')), true, err);
  assert.equal(existsSync(join(dir, 'data', 'plane.lock')), false, 'the lock was released');
});
