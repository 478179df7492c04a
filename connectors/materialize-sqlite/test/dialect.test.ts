import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { buildTable, FencedError } from '@sluice/materialize-sql';
import { sqliteDialect } from '../src/sqlite-dialect.ts';
import { ALL_TYPES_VALUES, allTypesCollection, binding, matchSnapshot, proj, twoKeyCollection } from './helpers/fixtures.ts';

const q = sqliteDialect.quoteIdentifier;
const t = sqliteDialect.templates;

test('quoteIdentifier: simple lower-case names stay bare; everything else is quoted with " doubled', () => {
  assert.equal(q('id'), 'id');
  assert.equal(q('flow_document'), 'flow_document');
  assert.equal(q('café'), 'café');
  assert.equal(q('select'), '"select"');
  assert.equal(q('Key'), '"Key"');
  assert.equal(q('camelCase'), '"camelCase"');
  assert.equal(q('a"b'), '"a""b"');
  assert.equal(q('123'), '"123"');
  assert.equal(q('_meta/op'), '"_meta/op"');
  assert.throws(() => q('a\u0000b'), /NUL character/);
});

test('hostile identifiers round-trip through real SQLite as table and column names', () => {
  const hostile = ['a"b', "it's", 'x]y', 'with space', 'select', 'ORDER', 'κόσμε', '"', "'", '\\"', 'a""b', 'a;DROP TABLE t;--', 'rowid', 'main', '`tick`', '[br]'];
  const db = new DatabaseSync(':memory:');
  for (const name of hostile) {
    db.exec(`CREATE TABLE ${q(name)} (${q(name)} TEXT, other TEXT)`);
    db.prepare(`INSERT INTO ${q(name)} (${q(name)}, other) VALUES (?1, ${sqliteDialect.literal(name)})`).run(name);
    const row = db.prepare(`SELECT ${q(name)} AS v, other FROM ${q(name)}`).get() as { v: string; other: string };
    assert.deepEqual({ ...row }, { v: name, other: name }, `identifier ${JSON.stringify(name)}`);
    const cols = db.prepare(t.describeTable([name]).replace(/;$/, '')).all() as { column_name: string }[];
    assert.deepEqual(cols.map((c) => c.column_name), [name, 'other'], `describeTable of ${JSON.stringify(name)}`);
  }
  db.close();
});

test('literals: strings with quotes, numbers, bigints, booleans, null; no literal for non-finite numbers', () => {
  assert.equal(sqliteDialect.literal("it's"), "'it''s'");
  assert.equal(sqliteDialect.literal('a\\b'), "'a\\b'");
  assert.equal(sqliteDialect.literal(12), '12');
  assert.equal(sqliteDialect.literal(2n ** 63n - 1n), '9223372036854775807');
  assert.equal(sqliteDialect.literal(true), '1');
  assert.equal(sqliteDialect.literal(null), 'NULL');
  assert.throws(() => sqliteDialect.literal(NaN), /no SQLite literal/);
  assert.equal(sqliteDialect.placeholder(0), '?1');
});

function allTypesTable() {
  return buildTable(sqliteDialect, 0, ['all_types'], binding('all_types', allTypesCollection(), { keys: ['id'], values: ALL_TYPES_VALUES, document: 'flow_document' }));
}

test('type mapping: every flat type, nullability only when the field must exist and cannot be null', () => {
  const table = allTypesTable();
  const got = Object.fromEntries(table.columns.map((c) => [c.field, `${c.mapped.ddl}${c.nullable ? '' : ' NOT NULL'}`]));
  assert.deepEqual(got, {
    id: 'INTEGER NOT NULL', '_meta/op': 'TEXT NOT NULL', arr: 'TEXT', bigint: 'TEXT', bin: 'BLOB', bool: 'BOOLEAN NOT NULL',
    date: 'TEXT', flow_published_at: 'TEXT NOT NULL', int: 'INTEGER', multi: 'TEXT', num: 'REAL', obj: 'TEXT', str: 'TEXT NOT NULL',
    strInt: 'INTEGER', strNum: 'REAL', ts: 'TEXT', flow_document: 'TEXT NOT NULL',
  });
});

