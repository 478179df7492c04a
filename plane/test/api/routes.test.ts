// curl against every route and error of /api/v1 on a real loopback server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTokenCommand } from '../../src/cli/token.ts';
import { startControlPlaneServer } from '../../src/control/testing.ts';

const run = promisify(execFile);

interface CurlResult { status: number; type: string; body: string; json?: unknown }

const HAVE_CURL = await run('curl', ['--version']).then(() => true, () => false);
if (!HAVE_CURL) console.log('# curl is not installed: these checks send the same requests with fetch instead');

/** curl with its -X/-H/-d arguments; the same request through fetch when curl is not installed. */
async function curl(url: string, args: string[] = []): Promise<CurlResult> {
  if (!HAVE_CURL) {
    const init: { method?: string; headers: Record<string, string>; body?: string } = { headers: {} };
    for (let i = 0; i < args.length; i += 2) {
      const [flag, value] = [args[i]!, args[i + 1]!];
      if (flag === '-X') init.method = value;
      else if (flag === '-d') { init.body = value; init.method ??= 'POST'; }
      else if (flag === '-H') { const at = value.indexOf(':'); init.headers[value.slice(0, at)] = value.slice(at + 1).trim(); }
    }
    const res = await fetch(url, init);
    const out: CurlResult = { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
    if (out.type.startsWith('application/json')) out.json = JSON.parse(out.body);
    return out;
  }
  const { stdout } = await run('curl', ['-s', '-g', '-D', '-', ...args, url]);
  const [head, ...rest] = stdout.split('\r\n\r\n');
  const body = rest.join('\r\n\r\n');
  const status = Number(/^HTTP\/[0-9.]+ (\d+)/.exec(head ?? '')?.[1]);
  const type = /^content-type: (.*)$/im.exec(head ?? '')?.[1]?.trim() ?? '';
  const out: CurlResult = { status, type, body };
  if (type.startsWith('application/json')) out.json = JSON.parse(body);
  return out;
}

test('bad input: a status request without name is 400 with a JSON error body', async () => {
  const cp = await startControlPlaneServer();
  const auth = ['-H', `Authorization: Bearer ${await cp.accessToken()}`];
  assert.deepEqual((await curl(`${cp.url}/api/v1/catalog/status`, auth)).json, {
    status: 400, error: 'missing required query parameter "name": pass ?name=<catalog name>, repeated for several (name=a&name=b)',
  });
  await cp.close();
});

test('every route and error, with curl', async (tc) => {
  const cp = await startControlPlaneServer();
  tc.after(() => cp.close());
  const r = cp.controlPlane.recorder;
  const { pubId } = r.publish({
    specs: [
      { catalogName: 'acme/orders', specType: 'collection', spec: {}, connected: ['acme/source'], disabled: false },
      { catalogName: 'acme/source', specType: 'capture', spec: { a: 1 }, connected: ['acme/orders'], disabled: false },
      { catalogName: 'other/source', specType: 'capture', spec: { a: 1 }, connected: [], disabled: false },
    ], detail: 'load', result: 'success',
  });
  r.activated('acme/source', pubId, new Date());
  r.taskMetrics('acme/source', { binding: 'acme/orders', docsWritten: 5, bytesWritten: 50, ts: new Date('2030-01-01T00:00:00Z') });
  r.taskMetrics('acme/source', { binding: 'acme/orders', docsWritten: 1, bytesWritten: 10, ts: new Date('2030-01-01T00:00:01Z') });
  r.shardFailure('acme/source', { message: 'boom', ts: new Date() });
  const base = `${cp.url}/api/v1`;
  const t = await cp.controlPlane.tokens.create({ prefixes: ['acme/'] });

  // auth/token
  const json = ['-H', 'Content-Type: application/json'];
  const tok = await curl(`${base}/auth/token`, ['-X', 'POST', ...json, '-d', JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: t.id, secret: t.secret })]);
  assert.equal(tok.status, 200);
  assert.equal(tok.type, 'application/json');
  const access = (tok.json as { access_token: string }).access_token;
  const auth = ['-H', `Authorization: Bearer ${access}`];
  assert.equal((await curl(`${base}/auth/token`, ['-X', 'POST', '-H', 'Content-Type: text/plain', '-d', '{}'])).status, 415);
  assert.equal((await curl(`${base}/auth/token`, ['-X', 'POST', ...json, '-d', '{'])).status, 400);
  assert.equal((await curl(`${base}/auth/token`, ['-X', 'POST', ...json, '-d', '{}'])).status, 422);
  assert.equal((await curl(`${base}/auth/token`, ['-X', 'POST', ...json, '-d', JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: t.id, secret: t.secret })])).status, 401, 'spent secret');
  assert.deepEqual((await curl(`${base}/auth/token`)).json, { status: 405, error: 'method GET is not allowed on /api/v1/auth/token; use POST' });

  // catalog/status
  const ok = await curl(`${base}/catalog/status?name=acme/source&name=acme/orders`, auth);
  assert.equal(ok.status, 200);
  assert.deepEqual((ok.json as { catalog_name: string }[]).map((i) => i.catalog_name).sort(), ['acme/orders', 'acme/source']);
  assert.equal((await curl(`${base}/catalog/status?name=acme/source`, [...auth, '-H', 'Accept: */*'])).status, 200);
  assert.equal((await curl(`${base}/catalog/status?name=acme/source`, [...auth, '-H', 'Accept: application/json, text/plain'])).status, 200);
  assert.deepEqual((await curl(`${base}/catalog/status?name=acme/source`, [...auth, '-H', 'Accept: text/html'])).json,
    { status: 406, error: 'only application/json responses are supported at this time' });
  assert.deepEqual((await curl(`${base}/catalog/status?name=acme/source&short=yes`, auth)).json,
    { status: 400, error: 'query parameter "short" must be true or false (got "yes")' });
  assert.deepEqual((await curl(`${base}/catalog/status?name=acme/nope&name=acme/gone&name=acme/source`, auth)).json,
    { status: 404, error: 'no live specs found for names: [acme/nope, acme/gone]' });
  assert.deepEqual((await curl(`${base}/catalog/status?name=other/source`, auth)).json,
    { status: 403, error: 'local-user is not authorized to read "other/source"; this token may read names under: acme/' });
  const unauth = await curl(`${base}/catalog/status?name=acme/source`);
  assert.equal(unauth.status, 401);
  assert.match((unauth.json as { error: string }).error, /missing a required Authorization: Bearer token/);
  const failed = (await curl(`${base}/catalog/status?name=acme/source`, auth)).json as { summary: { status: string; message: string } }[];
  assert.equal(failed[0]!.summary.status, 'ok', 'a failure without next_retry is not an unhandled failure');

  // metrics
  const m = await curl(`${base}/metrics/acme/`, auth);
  assert.equal(m.status, 200);
  assert.equal(m.type, 'text/plain; version=1.0.0; charset=utf-8');
  assert.equal(m.body, [
    '# HELP read_by_me_docs_total Documents read by the task', '# TYPE read_by_me_docs_total counter',
    '# HELP read_by_me_bytes_total Bytes read by the task', '# TYPE read_by_me_bytes_total counter',
    '# HELP written_by_me_docs_total Documents written by the task', '# TYPE written_by_me_docs_total counter',
    'written_by_me_docs_total{task="acme/source"} 6',
    '# HELP written_by_me_bytes_total Bytes written by the task', '# TYPE written_by_me_bytes_total counter',
    'written_by_me_bytes_total{task="acme/source"} 60',
    '# HELP binding_read_docs_total Documents read by the task, per binding', '# TYPE binding_read_docs_total counter',
    '# HELP binding_read_bytes_total Bytes read by the task, per binding', '# TYPE binding_read_bytes_total counter',
    '# HELP binding_written_docs_total Documents written by the task, per binding', '# TYPE binding_written_docs_total counter',
    'binding_written_docs_total{task="acme/source",binding="acme/orders"} 6',
    '# HELP binding_written_bytes_total Bytes written by the task, per binding', '# TYPE binding_written_bytes_total counter',
    'binding_written_bytes_total{task="acme/source",binding="acme/orders"} 60',
    '# HELP logged_failures_total Shard failures of the task', '# TYPE logged_failures_total counter',
    'logged_failures_total{task="acme/source"} 1',
    '# HELP last_commit_time_seconds Unix time of the task\'s last committed transaction', '# TYPE last_commit_time_seconds gauge',
    'last_commit_time_seconds{task="acme/source"} 1893456001',
    '# EOF', '',
  ].join('\n'));
  assert.equal((await curl(`${base}/metrics/acme%2F`, auth)).status, 200, 'an encoded prefix works too');
  assert.deepEqual((await curl(`${base}/metrics/acme`, auth)).json, { status: 400, error: 'prefix "acme" must end with a trailing \'/\' slash' });
  assert.deepEqual((await curl(`${base}/metrics/other/`, auth)).json,
    { status: 403, error: 'local-user is not authorized to read "other/"; this token may read names under: acme/' });
  assert.equal((await curl(`${base}/metrics/`, auth)).status, 400, 'an empty prefix does not end with /');
  assert.equal((await curl(`${base}/metrics/acme/`)).status, 401);

  // openapi.json and unknown routes
  const oa = await curl(`${base}/openapi.json`);
  assert.equal(oa.status, 200);
  assert.equal((oa.json as { openapi: string }).openapi, '3.1.0');
  assert.deepEqual((await curl(`${base}/nope`)).json, {
    status: 404, error: 'no route for /api/v1/nope; routes are /api/v1/catalog/status, /api/v1/auth/token, /api/v1/metrics/{prefix}/ and /api/v1/openapi.json',
  });
  const outside = await curl(`${cp.url}/ingest`);
  assert.equal(outside.status, 404);
  assert.equal(outside.body, 'not found', 'paths outside /api/v1 are left to the caller');
});

