// The status API's summary cases produced by real task behaviour on a running local plane
// (`startPlane`, what `sluice serve` runs): a capture that runs and reports a connector status (ok),
// one slow to send `opened` and later slow to apply an edit (warnings), one whose connector fails
// (error with next_retry), a disabled one (taskDisabled), and a catalog test that passes and then
// fails. Every query goes over loopback HTTP with an access token exchanged for a refresh token made
// by `sluice token create`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { runTokenCommand } from '../plane/src/cli/token.ts';
import { startPlane } from '../plane/src/cli/serve.ts';
import { until as untilEvent } from '@sluice/runtime/testing';

const TEST_CAPTURE = fileURLToPath(new URL('../runtime/bin/sluice-test-capture.js', import.meta.url));
const SLOW_CAPTURE = fileURLToPath(new URL('./fixtures/slow-capture.ts', import.meta.url));
const node = JSON.stringify(process.execPath);

interface Item {
  catalog_name: string;
  summary: { status: string; message: string };
  last_build_id: string;
  spec_type: string;
  disabled?: boolean;
  controller_next_run: string | null;
  controller_error?: string;
  connector_status?: { message: string; shard: { name: string; build: string }; ts: string };
  controller_status?: {
    type: string;
    passing?: boolean;
    activation?: {
      last_activated?: string;
      last_failure?: { ts: string; message: string; shard: { name: string; build: string }; fields?: Record<string, string> };
      next_retry?: string;
      recent_failure_count?: number;
      shard_status?: { status: string; count: number };
    };
    alerts?: Record<string, { state: string; count: number; error: string }>;
    publications: { history: { id: string; result?: { type: string } }[] };
  };
}

function catalog(opts: { verifyN: number; slowApplyMs?: number }): string {
  const schema = `
    schema:
      type: object
      properties: {id: {type: string}, greeting: {type: string}, n: {type: integer}}
      required: [id, greeting, n]
    key: [/id]`;
  return `
collections:
  acmeCo/greetings:${schema}
  acmeCo/slow:${schema}
  acmeCo/failing:${schema}
  acmeCo/disabled:${schema}
captures:
  acmeCo/ok/source:
    interval: 1h
    endpoint:
      local:
        command: [${node}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, count: 2}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
  acmeCo/slow/source:
    endpoint:
      local:
        command: [${node}, ${JSON.stringify(SLOW_CAPTURE)}]
        config: {openDelayMs: 120000, status: warming up${opts.slowApplyMs ? `, applyDelayMs: ${opts.slowApplyMs}` : ''}}
    bindings:
      - resource: {name: slow}
        target: acmeCo/slow
  acmeCo/failing/source:
    endpoint:
      local:
        command: [${node}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, failWith: the API key was revoked}
    bindings:
      - resource: {name: failing}
        target: acmeCo/failing
  acmeCo/disabled/source:
    shards: {disable: true}
    endpoint:
      local:
        command: [${node}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k}
    bindings:
      - resource: {name: disabled}
        target: acmeCo/disabled
materializations:
  acmeCo/ok/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
tests:
  acmeCo/ok/test:
    - ingest: {collection: acmeCo/greetings, documents: [{id: a, greeting: hi, n: 1}, {id: a, greeting: yo, n: 2}]}
    - verify: {collection: acmeCo/greetings, documents: [{id: a, greeting: yo, n: ${opts.verifyN}}]}
`;
}

