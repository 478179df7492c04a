// Validate and apply, in process against real SQLite files; snapshots of what users and the database see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { CollectionSpec, MaterializationSpec } from '@sluice/runtime';
import { SqlConfigError } from '@sluice/materialize-sql';
import { materializeSqlite } from '../src/connector.ts';
import type { EndpointConfig, ResourceConfig } from '../src/config.ts';
import { allTypesCollection, binding, materialization, matchSnapshot, proj, testLogger, twoKeyCollection } from './helpers/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-va-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const signal = new AbortController().signal;

function cfg(path: string, hardDelete = false): EndpointConfig { return { path, hardDelete }; }

async function validate(path: string, bindings: { table: string; delta?: boolean; collection: CollectionSpec; backfill?: number }[], last?: MaterializationSpec) {
  return materializeSqlite.validate({
    config: cfg(path), log: testLogger(), signal, name: 'acmeCo/mat',
    bindings: bindings.map((b) => ({ resource: { table: b.table, delta_updates: b.delta === true } as ResourceConfig, collection: b.collection, fieldConfig: {}, backfill: b.backfill ?? 0 })),
    ...(last === undefined ? {} : { lastMaterialization: last }),
  });
}

async function apply(spec: MaterializationSpec, last?: MaterializationSpec, dryRun = false): Promise<string> {
  const out = await materializeSqlite.apply({
    config: spec.config as unknown as EndpointConfig, log: testLogger(), signal, materialization: spec, version: 'v1', state: {}, dryRun,
    bindings: (spec.bindings ?? []).map((b, index) => ({ index, resource: b.resourceConfig as unknown as ResourceConfig, spec: b })),
    ...(last === undefined ? {} : { lastMaterialization: last }),
  });
  return out.actionDescription ?? '';
}

function columns(path: string, table: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(table) as { name: string; type: string; notnull: number; pk: number }[])
      .map((c) => `${c.name} ${c.type}${c.notnull ? ' NOT NULL' : ''}${c.pk ? ` PK${c.pk}` : ''}`);
  } finally { db.close(); }
}

test('validate: constraints for a new standard and a new delta table (snapshot); the database file is not created', async () => {
  const out = await validate(join(dir, 'v1.db'), [{ table: 'all_types', collection: allTypesCollection() }, { table: 'events', delta: true, collection: twoKeyCollection() }]);
  matchSnapshot('validate-new.json', `${JSON.stringify(out, null, 1)}\n`);
  const c = out[0]!.constraints!;
  assert.equal(c.id!.type, 'LOCATION_REQUIRED');
  assert.equal(c.flow_document!.type, 'LOCATION_REQUIRED');
  assert.equal(c.nullonly!.type, 'FIELD_FORBIDDEN');
  assert.equal(c['_meta/op']!.type, 'LOCATION_RECOMMENDED');
  assert.equal(c.obj!.type, 'FIELD_OPTIONAL');
  assert.equal(c.str!.type, 'LOCATION_RECOMMENDED');
  assert.deepEqual(out[0]!.resourcePath, ['all_types']);
  assert.equal(out[0]!.caseInsensitiveFields, true);
  assert.equal(out[1]!.deltaUpdates, true);
  assert.equal(out[1]!.constraints!.flow_document!.type, 'LOCATION_RECOMMENDED');
  assert.equal(out[1]!.constraints!.tenant!.type, 'LOCATION_RECOMMENDED');
  assert.equal(existsSync(join(dir, 'v1.db')), false, 'validate is read-only');
});

