// Hostile HTTP servers against the real source-http-file bin (the campaign's passing cases, kept):
// a server that stalls mid-body, a truncated gzip, a redirect loop, a header block over Node's limit,
// transient 503s (retried), and a connection dropped mid-body (resumed with Range + If-Range, no
// document lost or repeated). Each failure must be one clear last stderr line and exit 1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../connectors/source-http-file/bin/source-http-file.js', import.meta.url));
const LAST_MODIFIED = 'Wed, 01 May 2024 00:00:00 GMT';
const ROWS = 2000;
const CSV = `id,v\n${Array.from({ length: ROWS }, (_, i) => `${i},value-${i}`).join('\n')}\n`;
const FAST = { HTTP_FILE_BACKOFF_MS: '5', HTTP_FILE_MAX_RETRIES: '3' };

interface Run { docs: { id: string; v: string }[]; checkpoints: number; stderr: string; code: number | null }

function capture(url: string, env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN], { env: { ...process.env, ...FAST, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(`${JSON.stringify({ open: { capture: { name: 'hostile/http', config: { url }, bindings: [{ resourceConfig: { stream: 'data' }, resourcePath: ['data'], collection: { name: 'hostile/data', key: ['/_meta/file', '/_meta/offset'] }, stateKey: 'data' }] }, state: {} } })}\n`);
  return new Promise((resolve) => child.on('close', (code) => {
    const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, { doc?: { id: string; v: string } }>);
    resolve({ docs: lines.filter((l) => l.captured).map((l) => l.captured!.doc!), checkpoints: lines.filter((l) => l.checkpoint).length, stderr, code });
  }));
}

/** The connector's last stderr line's message (its failure). */
function failure(r: Run): string {
  const last = r.stderr.trim().split('\n').at(-1) ?? '';
  try {
    const parsed = JSON.parse(last) as { msg?: string; message?: string };
    return parsed.msg ?? parsed.message ?? last;
  } catch {
    return last;
  }
}

describe('hostile HTTP servers (source-http-file bin)', () => {
  const gets = new Map<string, IncomingMessage[]>();
  const headers = { 'last-modified': LAST_MODIFIED, etag: '"v1"' };
  const gz = gzipSync(CSV);
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse, n: number) => void> = {
    // Headers and a part of the body, then nothing more, ever.
    '/stall.csv': (_req, res) => { res.writeHead(200, { ...headers, 'content-type': 'text/csv', 'content-length': CSV.length }); res.write(CSV.slice(0, 500)); },
    '/truncated.csv.gz': (_req, res) => {
      const body = gz.subarray(0, gz.length - 40);
      res.writeHead(200, { ...headers, 'content-type': 'application/gzip', 'content-length': body.length });
      res.end(body);
    },
    '/loop': (_req, res) => { res.writeHead(302, { location: '/loop' }); res.end(); },
    '/big-header.csv': (_req, res) => { res.writeHead(200, { ...headers, 'content-type': 'text/csv', 'x-padding': 'p'.repeat(100_000) }); res.end(CSV); },
    // Two 503s, then the file.
    '/flaky.csv': (_req, res, n) => {
      if (n <= 2) { res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '0' }); res.end('busy'); return; }
      res.writeHead(200, { ...headers, 'content-type': 'text/csv', 'content-length': CSV.length });
      res.end(CSV);
    },
    // The first GET drops after 1,000 bytes; the next ones honour Range (and If-Range: same version).
    '/drop.csv': (req, res, n) => {
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (range && req.headers['if-range'] === '"v1"') {
        const from = Number(range[1]);
        res.writeHead(206, { ...headers, 'content-type': 'text/csv', 'content-range': `bytes ${from}-${CSV.length - 1}/${CSV.length}`, 'content-length': CSV.length - from });
        res.end(CSV.slice(from));
        return;
      }
      res.writeHead(200, { ...headers, 'content-type': 'text/csv', 'accept-ranges': 'bytes', 'content-length': CSV.length });
      if (n === 1) { res.write(CSV.slice(0, 1000), () => res.socket?.destroy()); return; }
      res.end(CSV);
    },
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const route = routes[path];
    if (route === undefined) { res.writeHead(404); res.end(); return; }
    if (req.method === 'HEAD') {
      if (path === '/loop') { route(req, res, 0); return; }
      res.writeHead(200, { ...headers, 'content-type': path.endsWith('.gz') ? 'application/gzip' : 'text/csv', 'content-length': path.endsWith('.gz') ? gz.length - 40 : CSV.length, 'accept-ranges': 'bytes' });
      res.end();
      return;
    }
    const seen = gets.get(path) ?? [];
    seen.push(req);
    gets.set(path, seen);
    route(req, res, seen.length);
  });
  let base = '';
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => { server.closeAllConnections(); server.close(); });

  test('stall: a server that goes silent mid-body fails on the idle timeout, naming the host and the bytes read', async () => {
    const r = await capture(`${base}/stall.csv`, { HTTP_FILE_IDLE_TIMEOUT_MS: '300', HTTP_FILE_MAX_RETRIES: '1' });
    assert.equal(r.code, 1, r.stderr);
    assert.match(failure(r), /127\.0\.0\.1:\d+ sent nothing for 0\.3s|dropped after \d+ bytes/);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  });

  test('truncated gzip: a clear decode error, exit 1', async () => {
    const r = await capture(`${base}/truncated.csv.gz`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(failure(r), /failed to decompress content as gzip: the compressed data is truncated/);
  });

  test('redirect loop: stops after 10 redirects with a clear error', async () => {
    const r = await capture(`${base}/loop`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(failure(r), /too many redirects \(more than 10\) starting at http:\/\/127\.0\.0\.1:\d+\/loop/);
  });

  test('header overflow: a header block over Node\'s limit is a clear error, not a crash', async () => {
    const r = await capture(`${base}/big-header.csv`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(failure(r), /^request to 127\.0\.0\.1:\d+ failed: .*Header overflow/);
    assert.doesNotMatch(failure(r), /internal error|HPE_/);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  });

  test('retries: transient 503s are retried and the file is captured whole', async () => {
    const r = await capture(`${base}/flaky.csv`);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.docs.length, ROWS);
    assert.equal(gets.get('/flaky.csv')?.length, 3);
  });

  test('drop + resume: a dropped connection resumes with Range and If-Range; every row once, in order', async () => {
    const r = await capture(`${base}/drop.csv`);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.docs.map((d) => Number(d.id)), Array.from({ length: ROWS }, (_, i) => i));
    const [first, second] = gets.get('/drop.csv') ?? [];
    assert.equal(first?.headers.range, undefined);
    assert.match(second?.headers.range ?? '', /^bytes=\d+-$/);
    assert.equal(second?.headers['if-range'], '"v1"');
  });
});