test('status API: summary cases from real tasks (ok, warning, error, taskDisabled, tests), short, connected, 404, metrics', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-status-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'flow.yaml');
  const dataDir = join(dir, 'data');
  writeFileSync(file, catalog({ verifyN: 2 }));
  const running = await startPlane({ catalogFile: file, dataDir, host: '127.0.0.1', port: 0, ingestPort: 0, watch: false, log: () => undefined });
  t.after(() => running.close());
  assert.equal(running.first.result, 'success', running.first.errors.join('\n'));
  const pubId = running.first.pubId!;

  // A refresh token from the CLI, exchanged over HTTP for an access token.
  let printed = '';
  assert.equal(await runTokenCommand(['create', '--data-dir', dataDir, '--prefix', 'acmeCo/'], { out: (s) => { printed += s; }, err: (s) => { printed += s; } }), 0);
  const id = /id: +([0-9a-f]{16})/.exec(printed)?.[1];
  const secret = /secret: +(\S+)/.exec(printed)?.[1];
  assert.ok(id && secret, printed);
  const exchanged = await fetch(`${running.apiUrl}/auth/token`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: id, secret }),
  });
  assert.equal(exchanged.status, 200);
  const { access_token: token } = await exchanged.json() as { access_token: string };
  const get = (path: string) => fetch(`${running.apiUrl}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  const status = async (names: string[], query = ''): Promise<Item[]> => {
    const res = await get(`/catalog/status?${names.map((n) => `name=${encodeURIComponent(n)}`).join('&')}${query}`);
    const body = await res.text();
    assert.equal(res.status, 200, body);
    return JSON.parse(body) as Item[];
  };
  /** Polls one spec's status until `ok(item)` (the plane's tasks move on their own). */
  const until = async (name: string, what: string, ok: (i: Item) => boolean): Promise<Item> => {
    let last: Item | undefined;
    return untilEvent(`${name}: ${what}`, async () => {
      [last] = await status([name]);
      return last !== undefined && ok(last) ? last : undefined;
    }, { intervalMs: 100, detail: () => `last status: ${JSON.stringify(last, null, 1)}` });
  };

  // ok: the capture opened, captured, reported its status, and is scheduled to run again in an hour.
  const ok = await until('acmeCo/ok/source', 'ok with the connector status and a next run', (i) => i.summary.status === 'ok' && i.controller_next_run !== null);
  assert.deepEqual(ok.summary, { status: 'ok', message: 'Capturing 1 binding' });
  assert.equal(ok.last_build_id, pubId);
  assert.equal(ok.connector_status?.message, 'Capturing 1 binding');
  assert.deepEqual(ok.connector_status?.shard, { name: 'acmeCo/ok/source', keyBegin: '00000000', rClockBegin: '00000000', build: pubId });
  assert.equal(ok.controller_status?.type, 'Capture');
  assert.equal(ok.controller_status?.activation?.last_activated, pubId);
  assert.equal(ok.controller_status?.activation?.shard_status?.status, 'Ok');
  const nextRun = Date.parse(ok.controller_next_run!);
  assert.ok(nextRun > Date.now() + 3500_000 && nextRun <= Date.now() + 3600_000, ok.controller_next_run!);
  // The materialization has no connector status of its own: "Ok" once its shard is up.
  const mat = await until('acmeCo/ok/to-sqlite', 'ok', (i) => i.summary.status === 'ok');
  assert.deepEqual(mat.summary, { status: 'ok', message: 'Ok' });

  // warning: the slow connector said "warming up" but has not sent `opened`: its shard is Pending.
  const slow = await until('acmeCo/slow/source', 'a pending shard', (i) => i.connector_status !== undefined);
  assert.deepEqual(slow.summary, { status: 'warning', message: 'waiting for task shards to be ready' });
  assert.equal(slow.controller_status?.activation?.shard_status?.status, 'Pending');
  assert.equal(slow.connector_status?.message, 'warming up');

  // error: the failing connector's shard failed and is waiting for its retry. Until a session proves
  // healthy, the controller error carries the failure (as Flow's controller reports unhandled shard
  // failures), so the summary says what failed, not only when.
  const failing = await until('acmeCo/failing/source', 'a shard failure awaiting retry', (i) => i.summary.status === 'error' && i.controller_status?.activation?.next_retry !== undefined);
  const a = failing.controller_status!.activation!;
  assert.ok(a.last_failure && a.next_retry, JSON.stringify(a));
  assert.match(failing.summary.message, /^task shard failed (once|\d+ times in a row), next retry at \d{4}-\d\d-\d\d [\d:.]+ UTC: acmeCo\/failing\/source: connector failed: .*the API key was revoked/);
  assert.equal(failing.controller_error, failing.summary.message);
  assert.match(a.last_failure.message, /^acmeCo\/failing\/source: connector failed: .*the API key was revoked/);
  assert.deepEqual(a.last_failure.shard, { name: 'acmeCo/failing/source', keyBegin: '00000000', rClockBegin: '00000000', build: pubId });
  assert.equal(a.last_failure.fields?.eventType, 'shardFailure');
  assert.ok(Date.parse(a.next_retry) > Date.parse(a.last_failure.ts));
  assert.ok((a.recent_failure_count ?? 0) >= 1);
  assert.equal(failing.controller_status?.alerts?.shard_failed?.state, 'firing');

  // taskDisabled: the disabled capture is never started; the control plane activates it itself.
  const [disabled] = await status(['acmeCo/disabled/source']);
  assert.deepEqual(disabled?.summary, { status: 'taskDisabled', message: 'Task shards are disabled' });
  assert.equal(disabled?.disabled, true);
  assert.equal(disabled?.controller_status?.activation?.shard_status, undefined);
  assert.equal(ok.disabled, undefined, '`disabled` is omitted when false');

  // Tests: passing after the first publication.
  const [passing] = await status(['acmeCo/ok/test']);
  assert.deepEqual(passing?.summary, { status: 'ok', message: 'Test passed' });
  assert.equal(passing?.controller_status?.passing, true);

  // short omits connector_status and controller_status; connected adds specs one hop away.
  const [short] = await status(['acmeCo/ok/source'], '&short=true');
  assert.ok(short && !('connector_status' in short) && !('controller_status' in short), JSON.stringify(short));
  assert.deepEqual(short.summary, ok.summary);
  assert.deepEqual((await status(['acmeCo/ok/source'], '&connected=true')).map((i) => i.catalog_name).sort(), ['acmeCo/greetings', 'acmeCo/ok/source']);
  assert.deepEqual((await status(['acmeCo/greetings'], '&connected=true&short=true')).map((i) => i.catalog_name).sort(),
    ['acmeCo/greetings', 'acmeCo/ok/source', 'acmeCo/ok/test', 'acmeCo/ok/to-sqlite']);

  // Unknown names: 404 naming them (and only them).
  const missing = await get('/catalog/status?name=acmeCo/ok/source&name=acmeCo/nope&name=acmeCo/gone');
  assert.equal(missing.status, 404);
  assert.deepEqual(await missing.json(), { status: 404, error: 'no live specs found for names: [acmeCo/nope, acmeCo/gone]' });

  // Metrics of the running tasks: what the capture wrote and the materialization read.
  const metrics = async () => (await get('/metrics/acmeCo/')).text();
  const text = await untilEvent('the materialization\'s metrics to count 2 documents read', async () => {
    const t = await metrics();
    return /read_by_me_docs_total\{task="acmeCo\/ok\/to-sqlite"\} 2\n/.test(t) && t;
  }, { intervalMs: 100 });
  assert.match(text, /^written_by_me_docs_total\{task="acmeCo\/ok\/source"\} 2$/m);
  assert.match(text, /^binding_written_docs_total\{task="acmeCo\/ok\/source",binding="acmeCo\/greetings"\} 2$/m);
  assert.match(text, /^read_by_me_docs_total\{task="acmeCo\/ok\/to-sqlite"\} 2$/m);
  assert.match(text, /^last_commit_time_seconds\{task="acmeCo\/ok\/to-sqlite"\} \d+(\.\d+)?$/m);
  assert.match(text, /^logged_failures_total\{task="acmeCo\/failing\/source"\} [1-9]\d*$/m);
  assert.doesNotMatch(text, /acmeCo\/disabled\/source"\} [1-9]/);

  // A catalog edit whose test fails: the publication fails, the test reports it, the tasks run on.
  writeFileSync(file, catalog({ verifyN: 9 }));
  const second = await running.republish();
  assert.equal(second.result, 'testFailed');
  const [failed] = await status(['acmeCo/ok/test']);
  assert.deepEqual(failed?.summary, { status: 'error', message: 'Test failed' });
  assert.equal(failed?.controller_status?.passing, false);
  assert.equal(failed?.controller_status?.publications.history[0]?.id, second.pubId);
  assert.equal(failed?.controller_status?.publications.history[0]?.result?.type, 'testFailed');
  assert.match(failed?.controller_status?.alerts?.test_failed?.error ?? '', /differs at \/n: expected 9, found 2/);
  const [still] = await status(['acmeCo/ok/source']);
  assert.deepEqual(still?.summary, { status: 'ok', message: 'Capturing 1 binding' });
  assert.equal(still?.last_build_id, pubId, 'a failed publication builds nothing');

  // warning: a publication whose build is not yet running (the edited task's apply takes a while).
  writeFileSync(file, catalog({ verifyN: 2, slowApplyMs: 1500 }));
  const third = running.republish();
  const pending = await until('acmeCo/slow/source', 'the new build pending activation', (i) => i.last_build_id !== pubId);
  assert.deepEqual(pending.summary, { status: 'warning', message: 'pending data-plane activation' });
  assert.equal(pending.controller_status?.activation?.last_activated, pubId);
  const thirdResult = await third;
  assert.equal(thirdResult.result, 'success');
  // The unchanged capture kept running: it moved to the new build and its status stayed ok.
  const [touched] = await status(['acmeCo/ok/source']);
  assert.equal(touched?.last_build_id, thirdResult.pubId);
  assert.equal(touched?.controller_status?.activation?.last_activated, thirdResult.pubId);
  assert.deepEqual(touched?.summary, { status: 'ok', message: 'Capturing 1 binding' });
  const activated = await until('acmeCo/slow/source', 'the new build activated', (i) => i.controller_status?.activation?.last_activated === i.last_build_id);
  assert.deepEqual(activated.summary, { status: 'warning', message: 'waiting for task shards to be ready' });
});
