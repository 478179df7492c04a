// The HTTP client against a real loopback server: HEAD, validators, ranges, redirects, auth, retries,
// dropped connections, slow bodies and every failure message.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError, HttpError, NetworkError } from '../src/errors.ts';
import { HttpClient } from '../src/http.ts';
import { parseHttpDate } from '../src/http-response.ts';
import { isPrivateAddress } from '../src/private-addresses.ts';
import { redactUrl } from '../src/redact-url.ts';
import type { HttpClientOptions } from '../src/http.ts';
import { createLogger } from '@sluice/runtime';
import { LAST_MODIFIED, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const FAST = { backoffBaseMs: 5, backoffMaxMs: 20, maxRetries: 3, connectTimeoutMs: 2000, idleTimeoutMs: 2000 };
const client = (url: string, o: Partial<HttpClientOptions> = {}): HttpClient => new HttpClient({ ...FAST, url, ...o });

async function body(c: HttpClient): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of c.get()) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

const BIG = Buffer.from(Array.from({ length: 5000 }, (_, i) => `row ${i}\n`).join(''));

describe('http client', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      '/data.csv': { body: 'a,b\n1,2\n', etag: '"v1"', headers: { 'content-type': 'text/csv' } },
      '/no-head.csv': { body: 'abcde', headStatus: 405, etag: '"h"' },
      '/not-impl.csv': { body: 'abcde', headStatus: 501, etag: '"h"' },
      '/no-head-no-lm.csv': { body: 'x', headStatus: 405, noLastModified: true },
      '/lm-on-get-only.csv': { body: 'x', headNoLastModified: true },
      '/no-lm.csv': { body: 'x', noLastModified: true },
      '/head-forbidden.csv': { body: 'abcde', headStatus: 403, etag: '"h"' },
      '/bad-lm.csv': { body: 'x', lastModified: 'yesterday-ish' },
      '/private.csv': { body: 'secret', auth: 'alice:s3cret' },
      '/forbidden.csv': { body: 'x', status: 403, headers: { 'content-type': 'text/plain' } },
      '/broken.csv': { body: 'x', failStatus: 500 },
      '/flaky.csv': { body: 'recovered', failStatus: 503, failTimes: 2 },
      '/limited.csv': { body: 'ok after 429', failStatus: 429, failTimes: 1, retryAfter: '0' },
      '/hop1': { redirect: '/hop2' },
      '/hop2': { redirect: '/data.csv' },
      '/loop': { redirect: '/loop' },
      '/drop.csv': { body: BIG, etag: '"big"', dropAfter: 1000, dropTimes: 2 },
      '/drop-norange.csv': { body: BIG, etag: '"big"', dropAfter: 1000, dropTimes: 1, ranges: false },
      '/slow.csv': { body: BIG, slowChunk: 4096, slowDelayMs: 2 },
      '/long-error': { body: 'E'.repeat(2000), status: 404 },
      '/html-404': { status: 404, headers: { 'content-type': 'text/html' }, body: '<!DOCTYPE html>\n<html><head><title>404 Not Found</title><style>body { color: red }</style></head>\n<body>\n  <h1>Not Found</h1>\n  <p>The requested URL was not found on this server.</p>\n<script>track();</script></body></html>\n' },
    });
  });
  after(() => server.close());

  test('HEAD reads Last-Modified, ETag, Content-Length', async () => {
    const info = await client(server.url('/data.csv')).head();
    assert.equal(info.lastModified, LAST_MODIFIED);
    assert.equal(info.lastModifiedDate.toISOString(), '2015-10-21T07:28:00.000Z');
    assert.equal(info.etag, '"v1"');
    assert.equal(info.contentLength, 8);
    assert.equal(info.contentType, 'text/csv');
  });

  test('HEAD refused (403, 405, 501): Last-Modified, ETag and size come from a GET of the first byte', async () => {
    for (const path of ['/no-head.csv', '/not-impl.csv', '/head-forbidden.csv']) {
      const before = server.requests.length;
      const info = await client(server.url(path)).head();
      assert.equal(info.lastModified, LAST_MODIFIED, path);
      assert.equal(info.etag, '"h"', path);
      assert.equal(info.contentLength, 5, path);
      const probe = server.requests.slice(before).find((r) => r.method === 'GET');
      assert.equal(probe?.headers.range, 'bytes=0-0', path);
    }
  });

  test('bad input: HEAD refused and no Last-Modified on GET either: the error says what the server must send', async () => {
    await assert.rejects(client(server.url('/no-head-no-lm.csv')).head(), (e: unknown) => e instanceof ConfigError && e.message === `the server refused the HEAD request for ${server.url('/no-head-no-lm.csv')} (405 Method Not Allowed) and its GET response has no Last-Modified header: the server must send Last-Modified (and ideally ETag) so that changes to the file can be detected`);
  });

  test('bad input: no Last-Modified on HEAD nor GET', async () => {
    await assert.rejects(client(server.url('/no-lm.csv')).head(), (e: unknown) => e instanceof ConfigError && e.message === `neither the HEAD nor the GET response for ${server.url('/no-lm.csv')} has a Last-Modified header: the server must send Last-Modified (and ideally ETag) so that changes to the file can be detected`);
  });

  test('HEAD without Last-Modified: a GET that sends it is enough', async () => {
    const info = await client(server.url('/lm-on-get-only.csv')).head();
    assert.equal(info.lastModified, LAST_MODIFIED);
  });

  test('bad input: malformed Last-Modified', async () => {
    await assert.rejects(client(server.url('/bad-lm.csv')).head(), (e: unknown) => e instanceof ConfigError && e.message === `the server's Last-Modified header for ${server.url('/bad-lm.csv')} is malformed: 'yesterday-ish' is not an HTTP date (expected e.g. 'Wed, 21 Oct 2015 07:28:00 GMT'); the server must send a valid Last-Modified`);
  });

  test('HTTP dates: IMF-fixdate, RFC 850, asctime; others rejected', () => {
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')?.toISOString(), '1994-11-06T08:49:37.000Z');
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')?.toISOString(), '1994-11-06T08:49:37.000Z');
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994')?.toISOString(), '1994-11-06T08:49:37.000Z');
    assert.equal(parseHttpDate('2015-10-21T07:28:00Z'), null);
  });

  test('bad input: 401 without credentials, then basic auth works', async () => {
    await assert.rejects(client(server.url('/private.csv')).head(), (e: unknown) => e instanceof HttpError && e.status === 401 && e.message === `HTTP request failed with status 401 Unauthorized: authentication required: check the credentials (user and password) (GET ${server.url('/private.csv')})`);
    assert.equal(await body(client(server.url('/private.csv'), { user: 'alice', password: 's3cret' })), 'secret');
    const withUrlCreds = server.url('/private.csv').replace('http://', 'http://alice:s3cret@');
    assert.equal(await body(client(withUrlCreds)), 'secret');
  });

  test('bad input: 403 and 404 carry the status and body', async () => {
    await assert.rejects(client(server.url('/forbidden.csv')).head(), (e: unknown) => e instanceof HttpError && e.status === 403 && e.message === `HTTP request failed with status 403 Forbidden: x: the credentials or headers do not grant access to this file (GET ${server.url('/forbidden.csv')})`);
    await assert.rejects(client(server.url('/missing.csv')).head(), (e: unknown) => e instanceof HttpError && e.message === `HTTP request failed with status 404 Not Found: no such file: /missing.csv: check the URL (GET ${server.url('/missing.csv')})`);
  });

  test('bad input: the error body is read up to 500 bytes and shown as one line of at most 200 characters', async () => {
    await assert.rejects(body(client(server.url('/long-error'))), (e: unknown) => e instanceof HttpError && e.body.length === 500 &&
      e.message === `HTTP request failed with status 404 Not Found: ${'E'.repeat(199)}…: check the URL (GET ${server.url('/long-error')})`);
  });

  test('bad input: an HTML error page is shown as its text on one line (no tags, scripts or styles)', async () => {
    await assert.rejects(body(client(server.url('/html-404'))), (e: unknown) => e instanceof HttpError &&
      e.message === `HTTP request failed with status 404 Not Found: 404 Not Found Not Found The requested URL was not found on this server.: check the URL (GET ${server.url('/html-404')})`);
  });

  test('bad input: 500 after retries', async () => {
    const before = server.requests.filter((r) => r.path === '/broken.csv').length;
    await assert.rejects(body(client(server.url('/broken.csv'))), (e: unknown) => e instanceof HttpError && e.status === 500 && e.message === `HTTP request failed with status 500 Internal Server Error: failure 4: the server failed; it was retried (GET ${server.url('/broken.csv')})`);
    assert.equal(server.requests.filter((r) => r.path === '/broken.csv').length - before, 4);
  });

  test('retries 503 with backoff and 429 honouring Retry-After', async () => {
    assert.equal(await body(client(server.url('/flaky.csv'))), 'recovered');
    assert.equal(await body(client(server.url('/limited.csv'))), 'ok after 429');
  });

  test('redirects are followed; a loop stops after 10', async () => {
    assert.equal(await body(client(server.url('/hop1'))), 'a,b\n1,2\n');
    await assert.rejects(body(client(server.url('/loop'))), (e: unknown) => e instanceof HttpError && e.message === `too many redirects (more than 10) starting at ${server.url('/loop')}`);
  });

  test('configured headers and credentials stay with their origin; opt-in forwards them', async () => {
    const other = await startServer({ '/x.csv': { body: 'elsewhere' } });
    const first = await startServer({ '/go': { redirect: other.url('/x.csv') }, '/same': { redirect: '/x.csv' }, '/x.csv': { body: 'here' } });
    const headers: [string, string][] = [['Authorization', 'Bearer t'], ['Cookie', 'c=1'], ['X-Api-Key', 'k'], ['Private-Token', 'p']];
    try {
      // Another port of the same host is another origin.
      assert.equal(await body(client(first.url('/go'), { user: 'u', password: 'p', headers })), 'elsewhere');
      const seen = other.requests.at(-1)?.headers ?? {};
      for (const h of ['authorization', 'cookie', 'x-api-key', 'private-token']) assert.equal(seen[h], undefined, h);
      assert.equal(first.requests.at(-1)?.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);
      assert.equal(first.requests.at(-1)?.headers['x-api-key'], 'k');
      // Same origin: everything is sent again.
      assert.equal(await body(client(first.url('/same'), { user: 'u', password: 'p', headers })), 'here');
      assert.equal(first.requests.at(-1)?.headers['x-api-key'], 'k');
      assert.equal(first.requests.at(-1)?.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);
      // URL credentials too.
      await body(client(first.url('/go').replace('http://', 'http://ua:pa@')));
      assert.equal(other.requests.at(-1)?.headers.authorization, undefined);
      // Opt-in (headers.followRedirects): sent everywhere.
      await body(client(first.url('/go'), { user: 'u', password: 'p', headers, forwardHeadersOnRedirect: true }));
      assert.equal(other.requests.at(-1)?.headers['x-api-key'], 'k');
      assert.equal(other.requests.at(-1)?.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);
    } finally {
      await other.close();
      await first.close();
    }
  });

  test('bad input: a redirect to a non-HTTP scheme is a clear HTTP error', async () => {
    const s = await startServer({ '/f': { redirect: 'file:///etc/passwd' }, '/g': { redirect: 'ftp://example.com/x.csv?token=secret' } });
    try {
      await assert.rejects(body(client(s.url('/f'))), (e: unknown) => e instanceof HttpError && e.message === `the server redirected ${s.url('/f')} (302 Found) to a 'file:' URL (file:///etc/passwd): only http and https redirects are followed`);
      await assert.rejects(client(s.url('/g')).head(), (e: unknown) => e instanceof HttpError && e.message === `the server redirected ${s.url('/g')} (302 Found) to a 'ftp:' URL (ftp://example.com/x.csv?…): only http and https redirects are followed`);
    } finally {
      await s.close();
    }
  });

  test('blockPrivateAddresses refuses loopback and private addresses (literal and resolved), off by default', async () => {
    const url = server.url('/data.csv');
    await assert.rejects(client(url, { blockPrivateAddresses: true }).head(), (e: unknown) => e instanceof NetworkError && /^refusing to connect to 127\.0\.0\.1 \(127\.0\.0\.1\): loopback and private addresses are blocked \(HTTP_FILE_BLOCK_PRIVATE_ADDRESSES is set\)$/.test(e.message));
    await assert.rejects(client(url.replace('127.0.0.1', 'localhost'), { blockPrivateAddresses: true }).head(), (e: unknown) => e instanceof NetworkError && /^refusing to connect to localhost \((127\.0\.0\.1|::1)\)/.test(e.message));
    assert.equal((await client(url).head()).lastModified, LAST_MODIFIED);
    for (const a of ['10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '0.0.0.0', '100.64.0.1']) assert.equal(isPrivateAddress(a), true, a);
    for (const a of ['8.8.8.8', '2001:4860:4860::8888', '172.32.0.1', '::ffff:8.8.8.8']) assert.equal(isPrivateAddress(a), false, a);
  });

  test('no query string or credentials in messages', async () => {
    const url = server.url('/missing.csv?X-Amz-Signature=abc123&api_key=k3y').replace('http://', 'http://user:pw@');
    await assert.rejects(client(url).head(), (e: unknown) => e instanceof HttpError && e.message.endsWith(`(GET ${server.url('/missing.csv')}?…)`) && !/abc123|k3y|pw/.test(e.message));
    assert.equal(redactUrl('https://u:p@h.example/a/My%20File.csv?sig=s#frag'), 'https://h.example/a/My%20File.csv?…');
  });

  test('a dropped connection resumes with Range and If-Range', async () => {
    const before = server.requests.length;
    assert.equal(await body(client(server.url('/drop.csv'))), BIG.toString());
    const gets = server.requests.slice(before).filter((r) => r.method === 'GET');
    assert.equal(gets.length, 3);
    assert.equal(gets[1]?.headers.range, 'bytes=1000-');
    assert.equal(gets[1]?.headers['if-range'], '"big"');
  });

  test('a dropped connection without range support restarts and skips what was read', async () => {
    assert.equal(await body(client(server.url('/drop-norange.csv'))), BIG.toString());
  });

  test('bad input: dropped every time gives up with a clear message', async () => {
    const s = await startServer({ '/d.csv': { body: BIG, dropAfter: 10, dropTimes: 100 } });
    try {
      await assert.rejects(body(client(s.url('/d.csv'), { maxRetries: 2 })), (e: unknown) => e instanceof NetworkError && /^the connection to 127\.0\.0\.1:\d+ dropped after \d+ bytes of .*\/d\.csv, 3 times: /.test(e.message));
    } finally {
      await s.close();
    }
  });

  test('a slow server is read to the end; an idle one times out', async () => {
    assert.equal(await body(client(server.url('/slow.csv'))), BIG.toString());
    const stall = http.createServer((_req, res) => { res.writeHead(200, { 'content-length': 10 }); res.write('12345'); });
    await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(stall.address() as AddressInfo).port}/s.csv`;
    try {
      await assert.rejects(body(client(url, { idleTimeoutMs: 100, maxRetries: 0 })), (e: unknown) => e instanceof Error && /sent nothing for 0\.1s|dropped after 5 bytes/.test(e.message));
    } finally {
      stall.closeAllConnections();
      stall.close();
    }
  });

  test('bad input: unreachable host (connection refused)', async () => {
    const s = http.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    await assert.rejects(client(`http://127.0.0.1:${port}/x.csv`, { maxRetries: 1 }).head(), (e: unknown) => e instanceof NetworkError && e.message === `cannot connect to 127.0.0.1:${port}: connection refused (ECONNREFUSED): check the URL's host and port and that the server is running`);
  });

  test('a fresh task (retryRefusedBeforeResponse: false): a refused connection fails on the first attempt; once a server answered, a refusal is retried', async () => {
    const s = http.createServer((req, res) => { res.writeHead(200, { 'last-modified': LAST_MODIFIED, 'content-length': 1 }); res.end(req.method === 'HEAD' ? undefined : 'x'); });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    const url = `http://127.0.0.1:${port}/x.csv`;
    const retries: string[] = [];
    const log = createLogger({ stream: { write: (line: string) => { retries.push(line); } }, level: 'warn' });
    const fresh = client(url, { maxRetries: 5, retryRefusedBeforeResponse: false, log });
    await fresh.head(); // answered: from now on a refusal is a restart worth waiting for
    await new Promise<void>((r) => { s.close(() => r()); s.closeAllConnections(); });
    await assert.rejects(body(fresh), (e: unknown) => e instanceof NetworkError && /connection refused/.test(e.message));
    assert.equal(retries.length, 5, 'retried after a response');
    retries.length = 0;
    await assert.rejects(client(url, { maxRetries: 5, retryRefusedBeforeResponse: false, log }).head(), (e: unknown) => e instanceof NetworkError &&
      e.message === `cannot connect to 127.0.0.1:${port}: connection refused (ECONNREFUSED): check the URL's host and port and that the server is running`);
    assert.deepEqual(retries, [], 'no retry before any response');
  });

  test('bad input: DNS failure', async () => {
    // ENOTFOUND normally; EAI_AGAIN where the machine has no resolver at all (retried, then reported).
    await assert.rejects(client('http://no-such-host.invalid/x.csv').head(), (e: unknown) => e instanceof NetworkError && /^cannot resolve host 'no-such-host\.invalid' \(DNS lookup failed: (ENOTFOUND|EAI_AGAIN|EAI_NONAME)\): check the URL's host name$/.test(e.message));
  });

  test('bad input: TLS failure', async () => {
    // A TLS listener without a usable certificate: the handshake fails.
    const tls = https.createServer({});
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    const port = (tls.address() as AddressInfo).port;
    try {
      await assert.rejects(client(`https://127.0.0.1:${port}/x.csv`).head(), (e: unknown) => e instanceof NetworkError && /^TLS handshake with 127\.0\.0\.1:\d+ failed \(.+\): the server's certificate must be valid and trusted for this host name$/.test(e.message));
    } finally {
      tls.close();
    }
  });

  test('bad input: URLs', () => {
    assert.throws(() => client('not a url'), (e: unknown) => e instanceof ConfigError && e.message.startsWith("URL is invalid: 'not a url' is not a URL"));
    assert.throws(() => client('ftp://example.com/x'), (e: unknown) => e instanceof ConfigError && e.message === 'URL "ftp://example.com/x" is not valid (it must be a complete URL with an HTTP scheme and domain)');
  });
});
