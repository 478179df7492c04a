#!/usr/bin/env node
// source-http-file: speaks the Flow capture protocol (JSON codec) on stdin/stdout.
// Its V8 flags are declared in package.json (`sluice.nodeFlags`: --max-semi-space-size=2
// --max-old-space-size=512) and applied by the launcher, which re-executes the bin with them in the same process
// when a host started it without them; the registry, the image's entrypoint and the benches pass them from there.
// They keep peak RSS low on big files: the young generation otherwise grows to 64 MB and the old one is
// collected lazily (measured: 2M rows through the protocol, 203 MB → 133 MB, same speed). The semi-space is
// 2 MB: the CSV byte path allocates little, and 2 was measured as fast as 8 or 16 with a smaller RSS (and keeps
// both heaps under 150 MB when the parser thread is on, SLUICE_HTTP_FILE_WORKER=1).
// Environment (optional): HTTP_FILE_CHECKPOINT_EVERY, HTTP_FILE_MAX_RETRIES, HTTP_FILE_BACKOFF_MS,
// HTTP_FILE_CONNECT_TIMEOUT_MS, HTTP_FILE_IDLE_TIMEOUT_MS (tests and tuning); limits:
// HTTP_FILE_MIN_BYTES_PER_SECOND (default 1024; 0 = no rule) over HTTP_FILE_THROUGHPUT_WINDOW_MS
// (default 60000) of waiting for the server, HTTP_FILE_DEADLINE_MS (per file; default 0 = none);
// HTTP_FILE_BLOCK_PRIVATE_ADDRESSES=1 refuses loopback/private addresses (for shared planes).
// The bin is plain JavaScript (type-checked through JSDoc): a TypeScript entry would make Node start its
// TypeScript stripper (a WebAssembly module) on every start, ~50 ms, which the compile cache cannot skip
// for the entry itself; the modules it imports are TypeScript, cached.
// Start-up: the launcher turns on Node's module compile cache in this user's private cache directory
// (@sluice/runtime/launch), so later starts skip the TypeScript stripper: measured 0.38 → 0.27 s CPU and
// 111 → 102 MB RSS to answer `spec`.
// On a Node older than 24 the launcher re-executes this bin, with those flags, on the pinned Node 24.
// @ts-check
import { runOnSupportedNode } from '@sluice/runtime/launch';

await runOnSupportedNode(import.meta.url);
// With SLUICE_HTTP_FILE_WORKER=1 or auto (files parsed in a thread), the thread starts now, while this one
// loads its modules and reads the request (~0.1 s less to the first document); an unused one idles
// unreferenced and ends with the process.
if (['1', 'auto'].includes(process.env['SLUICE_HTTP_FILE_WORKER'] ?? '')) (await import('../src/parallel.ts')).prestartParserThread();
const { runCaptureMain } = await import('@sluice/runtime');
const { createHttpFileConnector } = await import('../src/connector.ts');

/** @param {string} name @returns {number | undefined} */
function envInt(name) {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`${JSON.stringify({ level: 'error', message: `${name} must be a non-negative integer, got '${v}'` })}\n`);
    process.exit(1);
  }
  return n;
}

/** @type {NonNullable<import('../src/connector-options.ts').ConnectorOptions['http']>} */
const http = {};
const retries = envInt('HTTP_FILE_MAX_RETRIES');
if (retries !== undefined) http.maxRetries = retries;
const backoff = envInt('HTTP_FILE_BACKOFF_MS');
if (backoff !== undefined) http.backoffBaseMs = backoff;
const connect = envInt('HTTP_FILE_CONNECT_TIMEOUT_MS');
if (connect !== undefined) http.connectTimeoutMs = connect;
const idle = envInt('HTTP_FILE_IDLE_TIMEOUT_MS');
if (idle !== undefined) http.idleTimeoutMs = idle;
const minRate = envInt('HTTP_FILE_MIN_BYTES_PER_SECOND');
if (minRate !== undefined) http.minBytesPerSecond = minRate;
const rateWindow = envInt('HTTP_FILE_THROUGHPUT_WINDOW_MS');
if (rateWindow !== undefined && rateWindow > 0) http.throughputWindowMs = rateWindow;
const deadline = envInt('HTTP_FILE_DEADLINE_MS');
if (deadline !== undefined) http.deadlineMs = deadline;
const block = process.env['HTTP_FILE_BLOCK_PRIVATE_ADDRESSES'];
if (block !== undefined && block !== '' && block !== '0') {
  if (block !== '1') {
    process.stderr.write(`${JSON.stringify({ level: 'error', message: `HTTP_FILE_BLOCK_PRIVATE_ADDRESSES must be 0 or 1, got '${block}'` })}\n`);
    process.exit(1);
  }
  http.blockPrivateAddresses = true;
}
const every = envInt('HTTP_FILE_CHECKPOINT_EVERY');

await runCaptureMain(createHttpFileConnector({ http, ...(every !== undefined && every > 0 ? { checkpointEvery: every } : {}) }));
