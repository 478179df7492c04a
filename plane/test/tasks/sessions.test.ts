// Capture and materialization sessions against the runtime's test connectors (real processes):
// explicit acknowledgements, connector state through acknowledged/startedCommit, failures, restarts.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { CaptureSpec, MaterializationSpec } from '@sluice/runtime';
import { ingestDocuments } from '../../src/ingest/ingest.ts';
import { JournalStore } from '../../src/journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { CollectionWriters } from '../../src/journals/writer.ts';
import { LocalPlane } from '../../src/plane.ts';
import { captureStateKey, runCaptureSession } from '../../src/tasks/capture.ts';
import { Launcher } from '../../src/tasks/launcher.ts';
import { checkpointKey, connectorStateKey, runMaterializeSession } from '../../src/tasks/materialize.ts';
import { MemoryRecorder } from '../../src/tasks/memory-recorder.ts';
import type { EndpointRef } from '../../src/catalog/types.ts';
import { collection, tempDir } from '../journals/helpers.ts';
import { until } from '@sluice/runtime/testing';

const BIN = (name: string) => fileURLToPath(new URL(`../../../runtime/bin/${name}.js`, import.meta.url));
const greetings = collection('acmeCo/greetings', { id: { type: 'string' }, greeting: { type: 'string' }, n: { type: 'integer' } }, ['/id']);

test('capture: with explicit acknowledgements the runtime acknowledges each committed checkpoint', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const endpoint: EndpointRef = { kind: 'local', command: [process.execPath, BIN('sluice-test-capture')], config: {}, env: { TEST_EXPLICIT_ACKS: '1' } };
  const spec: CaptureSpec = {
    name: 'acmeCo/acks', config: { apiKey: 'k', count: 2 }, intervalSeconds: 60,
    bindings: ['alpha', 'beta'].map((name) => ({ resourceConfig: { name }, resourcePath: [name], stateKey: name, collection: greetings })),
  };
  const logs: string[] = [];
  await runCaptureSession({
    name: 'acmeCo/acks', spec, version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(), signal: new AbortController().signal,
    session: new Launcher().capture(endpoint, 'acmeCo/acks', { onLog: (e) => logs.push(e.message) }),
  });
  // The connector waits for an acknowledgement after each checkpoint before the next binding.
  assert.equal(logs.filter((m) => m === 'checkpoint acknowledged').length, 2);
  assert.equal(store.read('acmeCo/greetings/pivot=00', 0).length, 4);
  assert.deepEqual(store.getState(captureStateKey('acmeCo/acks')), { bindingStateV1: { alpha: { next: 2 }, beta: { next: 2 } } });
});

function materialization(failOn?: string): { spec: MaterializationSpec; endpoint: EndpointRef } {
  const config = { prefix: 't_', ...(failOn ? { failOn } : {}) };
  return {
    endpoint: { kind: 'local', command: [process.execPath, BIN('sluice-test-materialize')], config, env: {} },
    spec: {
      name: 'acmeCo/mat', config,
      bindings: [{ resourceConfig: { table: 'greetings' }, resourcePath: ['t_greetings'], stateKey: 't_greetings', journalReadSuffix: 'materialize/acmeCo/mat/t_greetings', collection: greetings, fieldSelection: { keys: ['id'], values: ['n'], document: 'flow_document' } }],
    },
  };
}

test('materialize: connector state from startedCommit and acknowledged is kept; the checkpoint advances per transaction', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
  writers.setCollections([greetings]);
  const { spec, endpoint } = materialization();
  let pending = [[{ id: 'a', greeting: 'hi', n: 1 }], [{ id: 'a', greeting: 'yo', n: 2 }, { id: 'b', greeting: 'hi', n: 3 }]];
  const states: unknown[] = [];
  await runMaterializeSession({
    name: 'acmeCo/mat', spec, version: 'v1', store, signal: new AbortController().signal,
    session: new Launcher().materialize(endpoint, 'acmeCo/mat'),
    onState: (s) => states.push(s),
    nextBatch: async () => {
      const next = pending[0];
      if (!next) return false;
      pending = pending.slice(1);
      ingestDocuments(store, writers, { 'acmeCo/greetings': next });
      return true;
    },
  });
  assert.deepEqual(states, [
    { updated: { lastCommit: 1 }, mergePatch: true }, { updated: { committed: 1 }, mergePatch: true },
    { updated: { lastCommit: 2 }, mergePatch: true }, { updated: { committed: 2 }, mergePatch: true },
  ]);
  assert.deepEqual(store.getState(connectorStateKey('acmeCo/mat')), { lastCommit: 2, committed: 2 });
  const cp = store.getState(checkpointKey('acmeCo/mat')) as { sources: Record<string, { readThrough: string }> };
  assert.deepEqual(cp.sources, { 'acmeCo/greetings/pivot=00;materialize/acmeCo/mat/t_greetings': { readThrough: String(store.head('acmeCo/greetings/pivot=00')) } });
});

test('materialize: a connector failing at commit fails the session and the checkpoint stays put', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
  writers.setCollections([greetings]);
  ingestDocuments(store, writers, { 'acmeCo/greetings': [{ id: 'a', greeting: 'hi', n: 1 }] });
  const { spec, endpoint } = materialization('commit');
  await assert.rejects(runMaterializeSession({
    name: 'acmeCo/mat', spec, version: 'v1', store, signal: new AbortController().signal, untilCaughtUp: true,
    session: new Launcher().materialize(endpoint, 'acmeCo/mat'),
  }), /^ConnectorExitError: acmeCo\/mat: connector failed: the test materialization was asked to fail on commit/);
  assert.equal(store.getState(checkpointKey('acmeCo/mat')), undefined);
});

test('plane: a capture restarts every intervalSeconds and continues from its state', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  acmeCo/greetings:
    schema: {type: object, properties: {id: {type: string}, greeting: {type: string}, n: {type: integer}}, required: [id]}
    key: [/id]
captures:
  acmeCo/ticker:
    interval: 200ms
    endpoint:
      local: {command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(BIN('sluice-test-capture'))}], config: {apiKey: k, count: 1}}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
`);
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), recorder });
  t.after(() => plane.close());
  assert.equal((await plane.publish()).result, 'success');
  await until('three documents in acmeCo/greetings', () => plane.store.read('acmeCo/greetings/pivot=00', 0).length >= 3);
  const ids = plane.store.read('acmeCo/greetings/pivot=00', 0).map((d) => (JSON.parse(d.json) as { id: string }).id);
  assert.deepEqual(ids.slice(0, 3), ['alpha-0', 'alpha-1', 'alpha-2']);
  assert.ok(plane.runners.get('acmeCo/ticker')!.sessions >= 3);
  assert.ok(recorder.of('controllerRun').some((e) => e.name === 'acmeCo/ticker' && e.nextRun instanceof Date));
  assert.equal(recorder.of('shardFailure').length, 0);
});
