// No connector outlives its host or a stop (runtime/src/host/process-group.ts), with real processes: a
// connector behind a wrapper command (`sh -c`), one that started a grandchild, one spinning in synchronous code
// (it runs no signal handler and never reads the end of its stdin). Every wait is for an event — a pid file
// written, a process gone from /proc — with a deadline naming it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { startConnector } from '../src/host/index.ts';
import { parentDeathWrapper } from '../src/host/process-group.ts';
import { alive, until } from '@sluice/runtime/testing';

const SPINNER = new URL('./fixtures/spinning-capture.ts', import.meta.url).pathname;
const HOST = new URL('./fixtures/connector-host.ts', import.meta.url).pathname;

const OPEN = {
  open: {
    capture: { name: 'acme/spin', config: { apiKey: 'k' }, bindings: [{ resourceConfig: { name: 'alpha' }, collection: { name: 'acme/alpha', key: ['/id'] } }] },
    range: { keyEnd: 4294967295, rClockEnd: 4294967295 },
  },
};

/** A temporary dir, and every pid a test announces killed at its end (a failing test leaves no spinner). */
function scratch(t: TestContext): { dir: string; pids: number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-procs-'));
  const pids: number[] = [];
  t.after(() => {
    for (const pid of pids) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, pids };
}

/** Waits for a pid file (written whole, then renamed) and returns the pid. */
async function pidIn(file: string, pids: number[]): Promise<number> {
  const pid = await until(`the pid file ${file}`, () => (existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined));
  pids.push(pid);
  return pid;
}

const gone = (what: string, pid: number) => until(`${what} (pid ${pid}) to be gone`, () => !alive(pid), { ms: 30_000 });

describe('ConnectorProcess.kill stops the connector\'s whole process group', () => {
  it('a connector behind a wrapper command (sh -c), and the grandchild it started', async (t) => {
    const { dir, pids } = scratch(t);
    const pidFile = join(dir, 'connector.pid');
    // `; exit $?` keeps sh from exec'ing node in its place: sh stays the direct child, node its child.
    const proc = startConnector({
      command: 'sh', args: ['-c', `"${process.execPath}" "${SPINNER}"; exit $?`],
      env: { SPIN_PID_FILE: pidFile, SPIN_GRANDCHILD: '1' },
    }, { protocol: 'capture', name: 'wrapped' });
    const responses = (async () => { try { for await (const _ of proc.responses()) { /* none */ } } catch { /* killed */ } })();
    await proc.send(OPEN as never);
    const connector = await pidIn(pidFile, pids);
    const grandchild = await pidIn(`${pidFile}.grandchild`, pids);
    assert.notEqual(connector, proc.child.pid, 'the connector runs under the wrapper, not as the direct child');
    assert.ok(alive(connector) && alive(grandchild));
    await proc.kill(1000);
    await responses;
    await gone('the connector under the wrapper', connector);
    await gone('the connector\'s grandchild', grandchild);
  });

  it('what a connector left running when it exited is stopped (and its pipes close)', async (t) => {
    const { dir, pids } = scratch(t);
    const pidFile = join(dir, 'left.pid');
    // sh starts the spinner in the background (holding sh's stdout and stderr), and exits once it runs.
    const proc = startConnector({
      command: 'sh', args: ['-c', `"${process.execPath}" "${SPINNER}" & while [ ! -f "$SPIN_PID_FILE" ]; do sleep 0.05; done; exit 0`],
      env: { SPIN_PID_FILE: pidFile, SPIN_ROLE: 'grandchild' },
    }, { protocol: 'capture', name: 'leaves-one', killGraceMs: 1000 });
    const left = await pidIn(pidFile, pids);
    const responses: unknown[] = [];
    // Without the group stop, its output would end only when the host gave up on the pipes (exitTimeoutMs, 30 s).
    for await (const r of proc.responses()) responses.push(r);
    assert.deepEqual(responses, []);
    await gone('the process the connector left behind', left);
  });
});

describe('a connector whose host dies by SIGKILL', () => {
  async function hosted(t: TestContext, env: Record<string, string>, until?: string) {
    const { dir, pids } = scratch(t);
    const pidFile = join(dir, 'hosted.pid');
    const host = spawn(process.execPath, [HOST], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env, ...env,
        HOST_TARGET: JSON.stringify({ command: process.execPath, args: [SPINNER], env: { SPIN_PID_FILE: pidFile, ...(until ? { SPIN_UNTIL: join(dir, until) } : {}) } }),
        HOST_REQUESTS: JSON.stringify([OPEN]),
      },
    });
    pids.push(host.pid!);
    const connector = await pidIn(pidFile, pids);
    const hostGone = new Promise((r) => host.once('exit', r));
    host.kill('SIGKILL');
    await hostGone;
    return { dir, connector };
  }

  it('is killed by the kernel even while it spins in synchronous code (setpriv --pdeathsig KILL)', async (t) => {
    if (parentDeathWrapper() === null) {
      t.skip('no setpriv with --pdeathsig on this machine (Linux util-linux 2.33+): the connector would spin on');
      return;
    }
    const { connector } = await hosted(t, {});
    await gone('the spinning connector of the killed host', connector);
  });

  it('without the parent-death signal, it runs on while it spins, and exits at its next write (EPIPE)', async (t) => {
    const { dir, connector } = await hosted(t, { SLUICE_PDEATHSIG: '0' }, 'stop-spinning');
    // Still in its loop: no end of stdin, no signal has reached it (a fact at this point, not a timing).
    assert.ok(alive(connector), 'the orphan spins on');
    writeFileSync(join(dir, 'stop-spinning'), '');
    await gone('the orphan, once out of its loop', connector);
  });
});
