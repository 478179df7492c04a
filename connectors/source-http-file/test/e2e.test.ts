// End to end: the connector as a process (`npx source-http-file` and its bin), speaking protocol lines.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { applyCheckpoints, openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';
import { gzipSync } from './fixtures.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;

interface Proc { lines: JsonObject[]; stderr: string; code: number | null; signal: string | null }

/** Runs the bin with these request lines; `killAfter` SIGKILLs it once that predicate holds. */
function run(requests: object[], options: { npx?: boolean; env?: Record<string, string>; killAfter?: (lines: JsonObject[]) => boolean } = {}): Promise<Proc> {
  const [cmd, args] = options.npx ? ['npx', ['--no-install', 'source-http-file']] : [process.execPath, [BIN]];
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: JsonObject[] = [];
  let stderr = '';
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
      if (options.killAfter?.(lines)) child.kill('SIGKILL');
    }
  });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(requests.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ lines, stderr, code, signal })));
}

const ROWS = 20_000;
const CSV = `id,value\n${Array.from({ length: ROWS }, (_, i) => `${i},v${i}`).join('\n')}\n`;

describe('source-http-file as a process', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      // Slow enough (~1.5 s per body) that the crash test's kill after the 4th checkpoint always lands
      // mid-file, even when the test process reads the connector's output late on a loaded machine.
      '/big.csv.gz': { body: gzipSync(CSV), slowChunk: 512, slowDelayMs: 15 },
      '/big.csv': { body: CSV, slowChunk: 2048, slowDelayMs: 15 },
      '/small.csv': { body: 'a,b\n1,2\n3,4\n', etag: '"s"' },
      '/no-lm.csv': { body: 'a\n1\n', noLastModified: true },
    });
  });
  after(() => server.close());

  test('npx source-http-file: spec matches the snapshot', async () => {
    const p = await run([{ spec: { connectorType: 'IMAGE' } }], { npx: true });
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(p.lines, [JSON.parse(readFileSync(new URL('./snapshots/spec.json', import.meta.url), 'utf8'))]);
  });

  test('discover', async () => {
    const p = await run([{ discover: { connectorType: 'IMAGE', config: { url: server.url('/small.csv') } } }]);
    assert.equal(p.code, 0, p.stderr);
    const binding = ((p.lines[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[])[0] as JsonObject;
    assert.equal(binding['recommendedName'], 'small.csv');
  });

  test('open: documents and checkpoints, exit 0; the next session skips the unchanged file', async () => {
    const p = await run([openRequest({ url: server.url('/small.csv') })]);
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(p.lines[0], { opened: {} });
    const docs = p.lines.filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc']);
    assert.deepEqual(docs, [{ a: '1', b: '2', _meta: { file: 'small.csv', offset: 0 } }, { a: '3', b: '4', _meta: { file: 'small.csv', offset: 1 } }]);
    const state = applyCheckpoints({}, p.lines.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
    const again = await run([openRequest({ url: server.url('/small.csv') }, state)]);
    assert.equal(again.code, 0, again.stderr);
    // Nothing to capture and nothing to change in the state: no checkpoint either.
    assert.deepEqual(again.lines, [{ opened: {} }]);
  });

  test('bad input: a missing Last-Modified exits 1 with the answer as the last stderr line', async () => {
    const p = await run([openRequest({ url: server.url('/no-lm.csv') })]);
    assert.equal(p.code, 1);
    const last = JSON.parse(p.stderr.trim().split('\n').at(-1) as string) as { msg: string };
    assert.match(last.msg, /^neither the HEAD nor the GET response for .* has a Last-Modified header: the server must send Last-Modified/);
  });

  test('npx sluice raw source-http-file capture, then again with the state: skipped', async (t) => {
    if (!existsSync(`${ROOT}node_modules/.bin/sluice`)) { t.skip('the sluice CLI (@sluice/plane bin) is not linked; run npm i at the root'); return; }
    const dir = mkdtempSync(join(tmpdir(), 'shf-raw-'));
    try {
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ url: server.url('/small.csv') }));
      writeFileSync(join(dir, 'bindings.json'), JSON.stringify([{ resource: { stream: 'small' }, collection: 'acme/small', key: ['/_meta/file', '/_meta/offset'] }]));
      // Asynchronous: the loopback server answering the connector runs in this process.
      const raw = async (extra: string[]): Promise<{ lines: JsonObject[]; stderr: string; status: number | null }> => {
        const child = spawn('npx', ['--no-install', 'sluice', 'raw', 'source-http-file', 'capture', '--config', join(dir, 'config.json'), '--bindings', join(dir, 'bindings.json'), ...extra], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
        child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
        const [status] = await once(child, 'close') as [number | null];
        return { lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonObject), stderr, status };
      };
      const first = await raw([]);
      assert.equal(first.status, 0, first.stderr);
      const docs = first.lines.filter((l) => 'captured' in l);
      assert.equal(docs.length, 2);
      const state = applyCheckpoints({}, first.lines.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
      writeFileSync(join(dir, 'state.json'), JSON.stringify(state));
      const second = await raw(['--state', join(dir, 'state.json')]);
      assert.equal(second.status, 0, second.stderr);
      assert.equal(second.lines.filter((l) => 'captured' in l).length, 0);
      assert.match(second.stderr, /unchanged since the last capture/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [path, how] of [['/big.csv.gz', 'skipping'], ['/big.csv', 'Range']] as const) {
    test(`resume after a crash mid-file (${path}, by ${how}): no duplicate and no missing offset`, async () => {
      const env = { HTTP_FILE_CHECKPOINT_EVERY: '500' };
      const crashed = await run([openRequest({ url: server.url(path) })], {
        env,
        killAfter: (lines) => lines.filter((l) => 'checkpoint' in l).length === 4,
      });
      assert.equal(crashed.signal, 'SIGKILL');
      // What the runtime committed: everything up to the last checkpoint line.
      const lastCp = crashed.lines.map((l) => 'checkpoint' in l).lastIndexOf(true);
      const committed = crashed.lines.slice(0, lastCp + 1);
      const state = applyCheckpoints({}, committed.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
      const binding = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
      const records = binding['records'] as number;
      assert.ok(records > 0 && records < ROWS, `crashed mid-file (records ${records})`);
      assert.equal(typeof binding['byteOffset'] === 'number', how === 'Range');
      const before = server.requests.length;
      const resumed = await run([openRequest({ url: server.url(path) }, state)], { env });
      assert.equal(resumed.code, 0, resumed.stderr);
      const get = server.requests.slice(before).find((r) => r.method === 'GET');
      assert.equal(get?.headers.range, how === 'Range' ? `bytes=${binding['byteOffset']}-` : undefined);
      const offsets = [...committed, ...resumed.lines].filter((l) => 'captured' in l).map((l) => (((l['captured'] as JsonObject)['doc'] as JsonObject)['_meta'] as JsonObject)['offset']);
      assert.deepEqual(offsets, Array.from({ length: ROWS }, (_, i) => i));
      const values = [...committed, ...resumed.lines].filter((l) => 'captured' in l).map((l) => ((l['captured'] as JsonObject)['doc'] as JsonObject)['value']);
      assert.deepEqual(values, Array.from({ length: ROWS }, (_, i) => `v${i}`));
    });
  }
});