test('sluice token create prints a working refresh token; bad flags are refused', async () => {
  const cp = await startControlPlaneServer();
  const dir = cp.dataDir;
  let out = '';
  let err = '';
  const io = { out: (s: string) => { out += s; }, err: (s: string) => { err += s; } };
  assert.equal(await runTokenCommand(['create', '--data-dir', dir, '--valid-for', 'soon'], io), 2);
  assert.match(err, /--valid-for "soon" is not a duration; write e.g. 12h, 30d/);
  assert.equal(await runTokenCommand(['rotate'], io), 2);
  assert.match(err, /unknown subcommand "rotate"/);
  assert.equal(await runTokenCommand(['create', '--data-dir', dir, '--prefix', 'acme/', '--valid-for', '30d'], io), 0);
  const id = /id: +([0-9a-f]{16})/.exec(out)![1]!;
  const secret = /secret: +(\S+)/.exec(out)![1]!;
  assert.match(out, /curl -s -X POST http:\/\/localhost:8675\/api\/v1\/auth\/token/);
  const row = cp.controlPlane.store.getToken(id)!;
  assert.deepEqual([row.prefixes, row.validForSeconds, row.multiUse], [['acme/'], 30 * 86400, false]);
  const res = await curl(`${cp.url}/api/v1/auth/token`, ['-X', 'POST', '-H', 'Content-Type: application/json', '-d', JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: id, secret })]);
  assert.equal(res.status, 200);
  await cp.close();
});

test('sluice token create refuses a dir with no plane state (a mistyped --data-dir) unless --init', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-token-'));
  try {
    let out = '';
    let err = '';
    const io = { out: (s: string) => { out += s; }, err: (s: string) => { err += s; } };
    const typo = join(dir, 'dta');
    assert.equal(await runTokenCommand(['create', '--data-dir', typo], io), 1);
    assert.equal(err, `sluice token create: ${typo} holds no plane state (no control.db): pass the --data-dir your plane runs with (serve prints it as "data:"; the default is ./data), or --init to create the state there\n`);
    assert.equal(existsSync(typo), false, 'nothing was created');
    assert.equal(out, '');
    assert.equal(await runTokenCommand(['create', '--data-dir', typo, '--init'], io), 0);
    assert.match(out, new RegExp(`^refresh token created in ${typo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    assert.equal(existsSync(join(typo, 'control.db')), true);
    out = '';
    assert.equal(await runTokenCommand(['create', '--help'], io), 0);
    assert.match(out, /--init {11}create the plane's state in a dir that has none yet/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
