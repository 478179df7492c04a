#!/usr/bin/env -S node --max-semi-space-size=2 --max-old-space-size=512
// source-http-file: speaks the Flow capture protocol (JSON codec) on stdin/stdout.
// The V8 flags above keep peak RSS low on big files: the young generation otherwise grows to 64 MB and
// the old one is collected lazily (measured: 2M rows through the protocol, 203 MB → 133 MB, same speed).
// The semi-space is 2 MB since files ≥ 4 MiB are parsed in a worker thread (src/parallel.ts; its own
// young generation is set there): the main thread then allocates little, and 2 instead of 8 keeps the
// two heaps under the 150 MB target (measured 157–170 → 134–140 MB at the same rows/s).
// A host that runs `node bin/source-http-file.ts` itself should pass them too (bench/http-file.ts reads
// the flags from this line).
// Environment (optional): HTTP_FILE_CHECKPOINT_EVERY, HTTP_FILE_MAX_RETRIES, HTTP_FILE_BACKOFF_MS,
// HTTP_FILE_CONNECT_TIMEOUT_MS, HTTP_FILE_IDLE_TIMEOUT_MS (tests and tuning).
// Start-up: Node's module compile cache (NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; off with
// NODE_DISABLE_COMPILE_CACHE=1) keeps the type-stripped, compiled modules, so later starts skip the
// TypeScript stripper: measured 0.38 → 0.27 s CPU and 111 → 102 MB RSS to answer `spec`. It never
// throws (an unwritable directory just disables it); modules load after it, hence the dynamic imports.
import { enableCompileCache } from 'node:module';
import type { ConnectorOptions } from '../src/connector.ts';

enableCompileCache();
// With SLUICE_HTTP_FILE_WORKER=1 or auto (files parsed in a thread), the thread starts now, while this one
// loads its modules and reads the request (~0.1 s less to the first document); an unused one idles
// unreferenced and ends with the process.
if (['1', 'auto'].includes(process.env['SLUICE_HTTP_FILE_WORKER'] ?? '')) (await import('../src/parallel.ts')).prestartParserThread();
const { runCaptureMain } = await import('@sluice/runtime');
const { createHttpFileConnector } = await import('../src/connector.ts');

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`${JSON.stringify({ level: 'error', message: `${name} must be a non-negative integer, got '${v}'` })}\n`);
    process.exit(1);
  }
  return n;
}

const http: NonNullable<ConnectorOptions['http']> = {};
const retries = envInt('HTTP_FILE_MAX_RETRIES');
if (retries !== undefined) http.maxRetries = retries;
const backoff = envInt('HTTP_FILE_BACKOFF_MS');
if (backoff !== undefined) http.backoffBaseMs = backoff;
const connect = envInt('HTTP_FILE_CONNECT_TIMEOUT_MS');
if (connect !== undefined) http.connectTimeoutMs = connect;
const idle = envInt('HTTP_FILE_IDLE_TIMEOUT_MS');
if (idle !== undefined) http.idleTimeoutMs = idle;
const every = envInt('HTTP_FILE_CHECKPOINT_EVERY');

await runCaptureMain(createHttpFileConnector({ http, ...(every !== undefined && every > 0 ? { checkpointEvery: every } : {}) }));
