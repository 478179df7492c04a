// Every statement the dialect renders for the fixture, as exact text (snapshots/sql-generation*.sql), each one
// parsed by the T-SQL grammar (see tsql-grammar.ts for the two forms checked by parts).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildColumn, buildTable } from '@sluice/materialize-sql';
import type { ColumnChange, ExistingColumn, Table } from '@sluice/materialize-sql';
import { createSqlServerDialect } from '../src/sqlserver-dialect.ts';
import type { SqlServerDialect } from '../src/sqlserver-dialect.ts';
import { FENCE, FIXTURE } from './fixture.ts';
import { matchSnapshot } from './snapshot.ts';
import { assertTsql, grammarReady } from './tsql-grammar.ts';

function tablesOf(dialect: SqlServerDialect): Table[] {
  return (FIXTURE.bindings ?? []).map((b, i) => buildTable(dialect, i, b.resourcePath ?? [], b));
}

function existing(name: string, dataType: string, extra: Partial<ExistingColumn> = {}): ExistingColumn {
  return {
    name, dataType, nullable: true, charLength: null, numericPrecision: null, numericScale: null,
    datetimePrecision: null, collation: null, primaryKey: 0, ...extra,
  };
}

/** Render every statement, as `-- <section>` headed blocks, and collect them for parsing. */
function render(dialect: SqlServerDialect): { text: string; statements: { section: string; sql: string }[] } {
  const t = dialect.templates;
  const tables = tablesOf(dialect);
  const statements: { section: string; sql: string }[] = [];
  const out: string[] = [];
  const add = (section: string, sqls: string | string[] | undefined) => {
    const list = sqls === undefined ? [] : Array.isArray(sqls) ? sqls : [sqls];
    out.push(`-- ${section}`);
    for (const sql of list) { out.push(sql); statements.push({ section, sql }); }
    out.push('');
  };

  const schemas = [...new Set(tables.filter((x) => x.path.length > 1).map((x) => x.path[0]!))];
  for (const s of schemas) add(`createSchema ${s}`, t.createSchema(s));
  add('createCheckpointsTable', t.createCheckpointsTable(['dbo', 'flow_checkpoints_v1']));
  for (const table of tables) {
    const name = `${table.path.join('.')} (binding ${table.binding}${table.deltaUpdates ? ', delta' : ''})`;
    add(`createTable ${name}`, t.createTable(table));
    add(`createLoadTable ${name}`, t.createLoadTable(table));
    add(`truncateLoad ${name}`, t.truncateLoad(table));
    add(`createStoreTable ${name}`, t.createStoreTable!(table));
    add(`mergeFromStore ${name}`, t.mergeFromStore!(table));
    add(`copyFromStore ${name}`, t.copyFromStore!(table));
    add(`truncateStore ${name}`, t.truncateStore!(table));
    add(`truncateTable ${name}`, t.truncateTable(table));
    add(`dropTable ${name}`, t.dropTable(table));
    add(`describeTable ${name}`, t.describeTable(table.path));
  }
  add('loadQuery (all bindings)', t.loadQuery(tables));
  // advanced.no_flow_document: key_value without its document column; loads rebuild the document from root-level columns.
  const kvSpec = FIXTURE.bindings![0]!;
  add('loadQuery no_flow_document (key_value without flow_document)', t.loadQuery([buildTable(dialect, 0, kvSpec.resourcePath ?? [], { ...kvSpec, fieldSelection: { ...kvSpec.fieldSelection!, document: '' } })]));

  // Staging of user-DDL columns: types the bulk load encodes exactly are staged as is (INT, NUMERIC, VARCHAR with its
  // own collation), fixed-length ones as their variable-length twins (keys cast back in joins), others as text.
  const userDdl = buildTable(dialect, 4, ['dbo', 'user_ddl'], {
    resourceConfig: { table: 'user_ddl' },
    resourcePath: ['dbo', 'user_ddl'],
    collection: {
      name: 'acmeCo/user_ddl', key: ['/ts', '/id'],
      projections: [
        { field: 'ts', ptr: '/ts', inference: { types: ['string'], exists: 'MUST', string: { format: 'date-time' } } },
        { field: 'id', ptr: '/id', inference: { types: ['string'], exists: 'MUST' } },
        { field: 'amount', ptr: '/amount', inference: { types: ['number'] } },
        { field: 'big', ptr: '/big', inference: { types: ['integer'] } },
        { field: 'code', ptr: '/code', inference: { types: ['string'] } },
        { field: 'hash', ptr: '/hash', inference: { types: ['string'], string: { contentEncoding: 'base64' } } },
        { field: 'label', ptr: '/label', inference: { types: ['string'] } },
        { field: 'n', ptr: '/n', inference: { types: ['integer'] } },
        { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } },
      ],
    },
    fieldSelection: {
      keys: ['ts', 'id'], values: ['amount', 'big', 'code', 'hash', 'label', 'n'], document: 'flow_document',
      fieldConfig: {
        ts: { DDL: 'DATETIMEOFFSET(3)' }, id: { DDL: 'CHAR(12) COLLATE Latin1_General_CI_AS' }, amount: { DDL: 'MONEY' },
        big: { DDL: 'NUMERIC(38, 10)' }, code: { DDL: 'NCHAR(4)' }, hash: { DDL: 'BINARY(16)' },
        label: { DDL: 'VARCHAR(20) COLLATE Latin1_General_CI_AS' }, n: { DDL: 'INT' },
      },
    },
  });
  add('createTable dbo.user_ddl (user DDL)', t.createTable(userDdl));
  add('createLoadTable dbo.user_ddl (user DDL)', t.createLoadTable(userDdl));
  add('createStoreTable dbo.user_ddl (user DDL)', t.createStoreTable!(userDdl));
  add('mergeFromStore dbo.user_ddl (user DDL)', t.mergeFromStore!(userDdl));
  add('copyFromStore dbo.user_ddl (user DDL)', t.copyFromStore!(userDdl));
  add('loadQuery dbo.user_ddl (user DDL)', t.loadQuery([userDdl]));

  // Apply updates on binding 0: two new columns, then relaxations and migrations of existing ones.
  const kv = tables[0]!;
  const proj = (field: string) => FIXTURE.bindings![0]!.collection.projections!.find((p) => p.field === field)!;
  const newCols = [
    buildColumn(dialect, { field: 'first_new_column', ptr: '/first_new_column', inference: { types: ['string'], exists: 'MUST' } }, 'value', {}),
    buildColumn(dialect, { field: 'second new Column', ptr: '/second', inference: { types: ['boolean'] } }, 'value', {}),
  ];
  add('addColumns key_value', t.addColumns(kv, newCols));
  add('addColumns key_value (one column)', t.addColumns(kv, newCols.slice(0, 1)));
  const col = (field: string) => kv.columns.find((c) => c.field === field)!;
  const ex = {
    number: existing('number', 'bigint', { nullable: false, numericPrecision: 19, numericScale: 0 }),
    string: existing('string', 'varchar', { nullable: false, charLength: 64, collation: 'Latin1_General_100_BIN2_UTF8' }),
    integer: existing('integer', 'bit'),
    dateTimeField: existing('dateTimeField', 'datetime2', { nullable: false, datetimePrecision: 7 }),
    binary: existing('binary', 'varchar', { charLength: -1, collation: 'Latin1_General_100_BIN2_UTF8' }),
    object: existing('object', 'varbinary', { charLength: -1 }),
    quoted: existing('a"string`with`quote\'characters', 'varbinary', { charLength: -1 }),
    dec: existing('dec', 'decimal', { nullable: false, numericPrecision: 20, numericScale: 2 }),
    time: existing('timeField', 'time', { nullable: false, datetimePrecision: 7 }),
  };
  // `integer` maps to BIGINT; pretend the schema changed so it must become text, from BIT.
  const asText = { ...col('object'), field: 'integer', identifier: dialect.quoteIdentifier('integer') };
  const changes: ColumnChange[] = [
    { existing: ex.number, relaxNotNull: false, migrateTo: col('number') === undefined ? undefined! : { ...col('number'), nullable: false } },
    { existing: ex.string, relaxNotNull: true, migrateTo: col('string') },
    { existing: ex.integer, relaxNotNull: false, migrateTo: asText },
    { existing: ex.dateTimeField, relaxNotNull: false, migrateTo: { ...col('object'), field: 'dateTimeField', identifier: dialect.quoteIdentifier('dateTimeField'), nullable: false } },
    { existing: ex.binary, relaxNotNull: false, migrateTo: col('binary') },
    { existing: ex.object, relaxNotNull: false, migrateTo: col('object') },
    { existing: ex.quoted, relaxNotNull: false, migrateTo: col('a"string`with`quote\'characters') },
    { existing: ex.dec, relaxNotNull: true },
    { existing: ex.time, relaxNotNull: true },
  ];
  void proj;
  add('alterColumns key_value', t.alterColumns(kv, { path: kv.path, columns: Object.values(ex) }, changes));

  add('fenceBump', t.fenceBump(FENCE.path, FENCE.materialization, FENCE.keyBegin, FENCE.keyEnd));
  add('fenceSelect', t.fenceSelect(FENCE.path, FENCE.materialization, FENCE.keyBegin, FENCE.keyEnd));
  add('fenceInsert', t.fenceInsert(FENCE.path, FENCE.materialization, FENCE.keyBegin, FENCE.keyEnd, 0, FENCE.checkpoint));
  add('checkpointUpdate', t.checkpointUpdate(FENCE.path, FENCE.materialization, FENCE.keyBegin, FENCE.keyEnd, FENCE.fence, FENCE.checkpoint));
  add("checkpointUpdate (quote in names)", t.checkpointUpdate(['it\'s', 'flow_checkpoints_v1'], "o'brien/mat", 0, 4294967295, 1, '{"a":"it\'s"}'));
  return { text: out.join('\n'), statements };
}

