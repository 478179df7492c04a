// Test helpers: chunked feeding of pure cores, a loopback HTTP file server with faults, and an
// in-process protocol driver (serveCapture with arrays of request lines).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { serveCapture } from '@sluice/runtime';
import type { CaptureConnector, JsonObject } from '@sluice/runtime';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Estuary's flow-parser corpus, read from a sibling `shared/` checkout of the repository (`../shared` from the repo
 * root) when one exists. It is an extra conformance run, not a fixture the suite needs: every behaviour it covers
 * also has a case written by this project. `skip` says why the run is skipped when the corpus is absent.
 */
export function flowParserCorpus(): { dir: string; skip: false } | { dir: undefined; skip: string } {
  const url = new URL('../../../../shared/fixtures/flow-parser/', import.meta.url);
  const dir = fileURLToPath(url);
  if (existsSync(dir)) return { dir, skip: false };
  return { dir: undefined, skip: `<repo>/../shared/fixtures/flow-parser is not present (no sibling shared/ checkout); the project's own cases cover the same behaviours` };
}

/** Feeds `bytes` to a core in chunks of `size` bytes and collects everything it returns. */
export function feed<T>(core: { push(chunk: Uint8Array): T[]; end(): T[] }, bytes: Uint8Array, size: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...core.push(bytes.subarray(i, i + size)));
  for (let batch = core.end(); batch.length; batch = core.end()) out.push(...batch);
  return out;
}

/** Feeds text to a text core in chunks of `size` characters. */
export function feedText<T>(core: { push(text: string): T[]; end(): T[] }, text: string, size: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...core.push(text.slice(i, i + size)));
  for (let batch = core.end(); batch.length; batch = core.end()) out.push(...batch);
  return out;
}

export const CHUNK_SIZES = [1, 2, 3, 7, 64, 1 << 20];

export interface Route {
  body?: Buffer | string;
  status?: number;
  headers?: Record<string, string | number>;
  /** Refuse HEAD with this status. */
  headStatus?: number;
  /** Omit Last-Modified. */
  noLastModified?: boolean;
  /** Omit Last-Modified from HEAD answers only. */
  headNoLastModified?: boolean;
  lastModified?: string;
  etag?: string;
  /** Require this basic-auth user:password. */
  auth?: string;
  /** Close the socket after this many body bytes, for the first `dropTimes` GETs. */
  dropAfter?: number;
  dropTimes?: number;
  /** Support Range requests (default true). */
  ranges?: boolean;
  /** Answer with this status the first `failTimes` times. */
  failStatus?: number;
  failTimes?: number;
  retryAfter?: string;
  /** Send the body in pieces of this size with this delay (ms) between them. */
  slowChunk?: number;
  slowDelayMs?: number;
  redirect?: string;
}

export interface FileServer {
  url(path: string): string;
  routes: Map<string, Route>;
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders }[];
  /** Client connections not yet closed (an aborted response has settled when its connection is closed). */
  openConnections(): number;
  close(): Promise<void>;
}

export const LAST_MODIFIED = 'Wed, 21 Oct 2015 07:28:00 GMT';

