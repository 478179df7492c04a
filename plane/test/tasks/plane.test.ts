import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { LocalPlane } from '../../src/plane.ts';
import { MemoryRecorder } from '../../src/tasks/memory-recorder.ts';
import { tempDir } from '../journals/helpers.ts';
import { until } from '@sluice/runtime/testing';

const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));

function catalogYaml(opts: { count?: number; failWith?: string; verifyTotal?: number } = {}): string {
  return `
collections:
  acmeCo/greetings:
    schema:
      type: object
      properties:
        id: {type: string}
        greeting: {type: string}
        n: {type: integer}
      required: [id, greeting, n]
    key: [/id]
captures:
  acmeCo/source-test:
    interval: 1h
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, count: ${opts.count ?? 5}${opts.failWith ? `, failWith: ${JSON.stringify(opts.failWith)}` : ''}}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
      - resource: {name: beta}
        target: acmeCo/greetings
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
tests:
  acmeCo/test-greetings:
    - ingest: {collection: acmeCo/greetings, documents: [{id: a, greeting: hi, n: 1}, {id: a, greeting: hi, n: ${opts.verifyTotal ?? 2}}, {id: b, greeting: yo, n: 3}]}
    - verify: {collection: acmeCo/greetings, documents: [{id: a, n: 2}, {id: b}]}
`;
}

function count(file: string): number | undefined {
  try {
    const db = new DatabaseSync(file, { readOnly: true });
    try { return (db.prepare('SELECT count(*) AS n FROM greetings').get() as { n: number }).n; } finally { db.close(); }
  } catch {
    return undefined;
  }
}

test('plane: publication runs tests, captures into journals, materializes into SQLite, records everything', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), catalogYaml());
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), recorder });
  t.after(() => plane.close());
  const r = await plane.publish();
  assert.equal(r.result, 'success', r.errors.join('\n'));
  assert.deepEqual(r.tests, [{ name: 'acmeCo/test-greetings', passing: true }]);
  assert.deepEqual(recorder.of('testResult').map((e) => [e.name, e.passing]), [['acmeCo/test-greetings', true]]);
  await until('10 rows', () => (count(join(dir, 'out.db')) === 10 ? true : undefined));
  // Test documents went to a temporary store, never to the live collection.
  const journal = plane.store.journals('acmeCo/greetings');
  assert.deepEqual(journal.map((j) => j.name), ['acmeCo/greetings/pivot=00']);
  assert.equal(plane.store.read('acmeCo/greetings/pivot=00', 0, 100).length, 10);
  assert.deepEqual(plane.store.getState('capture/acmeCo/source-test/state'), { bindingStateV1: { alpha: { next: 5 }, beta: { next: 5 } } });
  assert.ok(recorder.of('activated').some((e) => e.name === 'acmeCo/source-test' && e.buildId === r.pubId));
  assert.ok(recorder.of('shardStatus').some((e) => e.name === 'acmeCo/to-sqlite' && e.status === 'Ok'));
  assert.ok(recorder.of('connectorStatus').some((e) => e.name === 'acmeCo/source-test' && e.message === 'Capturing 2 bindings'));
  await until('metrics', () => (recorder.of('taskMetrics').some((e) => e.name === 'acmeCo/to-sqlite') ? true : undefined));
  assert.deepEqual(recorder.of('taskMetrics').filter((e) => e.name === 'acmeCo/source-test').map((e) => e.metrics.docsWritten), [5, 5]);
});

test('plane: a failing catalog test fails the publication and leaves the running tasks alone', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalogYaml({ count: 1 }));
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: file, dataDir: join(dir, 'data'), recorder });
  t.after(() => plane.close());
  assert.equal((await plane.publish()).result, 'success');
  const before = [...plane.runners.values()];
  writeFileSync(file, catalogYaml({ count: 1, verifyTotal: 7 }));
  const r = await plane.publish();
  assert.equal(r.result, 'testFailed');
  assert.equal(r.tests[0]?.error, 'step 1 (verify acmeCo/greetings): document 0 (key ["a"]) differs at /n: expected 2, found 7');
  assert.deepEqual(recorder.of('testResult').map((e) => e.passing), [true, false]);
  assert.deepEqual(recorder.of('publish').map((e) => e.result), ['success', 'testFailed']);
  assert.deepEqual([...plane.runners.values()], before);
});

test('plane: catalog and build errors are recorded as failed publications', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalogYaml().replace('key: [/id]', 'key: [/nope]'));
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: file, dataDir: join(dir, 'data'), recorder });
  t.after(() => plane.close());
  const r = await plane.publish();
  assert.equal(r.result, 'buildFailed');
  assert.match(r.errors[0] ?? '', /nope/);
  writeFileSync(file, catalogYaml().replace('resource: {table: greetings}', 'resource: {table: greetings}\n        fields: {exclude: [flow_document]}'));
  const r2 = await plane.publish();
  assert.equal(r2.result, 'buildFailed');
  assert.match(r2.errors[0] ?? '', /field "flow_document" is required by the endpoint and cannot be excluded/);
  assert.equal(plane.runners.size, 0);
});

test('plane: a capture that fails is retried with back-off and its failure recorded', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), catalogYaml({ failWith: 'the API key was revoked' }));
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), recorder, maxBackoffMs: 100 });
  t.after(() => plane.close());
  assert.equal((await plane.publish()).result, 'success');
  const failures = await until('two failures', () => {
    const f = recorder.of('shardFailure').filter((e) => e.name === 'acmeCo/source-test');
    return f.length >= 2 ? f : undefined;
  });
  assert.match(failures[0]!.failure.message, /the API key was revoked/);
  assert.ok(failures[0]!.failure.nextRetry instanceof Date);
  assert.ok(recorder.of('shardStatus').some((e) => e.name === 'acmeCo/source-test' && e.status === 'Failed'));
});

test('plane: a materialization (on its own thread) that fails at commit is retried, its connector error recorded and its checkpoint kept', async (t) => {
  const TEST_MATERIALIZE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-materialize.js', import.meta.url));
  const dir = tempDir(t);
  const yaml = catalogYaml().replace(/ {4}endpoint:\n {6}sqlite: \{path: out.db\}\n {4}bindings:\n {6}- source: acmeCo\/greetings\n {8}resource: \{table: greetings\}/,
    `    endpoint:\n      local:\n        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_MATERIALIZE)}]\n        config: {failOn: commit}\n    bindings:\n      - source: acmeCo/greetings\n        resource: {table: greetings}`);
  assert.notEqual(yaml, catalogYaml(), 'the catalog names the test materialization');
  writeFileSync(join(dir, 'flow.yaml'), yaml);
  const recorder = new MemoryRecorder();
  const plane = new LocalPlane({ catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), recorder, maxBackoffMs: 100 });
  t.after(() => plane.close());
  const r = await plane.publish();
  assert.equal(r.result, 'success', r.errors.join('\n'));
  const failures = await until('two failures of the materialization', () => {
    const f = recorder.of('shardFailure').filter((e) => e.name === 'acmeCo/to-sqlite');
    return f.length >= 2 ? f : undefined;
  });
  assert.match(failures[0]!.failure.message, /^acmeCo\/to-sqlite: .*the test materialization was asked to fail on commit/);
  assert.equal(plane.store.getState('materialize/acmeCo/to-sqlite/checkpoint'), undefined, 'no transaction committed');
});
