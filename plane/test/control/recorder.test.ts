import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createControlPlane, IdGenerator, idTime, normalizeId, upgradeImage, CURRENT_CONNECTOR_VERSIONS } from '../../src/control/index.ts';
import type { PublishedSpec } from '../../src/control/index.ts';
import { startControlPlaneServer } from '../../src/control/testing.ts';

const dataDir = () => mkdtempSync(join(tmpdir(), 'sluice-recorder-'));
const coll: PublishedSpec = { catalogName: 'acme/orders', specType: 'collection', spec: { key: ['/id'] }, connected: ['acme/source', 'acme/to-db'], disabled: false };
const cap = (config: object = { url: 'http://x' }, disabled = false): PublishedSpec => ({
  catalogName: 'acme/source', specType: 'capture', spec: { endpoint: { kind: 'connector', image: 'ghcr.io/estuary/source-http-file:dev', config } as never }, connected: ['acme/orders'], disabled,
});
const mat = (image: string, table = 't'): PublishedSpec => ({
  catalogName: 'acme/to-db', specType: 'materialization', spec: { endpoint: { kind: 'connector', image, config: {} }, bindings: [{ table }] } as never, connected: ['acme/orders'], disabled: false,
});
const testSpec: PublishedSpec = { catalogName: 'acme/test', specType: 'test', spec: { steps: [] }, connected: ['acme/orders'], disabled: false };

test('bad input: a malformed Id is refused', () => {
  assert.throws(() => normalizeId('xyz'), /invalid Id "xyz": expected 16 hex characters/);
});

test('Ids are 16 hex chars, time-ordered, strictly increasing within a millisecond and after restarts', () => {
  const g = new IdGenerator();
  const t = Date.parse('2025-06-01T10:00:00Z');
  const a = g.next(t); const b = g.next(t); const c = g.next(t - 1000);
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.ok(a < b && b < c, `${a} < ${b} < ${c}`);
  assert.equal(idTime(a).toISOString(), '2025-06-01T10:00:00.000Z');
  const seeded = new IdGenerator(c);
  assert.ok(seeded.next(t) > c);
  assert.equal(normalizeId('0e:8f:3a:1b:2c:00:04:00'), '0e8f3a1b2c000400');
});

test('publications assign last_pub_id to modified specs and last_build_id to all; touches keep last_pub_id; history condenses', async () => {
  const cp = await startControlPlaneServer();
  const r = cp.controlPlane.recorder;
  const p1 = r.publish({ specs: [coll, cap()], detail: 'load flow.yaml', result: 'success' });
  assert.equal(p1.buildIds.get('acme/source'), p1.pubId);
  const p2 = r.publish({ specs: [coll, cap({ url: 'http://y' })], detail: 'reload flow.yaml', result: 'success' });
  const p3 = r.publish({ specs: [coll, cap({ url: 'http://y' })], detail: 'reload flow.yaml', result: 'success' });
  const p4 = r.publish({ specs: [coll, cap({ url: 'http://y' })], detail: 'reload flow.yaml', result: 'success' });
  assert.ok(p1.pubId < p2.pubId && p2.pubId < p3.pubId && p3.pubId < p4.pubId);
  const [c, s] = await cp.status(['acme/orders', 'acme/source']);
  assert.equal(c!.last_pub_id, p1.pubId, 'the collection never changed');
  assert.equal(c!.last_build_id, p4.pubId);
  assert.equal(s!.last_pub_id, p2.pubId, 'the capture changed in p2 only');
  assert.equal(s!.last_build_id, p4.pubId);
  const history = (s!.controller_status as { publications: { history: object[] } }).publications.history;
  assert.deepEqual(history.map((h) => ({ ...h, created: undefined, completed: undefined })), [
    { id: p4.pubId, detail: 'reload flow.yaml', result: { type: 'success' }, is_touch: true, count: 2, created: undefined, completed: undefined },
    { id: p2.pubId, detail: 'reload flow.yaml', result: { type: 'success' }, created: undefined, completed: undefined },
    { id: p1.pubId, detail: 'load flow.yaml', result: { type: 'success' }, created: undefined, completed: undefined },
  ]);
  // A failed publication changes nothing live, and says why in the history.
  r.publish({ specs: [coll, cap({ url: 'http://z' })], detail: 'reload flow.yaml', result: 'buildFailed', errors: [{ detail: 'bad config', catalog_name: 'acme/source' }] });
  const [s2] = await cp.status(['acme/source']);
  assert.equal(s2!.last_build_id, p4.pubId);
  const h2 = (s2!.controller_status as { publications: { history: { result: object; errors?: object[] }[] } }).publications.history;
  assert.deepEqual(h2[0]!.result, { type: 'buildFailed' });
  assert.deepEqual(h2[0]!.errors, [{ detail: 'bad config', catalog_name: 'acme/source' }]);
  // A spec left out of a (whole-catalog) publication is deleted.
  r.publish({ specs: [coll], detail: 'reload', result: 'success' });
  await assert.rejects(cp.status(['acme/source']), /status 404: \{"status":404,"error":"no live specs found for names: \[acme\/source\]"\}/);
  await cp.close();
});