export async function startServer(routes: Record<string, Route> = {}): Promise<FileServer> {
  const map = new Map(Object.entries(routes));
  const requests: FileServer['requests'] = [];
  const counters = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    requests.push({ method: req.method ?? '', path, headers: req.headers });
    const route = map.get(path);
    if (!route) { res.writeHead(404, { 'content-type': 'text/plain' }); res.end(`no such file: ${path}`); return; }
    if (route.redirect) { res.writeHead(302, { location: route.redirect }); res.end(); return; }
    if (route.auth) {
      const expected = `Basic ${Buffer.from(route.auth).toString('base64')}`;
      if (req.headers.authorization !== expected) { res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }); res.end('authentication required'); return; }
    }
    const key = `${req.method} ${path}`;
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n);
    if (route.failStatus && n <= (route.failTimes ?? Infinity)) {
      res.writeHead(route.failStatus, route.retryAfter ? { 'retry-after': route.retryAfter } : {});
      res.end(`failure ${n}`);
      return;
    }
    if (req.method === 'HEAD' && route.headStatus) { res.writeHead(route.headStatus); res.end(); return; }
    const body = Buffer.from(route.body ?? '');
    const headers: Record<string, string | number> = { ...(route.headers ?? {}) };
    if (!route.noLastModified && !(route.headNoLastModified && req.method === 'HEAD')) headers['last-modified'] = route.lastModified ?? LAST_MODIFIED;
    if (route.etag) headers['etag'] = route.etag;
    if (route.ranges !== false) headers['accept-ranges'] = 'bytes';
    let start = 0;
    let status = route.status ?? 200;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let end = body.length;
    const ifRange = req.headers['if-range'];
    const validatorOk = ifRange === undefined || ifRange === route.etag || ifRange === (route.lastModified ?? LAST_MODIFIED);
    if (range && route.ranges !== false && validatorOk && status === 200) {
      start = Number(range[1]);
      // `bytes=a-b` (the Parquet reader's ranges) or `bytes=a-` (resume).
      if (range[2]) end = Math.min(body.length, Number(range[2]) + 1);
      status = 206;
      headers['content-range'] = `bytes ${start}-${end - 1}/${body.length}`;
    }
    const part = body.subarray(start, end);
    if (headers['transfer-encoding'] === undefined) headers['content-length'] = part.length;
    res.writeHead(status, headers);
    if (req.method === 'HEAD') { res.end(); return; }
    const getCount = counters.get(key) ?? 1;
    if (route.dropAfter !== undefined && getCount <= (route.dropTimes ?? 1)) {
      res.write(part.subarray(0, route.dropAfter), () => res.socket?.destroy());
      return;
    }
    if (route.slowChunk) {
      let i = 0;
      const step = (): void => {
        if (i >= part.length) { res.end(); return; }
        res.write(part.subarray(i, i + (route.slowChunk as number)));
        i += route.slowChunk as number;
        setTimeout(step, route.slowDelayMs ?? 5);
      };
      step();
      return;
    }
    res.end(part);
  });
  let open = 0;
  server.on('connection', (socket) => { open++; socket.once('close', () => { open--; }); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    routes: map,
    requests,
    openConnections: () => open,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

class Collector extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.text += chunk.toString();
    cb();
  }
}

export interface ProtocolRun {
  responses: JsonObject[];
  docs: JsonObject[];
  checkpoints: JsonObject[];
  logs: { level: string; msg: string; fields?: Record<string, unknown> }[];
  error: Error | undefined;
}

/** Runs the connector in-process on these request lines. */
export async function runProtocol(connector: CaptureConnector<any, any>, requests: object[]): Promise<ProtocolRun> {
  const output = new Collector();
  const logLines: string[] = [];
  let error: Error | undefined;
  try {
    await serveCapture(connector, { input: requests.map((r) => `${JSON.stringify(r)}\n`), output, stderr: { write: (l: string) => { logLines.push(l); return true; } }, env: { LOG_LEVEL: 'debug' } });
  } catch (err) {
    error = err as Error;
  }
  const responses = output.text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonObject);
  return {
    responses,
    docs: responses.filter((r) => 'captured' in r).map((r) => (r['captured'] as JsonObject)['doc'] as JsonObject),
    checkpoints: responses.filter((r) => 'checkpoint' in r).map((r) => r['checkpoint'] as JsonObject),
    logs: logLines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l)),
    error,
  };
}

export function openRequest(config: object, state: object = {}, stream = 'data'): object {
  return {
    open: {
      capture: {
        name: 'acme/http',
        config,
        bindings: [{ resourceConfig: { stream }, resourcePath: [stream], collection: { name: `acme/${stream}`, key: ['/_meta/file', '/_meta/offset'] }, stateKey: stream }],
      },
      state,
    },
  };
}

/** Applies the checkpoints' merge patches (RFC 7396) to a state, as the runtime would persist it. */
export function applyCheckpoints(state: JsonObject, checkpoints: JsonObject[]): JsonObject {
  const merge = (target: any, patch: any): any => {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
    const out = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = merge(out[k], v);
    }
    return out;
  };
  let s = state;
  for (const c of checkpoints) {
    const st = (c['state'] ?? {}) as { updated?: JsonObject; mergePatch?: boolean };
    s = st.mergePatch ? merge(s, st.updated ?? {}) : (st.updated ?? {});
  }
  return s;
}
