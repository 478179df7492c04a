// The HTTP client: HEAD and GET over node:http/https with redirects (at most 10; credentials and
// cookies are not forwarded to another origin), connect and idle timeouts, retries with exponential
// backoff on 5xx, 429 (Retry-After honoured) and dropped connections, and a GET body that resumes
// with Range/If-Range after a drop. Backpressure: the body is an async generator over the socket, so
// the socket is read only as fast as the consumer pulls.
import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type { IncomingMessage } from 'node:http';

// Loaded with require: an ESM import of node:http builds its ESM facade, which reads every export and
// so loads undici (fetch, WebSocket) too — ~45 ms of start-up this connector never uses.
const require = createRequire(import.meta.url);
const http = require('node:http') as typeof Http;
const https = require('node:https') as typeof Https;
import type { Logger } from '@sluice/runtime';
import { ConfigError, HttpError, HttpFileError, NetworkError } from './errors.ts';

export interface HttpClientOptions {
  url: string;
  user?: string | undefined;
  password?: string | undefined;
  /** Extra request headers, in order (repeats allowed). */
  headers?: [string, string][];
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Retries after the first attempt. */
  maxRetries?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Upper bound on a Retry-After wait. */
  maxRetryAfterMs?: number;
  signal?: AbortSignal;
  log?: Logger;
}

export const HTTP_DEFAULTS = {
  connectTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  maxRetries: 5,
  backoffBaseMs: 1_000,
  backoffMaxMs: 30_000,
  maxRetryAfterMs: 300_000,
};

export interface FileInfo {
  /** The URL that answered, after redirects. */
  finalUrl: string;
  status: number;
  lastModified: string | null;
  etag: string | null;
  contentLength: number | null;
  contentType: string | null;
  contentEncoding: string | null;
  contentDisposition: string | null;
  acceptRanges: boolean;
}

const MAX_REDIRECTS = 10;
const BODY_SNIPPET_BYTES = 500;

/** The URL without user:password, for messages and `_meta/file`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

const HTTP_DATE = [
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/, // IMF-fixdate
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2} GMT$/, // RFC 850
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/, // asctime
];

/** Parses an HTTP date (IMF-fixdate, RFC 850 or asctime); null when malformed. */
export function parseHttpDate(value: string): Date | null {
  const v = value.trim();
  if (!HTTP_DATE.some((re) => re.test(v))) return null;
  const ms = Date.parse(HTTP_DATE[2]?.test(v) ? `${v} GMT` : v);
  return Number.isNaN(ms) ? null : new Date(ms);
}

