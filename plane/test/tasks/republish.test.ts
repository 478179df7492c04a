// Republication: only tasks whose built spec changed are restarted; unchanged ones keep their running
// shard and move to the new build (a touch activation, so their status stays ok); new tasks start and
// tasks removed from the catalog (or disabled) stop.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { createControlPlane } from '../../src/control/index.ts';
import { statusResponse } from '../../src/control/status.ts';
import { LocalPlane } from '../../src/plane.ts';
import { tempDir } from '../journals/helpers.ts';
import { until } from '@sluice/runtime/testing';

const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));

function capture(name: string, opts: { count: number; disabled?: boolean }): string {
  return `
  ${name}:
    interval: 1h${opts.disabled ? '\n    shards: {disable: true}' : ''}
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, count: ${opts.count}}
    bindings:
      - resource: {name: ${name.split('/')[1]}}
        target: acmeCo/greetings`;
}

function catalog(captures: string[]): string {
  return `
collections:
  acmeCo/greetings:
    schema:
      type: object
      properties: {id: {type: string}, greeting: {type: string}, n: {type: integer}}
      required: [id, greeting, n]
    key: [/id]
captures:${captures.join('')}
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
`;
}


test('republish: unchanged tasks keep running on the new build; changed ones restart; new ones start; removed and disabled ones stop', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'flow.yaml');
  const control = createControlPlane({ dataDir: join(dir, 'data') });
  const plane = new LocalPlane({ catalogFile: file, dataDir: join(dir, 'data'), recorder: control.recorder });
  t.after(async () => { await plane.close(); control.close(); });
  const docs = () => plane.store.journals('acmeCo/greetings').reduce((n, j) => n + plane.store.read(j.name, 0, 1000).length, 0);
  const status = (name: string) => statusResponse(control.store, control.store.get(name)!, { short: false }) as { summary: { status: string; message: string }; last_build_id: string; controller_next_run: string | null };

  writeFileSync(file, catalog([capture('acmeCo/same', { count: 1 }), capture('acmeCo/edited', { count: 1 }), capture('acmeCo/removed', { count: 1 }), capture('acmeCo/paused', { count: 1 })]));
  const first = await plane.publish();
  assert.equal(first.result, 'success', first.errors.join('\n'));
  assert.deepEqual(first.started.sort(), ['acmeCo/edited', 'acmeCo/paused', 'acmeCo/removed', 'acmeCo/same', 'acmeCo/to-sqlite']);
  assert.deepEqual(first.unchanged, []);
  await until('each capture ran once and reported its status', () => docs() === 4 && status('acmeCo/same').summary.message === 'Capturing 1 binding');
  const before = new Map(plane.runners);

  writeFileSync(file, catalog([capture('acmeCo/same', { count: 1 }), capture('acmeCo/edited', { count: 2 }), capture('acmeCo/added', { count: 1 }), capture('acmeCo/paused', { count: 1, disabled: true })]));
  const second = await plane.publish();
  assert.equal(second.result, 'success', second.errors.join('\n'));
  assert.deepEqual(second.started.sort(), ['acmeCo/added', 'acmeCo/edited']);
  assert.deepEqual(second.unchanged.sort(), ['acmeCo/same', 'acmeCo/to-sqlite']);
  assert.deepEqual(second.applied.map((a) => a.name).sort(), ['acmeCo/added', 'acmeCo/edited'], 'apply runs only for changed tasks');

  // Unchanged: the very same runner, still on its first session, now on the new build.
  for (const name of ['acmeCo/same', 'acmeCo/to-sqlite']) {
    const runner = plane.runners.get(name)!;
    assert.equal(runner, before.get(name), name);
    assert.equal(runner.sessions, 1, name);
    assert.equal(runner.buildId, second.pubId, name);
  }
  assert.notEqual(plane.runners.get('acmeCo/edited'), before.get('acmeCo/edited'));
  assert.ok(before.get('acmeCo/edited')!.stopped);
  for (const name of ['acmeCo/removed', 'acmeCo/paused']) {
    assert.equal(plane.runners.has(name), false, name);
    assert.ok(before.get(name)!.stopped, name);
  }
  assert.deepEqual([...plane.runners.keys()].sort(), ['acmeCo/added', 'acmeCo/edited', 'acmeCo/same', 'acmeCo/to-sqlite']);

  // The touch activation keeps the unchanged capture's status ok under the new build: its connector's
  // status is carried over, since the shard was not restarted.
  const same = status('acmeCo/same');
  assert.equal(same.last_build_id, second.pubId);
  assert.ok(same.controller_next_run !== null && Date.parse(same.controller_next_run) > Date.now() + 3500_000, 'the next scheduled run is kept');
  assert.deepEqual(same.summary, { status: 'ok', message: 'Capturing 1 binding' });
  assert.deepEqual(status('acmeCo/paused').summary, { status: 'taskDisabled', message: 'Task shards are disabled' });
  // The edited capture resumes from its state (2 more documents); the added one captures 1; `same` did not run again.
  await until('the restarted and new captures committed', () => docs() === 7);
  assert.deepEqual(plane.store.getState('capture/acmeCo/same/state'), { bindingStateV1: { same: { next: 1 } } });
  assert.deepEqual(plane.store.getState('capture/acmeCo/edited/state'), { bindingStateV1: { edited: { next: 3 } } });

  // Publishing the same catalog again restarts nothing.
  const third = await plane.publish();
  assert.deepEqual(third.started, []);
  assert.deepEqual(third.unchanged.sort(), ['acmeCo/added', 'acmeCo/edited', 'acmeCo/same', 'acmeCo/to-sqlite']);
});
