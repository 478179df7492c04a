// Orphaned connectors: when the process that started a connector dies, the connector's stdin ends and
// nobody reads its stdout/stderr any more (EPIPE). It must exit promptly — before the fix, logging the
// pipe error to the broken stderr raised another one, forever (100% CPU, locks held).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { Readable } from 'node:stream';
import { alive, until, within } from '@sluice/runtime/testing';

const fixture = (name: string): string => new URL(`./fixtures/${name}`, import.meta.url).pathname;
const BIN = (name: string): string => new URL(`../bin/${name}`, import.meta.url).pathname;

/** CPU time (user + system) of a process in clock ticks, or undefined once it is gone. */
function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/**
 * Starts `connector` under a parent process, waits until it has answered, kills the parent with SIGKILL
 * and waits for the orphaned connector to exit (failing after `deadlineMs`). The exit is an event: the
 * connector inherits the write end of a pipe (its fd 3) whose read end is the test's, and that pipe ends
 * once the parent (killed) and the connector (exited) have both closed it.
 */
async function orphan(connector: string, requests: object[], deadlineMs = 20_000): Promise<void> {
  const parent = spawn(process.execPath, [fixture('orphaning-parent.ts'), connector], {
    stdio: ['ignore', 'pipe', 'inherit', 'pipe'],
    env: { ...process.env, ORPHAN_REQUESTS: JSON.stringify(requests), LOG_LEVEL: 'info' },
  });
  const { stdout } = parent;
  const lifeline = parent.stdio[3];
  if (stdout === null || !(lifeline instanceof Readable)) throw new Error('the parent was spawned without its pipes');
  const ended = new Promise<void>((resolve) => lifeline.once('close', () => resolve()));
  lifeline.resume();
  const lines = createInterface({ input: stdout })[Symbol.asyncIterator]();
  let pid: number | undefined;
  const startup = setTimeout(() => parent.kill('SIGKILL'), 60_000);
  try {
    while (pid === undefined) {
      const next = await lines.next();
      if (next.done === true) throw new Error('the parent ended before the connector answered (startup took over 60 s, or the connector failed)');
      const msg = JSON.parse(next.value) as { pid?: number; exited?: unknown };
      if (msg.exited) throw new Error(`the connector exited before it was orphaned: ${JSON.stringify(msg.exited)}`);
      pid = msg.pid;
    }
  } finally {
    clearTimeout(startup);
  }
  const orphaned = pid;
  assert.ok(alive(orphaned), 'the connector runs before its parent dies');
  parent.kill('SIGKILL');
  await within(`the orphaned connector (pid ${orphaned}) to exit after its parent died`, ended, {
    ms: deadlineMs,
    detail: () => `it was still running (${cpuTicks(orphaned)} CPU ticks used)`,
    onTimeout: () => { try { process.kill(orphaned, 'SIGKILL'); } catch { /* gone meanwhile */ } },
  });
  // Its files close during its exit, a moment before the kernel marks it a zombie.
  await until(`the orphan (pid ${orphaned}) to finish exiting`, () => !alive(orphaned));
}

const CAPTURE_OPEN = (config: object) => ({
  open: {
    capture: { name: 'acme/orphan', config: { apiKey: 'k', ...config }, bindings: [{ resourceConfig: { name: 'alpha' }, collection: { name: 'acme/alpha', key: ['/id'] } }] },
    range: { keyEnd: 4294967295, rClockEnd: 4294967295 },
  },
});

describe('orphaned connectors exit when their parent dies', () => {
  it('a capture that logs while its stderr is broken (EPIPE on stderr mid-session)', async () => {
    await orphan(fixture('chatty-capture.ts'), [CAPTURE_OPEN({})]);
  });

  it('a capture that keeps writing documents (EPIPE on stdout)', async () => {
    await orphan(BIN('sluice-test-capture.js'), [CAPTURE_OPEN({ count: 1_000_000, delayMs: 5 })]);
  });

  it('a materialization waiting for its next transaction (stdin ends, the error report meets EPIPE)', async () => {
    await orphan(BIN('sluice-test-materialize.js'), [{
      open: {
        materialization: {
          name: 'acme/orphan', config: {},
          bindings: [{ resourceConfig: { table: 'alpha' }, resourcePath: ['alpha'], collection: { name: 'acme/alpha', key: ['/id'] }, fieldSelection: { keys: ['id'], document: 'flow_document' } }],
        },
        range: { keyEnd: 4294967295, rClockEnd: 4294967295 },
      },
    }]);
  });
});

describe('an EPIPE of the connector\'s own sockets is an ordinary failure', () => {
  it('is reported on stderr (last line) with exit 1, not swallowed', async () => {
    const child = spawn(process.execPath, [fixture('own-epipe-capture.ts')], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.stdout.resume();
    child.stdin.end(`${JSON.stringify({ discover: { connectorType: 'IMAGE', config: { apiKey: 'k' } } })}\n`);
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 1);
    const last = JSON.parse(stderr.trim().split('\n').at(-1)!) as { msg: string };
    assert.match(last.msg, /^write EPIPE \(the source closed the connection\) \(internal error; see the previous log line for details\)$/);
  });
});