function header(res: IncomingMessage, name: string): string | null {
  const v = res.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

function infoOf(res: IncomingMessage, finalUrl: string): FileInfo {
  const len = header(res, 'content-length');
  return {
    finalUrl,
    status: res.statusCode ?? 0,
    lastModified: header(res, 'last-modified'),
    etag: header(res, 'etag'),
    contentLength: len !== null && /^\d+$/.test(len.trim()) ? Number(len) : null,
    contentType: header(res, 'content-type'),
    contentEncoding: header(res, 'content-encoding'),
    contentDisposition: header(res, 'content-disposition'),
    acceptRanges: (header(res, 'accept-ranges') ?? '').toLowerCase().includes('bytes'),
  };
}

/** A failure worth retrying (after `retryAfterMs` when the server said so). */
class Retryable extends Error {
  readonly retryAfterMs: number | null;
  readonly final: Error;
  constructor(final: Error, retryAfterMs: number | null = null) {
    super(final.message);
    this.final = final;
    this.retryAfterMs = retryAfterMs;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = (): void => { clearTimeout(t); reject(signal?.reason); };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function statusText(status: number): string {
  return `${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
}

async function readSnippet(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      n += chunk.length;
      if (n >= BODY_SNIPPET_BYTES) break;
    }
  } catch {
    // a partial body is still useful
  }
  res.destroy();
  return Buffer.concat(chunks).subarray(0, BODY_SNIPPET_BYTES).toString('utf8');
}

function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const date = parseHttpDate(v);
  return date ? Math.max(0, date.getTime() - Date.now()) : null;
}

export class HttpClient {
  readonly #o: Required<Omit<HttpClientOptions, 'user' | 'password' | 'signal' | 'log'>> & HttpClientOptions;
  readonly #url: URL;

  constructor(options: HttpClientOptions) {
    this.#o = { ...HTTP_DEFAULTS, headers: [], ...options };
    let url: URL;
    try {
      url = new URL(options.url);
    } catch (err) {
      throw new ConfigError(`URL is invalid: '${redactUrl(options.url)}' is not a URL (${(err as Error).message}): give a complete URL such as https://example.com/data.csv`, { cause: err });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`URL "${redactUrl(options.url)}" is not valid (it must be a complete URL with an HTTP scheme and domain)`);
    if (!url.hostname) throw new ConfigError(`URL "${redactUrl(options.url)}" is not valid (it must be a complete URL with an HTTP scheme and domain)`);
    this.#url = url;
  }

  get url(): URL {
    return this.#url;
  }

  /** Sends one request, following redirects; resolves with the final response (any status). */
  async #send(method: 'HEAD' | 'GET', extra: Record<string, string>): Promise<{ res: IncomingMessage; finalUrl: URL }> {
    let url = this.#url;
    const origin = url.origin;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const sameOrigin = url.origin === origin;
      const headers: [string, string][] = [];
      for (const [k, v] of this.#o.headers ?? []) {
        if (!sameOrigin && /^(authorization|cookie)$/i.test(k)) continue;
        headers.push([k, v]);
      }
      // Credentials: configured ones win over an Authorization header; else user:pass in the URL.
      const user = this.#o.user ?? (url.username ? decodeURIComponent(url.username) : undefined);
      const password = this.#o.password ?? (url.password ? decodeURIComponent(url.password) : undefined);
      if (sameOrigin && (this.#o.user !== undefined || this.#o.password !== undefined || url.username)) {
        for (let i = headers.length - 1; i >= 0; i--) if ((headers[i] as [string, string])[0].toLowerCase() === 'authorization') headers.splice(i, 1);
        headers.push(['Authorization', `Basic ${Buffer.from(`${user ?? ''}:${password ?? ''}`).toString('base64')}`]);
      }
      for (const [k, v] of Object.entries(extra)) headers.push([k, v]);
      if (!headers.some(([k]) => k.toLowerCase() === 'user-agent')) headers.push(['User-Agent', 'sluice-source-http-file']);
      const res = await this.#once(method, url, headers);
      const status = res.statusCode ?? 0;
      const location = header(res, 'location');
      if ([301, 302, 303, 307, 308].includes(status) && location) {
        res.resume();
        if (hop === MAX_REDIRECTS) throw new HttpError(`too many redirects (more than ${MAX_REDIRECTS}) starting at ${redactUrl(this.#url.toString())}`, status, '');
        url = new URL(location, url);
        continue;
      }
      return { res, finalUrl: url };
    }
    throw new Error('unreachable');
  }

  #once(method: string, url: URL, headers: [string, string][]): Promise<IncomingMessage> {
    const o = this.#o;
    const lib = url.protocol === 'https:' ? https : http;
    const host = url.host;
    return new Promise<IncomingMessage>((resolve, reject) => {
      // Raw header list (repeats allowed); Node adds no Host header to a list, so add it here.
      const flat: string[] = ['Host', url.host];
      for (const [k, v] of headers) if (k.toLowerCase() !== 'host') flat.push(k, v);
      const req = lib.request(url, { method, headers: flat, ...(o.signal ? { signal: o.signal } : {}) });
      let connected = false;
      const connectTimer = setTimeout(() => {
        if (!connected) req.destroy(Object.assign(new Error(`no connection to ${host} within ${o.connectTimeoutMs / 1000}s`), { code: 'CONNECT_TIMEOUT' }));
      }, o.connectTimeoutMs);
      req.on('socket', (socket) => {
        const markConnected = (): void => { connected = true; clearTimeout(connectTimer); };
        if (!socket.connecting) markConnected();
        else socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', markConnected);
      });
      req.setTimeout(o.idleTimeoutMs, () => {
        req.destroy(Object.assign(new Error(`${host} sent nothing for ${o.idleTimeoutMs / 1000}s`), { code: 'IDLE_TIMEOUT' }));
      });
      req.on('response', (res) => {
        clearTimeout(connectTimer);
        // The idle timeout keeps applying to the body: the socket timeout stays armed.
        resolve(res);
      });
      req.on('error', (err) => {
        clearTimeout(connectTimer);
        reject(classifyNetworkError(err as NodeJS.ErrnoException, url));
      });
      req.end();
    });
  }

  /** Runs `attempt` with retries and backoff on Retryable failures. */
  async #retry<T>(what: string, attempt: (n: number) => Promise<T>): Promise<T> {
    const o = this.#o;
    for (let n = 0; ; n++) {
      try {
        return await attempt(n);
      } catch (err) {
        if (!(err instanceof Retryable)) throw err;
        if (n >= o.maxRetries) throw err.final;
        const backoff = Math.min(o.backoffMaxMs, o.backoffBaseMs * 2 ** n) * (0.5 + Math.random() / 2);
        const wait = err.retryAfterMs !== null ? Math.min(err.retryAfterMs, o.maxRetryAfterMs) : backoff;
        o.log?.warn(`${what} failed, retrying in ${Math.round(wait)} ms (attempt ${n + 2} of ${o.maxRetries + 1})`, { error: err.message });
        await sleep(wait, o.signal);
      }
    }
  }

  /** Turns a non-2xx response into an error (Retryable for 5xx and 429). */
  async #statusError(method: string, res: IncomingMessage): Promise<Error> {
    const status = res.statusCode ?? 0;
    const body = method === 'HEAD' ? '' : await readSnippet(res);
    if (method === 'HEAD') res.resume();
    const hint = status === 401 ? ': check the credentials (user and password)'
      : status === 403 ? ': the credentials or headers do not grant access to this file'
        : status === 404 ? ': check the URL'
          : status >= 500 ? ': the server failed; it was retried' : '';
    const err = new HttpError(`HTTP request failed with status ${statusText(status)}${body ? `: ${body}${body.length >= BODY_SNIPPET_BYTES ? '...' : ''}` : ''}${hint} (${method} ${redactUrl(this.#url.toString())})`, status, body);
    if (status >= 500 || status === 429) return new Retryable(err, parseRetryAfter(header(res, 'retry-after')));
    return err;
  }

  /**
   * HEAD the file. 405/501 and a missing or malformed Last-Modified are ConfigErrors saying what the
   * server must do; other 4xx are HttpErrors carrying the body of an equivalent GET.
   */
  async head(): Promise<FileInfo & { lastModified: string; lastModifiedDate: Date }> {
    const shown = redactUrl(this.#url.toString());
    const { res, finalUrl } = await this.#retry('HEAD request', async () => {
      const r = await this.#sendRetryable('HEAD', {});
      const status = r.res.statusCode ?? 0;
      if (status === 405 || status === 501) {
        r.res.resume();
        throw new ConfigError(`the server refused the HEAD request for ${shown} (${statusText(status)}): the server must answer HEAD requests, with a Last-Modified header, so that changes to the file can be detected`);
      }
      if (status >= 400) {
        r.res.resume();
        if (status >= 500 || status === 429) throw await this.#statusError('HEAD', r.res);
        // Ask with GET to show the server's explanation (the HEAD answer has no body).
        const g = await this.#sendRetryable('GET', {});
        if ((g.res.statusCode ?? 0) >= 400) throw await this.#statusError('GET', g.res);
        g.res.destroy();
        // GET works but HEAD does not (e.g. a URL signed for GET only): HEAD is a prerequisite.
        throw new ConfigError(`the server refused the HEAD request for ${shown} (${statusText(status)}) although GET works: the server must answer HEAD requests, with a Last-Modified header, so that changes to the file can be detected (a URL signed for GET only cannot be used)`);
      }
      return r;
    });
    res.resume();
    const info = infoOf(res, finalUrl.toString());
    if (info.lastModified === null) {
      throw new ConfigError(`the server's HEAD response for ${shown} has no Last-Modified header: the server must send Last-Modified (and ideally ETag) so that changes to the file can be detected`);
    }
    const date = parseHttpDate(info.lastModified);
    if (date === null) {
      throw new ConfigError(`the server's Last-Modified header for ${shown} is malformed: '${info.lastModified}' is not an HTTP date (expected e.g. 'Wed, 21 Oct 2015 07:28:00 GMT'); the server must send a valid Last-Modified`);
    }
    return { ...info, lastModified: info.lastModified, lastModifiedDate: date };
  }

  async #sendRetryable(method: 'HEAD' | 'GET', extra: Record<string, string>): Promise<{ res: IncomingMessage; finalUrl: URL }> {
    try {
      return await this.#send(method, extra);
    } catch (err) {
      if (err instanceof NetworkError && (err.fields['retryable'] as boolean)) throw new Retryable(err);
      throw err;
    }
  }

  /**
   * GET the body from byte `from`, yielding chunks as the consumer pulls. A dropped connection is
   * retried with `Range: bytes=<received>-` and `If-Range: <validator>`; a 200 answer to that is
   * accepted only with the same validator (the already received bytes are skipped).
   * `onResponse` sees the first response's headers. With `to`, only bytes [from, to] are read
   * (`Range: bytes=from-to`; a server answering 200 has the bytes around them skipped).
   */
  async *get(options: { from?: number; to?: number; validator?: { etag: string | null; lastModified: string | null }; onResponse?: (info: FileInfo) => void } = {}): AsyncGenerator<Buffer> {
    let received = options.from ?? 0;
    const limit = options.to === undefined ? null : options.to + 1;
    let validator = options.validator ?? null;
    let expectedEnd: number | null = null;
    let first = true;
    const shown = redactUrl(this.#url.toString());
    for (let drops = 0; ; ) {
      const extra: Record<string, string> = {};
      if (received > 0 || limit !== null) {
        extra['Range'] = `bytes=${received}-${limit === null ? '' : limit - 1}`;
        const v = validator?.etag && !validator.etag.startsWith('W/') ? validator.etag : validator?.lastModified;
        if (v) extra['If-Range'] = v;
      }
      const { res } = await this.#retry('GET request', async () => {
        const r = await this.#sendRetryable('GET', extra);
        const status = r.res.statusCode ?? 0;
        if (status >= 400 && !(status === 416 && received > 0 && expectedEnd !== null && received >= expectedEnd)) throw await this.#statusError('GET', r.res);
        return r;
      });
      const info = infoOf(res, this.#url.toString());
      if (first) {
        first = false;
        options.onResponse?.(info);
        validator ??= { etag: info.etag, lastModified: info.lastModified };
      }
      let skip = 0;
      if (received > 0 || limit !== null) {
        if (res.statusCode === 416) { res.resume(); return; }
        if (res.statusCode === 206) {
          const m = /bytes (\d+)-/.exec(header(res, 'content-range') ?? '');
          if (!m || Number(m[1]) !== received) {
            res.destroy();
            throw new HttpFileError('HTTP_RANGE', `the server answered the range request from byte ${received} of ${shown} with Content-Range '${header(res, 'content-range') ?? ''}'`);
          }
        } else {
          // Full body: only usable when it is the same file.
          const same = (validator?.etag ?? null) === info.etag && (validator?.lastModified ?? null) === info.lastModified;
          if (!same) {
            res.destroy();
            throw new HttpFileError('FILE_CHANGED', `${shown} changed while it was being captured (ETag/Last-Modified differ from the start of the capture); the next capture will read the new version`);
          }
          skip = received;
        }
      }
      if (res.statusCode === 200 && info.contentLength !== null && !info.contentEncoding) expectedEnd = info.contentLength;
      if (res.statusCode === 206) {
        const total = /\/(\d+)$/.exec(header(res, 'content-range') ?? '');
        if (total) expectedEnd = Number(total[1]);
      }
      if (limit !== null) expectedEnd = Math.min(expectedEnd ?? limit, limit);
      try {
        for await (const raw of res as AsyncIterable<Buffer>) {
          let chunk = raw;
          if (skip > 0) {
            if (chunk.length <= skip) { skip -= chunk.length; continue; }
            chunk = chunk.subarray(skip);
            skip = 0;
          }
          if (limit !== null && (received + chunk.length > limit || (received + chunk.length === limit && res.statusCode !== 206))) {
            // The last bytes asked for (a server that ignored the range sends more: stop reading it).
            chunk = chunk.subarray(0, limit - received);
            received = limit;
            if (chunk.length) yield chunk;
            if (!res.complete) res.destroy();
            return;
          }
          received += chunk.length;
          yield chunk;
        }
        if (expectedEnd !== null && received < expectedEnd) throw Object.assign(new Error(`the body ended after ${received} of ${expectedEnd} bytes`), { code: 'ECONNRESET' });
        return;
      } catch (err) {
        res.destroy();
        const e = err as NodeJS.ErrnoException;
        const dropped = e.code === 'ECONNRESET' || e.code === 'ERR_STREAM_PREMATURE_CLOSE' || e.code === 'IDLE_TIMEOUT' || e.message === 'aborted' || e.code === 'ECONNABORTED' || e.code === 'EPIPE';
        if (!dropped || this.#o.signal?.aborted) throw err;
        if (drops >= this.#o.maxRetries) throw new NetworkError(`the connection to ${this.#url.host} dropped after ${received} bytes of ${shown}, ${drops + 1} times: ${e.message}`, { cause: err });
        const wait = Math.min(this.#o.backoffMaxMs, this.#o.backoffBaseMs * 2 ** drops);
        this.#o.log?.warn(`connection dropped after ${received} bytes; resuming with a range request in ${wait} ms`, { error: e.message });
        drops++;
        await sleep(wait, this.#o.signal);
      }
    }
  }
}

const TLS_CODES = /CERT|SSL|TLS|EPROTO|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/;

export function classifyNetworkError(err: NodeJS.ErrnoException, url: URL): Error {
  const host = url.hostname;
  const code = err.code ?? '';
  if (err.name === 'AbortError') return err;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return new NetworkError(`cannot resolve host '${host}' (DNS lookup failed: ${code}): check the URL's host name`, { cause: err, fields: { retryable: code === 'EAI_AGAIN' } });
  }
  if (code === 'ECONNREFUSED') {
    return new NetworkError(`cannot connect to ${url.host}: connection refused (${code}): check the URL's host and port and that the server is running`, { cause: err, fields: { retryable: true } });
  }
  if (TLS_CODES.test(code) || /certificate|tls|ssl/i.test(err.message)) {
    const detail = err.message.split('\n')[0]?.replace(/^write EPROTO [0-9A-F]+:error:[0-9A-F]+:SSL routines:[^:]*:/, '').trim();
    return new NetworkError(`TLS handshake with ${url.host} failed (${code || 'TLS error'}: ${detail}): the server's certificate must be valid and trusted for this host name`, { cause: err, fields: { retryable: false } });
  }
  if (code === 'CONNECT_TIMEOUT' || code === 'IDLE_TIMEOUT' || code === 'ETIMEDOUT') {
    return new NetworkError(`timed out talking to ${url.host}: ${err.message}`, { cause: err, fields: { retryable: true } });
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED' || err.message === 'socket hang up') {
    return new NetworkError(`the connection to ${url.host} dropped (${code || err.message})`, { cause: err, fields: { retryable: true } });
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return new NetworkError(`host ${url.host} is unreachable (${code}): check the URL and the network`, { cause: err, fields: { retryable: true } });
  }
  return new NetworkError(`request to ${url.host} failed: ${err.message}`, { cause: err, fields: { retryable: false } });
}
