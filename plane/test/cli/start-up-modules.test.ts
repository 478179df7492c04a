// What the real `sluice serve` loads before its ready line (issue 16: the fixed overhead). Every module the
// plane loads before it can publish is CPU on the path to ready, and on two cores it delays the connector
// processes the publication starts. These are structural checks (which modules), not timings: a preload records
// every module the plane's main thread loads (ESM and CommonJS, through module.registerHooks) and Node's own
// internal modules (process.moduleLoadList) at the moment the ready line is written.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { nodeFlagsOf } from '@sluice/runtime/launch';
import { SLUICE } from './helpers.ts';

const PRELOAD = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const write = process.stderr.write.bind(process.stderr);
process.stderr.write = (chunk, ...rest) => {
  if (String(chunk).includes('sluice: ready:')) {
    writeFileSync(process.env.SLUICE_TEST_MODULES_OUT, JSON.stringify({ loaded, internal: process.moduleLoadList }));
  }
  return write(chunk, ...rest);
};
`;

interface Loaded { loaded: string[]; internal: string[] }

/** Runs `sluice serve` on `catalogText` until its ready line; returns what its main thread had loaded by then. */
async function modulesAtReady(dir: string, catalogText: string, env: Record<string, string | undefined> = {}): Promise<Loaded> {
  const preload = join(dir, 'preload.mjs');
  writeFileSync(preload, PRELOAD);
  writeFileSync(join(dir, 'flow.yaml'), catalogText);
  const out = join(dir, 'modules.json');
  rmSync(out, { force: true });
  const child = spawn(process.execPath, [...nodeFlagsOf(SLUICE), '--import', pathToFileURL(preload).href, SLUICE, 'serve', '--catalog', join(dir, 'flow.yaml'),
    '--data-dir', join(dir, 'data'), '--port', '0', '--ingest-port', '0', '--quiet'], {
    stdio: ['ignore', 'ignore', 'pipe'], env: Object.fromEntries(Object.entries({ ...process.env, ...env, SLUICE_TEST_MODULES_OUT: out }).filter(([, v]) => v !== undefined)),
  });
  let stderr = '';
  try {
    await new Promise<void>((resolve, reject) => {
      // A guard against a hung plane, not a speed limit.
      const timer = setTimeout(() => reject(new Error(`no ready line from sluice serve within 120 s: ${stderr}`)), 120_000);
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes('sluice: ready:')) { clearTimeout(timer); resolve(); }
      });
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`sluice serve exited (${code}) before its ready line: ${stderr}`)); });
    });
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
  assert.ok(existsSync(out), `the preload wrote no module list: ${stderr}`);
  return JSON.parse(readFileSync(out, 'utf8')) as Loaded;
}

const CATALOG = `collections:
  acmeCo/rides:
    schema: {type: object, properties: {id: {type: string}, at: {type: string, format: date-time}}, required: [id]}
    key: [/id]
`;

test('serve: Node\'s undici (fetch, WebSocket) is not loaded before the ready line — node:http is required, not imported', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-start-up-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { loaded, internal } = await modulesAtReady(dir, CATALOG);
  assert.ok(loaded.some((u) => u.endsWith('/plane/src/cli/serve.ts')), 'the preload saw the plane\'s modules');
  assert.ok(internal.some((m) => m.includes('internal/http')) || internal.some((m) => /\bhttp\b/.test(m)), 'node:http was loaded (the API listens)');
  assert.deepEqual(internal.filter((m) => m.includes('undici')), []);
});

test('serve: a second start loads none of ajv\'s compiler before the ready line — the catalog, meta-schema and collection validators are kept as code', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-start-up-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A cache directory of this test's own (the validators' and Node's compile cache, as a user's ~/.cache).
  const env: Record<string, string | undefined> = {
    XDG_CACHE_HOME: join(dir, 'cache'), HOME: dir,
    SLUICE_VALIDATOR_CACHE: undefined, SLUICE_COMPILE_CACHE: undefined, NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined,
  };
  const compiler = (loaded: string[]) => loaded.filter((u) => /\/ajv\/dist\/(core|2020|compile\/index)\.js$/.test(u));
  const first = await modulesAtReady(dir, CATALOG, env);
  assert.notDeepEqual(compiler(first.loaded), [], 'the first start compiles');
  rmSync(join(dir, 'data'), { recursive: true, force: true });
  const second = await modulesAtReady(dir, CATALOG, env);
  assert.deepEqual(compiler(second.loaded), []);
});

test('the materialization thread loads the host driver, not the connector side of the runtime', async () => {
  // Every module is CPU of each materialization's thread start (a Node worker also boots its own copy of Node's
  // internals). The connector side (config validation, serving RPCs) and the runtime's index are not its.
  const src = `const m = require('node:module');
const { parentPort } = require('node:worker_threads');
const loaded = [];
m.registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
import(${JSON.stringify(new URL('../../src/tasks/materialize-thread.ts', import.meta.url).href)}).then(() => parentPort.postMessage(loaded), (err) => parentPort.postMessage(String(err)));`;
  const worker = new Worker(src, { eval: true });
  const [loaded] = (await once(worker, 'message')) as [string[] | string];
  await worker.terminate();
  assert.ok(Array.isArray(loaded), `the thread's module failed to load: ${String(loaded)}`);
  assert.ok(loaded.some((u) => u.endsWith('/runtime/src/host/materialize-driver.ts')), 'the driver is loaded');
  assert.deepEqual(loaded.filter((u) => /\/runtime\/src\/(index\.ts|connector\/)/.test(u)), []);
});
