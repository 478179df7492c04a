// The HTTP client: HEAD (or, where HEAD is refused, a one-byte ranged GET) and GET over node:http/https
// with redirects (at most 10, http/https only; configured headers and credentials stay with the URL's
// origin unless the user opts in), connect and idle timeouts, a minimum-throughput rule and an optional
// per-file deadline, retries with exponential backoff on 5xx, 429 (Retry-After honoured) and dropped
// connections, and a GET body that resumes with Range/If-Range after a drop — accepting only a 206 of
// the same version (ETag, Last-Modified, total size). Optionally refuses loopback/private addresses.
// Backpressure: the body is an async generator over the socket, so the socket is read only as fast as
// the consumer pulls (and the throughput rule counts only the time spent waiting for the server).
import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type * as Net from 'node:net';

// Loaded with require: an ESM import of node:http builds its ESM facade, which reads every export and
// so loads undici (fetch, WebSocket) too — ~45 ms of start-up this connector never uses.
const require = createRequire(import.meta.url);
const http = require('node:http') as typeof Http;
const https = require('node:https') as typeof Https;
const net = require('node:net') as typeof Net;
import type { Logger } from '@sluice/runtime';
import { ConfigError, HttpError, HttpFileError, NetworkError } from './errors.ts';
import { BODY_SNIPPET_BYTES, bodyLine, header, infoOf, parseHttpDate, parseRetryAfter, readSnippet, statusText } from './http-response.ts';
import type { FileInfo } from './http-response.ts';
import { classifyNetworkError } from './network-errors.ts';
import { isPrivateAddress, lookupPublicOnly, privateAddressError } from './private-addresses.ts';
import { redactUrl } from './redact-url.ts';

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
  /**
   * Send the configured headers and credentials to a redirect target on another origin (scheme, host
   * or port) too. Off by default: they stay with the configured URL's origin.
   */
  forwardHeadersOnRedirect?: boolean;
  /** Refuse to connect to loopback, private, link-local and unspecified addresses (also after redirects). */
  blockPrivateAddresses?: boolean;
  /**
   * Minimum throughput: a body that delivers fewer than `minBytesPerSecond` × window bytes over
   * `throughputWindowMs` of waiting for the server fails (0 disables). Time the consumer takes is not counted.
   */
  minBytesPerSecond?: number;
  throughputWindowMs?: number;
  /** Overall deadline for reading one file, from the first request (0 = none). */
  deadlineMs?: number;
  /**
   * Retry a refused connection before any response came (default true). A fresh task (discover, validate, a
   * first capture) passes false: a wrong host or port then fails at once with the hint instead of after
   * minutes of back-off; a refusal after a response, or mid-transfer, is retried as before.
   */
  retryRefusedBeforeResponse?: boolean;
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
  forwardHeadersOnRedirect: false,
  blockPrivateAddresses: false,
  minBytesPerSecond: 1024,
  throughputWindowMs: 60_000,
  deadlineMs: 0,
  retryRefusedBeforeResponse: true,
};

const MAX_REDIRECTS = 10;

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

export class HttpClient {
  readonly #o: Required<Omit<HttpClientOptions, 'user' | 'password' | 'signal' | 'log'>> & HttpClientOptions;
  readonly #url: URL;
  /** Some server answered this client once: a refusal after that is a restart worth waiting for. */
  #responded = false;

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

