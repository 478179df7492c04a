// dbt_job_trigger against a fake dbt Cloud API on a loopback HTTP server: the requests upstream makes (list running
// runs, cancel them in replace mode, POST the job run with its cause), the modes, the minimum interval (with a test
// clock and scheduler, no waiting) and failures that are logged without failing anything.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@sluice/runtime';
import { DbtJobTriggerRunner, dbtTriggerEnabled } from '../src/dbt-trigger.ts';
import type { DbtJobTrigger } from '../src/config.ts';

interface Seen { method: string; url: string; auth: string | undefined; contentType: string | undefined; body: string }

let server: Server;
let base = '';
const seen: Seen[] = [];
let running: { id: number }[] = [];
let failRun = false;

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, contentType: req.headers['content-type'], body });
      const ok = (data: unknown) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ status: { code: 200, is_success: true }, data })); };
      if (req.method === 'GET' && req.url!.startsWith('/api/v2/accounts/34/runs?')) return ok(running);
      if (req.method === 'POST' && /^\/api\/v2\/accounts\/34\/runs\/\d+\/cancel$/.test(req.url!)) return ok({});
      if (req.method === 'POST' && req.url === '/api/v2/accounts/34/jobs/12/run') {
        if (failRun) { res.statusCode = 400; res.end(JSON.stringify({ status: { code: 400, is_success: false, user_message: 'Job is disabled' } })); return; }
        return ok({ id: 99 });
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function logger() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log = {
    lines,
    debug: (msg: string, fields?: Record<string, unknown>) => lines.push({ level: 'debug', msg, ...(fields ? { fields } : {}) }),
    info: (msg: string, fields?: Record<string, unknown>) => lines.push({ level: 'info', msg, ...(fields ? { fields } : {}) }),
    warn: (msg: string, fields?: Record<string, unknown>) => lines.push({ level: 'warn', msg, ...(fields ? { fields } : {}) }),
    error: (msg: string, fields?: Record<string, unknown>) => lines.push({ level: 'error', msg, ...(fields ? { fields } : {}) }),
  };
  return log as unknown as Logger & { lines: typeof lines };
}

// The schema requires https for access_url; the runner itself takes any base URL, so the loopback server is plain HTTP.
const cfg = (extra: Partial<DbtJobTrigger> = {}): DbtJobTrigger => ({ job_id: '12', account_id: '34', api_key: 'k3y', access_url: `${base}/`, ...extra });

describe('dbt job trigger', () => {
  it('is enabled only with job, account, key and an access URL (or the legacy account prefix)', () => {
    assert.equal(dbtTriggerEnabled(cfg()), true);
    assert.equal(dbtTriggerEnabled(cfg({ access_url: '' })), false);
    assert.equal(dbtTriggerEnabled(cfg({ access_url: '', account_prefix: 'ab1' })), true);
    assert.equal(new DbtJobTriggerRunner(cfg({ access_url: '', account_prefix: 'ab1' }), logger()).baseUrl, 'https://ab1.us1.dbt.com');
    assert.equal(dbtTriggerEnabled(undefined), false);
  });

  it('skip (default): lists running runs, then POSTs the job run with the cause; does nothing while a run is in progress', async () => {
    seen.length = 0;
    running = [];
    const t = new DbtJobTriggerRunner(cfg({ cause: 'nightly "load"' }), logger());
    await t.trigger();
    assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['GET /api/v2/accounts/34/runs?job_definition_id=12&status=3', 'POST /api/v2/accounts/34/jobs/12/run']);
    assert.equal(seen[1]!.auth, 'Bearer k3y');
    assert.equal(seen[1]!.contentType, 'application/json;charset=UTF-8');
    assert.deepEqual(JSON.parse(seen[1]!.body), { cause: 'nightly "load"' });
    seen.length = 0;
    running = [{ id: 5 }];
    await t.trigger();
    assert.deepEqual(seen.map((s) => s.method), ['GET'], 'a run is in progress: skipped');
  });

  it('replace cancels running runs first; ignore does not look; the default cause is "Estuary Flow"', async () => {
    seen.length = 0;
    running = [{ id: 5 }, { id: 6 }];
    await new DbtJobTriggerRunner(cfg({ mode: 'replace' }), logger()).trigger();
    assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), [
      'GET /api/v2/accounts/34/runs?job_definition_id=12&status=3', 'POST /api/v2/accounts/34/runs/5/cancel', 'POST /api/v2/accounts/34/runs/6/cancel', 'POST /api/v2/accounts/34/jobs/12/run',
    ]);
    seen.length = 0;
    await new DbtJobTriggerRunner(cfg({ mode: 'ignore' }), logger()).trigger();
    assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['POST /api/v2/accounts/34/jobs/12/run']);
    assert.deepEqual(JSON.parse(seen[0]!.body), { cause: 'Estuary Flow' });
  });

  it('the interval: the first commit triggers at once, later ones within the interval schedule exactly one run', async () => {
    seen.length = 0;
    running = [];
    let now = 1_000_000;
    const timers: { fn: () => void; ms: number }[] = [];
    const log = logger();
    const t = new DbtJobTriggerRunner(cfg({ mode: 'ignore', interval: '30m' }), log, { now: () => now, schedule: (fn, ms) => { timers.push({ fn, ms }); return () => undefined; } });
    t.notify();
    await t.running;
    assert.equal(seen.length, 1, 'first acknowledgement: triggered');
    now += 60_000;
    t.notify();
    t.notify();
    assert.deepEqual(timers.map((x) => x.ms), [29 * 60_000], 'one run scheduled for 30 minutes after the last');
    assert.equal(seen.length, 1);
    now += 29 * 60_000;
    timers[0]!.fn();
    await t.running;
    assert.equal(seen.length, 2, 'the scheduled run happened');
    now += 31 * 60_000;
    t.notify();
    await t.running;
    assert.equal(seen.length, 3, 'past the interval: at once');
    assert.equal(timers.length, 1);
  });

  it('a failing dbt API is logged with its message and does not throw', async () => {
    failRun = true;
    const log = logger();
    const t = new DbtJobTriggerRunner(cfg({ mode: 'ignore' }), log);
    t.notify();
    await t.running;
    failRun = false;
    const err = log.lines.find((l) => l.level === 'error');
    assert.equal(err?.msg, 'dbt job trigger failed');
    assert.match(String(err?.fields?.error), /dbt API POST http:\/\/127\.0\.0\.1:\d+\/api\/v2\/accounts\/34\/jobs\/12\/run failed \(HTTP 400\): Job is disabled/);
    assert.doesNotMatch(JSON.stringify(log.lines), /k3y/, 'the API key is never logged');
  });
});