test('a materialize-sqlserver materialization on an older tag is upgraded when edited, and the publication says so', () => {
  assert.equal(CURRENT_CONNECTOR_VERSIONS['materialize-sqlserver'], readFileSync(new URL('../../../connectors/materialize-sqlserver/VERSION', import.meta.url), 'utf8').trim());
  assert.deepEqual(upgradeImage('ghcr.io/estuary/materialize-sqlserver:v1'), { connector: 'materialize-sqlserver', image: 'ghcr.io/estuary/materialize-sqlserver:v2', from: 'v1', to: 'v2' });
  assert.equal(upgradeImage('ghcr.io/estuary/materialize-sqlserver:v2'), null);
  assert.equal(upgradeImage('ghcr.io/estuary/materialize-sqlserver:dev'), null);
  assert.equal(upgradeImage('ghcr.io/estuary/materialize-postgres:v1'), null);

  const cp = createControlPlane({ dataDir: dataDir() });
  const r = cp.recorder;
  const created = r.publish({ specs: [coll, mat('ghcr.io/estuary/materialize-sqlserver:v1')], detail: 'load', result: 'success' });
  assert.equal(created.upgradedImages?.size, 0, 'creating on v1 is not an edit');
  const touched = r.publish({ specs: [coll, mat('ghcr.io/estuary/materialize-sqlserver:v1')], detail: 'load', result: 'success' });
  assert.equal(touched.upgradedImages?.size, 0);
  const edited = r.publish({ specs: [coll, mat('ghcr.io/estuary/materialize-sqlserver:v1', 't2')], detail: 'reload', result: 'success' });
  assert.deepEqual(edited.upgrades, [{ catalogName: 'acme/to-db', from: 'v1', to: 'v2' }]);
  assert.equal(edited.upgradedImages?.get('acme/to-db'), 'ghcr.io/estuary/materialize-sqlserver:v2');
  const row = cp.store.get('acme/to-db')!;
  assert.equal(row.history[0]!.detail, 'reload; upgraded materialize-sqlserver from v1 to v2');
  assert.match(cp.store.publications().at(-1)!.detail, /upgraded acme\/to-db from v1 to v2/);
  // Later touches keep running the upgraded image.
  const again = r.publish({ specs: [coll, mat('ghcr.io/estuary/materialize-sqlserver:v1', 't2')], detail: 'reload', result: 'success' });
  assert.equal(again.upgradedImages?.get('acme/to-db'), 'ghcr.io/estuary/materialize-sqlserver:v2');
  assert.deepEqual(again.upgrades, []);
  cp.close();
});