test('validate errors: nullable key without default, names over the limit, delta → standard', async () => {
  const path = join(dir, 'v2.db');
  const nullableKey = twoKeyCollection();
  nullableKey.projections = nullableKey.projections!.map((p) => (p.field === 'tenant' ? proj('tenant', '/tenant', { types: ['string', 'null'], exists: 'MAY' }, { isPrimaryKey: true }) : p));
  await assert.rejects(validate(path, [{ table: 't', collection: nullableKey }]), (err: Error) => err instanceof SqlConfigError && /collection key field 'tenant' may be null or absent and has no default/.test(err.message));
  const withDefault = structuredClone(nullableKey);
  withDefault.projections!.find((p) => p.field === 'tenant')!.inference!.default = 'none';
  assert.equal((await validate(path, [{ table: 't', collection: withDefault }]))[0]!.constraints!.tenant!.type, 'LOCATION_REQUIRED');

  await assert.rejects(validate(path, [{ table: 'x'.repeat(1025), collection: twoKeyCollection() }]), /table name 'x+' is 1025 characters long; sqlite allows at most 1024/);
  const longField = twoKeyCollection();
  longField.projections!.push(proj('y'.repeat(1025), '/long', { types: ['string'] }));
  const c = (await validate(path, [{ table: 't', collection: longField }]))[0]!.constraints!;
  assert.equal(c['y'.repeat(1025)]!.type, 'FIELD_FORBIDDEN');

  const delta = materialization(path, [binding('ev', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['value'] }, { delta: true })]);
  await apply(delta);
  await assert.rejects(validate(path, [{ table: 'ev', collection: twoKeyCollection() }], delta), /cannot switch from delta updates to standard updates/);
  await validate(path, [{ table: 'ev', collection: twoKeyCollection(), backfill: 1 }], delta);
});

test('validate: INCOMPATIBLE with a reason when an existing column cannot hold the new type; a backfill clears it', async () => {
  const path = join(dir, 'v3.db');
  const spec = materialization(path, [binding('t', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['value'], document: 'flow_document' })]);
  await apply(spec);
  const changed = twoKeyCollection();
  changed.projections = changed.projections!.map((p) => (p.field === 'value' ? proj('value', '/value', { types: ['boolean'] }) : p));
  const out = await validate(path, [{ table: 't', collection: changed }], spec);
  assert.deepEqual(out[0]!.constraints!.value, { type: 'INCOMPATIBLE', reason: "Field 'value' is already being materialized as endpoint type 'REAL' but endpoint type 'BOOLEAN' is required by its schema '{ type: [boolean] }'" });
  const migratable = twoKeyCollection();
  migratable.projections = migratable.projections!.map((p) => (p.field === 'value' ? proj('value', '/value', { types: ['string'] }) : p));
  assert.deepEqual((await validate(path, [{ table: 't', collection: migratable }], spec))[0]!.constraints!.value, { type: 'FIELD_OPTIONAL', reason: 'This location is part of the current materialization' }, 'REAL → TEXT migrates in place');
  assert.equal((await validate(path, [{ table: 't', collection: changed, backfill: 1 }], spec))[0]!.constraints!.value!.type, 'LOCATION_RECOMMENDED');
});

