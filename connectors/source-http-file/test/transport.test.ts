// The HTTP side and the state through the real bin against loopback servers: `_meta/file` and secrets,
// HEAD refused, upstream's parser options, state swaps in both directions (upstream's decode rules
// reproduced below), headers across redirects, one version per file, throughput and deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { applyCheckpoints, LAST_MODIFIED, openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';
import { gzipSync } from './fixtures.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;

interface Proc { lines: JsonObject[]; stderr: string; code: number | null }

function run(requests: object[], env: Record<string, string> = {}): Promise<Proc> {
  const child = spawn(process.execPath, [BIN], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'debug', HTTP_FILE_BACKOFF_MS: '5', HTTP_FILE_MAX_RETRIES: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(requests.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return new Promise((resolve) => child.on('close', (code) => resolve({ lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonObject), stderr, code })));
}

const docsOf = (p: Proc): JsonObject[] => p.lines.filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc'] as JsonObject);
const checkpointsOf = (p: Proc): JsonObject[] => p.lines.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject);
const lastError = (p: Proc): string => (JSON.parse(p.stderr.trim().split('\n').at(-1) as string) as { msg: string }).msg;

// ------------------------------------------------------------------------------------------------
// Upstream's decoding of the capture state (estuary/connectors filesource, restated): pf.UnmarshalStrict
// into {bindingStateV1: {<key>: {minBound, maxBound, maxMod, path, records, complete}}} — unknown fields
// refused, times RFC 3339 (null only where a pointer) — then Validate().

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function upstreamDecode(state: JsonObject): void {
  for (const k of Object.keys(state)) if (k !== 'bindingStateV1') throw new Error(`json: unknown field "${k}"`);
  const all = (state['bindingStateV1'] ?? {}) as Record<string, JsonObject>;
  for (const [key, s] of Object.entries(all)) {
    for (const f of Object.keys(s)) if (!['minBound', 'maxBound', 'maxMod', 'path', 'records', 'complete'].includes(f)) throw new Error(`json: unknown field "${f}"`);
    const time = (f: string, nullable: boolean): number | null => {
      const v = s[f];
      if (v === undefined || v === null) return nullable ? null : Date.parse('0001-01-01T00:00:00Z');
      if (typeof v !== 'string' || !RFC3339.test(v)) throw new Error(`${key}: cannot decode ${f} ${JSON.stringify(v)}`);
      return Date.parse(v);
    };
    const minBound = time('minBound', false) as number;
    const maxBound = time('maxBound', true);
    const maxMod = time('maxMod', true);
    const path = s['path'] ?? '';
    const records = s['records'] ?? 0;
    const complete = s['complete'] ?? false;
    if (typeof path !== 'string' || !Number.isInteger(records) || typeof complete !== 'boolean') throw new Error(`${key}: wrong types`);
    if (maxBound !== null && !(maxBound > minBound)) throw new Error(`stateKey ${key}: expected maxBound > minBound`);
    if (maxMod !== null && !(maxMod > minBound)) throw new Error(`stateKey ${key}: expected maxMod > minBound`);
    if (maxMod !== null && maxBound !== null && !(maxBound > maxMod)) throw new Error(`stateKey ${key}: expected maxBound > maxMod`);
    if (path === '' && records !== 0) throw new Error(`stateKey ${key}: expected records == 0 if path is empty`);
    if (path === '' && complete) throw new Error(`stateKey ${key}: expected !complete if path is empty`);
    if (path !== '' && (records as number) < 0) throw new Error(`stateKey ${key}: expected records >= 0`);
  }
}

const ROWS = 30;
const CSV = `id,v\n${Array.from({ length: ROWS }, (_, i) => `${i},v${i}`).join('\n')}\n`;

