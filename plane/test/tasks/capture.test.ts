import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { JournalStore } from '../../src/journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { captureStateKey, runCaptureSession } from '../../src/tasks/capture.ts';
import { Launcher } from '../../src/tasks/launcher.ts';
import type { EndpointRef } from '../../src/catalog/types.ts';
import type { CaptureSpec } from '@sluice/runtime';
import { collection, tempDir } from '../journals/helpers.ts';

const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));
const endpoint = (config: Record<string, string | number>): EndpointRef => ({ kind: 'local', command: [process.execPath, TEST_CAPTURE], config: { apiKey: 'k', ...config }, env: {} });

function spec(maxN?: number, config: Record<string, string | number> = { count: 4 }): CaptureSpec {
  const c = collection('acmeCo/greetings', { id: { type: 'string' }, greeting: { type: 'string' }, n: maxN === undefined ? { type: 'integer' } : { type: 'integer', maximum: maxN } }, ['/id']);
  return {
    name: 'acmeCo/source-test', connectorType: 'LOCAL', config: { apiKey: 'k', ...config }, intervalSeconds: 60,
    bindings: [
      { resourceConfig: { name: 'alpha' }, resourcePath: ['alpha'], stateKey: 'alpha', collection: c },
      { resourceConfig: { name: 'beta' }, resourcePath: ['beta'], stateKey: 'beta', collection: c },
    ],
  };
}

test('capture: documents and merge-patched state commit together per checkpoint; the next session resumes from the state', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const launcher = new Launcher();
  const commits: number[] = [];
  const run = () => runCaptureSession({
    name: 'acmeCo/source-test', spec: spec(), version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(),
    session: launcher.capture(endpoint({ count: 4 }), 'acmeCo/source-test'), signal: new AbortController().signal,
    onCommit: (info) => commits.push(info.perBinding.reduce((a, b) => a + b.docs, 0)),
  });
  await run();
  assert.deepEqual(commits, [4, 4]);
  assert.deepEqual(store.getState(captureStateKey('acmeCo/source-test')), { bindingStateV1: { alpha: { next: 4 }, beta: { next: 4 } } });
  await run();
  const ids = store.read('acmeCo/greetings/pivot=00', 0, 100).map((d) => (JSON.parse(d.json) as { id: string }).id);
  assert.deepEqual(ids, ['alpha-0', 'alpha-1', 'alpha-2', 'alpha-3', 'beta-0', 'beta-1', 'beta-2', 'beta-3', 'alpha-4', 'alpha-5', 'alpha-6', 'alpha-7', 'beta-4', 'beta-5', 'beta-6', 'beta-7']);
  assert.deepEqual(store.getState(captureStateKey('acmeCo/source-test')), { bindingStateV1: { alpha: { next: 8 }, beta: { next: 8 } } });
});

test('capture: a document that fails validation fails the task naming collection, offset and schema error; its checkpoint is not committed', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const launcher = new Launcher();
  await assert.rejects(runCaptureSession({
    name: 'acmeCo/source-test', spec: spec(5), version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(),
    session: launcher.capture(endpoint({}), 'acmeCo/source-test'), signal: new AbortController().signal,
    initialState: { bindingStateV1: { alpha: { next: 3 } } },
  }), (err: Error) => {
    // alpha-3, alpha-4, alpha-5 are fine, alpha-6 is not: it would have been at offset of 3 documents.
    const docBytes = store.read('acmeCo/greetings/pivot=00', 0).length;
    assert.equal(docBytes, 0);
    assert.match(err.message, /^capture "acmeCo\/source-test": document at offset \d+ of journal "acmeCo\/greetings\/pivot=00" \(collection "acmeCo\/greetings", binding 0\) failed validation: \/n: must be <= 5$/);
    const offset = Number(/offset (\d+)/.exec(err.message)?.[1]);
    assert.ok(offset > 0, 'the offset counts the valid documents before it in the transaction');
    return true;
  });
  assert.equal(store.head('acmeCo/greetings/pivot=00'), 0);
  assert.equal(store.getState(captureStateKey('acmeCo/source-test')), undefined);
});

test('capture: a failing connector rejects with its last error line; abort kills a running session', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const launcher = new Launcher();
  await assert.rejects(runCaptureSession({
    name: 'acmeCo/source-test', spec: spec(undefined, { failWith: 'credentials expired' }), version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(),
    session: launcher.capture(endpoint({}), 'acmeCo/source-test'), signal: new AbortController().signal,
  }), /acmeCo\/source-test: connector failed: credentials expired/);
  const ac = new AbortController();
  const slow = runCaptureSession({
    name: 'acmeCo/source-test', spec: spec(undefined, { count: 1000, delayMs: 50 }), version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(),
    session: launcher.capture(endpoint({}), 'acmeCo/source-test'), signal: ac.signal,
    onOpened: () => ac.abort(),
  });
  await slow;
  assert.equal(store.head('acmeCo/greetings/pivot=00'), 0);
});
