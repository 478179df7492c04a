// Exactly once: kill the real connector at every protocol step and restart it from the checkpoint it
// returns in `opened`; and a zombie instance whose commit must fail and change nothing. Each runs twice: as a
// session this small runs (every checkpoint on the main thread) and with WAL checkpoints on their own thread
// from the first commit (a kill then also lands during a checkpoint of that thread).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { JsonObject, MaterializationSpec } from '@sluice/runtime';
import { binding, materialization, proj } from './helpers/fixtures.ts';
import { ConnectorProcess, Runtime, checkpointOf, field, readThroughOf, unary } from './helpers/driver.ts';
import type { BindingModel, Txn } from './helpers/driver.ts';
import type { CollectionSpec } from '@sluice/runtime';
import { CHECKPOINT_THREAD_ENV } from '../src/connector.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-eo-'));
/** The two ways checkpoints run (see the head of this file). */
const MODES: { name: string; env: Record<string, string> }[] = [
  { name: 'checkpoints on the main thread', env: { [CHECKPOINT_THREAD_ENV]: 'off' } },
  { name: 'checkpoints on their thread', env: { [CHECKPOINT_THREAD_ENV]: '0' } },
];
test.after(() => rmSync(dir, { recursive: true, force: true }));

const counts: CollectionSpec = {
  name: 'acmeCo/counts',
  key: ['/k'],
  projections: [
    proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
    proj('k', '/k', { types: ['string'], exists: 'MUST' }, { isPrimaryKey: true }),
    proj('count', '/count', { types: ['integer'], exists: 'MUST' }),
  ],
};

function spec(path: string, name = 'acmeCo/mat'): MaterializationSpec {
  return materialization(path, [
    binding('counts', counts, { keys: ['k'], values: ['count'], document: 'flow_document' }),
    binding('log', counts, { keys: ['k'], values: ['count'] }, { delta: true }),
  ], {}, name);
}

const models: BindingModel[] = [
  { keys: [field('/k')], values: [field('/count')], delta: false, document: true },
  { keys: [field('/k')], values: [field('/count')], delta: true, document: false },
];
/** A summing reduction (through loads): a lost or duplicated commit shows in the sums. */
const sum = (b: number, prev: JsonObject | undefined, next: JsonObject): JsonObject =>
  (b === 0 && prev !== undefined ? { k: next.k!, count: Number(prev.count) + Number(next.count) } : next);

const txns: Txn[] = [
  { docs: [{ binding: 0, doc: { k: 'a', count: 1 } }, { binding: 0, doc: { k: 'b', count: 10 } }, { binding: 1, doc: { k: 'a', count: 1 } }] },
  { docs: [] },
  { docs: [{ binding: 0, doc: { k: 'a', count: 2 } }, { binding: 0, doc: { k: 'c', count: 100 } }, { binding: 1, doc: { k: 'b', count: 2 } }, { binding: 1, doc: { k: 'c', count: 3 } }] },
  { docs: [{ binding: 0, doc: { k: 'b', count: 20 } }, { binding: 0, doc: { k: 'a', count: 4 } }, { binding: 1, doc: { k: 'a', count: 4 } }] },
];
const EXPECTED_COUNTS = [{ k: 'a', count: 7 }, { k: 'b', count: 30 }, { k: 'c', count: 100 }];
const EXPECTED_LOG = ['a=1', 'a=4', 'b=2', 'c=3'];

function tableState(path: string): { counts: unknown[]; log: string[]; docs: unknown[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return {
      counts: db.prepare('SELECT k, count FROM counts ORDER BY k').all().map((r) => ({ ...r })),
      log: (db.prepare('SELECT k, count FROM log').all() as { k: string; count: number }[]).map((r) => `${r.k}=${r.count}`).sort(),
      docs: db.prepare('SELECT flow_document FROM counts ORDER BY k').all().map((r) => JSON.parse(String((r as { flow_document: string }).flow_document))),
    };
  } finally { db.close(); }
}

/** Run every transaction, killing the process at global step `killAt` (0 = never); restart from `opened`. */
async function runWithKill(path: string, killAt: number, env: Record<string, string>): Promise<{ steps: number; restarts: number }> {
  const rt = new Runtime(models, sum);
  let step = 0;
  let restarts = 0;
  const onStep = () => ++step === killAt;
  while (true) {
    const p = new ConnectorProcess(env);
    if (onStep()) { await p.kill(); restarts++; continue; }
    const opened = await rt.open(p, spec(path));
    const from = readThroughOf(opened.runtimeCheckpoint as JsonObject | undefined);
    let killed = false;
    for (let i = from; i < txns.length; i++) {
      if (await rt.txn(p, txns[i]!, checkpointOf(i + 1), onStep) === 'killed') { killed = true; break; }
    }
    if (killed) { restarts++; continue; }
    p.send({ acknowledge: {} });
    await p.expect('acknowledged');
    assert.equal(await p.end(), 0, p.stderr);
    return { steps: step, restarts };
  }
}