describe('source-http-file transport and state (bin)', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      '/a/My%20File.csv': { body: CSV, etag: '"m1"' },
      '/signed.csv': { body: CSV, headStatus: 403 },
      '/data.csv': { body: CSV, etag: '"d1"' },
      '/download': { body: CSV },
      '/export': { body: CSV.split('\n').slice(1, -1).map((l) => JSON.stringify({ line: l })).join('\n') },
      '/packed': { body: gzipSync(CSV) },
      '/meta-clash.csv': { body: 'x\n1\n' },
    });
  });
  after(() => server.close());

  test('#14.6: _meta/file is the decoded last path segment; no query, user or password in documents, state or logs; a rotated signature skips the unchanged file', async () => {
    const url = (sig: string): string => server.url(`/a/My%20File.csv?X-Amz-Signature=${sig}&api_key=K3Y-SECRET`).replace('http://', 'http://alice:PW-SECRET@');
    const first = await run([openRequest({ url: url('SIG-ONE') })], { HTTP_FILE_CHECKPOINT_EVERY: '10' });
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(docsOf(first).map((d) => d['_meta']), Array.from({ length: ROWS }, (_, offset) => ({ file: 'My File.csv', offset })));
    for (const secret of ['SIG-ONE', 'K3Y-SECRET', 'PW-SECRET', 'alice']) {
      assert.ok(!JSON.stringify(first.lines).includes(secret), `${secret} in the output`);
      assert.ok(!first.stderr.includes(secret), `${secret} in the logs`);
    }
    const mid = checkpointsOf(first).map((c) => ((((c['state'] as JsonObject)['updated'] as JsonObject)['bindingStateV1'] as JsonObject)['data'] as JsonObject)).filter((s) => s['complete'] === false && s['path'] !== '');
    assert.ok(mid.length > 0);
    for (const s of mid) assert.equal(s['path'], 'My File.csv');
    const state = applyCheckpoints({}, checkpointsOf(first));
    const again = await run([openRequest({ url: url('SIG-TWO') }, state)]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(docsOf(again).length, 0);
    assert.match(again.stderr, /skipping the file: the file is unchanged since the last capture/);
    assert.ok(!again.stderr.includes('SIG-TWO'));
  });

  test('#14.7: HEAD refused (403, a URL signed for GET): Last-Modified from a one-byte GET, file captured', async () => {
    const before = server.requests.length;
    const p = await run([openRequest({ url: `${server.url('/signed.csv')}?sig=x` })]);
    assert.equal(p.code, 0, p.stderr);
    assert.equal(docsOf(p).length, ROWS);
    const reqs = server.requests.slice(before).filter((r) => r.path === '/signed.csv');
    assert.deepEqual(reqs.map((r) => [r.method, r.headers.range ?? null]), [['HEAD', null], ['GET', 'bytes=0-0'], ['GET', null]]);
  });

  test('#14.8: addRecordOffset, addValues (with /_meta/file forced to the file), filename, contentType, contentEncoding', async () => {
    const p = await run([openRequest({ url: server.url('/download'), parser: { addRecordOffset: '/line', addValues: { '/source': 'feed-7', '/nested/0': true, '/_meta/file': 'ignored' }, contentType: 'text/csv' } })]);
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(docsOf(p)[2], { id: '2', v: 'v2', line: 2, source: 'feed-7', nested: [true], _meta: { file: 'download' } });
    // filename decides the format (JSON here) where the URL has no extension.
    const j = await run([openRequest({ url: server.url('/export'), parser: { filename: 'export.jsonl' } })]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(docsOf(j)[0], { line: '0,v0', _meta: { file: 'export', offset: 0 } });
    // contentEncoding is used when the response sends none.
    const z = await run([openRequest({ url: server.url('/packed'), parser: { contentEncoding: 'gzip', format: { type: 'csv' } } })]);
    assert.equal(z.code, 0, z.stderr);
    assert.equal(docsOf(z).length, ROWS);
    assert.match(z.stderr, /compression: gzip \(by Content-Encoding\)/);
    // Discover: the key and schema follow addRecordOffset.
    const d = await run([{ discover: { connectorType: 'IMAGE', config: { url: server.url('/download'), parser: { addRecordOffset: '/line', contentType: 'text/csv' } } } }]);
    assert.equal(d.code, 0, d.stderr);
    const b = ((d.lines[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[])[0] as JsonObject;
    assert.deepEqual(b['key'], ['/_meta/file', '/line']);
    const props = (b['documentSchema'] as JsonObject)['properties'] as Record<string, JsonObject>;
    assert.equal(props['line']?.['type'], 'integer');
    assert.deepEqual((props['_meta'] as JsonObject)['required'], ['file']);
    // A location under a scalar fails as upstream's decorator does; a wrong type is a config error.
    const clash = await run([openRequest({ url: server.url('/meta-clash.csv'), parser: { addValues: { '/x/y': 1 } } })]);
    assert.equal(clash.code, 1);
    assert.match(lastError(clash), /^unable to add value: 1 at location: \/x\/y in record 0: a parent of that location is not an object/);
    const bad = await run([openRequest({ url: server.url('/data.csv'), parser: { addValues: ['x'], addRecordOffset: 'line' } })]);
    assert.equal(bad.code, 1);
    assert.match(lastError(bad), /parser\.addValues must be an object .* got \["x"\]; parser\.addRecordOffset must be a JSON pointer such as '\/_meta\/offset', got 'line'/);
  });

  test('#15.4: every state Sluice leaves at a file or sweep boundary decodes under upstream\'s rules; mid-file states pass Validate', async () => {
    const p = await run([openRequest({ url: server.url('/data.csv') })], { HTTP_FILE_CHECKPOINT_EVERY: '10' });
    assert.equal(p.code, 0, p.stderr);
    let state: JsonObject = {};
    const seen: JsonObject[] = [];
    for (const c of checkpointsOf(p)) {
      state = applyCheckpoints(state, [c]);
      const s = (state['bindingStateV1'] as JsonObject)['data'] as JsonObject;
      seen.push(s);
      const withoutExtras = { bindingStateV1: { data: Object.fromEntries(Object.entries(s).filter(([k]) => !['etag', 'byteOffset', 'csv'].includes(k))) } };
      upstreamDecode(withoutExtras as JsonObject);
      if (s['complete'] === true || s['path'] === '') upstreamDecode(state);
    }
    const midFile = seen.find((s) => s['complete'] === false && s['path'] !== '') as JsonObject;
    assert.equal(midFile['path'], 'data.csv');
    assert.equal(midFile['maxMod'], '2015-10-21T07:28:00Z');
    assert.match(midFile['maxBound'] as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.equal(midFile['etag'], '"d1"');
    assert.deepEqual(state, { bindingStateV1: { data: { minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false } } });
    const completed = seen.find((s) => s['complete'] === true) as JsonObject;
    assert.deepEqual(Object.keys(completed).sort(), ['complete', 'maxBound', 'maxMod', 'minBound', 'path', 'records']);
  });

  test('#15.4: an upstream mid-file state resumes at its record count; its maxBound is not left behind; its finished state skips', async () => {
    const upstreamMid = { bindingStateV1: { data: { minBound: '0001-01-01T00:00:00Z', maxBound: '2030-01-01T00:00:00Z', maxMod: '2015-10-21T07:28:00Z', path: 'data.csv', records: 4, complete: false } } };
    upstreamDecode(upstreamMid);
    const p = await run([openRequest({ url: server.url('/data.csv') }, upstreamMid)]);
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(docsOf(p).map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: ROWS - 4 }, (_, i) => i + 4));
    assert.deepEqual(docsOf(p)[0], { id: '4', v: 'v4', _meta: { file: 'data.csv', offset: 4 } });
    const state = applyCheckpoints(upstreamMid, checkpointsOf(p));
    assert.deepEqual(state, { bindingStateV1: { data: { minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false } } });
    upstreamDecode(state);
    const again = await run([openRequest({ url: server.url('/data.csv') }, state)]);
    assert.equal(docsOf(again).length, 0);
    // An upstream state of an interrupted sweep whose file is now newer than its bound: skipped this sweep, bound cleared.
    const stale = { bindingStateV1: { data: { minBound: '0001-01-01T00:00:00Z', maxBound: '2015-01-01T00:00:00Z', maxMod: '2014-12-31T00:00:00Z', path: 'data.csv', records: 4, complete: false } } };
    const s = await run([openRequest({ url: server.url('/data.csv') }, stale)]);
    assert.equal(docsOf(s).length, 0);
    assert.deepEqual(applyCheckpoints(stale, checkpointsOf(s)), { bindingStateV1: { data: { minBound: '2014-12-31T00:00:00Z', path: '', records: 0, complete: false } } });
  });

  test('#15.4: Sluice\'s earlier state (path = the URL) is read and rewritten in upstream\'s shape', async () => {
    const url = `${server.url('/data.csv')}?sig=old`;
    const legacyDone = { bindingStateV1: { data: { path: url, maxMod: '2015-10-21T07:28:00Z', etag: '"d1"', records: ROWS, complete: true, minBound: '2015-10-21T07:28:00Z', byteOffset: null, csv: null } } };
    const p = await run([openRequest({ url: server.url('/data.csv') }, legacyDone)]);
    assert.equal(p.code, 0, p.stderr);
    assert.equal(docsOf(p).length, 0);
    const state = applyCheckpoints(legacyDone, checkpointsOf(p));
    assert.deepEqual(state, { bindingStateV1: { data: { minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false } } });
    const legacyMid = { bindingStateV1: { data: { path: url, maxMod: '2015-10-21T07:28:00Z', etag: '"d1"', records: 7, complete: false } } };
    const m = await run([openRequest({ url: server.url('/data.csv') }, legacyMid)]);
    assert.equal(m.code, 0, m.stderr);
    assert.equal((docsOf(m)[0]?.['_meta'] as JsonObject)['offset'], 7);
    upstreamDecode(applyCheckpoints(legacyMid, checkpointsOf(m)));
  });

  test('#17.4: configured headers are not sent to another origin; a file: redirect is a clear HTTP error; private addresses can be refused', async () => {
    const other = await startServer({ '/x.csv': { body: CSV } });
    const first = await startServer({ '/go.csv': { redirect: other.url('/x.csv') }, '/file.csv': { redirect: 'file:///etc/passwd' } });
    try {
      const headers = { items: [{ key: 'X-Api-Key', value: 'k' }, { key: 'Private-Token', value: 't' }] };
      const p = await run([openRequest({ url: first.url('/go.csv'), headers, credentials: { user: 'u', password: 'p' } })]);
      assert.equal(p.code, 0, p.stderr);
      assert.equal(docsOf(p).length, ROWS);
      assert.ok(other.requests.length > 0);
      for (const r of other.requests) for (const h of ['x-api-key', 'private-token', 'authorization']) assert.equal(r.headers[h], undefined, h);
      assert.equal(first.requests[0]?.headers['x-api-key'], 'k');
      const opted = await run([openRequest({ url: first.url('/go.csv'), headers: { ...headers, followRedirects: true } })]);
      assert.equal(opted.code, 0, opted.stderr);
      assert.equal(other.requests.at(-1)?.headers['x-api-key'], 'k');
      const f = await run([openRequest({ url: first.url('/file.csv') })]);
      assert.equal(f.code, 1);
      assert.equal(lastError(f), `the server redirected ${first.url('/file.csv')} (302 Found) to a 'file:' URL (file:///etc/passwd): only http and https redirects are followed`);
      assert.ok(!/internal error|\n\s+at /.test(f.stderr), f.stderr);
      const blocked = await run([openRequest({ url: server.url('/data.csv') })], { HTTP_FILE_BLOCK_PRIVATE_ADDRESSES: '1' });
      assert.equal(blocked.code, 1);
      assert.match(lastError(blocked), /^refusing to connect to 127\.0\.0\.1 \(127\.0\.0\.1\): loopback and private addresses are blocked/);
    } finally {
      await other.close();
      await first.close();
    }
  });

  test('#17.5: a server that ignores If-Range and changed the file: FILE_CHANGED, nothing stitched; the next session reads the new version whole', async () => {
    const OLD = `id,v\n${Array.from({ length: 3000 }, (_, i) => `${i},old${i}`).join('\n')}\n`;
    const NEW = `id,v\n${Array.from({ length: 3000 }, (_, i) => `${i},new${i}`).join('\n')}\n`;
    let version = { body: Buffer.from(OLD), etag: '"old"', lm: LAST_MODIFIED };
    let gets = 0;
    // Ignores If-Range; the first GET drops after 20 000 bytes, and the file is replaced meanwhile.
    const srv = http.createServer((req, res) => {
      const headers = { 'last-modified': version.lm, etag: version.etag, 'accept-ranges': 'bytes', 'content-type': 'text/csv' };
      if (req.method === 'HEAD') { res.writeHead(200, { ...headers, 'content-length': version.body.length }); res.end(); return; }
      gets++;
      const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (m) {
        const start = Number(m[1]);
        res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${version.body.length - 1}/${version.body.length}`, 'content-length': version.body.length - start });
        res.end(version.body.subarray(start));
        return;
      }
      res.writeHead(200, { ...headers, 'content-length': version.body.length });
      if (gets === 1) {
        res.write(version.body.subarray(0, 20_000), () => {
          version = { body: Buffer.from(NEW), etag: '"new"', lm: 'Wed, 21 Oct 2015 07:29:00 GMT' };
          res.socket?.destroy();
        });
        return;
      }
      res.end(version.body);
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/f.csv`;
    try {
      const p = await run([openRequest({ url })], { HTTP_FILE_CHECKPOINT_EVERY: '100' });
      assert.equal(p.code, 1);
      assert.match(lastError(p), /changed while it was being captured: the server answered the request for the rest of the file \(from byte \d+\) with ETag "new" instead of "old"/);
      assert.ok(docsOf(p).every((d) => String(d['v']).startsWith('old')), 'no document of the new version');
      const lastCp = p.lines.map((l) => 'checkpoint' in l).lastIndexOf(true);
      const committed = p.lines.slice(0, lastCp + 1);
      const state = applyCheckpoints({}, committed.filter((l) => 'checkpoint' in l).map((l) => l['checkpoint'] as JsonObject));
      const next = await run([openRequest({ url }, state)]);
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(docsOf(next).map((d) => d['v']), Array.from({ length: 3000 }, (_, i) => `new${i}`));
      assert.deepEqual(docsOf(next).map((d) => (d['_meta'] as JsonObject)['offset']), Array.from({ length: 3000 }, (_, i) => i));
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });

  test('#17.5: a 206 with the same validators but another total size is FILE_CHANGED', async () => {
    const body = Buffer.from(CSV.repeat(200));
    let gets = 0;
    const srv = http.createServer((req, res) => {
      const headers = { 'last-modified': LAST_MODIFIED, etag: '"same"', 'content-type': 'text/csv' };
      if (req.method === 'HEAD') { res.writeHead(200, { ...headers, 'content-length': body.length }); res.end(); return; }
      gets++;
      const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (m) {
        const start = Number(m[1]);
        res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${body.length + 99}/${body.length + 100}` });
        res.end(body.subarray(start));
        return;
      }
      res.writeHead(200, { ...headers, 'content-length': body.length });
      if (gets === 1) { res.write(body.subarray(0, 5000), () => res.socket?.destroy()); return; }
      res.end(body);
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const p = await run([openRequest({ url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/g.csv` })]);
      assert.equal(p.code, 1);
      assert.match(lastError(p), new RegExp(`with a total size of ${body.length + 100} bytes instead of ${body.length}`));
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });

  test('#17.8: a server below the minimum throughput fails saying so; the per-file deadline likewise', async () => {
    const drip = http.createServer((req, res) => {
      res.writeHead(200, { 'last-modified': LAST_MODIFIED, 'content-type': 'text/csv', 'content-length': 100_000 });
      if (req.method === 'HEAD') { res.end(); return; }
      res.write('id\n');
      const t = setInterval(() => res.write('1\n'), 20);
      res.on('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => drip.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(drip.address() as AddressInfo).port}/drip.csv`;
    try {
      const slow = await run([openRequest({ url })], { HTTP_FILE_MIN_BYTES_PER_SECOND: '10000', HTTP_FILE_THROUGHPUT_WINDOW_MS: '400' });
      assert.equal(slow.code, 1);
      assert.match(lastError(slow), /^127\.0\.0\.1:\d+ sent \d+ bytes of http:\/\/127\.0\.0\.1:\d+\/drip\.csv in \d+ s of waiting, below the minimum throughput of 10000 bytes\/s over 0\.4 s \(HTTP_FILE_MIN_BYTES_PER_SECOND/);
      const late = await run([openRequest({ url })], { HTTP_FILE_MIN_BYTES_PER_SECOND: '0', HTTP_FILE_DEADLINE_MS: '500' });
      assert.equal(late.code, 1);
      assert.match(lastError(late), /^reading http:\/\/127\.0\.0\.1:\d+\/drip\.csv took longer than the per-file deadline of 0\.5 s \(HTTP_FILE_DEADLINE_MS\) after \d+ bytes/);
    } finally {
      drip.closeAllConnections();
      drip.close();
    }
  });
});
