// `source: {name, notBefore, notAfter}` on materialization bindings: documents whose publication time
// (the clock of their `_meta/uuid`) falls outside the window are read past but not materialized.
// Both bounds are inclusive, compared at the UUID clock's 100 ns resolution.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { loadCatalog } from '../../src/catalog/load.ts';
import { UuidProducer, timestampTicks, uuidTicks } from '@sluice/runtime';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { CollectionWriter } from '../../src/journals/writer.ts';
import { LocalPlane } from '../../src/plane.ts';
import { MemoryRecorder } from '../../src/tasks/memory-recorder.ts';
import { tempDir } from '../journals/helpers.ts';
import { until } from '@sluice/runtime/testing';

const BOUNDARY = '2024-06-01T00:00:00Z';

function catalog(window: { early?: string; late?: string } = {}): string {
  return `
collections:
  acmeCo/events:
    schema:
      type: object
      properties: {id: {type: string}}
      required: [id]
    key: [/id]
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/events
        resource: {table: all_events}
      - source: {name: acmeCo/events, notAfter: '${window.early ?? BOUNDARY}'}
        resource: {table: early}
      - source: {name: acmeCo/events, notBefore: '${window.late ?? BOUNDARY}'}
        resource: {table: late}
      - source: {name: acmeCo/events, notBefore: '2024-05-31T23:59:59.5Z', notAfter: '2024-06-01T00:00:00.5Z'}
        resource: {table: around}
`;
}

test('bad input: a window that admits nothing is a build error naming the binding', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), catalog().replace("notBefore: '2024-05-31T23:59:59.5Z'", "notBefore: '2024-06-02T00:00:00Z'"));
  const plane = new LocalPlane({ catalogFile: join(dir, 'flow.yaml'), dataDir: join(dir, 'data'), recorder: new MemoryRecorder() });
  t.after(() => plane.close());
  const r = await plane.publish();
  assert.equal(r.result, 'buildFailed');
  assert.deepEqual(r.errors, ['materialization "acmeCo/to-sqlite" binding 3: source.notBefore (2024-06-02T00:00:00Z) is after source.notAfter (2024-06-01T00:00:00.5Z), so no document could be materialized; swap or widen them']);
});

test('timestamps as UUID clocks: exact to 100 ns, with offsets; anything else is refused', () => {
  const at = Date.parse(BOUNDARY);
  assert.equal(uuidTicks(new UuidProducer().next(at)), timestampTicks(BOUNDARY));
  assert.equal(timestampTicks('2024-06-01T00:00:00.0000001Z') - timestampTicks(BOUNDARY), 1n);
  assert.equal(timestampTicks('2024-06-01T00:00:00.123456789Z') - timestampTicks(BOUNDARY), 1234567n);
  assert.equal(timestampTicks('2024-06-01T02:00:00+02:00'), timestampTicks(BOUNDARY));
  assert.throws(() => timestampTicks('2024-06-01'), /"2024-06-01" is not an RFC 3339 date-time/);
  assert.throws(() => timestampTicks('yesterday'), /not an RFC 3339 date-time/);
});

test('notBefore/notAfter: each binding materializes only documents published inside its window', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog());
  const plane = new LocalPlane({ catalogFile: file, dataDir: join(dir, 'data'), recorder: new MemoryRecorder() });
  t.after(() => plane.close());

  // Documents published at known times: one second before the boundary, exactly at it, one second after.
  const { collections } = await loadCatalog(file);
  const clock = { at: 0 };
  // A producer's clock only moves forward; each writer stands for one producer.
  const writerAtClock = () => new CollectionWriter(collections.get('acmeCo/events')!.spec, new SchemaValidators(),
    new (class extends UuidProducer { override next(): string { return super.next(clock.at); } })());
  const writer = writerAtClock();
  for (const [id, offset] of [['before', -1000], ['at', 0], ['after', 1000]] as const) {
    clock.at = Date.parse(BOUNDARY) + offset;
    plane.store.commit((tx) => writer.append(tx, writer.prepare({ id })));
  }

  const r = await plane.publish();
  assert.equal(r.result, 'success', r.errors.join('\n'));
  assert.ok(plane.runners.has('acmeCo/to-sqlite'));
  const ids = (table: string): string[] => {
    const db = new DatabaseSync(join(dir, 'out.db'), { readOnly: true });
    try { return (db.prepare(`SELECT id FROM ${table} ORDER BY id`).all() as { id: string }[]).map((row) => row.id); } finally { db.close(); }
  };
  await until('three rows in all_events', () => {
    try { return ids('all_events').length === 3; } catch { return false; /* not created yet */ }
  });
  assert.deepEqual(ids('all_events'), ['after', 'at', 'before']);
  assert.deepEqual(ids('early'), ['at', 'before'], 'notAfter is inclusive');
  assert.deepEqual(ids('late'), ['after', 'at'], 'notBefore is inclusive');
  assert.deepEqual(ids('around'), ['at']);

  // Documents committed while the task runs are filtered the same way.
  clock.at = Date.parse(BOUNDARY) + 100;
  const another = writerAtClock();
  plane.store.commit((tx) => another.append(tx, another.prepare({ id: 'late-arrival' })));
  await until('the late arrival in all_events', () => ids('all_events').length >= 4);
  assert.deepEqual(ids('early'), ['at', 'before']);
  assert.deepEqual(ids('late'), ['after', 'at', 'late-arrival']);
  assert.deepEqual(ids('around'), ['at', 'late-arrival']);
});
