// Helpers for the hostile suite: the real `sluice` bin as a child process, free ports, and waiting for
// events (a stderr line, a port, a condition) with deadlines that say what was awaited.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '@sluice/runtime/testing';

export const SLUICE_BIN = fileURLToPath(new URL('../../plane/bin/sluice.js', import.meta.url));
export const SLOW_CAPTURE = fileURLToPath(new URL('../fixtures/slow-capture.ts', import.meta.url));

type After = { after: (fn: () => void | Promise<void>) => void };

export function tempDir(t: After, prefix = 'sluice-hostile-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A port free at the time of the call (bound to 0 then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once a TCP connection to the port succeeds (what "wait for the port" scripts do). */
export async function waitForPort(port: number, ms = 30_000): Promise<void> {
  await until(`port ${port} to accept connections`, () => new Promise<boolean>((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => { sock.destroy(); resolve(true); });
    sock.once('error', () => resolve(false));
  }), { ms });
}

export interface ServeProcess {
  child: ChildProcess;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Waits for a stderr match; fails with the stderr so far. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  stop(): Promise<number | null>;
}

/** Starts `sluice serve` (the real bin) and kills it when the test ends. */
export function spawnServe(t: After, args: string[], env: Record<string, string> = {}): ServeProcess {
  const child = spawn(process.execPath, [SLUICE_BIN, 'serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return {
    child,
    stderr: () => err,
    waitFor: (re, ms = 60_000) => until(`serve to print ${re}`, () => re.exec(err), { ms, detail: () => `stderr:\n${err}` }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/** POSTs JSON to the ingester; returns status, headers and body text. */
export async function ingest(url: string, body: string | Buffer, contentType = 'application/json'): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: res.status, body: await res.text(), headers: res.headers };
}