test('type mapping: field config DDL override and castToString; long numeric strings map to TEXT', () => {
  const c = allTypesCollection();
  c.projections!.push(proj('longStrInt', '/longStrInt', { types: ['string'], string: { format: 'integer', maxLength: 40 } }));
  const table = buildTable(sqliteDialect, 0, ['x'], binding('x', c, { keys: ['id'], values: ['int', 'longStrInt', 'num'] }, { fieldConfig: { int: { DDL: 'NUMERIC(20)' }, num: { castToString: true } } }));
  const byField = new Map(table.columns.map((col) => [col.field, col]));
  assert.equal(byField.get('int')!.mapped.ddl, 'NUMERIC(20)');
  assert.equal(byField.get('num')!.mapped.ddl, 'TEXT');
  assert.equal(byField.get('num')!.mapped.toParam(1.5), '1.5');
  assert.equal(byField.get('longStrInt')!.mapped.ddl, 'TEXT');
});

test('value conversion: tuple values become SQLite parameters; bad values fail with the reason', () => {
  const by = new Map(allTypesTable().columns.map((c) => [c.field, c.mapped]));
  const enc = (s: string) => new TextEncoder().encode(s);
  assert.equal(by.get('obj')!.toParam(enc('{"a":1}')), '{"a":1}');
  assert.equal(by.get('arr')!.toParam(enc('[1,2]')), '[1,2]');
  assert.equal(by.get('multi')!.toParam('x'), '"x"');
  assert.equal(by.get('multi')!.toParam(5), '5');
  assert.deepEqual(Buffer.from(by.get('bin')!.toParam('aGVsbG8=') as Uint8Array).toString(), 'hello');
  assert.equal(by.get('bool')!.toParam(true), 1);
  assert.equal(by.get('strInt')!.toParam('42'), 42);
  assert.equal(by.get('strInt')!.toParam('9007199254740993'), 9007199254740993n);
  assert.equal(by.get('strInt')!.toParam('12.000'), 12);
  assert.throws(() => by.get('strInt')!.toParam('1e3'), /not an integer string/);
  assert.throws(() => by.get('strInt')!.toParam('99999999999999999999'), /outside the 64-bit range/);
  assert.equal(by.get('strNum')!.toParam('1.25'), 1.25);
  assert.equal(by.get('strNum')!.toParam('NaN'), null);
  assert.equal(by.get('strNum')!.toParam('-Infinity'), -Infinity);
  assert.equal(by.get('int')!.toParam(2n ** 62n), 2n ** 62n);
  assert.throws(() => by.get('int')!.toParam(2n ** 64n), /outside the 64-bit integer range/);
  assert.equal(by.get('bigint')!.toParam(2n ** 64n), '18446744073709551616');
  assert.equal(by.get('num')!.toParam(NaN), null);
  assert.equal(by.get('flow_document')!.toParam({ a: 'b' }), '{"a":"b"}');
});

test('SQL generation snapshot: every template for a standard and a delta table', () => {
  const std = allTypesTable();
  const delta = buildTable(sqliteDialect, 1, ['Delta Events'], binding('Delta Events', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'] }, { delta: true }));
  const out: string[] = [];
  for (const table of [std, delta]) {
    out.push(`--- ${table.path.join('.')} ---`);
    out.push(t.createTable(table), t.createLoadTable(table), t.truncateLoad(table), t.storeUpsert!(table), t.storeInsert!(table), t.storeDelete!(table),
      t.truncateTable(table), t.dropTable(table), t.describeTable(table.path), ...t.addColumns(table, table.values.slice(0, 2)));
  }
  out.push('--- loadQuery ---', t.loadQuery([std, delta]) ?? '(none)');
  out.push('--- checkpoints ---', t.createCheckpointsTable(['flow_checkpoints_v1']),
    t.fenceBump(['flow_checkpoints_v1'], "acme'Co/mat", 0, 4294967295),
    t.fenceSelect(['flow_checkpoints_v1'], "acme'Co/mat", 0, 4294967295),
    t.fenceInsert(['flow_checkpoints_v1'], "acme'Co/mat", 0, 4294967295, 3, '{"sources":{}}'),
    t.checkpointUpdate(['flow_checkpoints_v1'], "acme'Co/mat", 0, 4294967295, 3, '{"o\'k":1}'));
  matchSnapshot('sql-generation.sql', `${out.join('\n')}\n`);
  // Every statement is valid SQLite: run them on a scratch database.
  const db = new DatabaseSync(':memory:');
  db.exec(t.createTable(std));
  db.exec(t.createTable(delta));
  db.exec(t.createLoadTable(std));
  db.exec(t.createCheckpointsTable(['flow_checkpoints_v1']));
  for (const sql of [t.loadQuery([std, delta])!, t.storeUpsert!(std), t.storeInsert!(delta), t.storeDelete!(std), t.fenceSelect(['flow_checkpoints_v1'], 'm', 0, 1)]) db.prepare(sql);
  db.close();
  assert.ok(FencedError);
});
