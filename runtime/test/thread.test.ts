// The worker-thread module (src/thread): a real thread running a fixture module — messages both ways with
// transfer, errors rebuilt with their class, cause and properties, the thread's death named (its exit code,
// its uncaught error), terminate() not a failure, the prestarted spare taken once, and every thread counted
// until it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { rebuildError, serveThread, threadModule } from '../src/thread/index.ts';
import type { Thread } from '../src/thread/index.ts';
import { until, within } from '../src/testing/index.ts';
import type { EchoIn, EchoOut } from './fixtures/thread-echo.ts';

const echo = threadModule<EchoIn, EchoOut>(new URL('./fixtures/thread-echo.ts', import.meta.url), { name: 'the echo thread' });

function next(t: Thread<EchoIn, EchoOut>): Promise<EchoOut> {
  return new Promise((resolve) => t.onMessage(resolve));
}
function ended(t: Thread<EchoIn, EchoOut>): Promise<Error | undefined> {
  return new Promise((resolve) => t.onEnd(resolve));
}

test('messages go both ways; transferred buffers move', async () => {
  const t = echo.start();
  t.hold();
  const data = new Uint8Array([1, 2, 3]);
  const reply = next(t);
  t.post({ t: 'echo', data }, [data.buffer]);
  assert.equal(data.byteLength, 0, 'the buffer moved to the thread');
  const m = await reply;
  assert.equal(m.t, 'echo');
  assert.deepEqual([...(m as { data: Uint8Array }).data], [1, 2, 3]);
  const end = ended(t);
  await t.terminate();
  assert.equal(await end, undefined, 'terminate() is not a failure');
  assert.equal(t.ended, true);
  assert.equal(echo.live(), 0);
});

test('an error crosses with its name, message, cause and cloneable properties', async () => {
  const t = echo.start();
  t.hold();
  const reply = next(t);
  t.post({ t: 'fail', message: 'row 7 is bad' });
  const m = await reply;
  assert.equal(m.t, 'error');
  const err = rebuildError((m as { error: Parameters<typeof rebuildError>[0] }).error) as Error & Record<string, unknown>;
  assert.equal(err.name, 'RangeError');
  assert.equal(err.message, 'row 7 is bad');
  assert.equal(err['code'], 'E_FAIL');
  assert.equal(err['line'], 7);
  assert.deepEqual(err['fields'], { file: 'x.csv' });
  assert.equal(err['skip'], undefined, 'functions stay behind');
  assert.equal((err.cause as Error).name, 'TypeError');
  assert.equal((err.cause as Error).message, 'underneath');
  assert.match(err.stack ?? '', /thread-echo\.ts/, "the stack is the thread's");
  // The caller's own classes, by name.
  class RowError extends Error {}
  const mine = rebuildError((m as { error: Parameters<typeof rebuildError>[0] }).error, (e) => (e.name === 'RangeError' ? new RowError(e.message) : undefined));
  assert.ok(mine instanceof RowError);
  await t.terminate();
});

test('an exit nobody asked for is named with its code (or the caller\'s error)', async () => {
  const t = echo.start();
  t.hold();
  const end = ended(t);
  t.post({ t: 'exit', code: 3 });
  assert.equal((await end)?.message, 'the echo thread exited unexpectedly (exit code 3)');
  assert.equal(t.ended, true);
  t.post({ t: 'exit', code: 4 }); // nothing: the thread has ended

  const custom = threadModule<EchoIn, EchoOut>(new URL('./fixtures/thread-echo.ts', import.meta.url), {
    name: 'the echo thread', exitError: (code) => new TypeError(`echo died (${code})`),
  });
  const c = custom.start();
  const cEnd = ended(c);
  await custom.killAll();
  const err = await cEnd;
  assert.ok(err instanceof TypeError);
  assert.match(err.message, /^echo died \(\d+\)$/, 'killAll is a death, not a terminate()');
  assert.equal(custom.live(), 0);
});

test("the thread's uncaught error ends it with that error", async () => {
  const t = echo.start();
  t.hold();
  const end = ended(t);
  t.post({ t: 'throw' });
  const err = await end;
  assert.equal(err?.message, 'thrown in the thread');
  assert.equal(t.ended, true);
});

test('the prestarted thread is taken once; a released or dead one is replaced', async () => {
  await until('the threads of the tests before to exit', () => echo.live() === 0);
  echo.prestart();
  echo.prestart(); // one at a time
  assert.equal(echo.live(), 1);
  const a = echo.start();
  assert.equal(echo.live(), 1, 'start() took the prestarted thread');
  const b = echo.start();
  assert.notEqual(a, b);
  assert.equal(echo.live(), 2);
  await Promise.all([a.terminate(), b.terminate()]);

  echo.prestart();
  const spare = echo.start();
  const end = ended(spare);
  await spare.kill();
  await end;
  echo.prestart();
  echo.releasePrestarted();
  const fresh = echo.start();
  assert.equal(fresh.ended, false);
  await fresh.terminate();
  // The released spare's exit is counted when it comes.
  await until('the released spare thread to exit', () => echo.live() === 0);
});

test('an idle thread, prestarted or started, does not keep its process from exiting (hold() does)', async () => {
  // Real processes: the test runner's own event loop would hide a handle left referenced.
  const host = JSON.stringify(new URL('../src/thread/index.ts', import.meta.url).href);
  const fixture = JSON.stringify(new URL('./fixtures/thread-echo.ts', import.meta.url).href);
  const run = async (what: string, code: string): Promise<{ code: number | null; stderr: string }> => {
    // A module file, not `-e` with --input-type=module: a thread inherits that flag, and its CommonJS bootstrap then fails.
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-thread-')), 'child.mjs');
    writeFileSync(file, `const { threadModule } = await import(${host}); const m = threadModule(new URL(${fixture}), { name: 't' }); ${code}`);
    const p = spawn(process.execPath, [file], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    // A guard against a hang, not a timing: a process whose thread is idle exits as soon as its module ends.
    const [exit] = await within(`the process with ${what} to exit`, once(p, 'exit'), { ms: 30_000, detail: () => stderr, onTimeout: () => p.kill('SIGKILL') }) as [number | null];
    rmSync(dirname(file), { recursive: true, force: true });
    return { code: exit, stderr };
  };
  for (const [what, code] of [['a prestarted idle thread', 'm.prestart();'], ['a started idle thread', 'const t = m.start(); t.onEnd((f) => { if (f) throw f; });']] as const) {
    const r = await run(what, code);
    assert.deepEqual(r, { code: 0, stderr: '' });
  }
  // One held (it owes an answer) keeps the process alive until released.
  const held = await run('a held thread', "const t = m.start(); t.hold(); setTimeout(() => { process.stderr.write('released'); t.release(); }, 300);");
  assert.deepEqual(held, { code: 0, stderr: 'released' });
});

test('serveThread outside a thread says so', () => {
  assert.throws(() => serveThread('some/module.ts', () => {}), { message: 'some/module.ts runs only as a worker thread (started by threadModule)' });
});
