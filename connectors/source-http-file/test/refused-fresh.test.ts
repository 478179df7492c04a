// A newcomer's first run with a wrong port: the connector (the bin, default retry settings) fails on the first
// refused connection of a fresh capture with the hint, instead of backing off for minutes; a capture that
// already has state keeps retrying (the server may be restarting).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { openRequest } from './helpers.ts';

const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;

async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function run(requests: object[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string[] }> {
  const child = spawn(process.execPath, [BIN], { env: { ...process.env, ...env }, stdio: ['pipe', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d; });
  child.stdin.end(requests.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr: err.split('\n').filter((l) => l !== '') })));
}

test('fresh capture, refused connection: exit 1 at the first attempt, the hint as the last line, no retry', async () => {
  const port = await closedPort();
  const r = await run([openRequest({ url: `http://127.0.0.1:${port}/rides.csv` })]);
  assert.equal(r.code, 1, r.stderr.join('\n'));
  assert.deepEqual(r.stderr.filter((l) => l.includes('retrying')), []);
  assert.match(r.stderr.at(-1) ?? '', new RegExp(`cannot connect to 127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\): check the URL's host and port and that the server is running`));
});

test('a capture with state: a refused connection is retried', async () => {
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}/rides.csv`;
  const state = { bindingStateV1: { data: { lastModified: '2024-01-01T00:00:00Z' } } };
  const r = await run([openRequest({ url }, state)], { HTTP_FILE_MAX_RETRIES: '2', HTTP_FILE_BACKOFF_MS: '5' });
  assert.equal(r.code, 1, r.stderr.join('\n'));
  assert.equal(r.stderr.filter((l) => l.includes('retrying')).length, 2, r.stderr.join('\n'));
});