  /**
   * Sends one request, following redirects (http and https only); resolves with the final response (any
   * status). The configured headers and credentials go only to the configured URL's origin (scheme, host
   * and port), unless forwardHeadersOnRedirect: a redirect elsewhere gets neither.
   */
  async #send(method: 'HEAD' | 'GET', extra: Record<string, string>): Promise<{ res: IncomingMessage; finalUrl: URL }> {
    let url = this.#url;
    const origin = url.origin;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const trusted = url.origin === origin || this.#o.forwardHeadersOnRedirect;
      const headers: [string, string][] = trusted ? [...(this.#o.headers ?? [])] : [];
      // Credentials: configured ones win over an Authorization header; else user:pass in the configured URL.
      const user = this.#o.user ?? (this.#url.username ? decodeURIComponent(this.#url.username) : undefined);
      const password = this.#o.password ?? (this.#url.password ? decodeURIComponent(this.#url.password) : undefined);
      if (trusted && (this.#o.user !== undefined || this.#o.password !== undefined || this.#url.username)) {
        for (let i = headers.length - 1; i >= 0; i--) if ((headers[i] as [string, string])[0].toLowerCase() === 'authorization') headers.splice(i, 1);
        headers.push(['Authorization', `Basic ${Buffer.from(`${user ?? ''}:${password ?? ''}`).toString('base64')}`]);
      }
      for (const [k, v] of Object.entries(extra)) headers.push([k, v]);
      if (!headers.some(([k]) => k.toLowerCase() === 'user-agent')) headers.push(['User-Agent', 'sluice-source-http-file']);
      const res = await this.#once(method, url, headers);
      this.#responded = true;
      const status = res.statusCode ?? 0;
      const location = header(res, 'location');
      if ([301, 302, 303, 307, 308].includes(status) && location) {
        res.resume();
        if (hop === MAX_REDIRECTS) throw new HttpError(`too many redirects (more than ${MAX_REDIRECTS}) starting at ${redactUrl(this.#url.toString())}`, status, '');
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new HttpError(`the server answered ${redactUrl(url.toString())} with a redirect (${statusText(status)}) whose Location is not a URL: '${redactUrl(location)}'`, status, '');
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          throw new HttpError(`the server redirected ${redactUrl(url.toString())} (${statusText(status)}) to a '${next.protocol.replace(/:$/, '')}:' URL (${redactUrl(next.toString())}): only http and https redirects are followed`, status, '');
        }
        if (next.origin !== origin && !this.#o.forwardHeadersOnRedirect && (this.#o.headers?.length || this.#o.user !== undefined || this.#url.username)) {
          this.#o.log?.debug(`redirected to another origin (${next.origin}): the configured headers and credentials are not sent there (headers.followRedirects is off)`);
        }
        url = next;
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
    // Credentials go only through the Authorization header built in #send: a URL with user:pass would
    // make Node add its own.
    const target = new URL(url);
    target.username = '';
    target.password = '';
    return new Promise<IncomingMessage>((resolve, reject) => {
      // A literal IP address is never looked up: check it here.
      const literal = url.hostname.replace(/^\[|\]$/g, '');
      if (o.blockPrivateAddresses && net.isIP(literal) !== 0 && isPrivateAddress(literal)) {
        reject(classifyNetworkError(privateAddressError(url.hostname, literal) as NodeJS.ErrnoException, url));
        return;
      }
      // Raw header list (repeats allowed); Node adds no Host header to a list, so add it here.
      const flat: string[] = ['Host', url.host];
      for (const [k, v] of headers) if (k.toLowerCase() !== 'host') flat.push(k, v);
      const req = lib.request(target, { method, headers: flat, ...(o.signal ? { signal: o.signal } : {}), ...(o.blockPrivateAddresses ? { lookup: lookupPublicOnly } : {}) });
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
    const line = bodyLine(body);
    const err = new HttpError(`HTTP request failed with status ${statusText(status)}${line ? `: ${line}${body.length >= BODY_SNIPPET_BYTES && !line.endsWith('…') ? '…' : ''}` : ''}${hint} (${method} ${redactUrl(this.#url.toString())})`, status, body);
    if (status >= 500 || status === 429) return new Retryable(err, parseRetryAfter(header(res, 'retry-after')));
    return err;
  }

  /**
   * What the server says about the file, before it is read: HEAD, or — when HEAD is refused (any 4xx,
   * e.g. 403 for a URL signed for GET only, 405, 501) or its answer has no Last-Modified — a GET of
   * the first byte (`Range: bytes=0-0`, body dropped). Last-Modified is required (a missing or malformed
   * one is a ConfigError saying what the server must send); ETag and size are taken from either.
   */
  async head(): Promise<FileInfo & { lastModified: string; lastModifiedDate: Date }> {
    const shown = redactUrl(this.#url.toString());
    const headed = await this.#retry('HEAD request', async () => {
      const r = await this.#sendRetryable('HEAD', {});
      const status = r.res.statusCode ?? 0;
      // 501 Not Implemented is a refusal of the method, not a failure to retry.
      if ((status >= 500 && status !== 501) || status === 429) throw await this.#statusError('HEAD', r.res);
      r.res.resume();
      return { status, info: status < 400 ? infoOf(r.res, r.finalUrl.toString()) : null };
    });
    let info = headed.info;
    let refused: string | null = headed.info === null ? statusText(headed.status) : null;
    if (info === null || info.lastModified === null) {
      const probe = await this.#probe();
      if (info === null) info = probe;
      else {
        info = { ...info, lastModified: probe.lastModified, etag: info.etag ?? probe.etag, contentLength: info.contentLength ?? probe.contentLength };
      }
      if (refused !== null) this.#o.log?.debug(`the server refused HEAD (${refused}); read the file's Last-Modified, ETag and size from a one-byte GET`);
    } else refused = null;
    if (info.lastModified === null) {
      const asked = refused !== null ? `the server refused the HEAD request for ${shown} (${refused}) and its GET response has no Last-Modified header` : `neither the HEAD nor the GET response for ${shown} has a Last-Modified header`;
      throw new ConfigError(`${asked}: the server must send Last-Modified (and ideally ETag) so that changes to the file can be detected`);
    }
    const date = parseHttpDate(info.lastModified);
    if (date === null) {
      throw new ConfigError(`the server's Last-Modified header for ${shown} is malformed: '${info.lastModified}' is not an HTTP date (expected e.g. 'Wed, 21 Oct 2015 07:28:00 GMT'); the server must send a valid Last-Modified`);
    }
    return { ...info, lastModified: info.lastModified, lastModifiedDate: date };
  }

  /**
   * GET of the first byte only, for the headers (where HEAD is refused or incomplete). The size is the
   * Content-Range total of a 206 (or of a 416 for an empty file), else a 200's Content-Length; the body
   * is not read. A 4xx is the server's answer to the file itself: reported with its body.
   */
  async #probe(): Promise<FileInfo> {
    const { res, finalUrl } = await this.#retry('GET request', async () => {
      const r = await this.#sendRetryable('GET', { Range: 'bytes=0-0' });
      const status = r.res.statusCode ?? 0;
      if (status >= 400 && status !== 416) throw await this.#statusError('GET', r.res);
      return r;
    });
    const info = infoOf(res, finalUrl.toString());
    res.destroy();
    const range = header(res, 'content-range');
    if (res.statusCode === 206 || res.statusCode === 416) {
      const total = /\/(\d+)\s*$/.exec(range ?? '');
      return { ...info, status: 200, contentLength: total ? Number(total[1]) : null };
    }
    return info;
  }