// Two real connector processes per kill point, 20+ kill points: under a loaded machine (the suite beside two busy
// loops) this took over the suite's 240 s per-test safety net. The deadline here only catches a hang.
for (const mode of MODES) test(`crash at every protocol step: the final tables equal the expected reduction exactly (${mode.name})`, { timeout: 15 * 60_000 }, async () => {
  const tag = mode.env[CHECKPOINT_THREAD_ENV];
  const template = join(dir, `crash-${tag}-template.db`);
  await unary({ apply: { materialization: spec(template) as unknown as JsonObject, version: 'v1' } });
  assert.equal(existsSync(`${template}-wal`), false, 'the applied database was checkpointed on close');
  const base = join(dir, `crash-${tag}-base.db`);
  copyFileSync(template, base);
  const clean = await runWithKill(base, 0, mode.env);
  assert.deepEqual(tableState(base).counts, EXPECTED_COUNTS);
  assert.deepEqual(tableState(base).log, EXPECTED_LOG);
  assert.ok(clean.steps > 20, `the fixture has ${clean.steps} steps`);
  for (let killAt = 1; killAt <= clean.steps; killAt++) {
    const path = join(dir, `crash-${tag}-${killAt}.db`);
    copyFileSync(template, path);
    const r = await runWithKill(path, killAt, mode.env);
    assert.equal(r.restarts, 1, `killed once at step ${killAt}`);
    const state = tableState(path);
    assert.deepEqual(state.counts, EXPECTED_COUNTS, `counts after a kill at step ${killAt}`);
    assert.deepEqual(state.log, EXPECTED_LOG, `delta log after a kill at step ${killAt}`);
    assert.deepEqual(state.docs, EXPECTED_COUNTS, `documents after a kill at step ${killAt}`);
    rmSync(path, { force: true });
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
  }
});

for (const mode of MODES) test(`zombie: an instance fenced off by a newer one fails its commit and changes nothing (${mode.name})`, async () => {
  const path = join(dir, `zombie-${mode.env[CHECKPOINT_THREAD_ENV]}.db`);
  await unary({ apply: { materialization: spec(path) as unknown as JsonObject, version: 'v1' } });
  const rt = new Runtime(models, sum);
  const zombie = new ConnectorProcess(mode.env);
  await rt.open(zombie, spec(path));
  assert.equal(await rt.txn(zombie, txns[0]!, checkpointOf(1)), 'committed');

  const successor = new ConnectorProcess(mode.env);
  const opened = await rt.open(successor, spec(path));
  assert.deepEqual(opened.runtimeCheckpoint, checkpointOf(1));
  const before = tableState(path);

  // The zombie tries its next transaction: its commit is refused and the process fails.
  await assert.rejects(rt.txn(zombie, txns[2]!, checkpointOf(3)), /exited \(1\)/);
  assert.match(zombie.lastError(), /fenced off by another/);
  assert.deepEqual(tableState(path), before, 'the zombie changed nothing');

  // The successor carries on from the committed checkpoint.
  for (let i = 1; i < txns.length; i++) assert.equal(await rt.txn(successor, txns[i]!, checkpointOf(i + 1)), 'committed');
  successor.send({ acknowledge: {} });
  await successor.expect('acknowledged');
  assert.equal(await successor.end(), 0);
  assert.deepEqual(tableState(path).counts, EXPECTED_COUNTS);
  const db = new DatabaseSync(path, { readOnly: true });
  const rows = db.prepare('SELECT materialization, key_begin, key_end, fence FROM flow_checkpoints_v1').all().map((r) => ({ ...r }));
  db.close();
  assert.deepEqual(rows, [{ materialization: 'acmeCo/mat', key_begin: 0, key_end: 4294967295, fence: 1 }]);
});

test('fence rows: a narrower key range splits from its parent and resumes from the parent checkpoint', async () => {
  const path = join(dir, 'split.db');
  await unary({ apply: { materialization: spec(path) as unknown as JsonObject, version: 'v1' } });
  const rt = new Runtime(models, sum);
  const parent = new ConnectorProcess();
  await rt.open(parent, spec(path));
  assert.equal(await rt.txn(parent, txns[0]!, checkpointOf(1)), 'committed');
  parent.send({ acknowledge: {} });
  await parent.expect('acknowledged');
  assert.equal(await parent.end(), 0);

  const child = new ConnectorProcess();
  child.send({ open: { materialization: spec(path) as unknown as JsonObject, range: { keyEnd: 2147483647, rClockEnd: 4294967295 } } });
  const opened = await child.expect('opened');
  assert.deepEqual(opened.runtimeCheckpoint, checkpointOf(1), 'the child recovers the covering parent row');
  child.send({ acknowledge: {} });
  await child.expect('acknowledged');
  assert.equal(await child.end(), 0);
  const db = new DatabaseSync(path, { readOnly: true });
  const rows = db.prepare('SELECT key_begin, key_end, fence FROM flow_checkpoints_v1 ORDER BY key_end').all().map((r) => ({ ...r }));
  db.close();
  assert.deepEqual(rows, [{ key_begin: 0, key_end: 2147483647, fence: 1 }, { key_begin: 0, key_end: 4294967295, fence: 1 }]);
});
