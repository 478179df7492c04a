import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { loadCatalog } from '../../src/catalog/index.ts';
import { buildMaterialization } from '../../src/build/build.ts';
import { ingestDocuments } from '../../src/ingest/ingest.ts';
import { JournalStore } from '../../src/journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { CollectionWriters } from '../../src/journals/writer.ts';
import { Launcher } from '../../src/tasks/launcher.ts';
import { runMaterializeSession } from '../../src/tasks/materialize.ts';
import { tempDir } from '../journals/helpers.ts';

const CATALOG = `
collections:
  acmeCo/orders:
    schema:
      type: object
      properties:
        id: {type: integer}
        region: {type: string}
        total: {type: number}
        note: {type: string}
        tags: {type: object, reduce: {strategy: merge}}
      required: [id, region]
      reduce: {strategy: merge}
    key: [/id]
    projections:
      region: {location: /region, partition: true}
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/orders
        resource: {table: orders}
      - source: acmeCo/orders
        resource: {table: eu_orders}
        partitions: {include: {region: [EU]}}
        fields: {recommended: false, include: {total: {}}}
      - source: acmeCo/orders
        resource: {table: not_eu}
        partitions: {exclude: {region: [EU]}}
        fields: {recommended: true, exclude: [note]}
`;

async function setup(t: { after: (fn: () => void) => void }) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), CATALOG);
  const catalog = await loadCatalog(join(dir, 'flow.yaml'));
  const store = JournalStore.open(join(dir, 'data'));
  t.after(() => store.close());
  const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
  writers.setCollections([...catalog.collections.values()].map((c) => c.spec));
  return { dir, catalog, store, writers, launcher: new Launcher() };
}

function rows(file: string, sql: string): unknown[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare(sql).all().map((r) => ({ ...r }));
  } finally {
    db.close();
  }
}

test('materialize: reduce by key, partition selectors and field selection reach SQLite; resumes from the checkpoint', async (t) => {
  const { dir, catalog, store, writers, launcher } = await setup(t);
  const def = catalog.materializations.get('acmeCo/to-sqlite')!;
  const built = await buildMaterialization(catalog, def, { launcher, version: '0000000000000001', apply: true });
  assert.deepEqual(built.spec.bindings?.map((b) => b.fieldSelection), [
    { keys: ['id'], values: ['flow_published_at', 'note', 'region', 'total'], document: 'flow_document' },
    { keys: ['id'], values: ['total'], document: 'flow_document' },
    { keys: ['id'], values: ['flow_published_at', 'region', 'total'], document: 'flow_document' },
  ]);
  ingestDocuments(store, writers, { 'acmeCo/orders': [
    { id: 1, region: 'EU', total: 1, tags: { a: 1 } },
    { id: 2, region: 'US', total: 2, note: 'x' },
    { id: 1, region: 'EU', total: 5, tags: { b: 2 } },
  ] });
  const run = (untilCaughtUp = true) => runMaterializeSession({
    name: def.name, spec: built.spec, version: '0000000000000001', store, signal: new AbortController().signal, untilCaughtUp,
    session: launcher.materialize(def.endpoint, def.name),
  });
  await run();
  const db = join(dir, 'out.db');
  assert.deepEqual(rows(db, 'SELECT id, region, total, note FROM orders ORDER BY id'), [{ id: 1, region: 'EU', total: 5, note: null }, { id: 2, region: 'US', total: 2, note: 'x' }]);
  const doc1 = JSON.parse((rows(db, 'SELECT flow_document FROM orders WHERE id = 1')[0] as { flow_document: string }).flow_document) as { tags: unknown };
  assert.deepEqual(doc1.tags, { a: 1, b: 2 });
  assert.deepEqual(rows(db, 'SELECT * FROM eu_orders').map((r) => Object.keys(r as object).sort()), [['flow_document', 'id', 'total']]);
  assert.deepEqual(rows(db, 'SELECT id, total FROM not_eu'), [{ id: 2, total: 2 }]);

  // A second session continues from the checkpoint: later documents reduce onto the loaded rows.
  ingestDocuments(store, writers, { 'acmeCo/orders': [{ id: 2, region: 'US', total: 7, tags: { z: true } }, { id: 3, region: 'EU', total: 3 }] });
  await run();
  assert.deepEqual(rows(db, 'SELECT id, total, note FROM orders ORDER BY id'), [{ id: 1, total: 5, note: null }, { id: 2, total: 7, note: 'x' }, { id: 3, total: 3, note: null }]);
  assert.deepEqual(rows(db, 'SELECT id, total FROM eu_orders ORDER BY id'), [{ id: 1, total: 5 }, { id: 3, total: 3 }]);
  assert.deepEqual(rows(db, 'SELECT id, total FROM not_eu ORDER BY id'), [{ id: 2, total: 7 }]);
});