  async #sendRetryable(method: 'HEAD' | 'GET', extra: Record<string, string>): Promise<{ res: IncomingMessage; finalUrl: URL }> {
    try {
      return await this.#send(method, extra);
    } catch (err) {
      if (err instanceof NetworkError && (err.fields['retryable'] as boolean)) {
        if (err.fields['refused'] === true && !this.#responded && this.#o.retryRefusedBeforeResponse === false) throw err;
        throw new Retryable(err);
      }
      throw err;
    }
  }

  /**
   * GET the body from byte `from`, yielding chunks as the consumer pulls. A dropped connection is
   * retried with `Range: bytes=<received>-` and `If-Range: <validator>`. One version per file: a 206 is
   * used only when it carries the same ETag and Last-Modified as the version being read and a
   * Content-Range starting at the byte asked for with the same total size; a 200 only with the same
   * validators (the bytes already read are skipped). Anything else — a server that ignores If-Range — is
   * FILE_CHANGED: nothing of the other version is stitched on. `onResponse` sees the first response's headers.
   * `validator` (and `size`) describe the version expected, e.g. from head(); else the first response's.
   * With `to`, only bytes [from, to] are read (`Range: bytes=from-to`; a server answering 200 has the
   * bytes around them skipped).
   */
  async *get(options: { from?: number; to?: number; validator?: { etag: string | null; lastModified: string | null }; size?: number | null; onResponse?: (info: FileInfo) => void } = {}): AsyncGenerator<Buffer> {
    const o = this.#o;
    let received = options.from ?? 0;
    const limit = options.to === undefined ? null : options.to + 1;
    let validator = options.validator ?? null;
    // The size of the version being read (the total a Content-Range must carry).
    let total: number | null = options.size ?? null;
    let expectedEnd: number | null = null;
    let first = true;
    const shown = redactUrl(this.#url.toString());
    const deadlineAt = o.deadlineMs > 0 ? Date.now() + o.deadlineMs : null;
    const deadlineError = (): HttpFileError => new HttpFileError('HTTP_DEADLINE', `reading ${shown} took longer than the per-file deadline of ${o.deadlineMs / 1000} s (HTTP_FILE_DEADLINE_MS) after ${received} bytes: raise the deadline or set it to 0 (none)`);
    // Throughput window: bytes received over time spent waiting for the server (not for the consumer).
    let windowWaitMs = 0;
    let windowBytes = 0;
    const windowMs = o.throughputWindowMs;
    const minBytes = o.minBytesPerSecond > 0 ? (o.minBytesPerSecond * windowMs) / 1000 : 0;
    const slowError = (): HttpFileError => new HttpFileError('HTTP_TOO_SLOW', `${this.#url.host} sent ${windowBytes} bytes of ${shown} in ${Math.round(windowWaitMs / 1000)} s of waiting, below the minimum throughput of ${o.minBytesPerSecond} bytes/s over ${windowMs / 1000} s (HTTP_FILE_MIN_BYTES_PER_SECOND, HTTP_FILE_THROUGHPUT_WINDOW_MS; 0 disables the rule)`);
    for (let drops = 0; ; ) {
      if (deadlineAt !== null && Date.now() >= deadlineAt) throw deadlineError();
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
        // The size of what is read: a 200's own Content-Length wins over what HEAD said.
        if (res.statusCode === 200 && !info.contentEncoding && info.contentLength !== null) total = info.contentLength;
      }
      let skip = 0;
      if (received > 0 || limit !== null) {
        if (res.statusCode === 416) { res.resume(); return; }
        const changed = (what: string): HttpFileError => {
          res.destroy();
          return new HttpFileError('FILE_CHANGED', `${shown} changed while it was being captured: the server answered the request for the rest of the file (from byte ${received}) with ${what}, so it is not the version being read (the server may ignore If-Range); nothing of it was used — the next capture reads the new version from the start`);
        };
        const differs = (a: string | null | undefined, b: string | null): boolean => (a ?? null) !== null && a !== b;
        if (res.statusCode === 206) {
          const range = header(res, 'content-range') ?? '';
          const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(range.trim());
          if (!m || Number(m[1]) !== received) {
            res.destroy();
            throw new HttpFileError('HTTP_RANGE', `the server answered the range request from byte ${received} of ${shown} with Content-Range '${range}'`);
          }
          if (differs(validator?.etag, info.etag)) throw changed(`ETag ${info.etag ?? '(none)'} instead of ${validator?.etag}`);
          if (differs(validator?.lastModified, info.lastModified)) throw changed(`Last-Modified '${info.lastModified ?? '(none)'}' instead of '${validator?.lastModified}'`);
          if (total !== null && m[3] !== String(total)) throw changed(`a total size of ${m[3]} bytes instead of ${total}`);
          if (m[3] !== '*') total ??= Number(m[3]);
        } else {
          // Full body: only usable when it is the same file.
          if ((validator?.etag ?? null) !== info.etag || (validator?.lastModified ?? null) !== info.lastModified) {
            throw changed(`the whole file with ETag ${info.etag ?? '(none)'} and Last-Modified '${info.lastModified ?? '(none)'}' instead of ${validator?.etag ?? '(none)'} and '${validator?.lastModified ?? '(none)'}'`);
          }
          skip = received;
        }
      }
      if (res.statusCode === 200 && info.contentLength !== null && !info.contentEncoding) expectedEnd = info.contentLength;
      if (res.statusCode === 206 && total !== null) expectedEnd = total;
      if (limit !== null) expectedEnd = Math.min(expectedEnd ?? limit, limit);
      let timer: NodeJS.Timeout | null = null;
      const arm = (): void => {
        // Fires when the deadline passes or the throughput window completes while waiting for the server.
        const untilDeadline = deadlineAt === null ? Infinity : deadlineAt - Date.now();
        const untilWindow = minBytes > 0 ? windowMs - windowWaitMs : Infinity;
        const wait = Math.min(untilDeadline, untilWindow);
        if (wait === Infinity) return;
        timer = setTimeout(() => {
          res.destroy(Object.assign(new Error('deadline'), { code: untilDeadline <= untilWindow ? 'HTTP_DEADLINE' : 'HTTP_TOO_SLOW' }));
        }, Math.max(0, wait));
      };
      const it = (res as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
      // The consumer may stop early (generator return at a yield): the response is closed then too.
      let settled = false;
      try {
        while (true) {
          const asked = performance.now();
          arm();
          let r: IteratorResult<Buffer>;
          try {
            r = await it.next();
          } finally {
            if (timer !== null) { clearTimeout(timer); timer = null; }
          }
          if (minBytes > 0) {
            windowWaitMs += performance.now() - asked;
            if (!r.done) windowBytes += r.value.length;
            if (windowWaitMs >= windowMs) {
              if (windowBytes < minBytes) throw Object.assign(new Error('too slow'), { code: 'HTTP_TOO_SLOW' });
              windowWaitMs = 0;
              windowBytes = 0;
            }
          }
          if (r.done) break;
          let chunk = r.value;
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
            settled = true;
            if (!res.complete) res.destroy();
            return;
          }
          received += chunk.length;
          yield chunk;
        }
        if (expectedEnd !== null && received < expectedEnd) throw Object.assign(new Error(`the body ended after ${received} of ${expectedEnd} bytes`), { code: 'ECONNRESET' });
        settled = true;
        return;
      } catch (err) {
        settled = true;
        res.destroy();
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'HTTP_DEADLINE') throw deadlineError();
        if (e.code === 'HTTP_TOO_SLOW') throw slowError();
        const dropped = e.code === 'ECONNRESET' || e.code === 'ERR_STREAM_PREMATURE_CLOSE' || e.code === 'IDLE_TIMEOUT' || e.message === 'aborted' || e.code === 'ECONNABORTED' || e.code === 'EPIPE';
        if (!dropped || o.signal?.aborted) throw err;
        if (drops >= o.maxRetries) throw new NetworkError(`the connection to ${this.#url.host} dropped after ${received} bytes of ${shown}, ${drops + 1} times: ${e.message}`, { cause: err });
        const wait = Math.min(o.backoffMaxMs, o.backoffBaseMs * 2 ** drops);
        o.log?.warn(`connection dropped after ${received} bytes; resuming with a range request in ${wait} ms`, { error: e.message });
        drops++;
        await sleep(wait, o.signal);
      } finally {
        if (!settled) res.destroy();
      }
    }
  }
}

/**
 * Reads a body's first chunk ahead (a GET's response headers, which decide format detection, arrive before
 * it) and gives it back with the whole body from its start. Returning `body` returns the response's iterator,
 * which destroys the response: a parse error mid-body must not leave the request to the session's abort,
 * whose AbortError would then mask the parse error.
 */
export async function peekBody<T>(response: AsyncIterable<T>): Promise<{ first: T | undefined; body: AsyncGenerator<T> }> {
  const it = response[Symbol.asyncIterator]();
  const head = await it.next();
  const body = (async function* () {
    try {
      if (head.done === true) return;
      yield head.value;
      while (true) {
        const r = await it.next();
        if (r.done === true) return;
        yield r.value;
      }
    } finally {
      await it.return?.(undefined);
    }
  })();
  return { first: head.done === true ? undefined : head.value, body };
}