test('apply: create (idempotent), add columns, relax NOT NULL, migrations, keeping data (snapshot of every statement)', async () => {
  const path = join(dir, 'a1.db');
  const v1Collection: CollectionSpec = {
    name: 'acmeCo/things', key: ['/id'],
    projections: [
      proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
      proj('id', '/id', { types: ['integer'], exists: 'MUST' }, { isPrimaryKey: true }),
      proj('n', '/n', { types: ['integer'], exists: 'MUST' }),
      proj('flag', '/flag', { types: ['boolean'], exists: 'MUST' }),
      proj('gone', '/gone', { types: ['string'], exists: 'MUST' }),
    ],
  };
  const v1 = materialization(path, [binding('things', v1Collection, { keys: ['id'], values: ['flag', 'gone', 'n'], document: 'flow_document' })]);
  const log: string[] = [];
  log.push('-- apply v1', await apply(v1));
  log.push('-- apply v1 again (no-op)', await apply(v1, v1));
  const db = new DatabaseSync(path);
  db.prepare('INSERT INTO things (id, flag, gone, n, flow_document) VALUES (1, 1, ?, 5, ?)').run('g', '{"id":1}');
  db.close();

  const v2Collection: CollectionSpec = {
    ...v1Collection,
    projections: [
      proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
      proj('id', '/id', { types: ['integer'], exists: 'MUST' }, { isPrimaryKey: true }),
      proj('n', '/n', { types: ['number'], exists: 'MAY' }), // INTEGER NOT NULL → REAL nullable
      proj('flag', '/flag', { types: ['string', 'boolean'], exists: 'MUST' }), // BOOLEAN → TEXT (JSON)
      proj('gone', '/gone', { types: ['string'], exists: 'MUST' }), // no longer selected → nullable
      proj('added', '/added', { types: ['string'], exists: 'MUST' }), // new → nullable column
    ],
  };
  const v2 = materialization(path, [binding('things', v2Collection, { keys: ['id'], values: ['added', 'flag', 'n'], document: 'flow_document' })]);
  log.push('-- apply v2 (dry run)', await apply(v2, v1, true));
  assert.deepEqual(columns(path, 'things'), ['id INTEGER NOT NULL PK1', 'flag BOOLEAN NOT NULL', 'gone TEXT NOT NULL', 'n INTEGER NOT NULL', 'flow_document TEXT NOT NULL'], 'a dry run executes nothing');
  log.push('-- apply v2', await apply(v2, v1));
  assert.deepEqual(columns(path, 'things'), ['id INTEGER NOT NULL PK1', 'flag TEXT NOT NULL', 'gone TEXT', 'n REAL', 'flow_document TEXT NOT NULL', 'added TEXT']);
  const check = new DatabaseSync(path, { readOnly: true });
  assert.deepEqual({ ...check.prepare('SELECT id, flag, gone, n, added, typeof(n) AS tn FROM things').get() }, { id: 1, flag: 'true', gone: 'g', n: 5, added: null, tn: 'real' });
  check.close();
  log.push('-- apply v2 again (no-op)', await apply(v2, v2));

  // Backfill with a compatible table: truncate.
  const v3 = materialization(path, [binding('things', v2Collection, { keys: ['id'], values: ['added', 'flag', 'n'], document: 'flow_document' }, { backfill: 1 })]);
  log.push('-- backfill, compatible', await apply(v3, v2));
  // Backfill with an incompatible type: drop and re-create.
  const v4Collection = structuredClone(v2Collection);
  v4Collection.projections!.find((p) => p.field === 'added')!.inference = { types: ['integer'], exists: 'MUST' };
  const v4 = materialization(path, [binding('things', v4Collection, { keys: ['id'], values: ['added', 'flag', 'n'], document: 'flow_document' }, { backfill: 2 })]);
  log.push('-- backfill, incompatible', await apply(v4, v3));
  assert.deepEqual(columns(path, 'things'), ['id INTEGER NOT NULL PK1', 'added INTEGER NOT NULL', 'flag TEXT NOT NULL', 'n REAL', 'flow_document TEXT NOT NULL']);
  // An incompatible change without a backfill is refused with what to do.
  const v5Collection = structuredClone(v4Collection);
  v5Collection.projections!.find((p) => p.field === 'added')!.inference = { types: ['boolean'], exists: 'MUST' };
  await assert.rejects(apply(materialization(path, [binding('things', v5Collection, { keys: ['id'], values: ['added'], document: 'flow_document' }, { backfill: 2 })]), v4), /cannot be updated in place: .*Backfill the binding/);
  matchSnapshot('apply-sequence.sql', `${log.join('\n')}\n`);
});

test('apply: hostile table and column names', async () => {
  const path = join(dir, 'a2.db');
  const c: CollectionSpec = {
    name: 'acmeCo/hostile', key: ['/"k"'],
    projections: [
      proj('flow_document', '', { types: ['object'], exists: 'MUST' }),
      proj('"k"', '/"k"', { types: ['string'], exists: 'MUST' }, { isPrimaryKey: true }),
      proj("it's", "/it's", { types: ['string'] }),
      proj('select', '/select', { types: ['integer'] }),
      proj('a;DROP TABLE x;--', '/a', { types: ['integer'] }),
    ],
  };
  const spec = materialization(path, [binding('my "table"; --', c, { keys: ['"k"'], values: ["a;DROP TABLE x;--", "it's", 'select'], document: 'flow_document' })]);
  const desc = await apply(spec);
  assert.match(desc, /CREATE TABLE IF NOT EXISTS "my ""table""; --"/);
  assert.deepEqual(columns(path, 'my "table"; --'), ['"k" TEXT NOT NULL PK1', 'a;DROP TABLE x;-- INTEGER', "it's TEXT", 'select INTEGER', 'flow_document TEXT NOT NULL']);
  assert.equal(await apply(spec, spec), '');
});