test('summary cases driven through the recorder: pending, ok, warning, error, taskDisabled, tests', async () => {
  const cp = await startControlPlaneServer();
  const r = cp.controlPlane.recorder;
  const { pubId } = r.publish({ specs: [coll, cap(), testSpec], detail: 'load', result: 'success' });
  const summary = async (name: string) => (await cp.status([name]))[0]!.summary;

  assert.deepEqual(await summary('acme/orders'), { status: 'ok', message: 'Ok' }, 'collections are activated by the publication');
  assert.deepEqual(await summary('acme/source'), { status: 'warning', message: 'pending data-plane activation' });
  assert.deepEqual(await summary('acme/test'), { status: 'warning', message: 'pending controller initialization' });

  const t0 = Date.now();
  r.activated('acme/source', pubId, new Date(t0));
  assert.deepEqual(await summary('acme/source'), { status: 'ok', message: 'Ok' });
  r.shardStatus('acme/source', 'Pending', new Date(t0 + 1));
  assert.deepEqual(await summary('acme/source'), { status: 'warning', message: 'waiting for task shards to be ready' });
  for (let i = 0; i < 20; i++) r.shardStatus('acme/source', 'Pending', new Date(t0 + 2 + i));
  assert.deepEqual(await summary('acme/source'), { status: 'error', message: 'task shards have been pending for a long time' });
  r.shardStatus('acme/source', 'Ok', new Date(t0 + 30));
  // A stale connector status (another build) is a warning and is not reported.
  r.connectorStatus('acme/source', { message: 'old', ts: new Date(t0 + 31), buildId: '0000000000000001' });
  assert.deepEqual(await summary('acme/source'), { status: 'warning', message: 'waiting on connector status' });
  r.connectorStatus('acme/source', { message: 'capturing orders.csv', fields: { rows: 3 }, ts: new Date(t0 + 32), buildId: pubId });
  const [ok] = await cp.status(['acme/source']);
  assert.deepEqual(ok!.summary, { status: 'ok', message: 'capturing orders.csv' });
  assert.deepEqual(ok!.connector_status, { shard: { name: 'acme/source', keyBegin: '00000000', rClockBegin: '00000000', build: pubId }, ts: new Date(t0 + 32).toISOString(), message: 'capturing orders.csv', fields: { rows: 3 } });

  r.shardFailure('acme/source', { message: 'connector exited with code 1: HEAD http://x: 404', fields: { error: 'HTTP 404' }, ts: new Date('2030-01-02T03:04:05Z'), nextRetry: new Date('2030-01-02T03:05:05Z') });
  const [failed] = await cp.status(['acme/source']);
  assert.deepEqual(failed!.summary, { status: 'error', message: 'task shard failed at 2030-01-02 03:04:05 UTC, next retry at 2030-01-02 03:05:05 UTC' });
  const act = (failed!.controller_status as { activation: Record<string, unknown>; alerts: Record<string, { state: string; count: number }> });
  assert.equal(act.activation.recent_failure_count, 1);
  assert.equal((act.activation.last_failure as { shard: { build: string } }).shard.build, pubId);
  assert.equal(act.alerts.shard_failed!.state, 'firing');
  r.shardStatus('acme/source', 'Failed', new Date(t0 + 40));
  r.activated('acme/source', pubId, new Date(t0 + 50)); // retried: next_retry handled
  assert.deepEqual(await summary('acme/source'), { status: 'error', message: 'one or more task shards are failed' });
  r.shardStatus('acme/source', 'Ok', new Date(t0 + 60));
  const [recovered] = await cp.status(['acme/source']);
  assert.equal((recovered!.controller_status as { alerts: Record<string, { state: string }> }).alerts.shard_failed!.state, 'resolved');

  // A controller error wins over everything; a successful run clears it.
  r.controllerRun('acme/source', { error: 'publication failed: x', nextRun: new Date('2030-01-01T00:00:00Z'), at: new Date() });
  r.controllerRun('acme/source', { error: 'publication failed: y', nextRun: null, at: new Date() });
  const [ce] = await cp.status(['acme/source']);
  assert.deepEqual(ce!.summary, { status: 'error', message: 'publication failed: y' });
  assert.equal(ce!.controller_error, 'publication failed: y');
  assert.equal(ce!.controller_failures, 2);
  r.controllerRun('acme/source', { error: null, nextRun: null, at: new Date() });
  const [cleared] = await cp.status(['acme/source']);
  assert.equal(cleared!.controller_error, undefined);
  assert.equal(cleared!.controller_failures, undefined);

  // Tests.
  r.testResult('acme/test', { passing: false, error: 'verify acme/orders: document 0 differs at /total', at: new Date() });
  const [tf] = await cp.status(['acme/test']);
  assert.deepEqual(tf!.summary, { status: 'error', message: 'Test failed' });
  assert.equal((tf!.controller_status as { alerts: { test_failed: { error: string } } }).alerts.test_failed.error, 'verify acme/orders: document 0 differs at /total');
  r.testResult('acme/test', { passing: true, at: new Date() });
  assert.deepEqual(await summary('acme/test'), { status: 'ok', message: 'Test passed' });

  // Disabled task: activated by the publication (nothing to start), summarised as taskDisabled.
  const p2 = r.publish({ specs: [coll, cap({ url: 'http://x' }, true), testSpec], detail: 'disable', result: 'success' });
  const [dis] = await cp.status(['acme/source']);
  assert.deepEqual(dis!.summary, { status: 'taskDisabled', message: 'Task shards are disabled' });
  assert.equal(dis!.disabled, true);
  assert.equal(dis!.last_build_id, p2.pubId);
  // A new build resets recent_failure_count.
  assert.equal((dis!.controller_status as { activation: Record<string, unknown> }).activation.recent_failure_count, undefined);
  await cp.close();
});

test('state survives a restart; short and connected', async () => {
  const dir = dataDir();
  const first = await startControlPlaneServer({ dataDir: dir });
  const { pubId } = first.controlPlane.recorder.publish({ specs: [coll, cap(), mat('x/materialize-sqlite:v1')], detail: 'load', result: 'success' });
  first.controlPlane.recorder.activated('acme/source', pubId, new Date());
  first.controlPlane.recorder.taskMetrics('acme/source', { binding: 'acme/orders', docsWritten: 3, bytesWritten: 300, ts: new Date() });
  await first.close();
  const second = await startControlPlaneServer({ dataDir: dir });
  const [s] = await second.status(['acme/source'], { short: true });
  assert.equal(s!.last_build_id, pubId);
  assert.equal(s!.controller_status, undefined);
  assert.equal(s!.connector_status, undefined);
  assert.deepEqual(s!.summary, { status: 'ok', message: 'Ok' });
  const connected = await second.status(['acme/source'], { connected: true });
  assert.deepEqual(connected.map((x) => x.catalog_name).sort(), ['acme/orders', 'acme/source']);
  const fromColl = await second.status(['acme/orders'], { connected: true });
  assert.deepEqual(fromColl.map((x) => x.catalog_name).sort(), ['acme/orders', 'acme/source', 'acme/to-db']);
  const next = second.controlPlane.recorder.publish({ specs: [coll, cap(), mat('x/materialize-sqlite:v1')], detail: 'load', result: 'success' });
  assert.ok(next.pubId > pubId, 'ids keep increasing after a restart');
  await second.close();
});