describe('T-SQL generation', () => {
  before(grammarReady);

  for (const [collation, file] of [['Latin1_General_100_BIN2_UTF8', 'sql-generation.utf8.sql'], ['Latin1_General_100_BIN2', 'sql-generation.nvarchar.sql']] as const) {
    describe(collation, () => {
      const dialect = createSqlServerDialect({ collation });
      const { text, statements } = render(dialect);

      it('matches the snapshot', () => matchSnapshot(file, text));

      it('renders statements that all parse as T-SQL', () => {
        const modes = new Map<string, number>();
        for (const { section, sql } of statements) {
          try {
            const mode = assertTsql(sql);
            modes.set(mode, (modes.get(mode) ?? 0) + 1);
          } catch (err) {
            assert.fail(`${section}: statement does not parse as T-SQL:\n${sql}\n${(err as Error).message}`);
          }
        }
        assert.ok(statements.length > 60, `expected the whole fixture to render, got ${statements.length} statements`);
        // The two forms outside the parser's grammar, checked by parts: one multi-column ADD, direct ALTER COLUMNs.
        assert.equal(modes.get('alter-add-columns'), 2);
        assert.ok((modes.get('alter-column') ?? 0) >= 5);
      });
    });
  }

  it('the grammar check rejects broken SQL (so the test can fail)', async () => {
    await grammarReady();
    assert.throws(() => assertTsql('CREATE TABLE "a"b" (x BIGINT);'));
    assert.throws(() => assertTsql("UPDATE t SET c = 'it's';"));
    assert.throws(() => assertTsql('ALTER TABLE t ADD\n\tc1 BIGINT,\n\tc2 ;'));
    assert.throws(() => assertTsql('ALTER TABLE t ALTER COLUMN c BIGINT NOT;'));
    assert.throws(() => assertTsql("IF SCHEMA_ID(N'x') IS NULL\nEXEC(N'CREATE SCHEMA \"x');"));
  });
});
