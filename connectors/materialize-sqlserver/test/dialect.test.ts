// The one quoting function with hostile names and every reserved word, literals, the type mapping table,
// compatibility/migrations, collation choice and value conversions.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { buildColumn } from '@sluice/materialize-sql';
import type { ExistingColumn, FieldConfig } from '@sluice/materialize-sql';
import type { Inference } from '@sluice/runtime';
import { RESERVED_WORDS } from '../src/reserved-words.ts';
import { createSqlServerDialect, literal, objectNameLiteral, quoteIdentifier, quotePath } from '../src/sqlserver-dialect.ts';
import { chooseCollation, stringBaseType } from '../src/collation.ts';
import { parseDate, parseDateTime2, parseTime, toBigInt, toBinary, toDouble, jsonText } from '../src/values.ts';
import { assertTsql, grammarReady } from './tsql-grammar.ts';

// The SPEC's list ("entries of the official list longer than 12 characters are omitted here"), verbatim.
const SPEC_RESERVED = `absolute, action, ada, add, admin, after, aggregate, alias, all, allocate, alter, and, any, are, array, as, asc, asensitive, assertion, asymmetric, at, atomic, authorization, avg, backup, before, begin, between, binary, bit, bit_length, blob, boolean, both, breadth, break, browse, bulk, by, call, called, cardinality, cascade, cascaded, case, cast, catalog, char, char_length, character, check, checkpoint, class, clob, close, clustered, coalesce, collate, collation, collect, column, commit, completion, compute, condition, connect, connection, constraint, constraints, constructor, contains, containstable, continue, convert, corr, corresponding, count, covar_pop, covar_samp, create, cross, cube, cume_dist, current, current_date, current_path, current_role, current_time, current_user, cursor, cycle, data, database, date, day, dbcc, deallocate, dec, decimal, declare, default, deferrable, deferred, delete, deny, depth, deref, desc, describe, descriptor, destroy, destructor, deterministic, diagnostics, dictionary, disconnect, disk, distinct, distributed, domain, double, drop, dump, dynamic, each, element, else, end, end-exec, equals, errlvl, escape, every, except, exception, exec, execute, exists, exit, external, extract, false, fetch, file, fillfactor, filter, first, float, for, foreign, fortran, found, free, freetext, freetexttable, from, full, fulltexttable, function, fusion, general, get, global, go, goto, grant, group, grouping, having, hold, holdlock, host, hour, identity, identitycol, if, ignore, immediate, in, include, index, indicator, initialize, initially, inner, inout, input, insensitive, insert, int, integer, intersect, intersection, interval, into, is, isolation, iterate, join, key, kill, language, large, last, lateral, leading, left, less, level, like, like_regex, limit, lineno, ln, load, local, localtime, locator, lower, map, match, max, member, merge, method, min, minute, mod, modifies, modify, module, month, multiset, names, national, natural, nchar, nclob, new, next, no, nocheck, nonclustered, none, normalize, not, null, nullif, numeric, object, octet_length, of, off, offsets, old, on, only, open, openquery, openrowset, openxml, operation, option, or, order, ordinality, out, outer, output, over, overlaps, overlay, pad, parameter, parameters, partial, partition, pascal, path, percent, percent_rank, pivot, plan, position, postfix, precision, prefix, preorder, prepare, preserve, primary, prior, privileges, proc, procedure, public, raiserror, range, read, reads, readtext, real, reconfigure, recursive, ref, references, referencing, regr_avgx, regr_avgy, regr_count, regr_r2, regr_slope, regr_sxx, regr_sxy, regr_syy, relative, release, replication, restore, restrict, result, return, returns, revert, revoke, right, role, rollback, rollup, routine, row, rowcount, rowguidcol, rows, rule, save, savepoint, schema, scope, scroll, search, second, section, securityaudit, select, sensitive, sequence, session, session_user, set, sets, setuser, shutdown, similar, size, smallint, some, space, specific, specifictype, sql, sqlca, sqlcode, sqlerror, sqlexception, sqlstate, sqlwarning, start, state, statement, static, statistics, stddev_pop, stddev_samp, structure, submultiset, substring, sum, symmetric, system, system_user, table, tablesample, temporary, terminate, textsize, than, then, time, timestamp, to, top, trailing, tran, transaction, translate, translation, treat, trigger, trim, true, truncate, try_convert, tsequal, uescape, under, union, unique, unknown, unnest, unpivot, update, updatetext, upper, usage, use, user, using, value, values, var_pop, var_samp, varchar, variable, varying, view, waitfor, when, whenever, where, while, width_bucket, window, with, within, without, work, write, writetext, xmlagg, xmlattributes, xmlbinary, xmlcast, xmlcomment, xmlconcat, xmldocument, xmlelement, xmlexists, xmlforest, xmliterate, xmlnamespaces, xmlparse, xmlpi, xmlquery, xmlserialize, xmltable, xmltext, xmlvalidate, year, zone`.split(', ');

describe('reserved words', () => {
  it('is the full official list (482 words, the reference file verbatim)', () => {
    // The reference list sits in the project's shared/ folder, a sibling of the repository when checked out.
    const refFile = new URL('../../../../shared/reference/sqlserver-reserved-words.txt', import.meta.url);
    assert.equal(RESERVED_WORDS.length, 482);
    if (!existsSync(refFile)) {
      console.log('# <repo>/../shared/reference/sqlserver-reserved-words.txt is not present (no sibling shared/ checkout): compared the count only');
      return;
    }
    assert.deepEqual([...RESERVED_WORDS], readFileSync(refFile, 'utf8').split('\n').filter((w) => w !== ''));
  });
  it('covers every word of the SPEC list', () => {
    const missing = SPEC_RESERVED.filter((w) => !RESERVED_WORDS.includes(w));
    assert.deepEqual(missing, []);
    assert.ok(SPEC_RESERVED.length > 440);
  });
});

describe('quoteIdentifier', () => {
  before(grammarReady);

  it('rejects a NUL character with a clear message', () => {
    assert.throws(() => quoteIdentifier('a\u0000b'), /contains a NUL character/);
  });
  it('leaves simple lower-case, non-reserved names bare (including non-ASCII lower-case)', () => {
    for (const n of ['id', '_id', 'flow_published_at', 'name', 'status', 'number', 'string', 'multiple', 'fence', 'materialization', 'é', 'κόσμε', 'a1_2']) {
      assert.equal(quoteIdentifier(n), n);
    }
  });
  it('quotes hostile names, doubling embedded double quotes', () => {
    const cases: [string, string][] = [
      ['a]b', '"a]b"'], ['a"b', '"a""b"'], ["it's", `"it's"`], ['with space', '"with space"'], ['dotted.name', '"dotted.name"'],
      ['Upper', '"Upper"'], ['123', '"123"'], ['1abc', '"1abc"'], ['nonAsciiκόσμε', '"nonAsciiκόσμε"'], ['日本', '"日本"'],
      ['a-b', '"a-b"'], ['', '""'], ['"', '""""'], ['x;DROP TABLE t;--', '"x;DROP TABLE t;--"'], ['[x]', '"[x]"'], ['#tmp', '"#tmp"'],
      ['_meta/op', '"_meta/op"'], ['tab\tname', '"tab\tname"'],
    ];
    for (const [raw, quoted] of cases) assert.equal(quoteIdentifier(raw), quoted, raw);
  });
  it('quotes every reserved word, in any case, and each quoted name parses as a column and a table', () => {
    for (const w of RESERVED_WORDS) {
      const q = quoteIdentifier(w);
      assert.equal(q, `"${w}"`);
      assert.equal(quoteIdentifier(w.toUpperCase()), `"${w.toUpperCase()}"`);
      assertTsql(`SELECT ${q} FROM ${quotePath(['dbo', w])};`);
    }
  });
  it('hostile names round-trip through the T-SQL grammar in DDL and queries', () => {
    const names = ['a]b', 'a"b', "it's", 'with space', 'dotted.name', 'é', 'κόσμε', 'key', 'Select', '"', "a\"string`with`quote'characters"];
    for (const n of names) {
      assertTsql(`CREATE TABLE ${quotePath(['Weird "Schema"', n])} (${quoteIdentifier(n)} BIGINT NOT NULL, PRIMARY KEY (${quoteIdentifier(n)}));`);
      assertTsql(`SELECT r.${quoteIdentifier(n)} FROM ${quotePath([n])} AS r WHERE r.${quoteIdentifier(n)} = ${literal(n)};`);
      assertTsql(`IF OBJECT_ID(${objectNameLiteral(['dbo', n])}, N'U') IS NULL SELECT 1;`);
    }
  });
});

describe('literal', () => {
  it('rejects non-finite numbers and NUL', () => {
    assert.throws(() => literal(Number.NaN), RangeError);
    assert.throws(() => literal('a\u0000'), RangeError);
  });
  it('renders N-strings with quotes doubled, numbers, bigints, booleans, NULL', () => {
    assert.equal(literal("o'brien"), "N'o''brien'");
    assert.equal(literal(4294967295), '4294967295');
    assert.equal(literal(2n ** 63n - 1n), '9223372036854775807');
    assert.equal(literal(true), '1');
    assert.equal(literal(null), 'NULL');
    assert.equal(objectNameLiteral(['a]b', "c'd"]), "N'[a]]b].[c''d]'");
  });
});

describe('type mapping', () => {
  const utf8 = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8' });
  const n16 = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2' });
  const col = (d = utf8, inference: Inference, role: 'key' | 'value' = 'value', cfg: FieldConfig = {}) =>
    buildColumn(d, { field: 'f', ptr: '/f', inference }, role, cfg);
  const ddl = (inference: Inference, role: 'key' | 'value' = 'value', cfg: FieldConfig = {}, d = utf8) => col(d, inference, role, cfg).mapped.ddl;
  const T = 'varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8';
  const PK = 'varchar(900) COLLATE Latin1_General_100_BIN2_UTF8';

  it('rejects a field with no type', () => {
    assert.throws(() => ddl({ types: ['null'] }), { message: "field 'f' has no materializable type (its schema allows only null, or nothing)" });
  });
  it('maps per the reference table', () => {
    const rows: [Inference, 'key' | 'value', string][] = [
      [{ types: ['integer'] }, 'value', 'BIGINT'],
      [{ types: ['integer'] }, 'key', 'BIGINT'],
      [{ types: ['integer'], numeric: { hasMaximum: true, maximum: 1e19 } }, 'value', T],
      [{ types: ['integer'], numeric: { hasMinimum: true, minimum: -1e20 } }, 'key', PK],
      [{ types: ['number'] }, 'value', 'DOUBLE PRECISION'],
      [{ types: ['integer', 'number'] }, 'value', 'DOUBLE PRECISION'],
      [{ types: ['boolean'] }, 'key', 'BIT'],
      [{ types: ['object'] }, 'value', T],
      [{ types: ['array'] }, 'value', T],
      [{ types: ['string', 'integer'] }, 'value', T],
      [{ types: ['string'], string: { contentEncoding: 'base64' } }, 'value', 'VARBINARY(MAX)'],
      [{ types: ['string'], string: { contentEncoding: 'base64' } }, 'key', 'VARBINARY(900)'],
      [{ types: ['string'], string: { format: 'integer' } }, 'value', 'BIGINT'],
      [{ types: ['string'], string: { format: 'integer', maxLength: 18 } }, 'value', 'BIGINT'],
      [{ types: ['string'], string: { format: 'integer', maxLength: 19 } }, 'value', T],
      [{ types: ['string'], string: { format: 'integer' } }, 'key', PK],
      [{ types: ['string'], string: { format: 'number' } }, 'value', 'DOUBLE PRECISION'],
      [{ types: ['string'], string: { format: 'date' } }, 'value', 'DATE'],
      [{ types: ['string'], string: { format: 'date-time' } }, 'value', 'DATETIME2'],
      [{ types: ['string'], string: { format: 'time' } }, 'value', 'TIME'],
      [{ types: ['string'], string: { format: 'date' } }, 'key', PK],
      [{ types: ['string'], string: { format: 'date-time' } }, 'key', PK],
      [{ types: ['string'], string: { format: 'uuid' } }, 'value', T],
      [{ types: ['string'] }, 'value', T],
      [{ types: ['string'] }, 'key', PK],
      [{ types: ['string'], string: { maxLength: 16 } }, 'value', 'varchar(64) COLLATE Latin1_General_100_BIN2_UTF8'],
      [{ types: ['string'], string: { maxLength: 2000 } }, 'value', 'varchar(8000) COLLATE Latin1_General_100_BIN2_UTF8'],
      [{ types: ['string'], string: { maxLength: 2001 } }, 'value', T],
      [{ types: ['string'], string: { maxLength: 300 } }, 'key', PK],
      [{ types: ['string'], string: { maxLength: 100 } }, 'key', 'varchar(400) COLLATE Latin1_General_100_BIN2_UTF8'],
    ];
    for (const [inf, role, want] of rows) assert.equal(ddl(inf, role), want, JSON.stringify({ inf, role }));
  });
  it('uses nvarchar (450-character keys = 900 bytes) without a UTF-8 collation', () => {
    assert.equal(n16.stringType, 'nvarchar');
    assert.equal(ddl({ types: ['string'] }, 'value', {}, n16), 'nvarchar(MAX) COLLATE Latin1_General_100_BIN2');
    assert.equal(ddl({ types: ['string'] }, 'key', {}, n16), 'nvarchar(450) COLLATE Latin1_General_100_BIN2');
    assert.equal(ddl({ types: ['string'], string: { maxLength: 16 } }, 'value', {}, n16), 'nvarchar(16) COLLATE Latin1_General_100_BIN2');
    assert.equal(ddl({ types: ['string'], string: { maxLength: 4001 } }, 'value', {}, n16), 'nvarchar(MAX) COLLATE Latin1_General_100_BIN2');
  });
  it('honours user DDL, castToString and feature flags', () => {
    assert.equal(ddl({ types: ['integer'] }, 'value', { DDL: 'DECIMAL(38)' }), 'DECIMAL(38)');
    assert.equal(col(utf8, { types: ['integer'] }, 'value', { DDL: 'DECIMAL(38)' }).mapped.userDdl, true);
    assert.equal(ddl({ types: ['number'] }, 'value', { castToString: true }), T);
    const flags = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8', flags: { datetime_keys_as_string: false, native_binary_column_type: false } });
    assert.equal(ddl({ types: ['string'], string: { format: 'date-time' } }, 'key', {}, flags), 'DATETIME2');
    assert.equal(ddl({ types: ['string'], string: { contentEncoding: 'base64' } }, 'value', {}, flags), T);
  });
  it('stages user DDL as its own type where the bulk load encodes it, else as text, converting values for that type', () => {
    const u = (types: string[], DDL: string, role: 'key' | 'value' = 'value', extra: Partial<Inference> = {}) => col(utf8, { types, ...extra }, role, { DDL }).mapped;
    assert.equal(u(['integer'], 'DECIMAL(20)').stagingDdl, undefined);
    assert.equal(u(['integer'], 'DECIMAL(20)').toParam(2n ** 64n - 1n), '18446744073709551615');
    assert.equal(u(['number'], 'NUMERIC(10, 2)').toParam(1.25), '1.25');
    assert.equal(u(['string'], 'NUMERIC(10, 2)').toParam('-0.5e1'), '-0.5e1');
    assert.throws(() => u(['string'], 'DECIMAL(5)').toParam('abc'), /field 'f': "abc" is not a number, so it cannot be written to a DECIMAL column/);
    assert.equal(u(['integer'], 'INT').toParam(7), 7);
    assert.equal(u(['integer'], 'INT').stagingDdl, undefined);
    assert.equal(u(['string'], 'VARCHAR(20) COLLATE Latin1_General_CI_AS').stagingDdl, undefined);
    assert.equal(u(['string'], 'CHAR(4)').stagingDdl, 'varchar(4) COLLATE DATABASE_DEFAULT', 'tempdb\'s default collation is not the database\'s');
    assert.equal(u(['string'], 'nvarchar(10)').stagingDdl, 'nvarchar(10) COLLATE DATABASE_DEFAULT');
    assert.equal(u(['string'], 'nchar(2) COLLATE Latin1_General_CI_AS').stagingDdl, 'nvarchar(2) COLLATE Latin1_General_CI_AS');
    assert.deepEqual(u(['string'], 'BINARY(3)', 'value', { string: { contentEncoding: 'base64' } }).toParam('AAEC'), Buffer.from([0, 1, 2]));
    assert.equal(u(['string'], 'BINARY(3)').stagingDdl, 'varbinary(3)');
    assert.equal(u(['number'], 'MONEY').stagingDdl, T);
    assert.equal(u(['boolean'], 'MONEY').toParam(true), '1');
    assert.equal(u(['string'], 'DATETIMEOFFSET(3)', 'key').stagingDdl, 'varchar(900) COLLATE Latin1_General_100_BIN2_UTF8');
  });
  it('converts values: exact BIGINT beyond 2^53, JSON text, base64, numeric strings', () => {
    const big = col(utf8, { types: ['integer'] });
    assert.equal(big.mapped.toParam(2n ** 62n), 2n ** 62n);
    assert.equal(big.mapped.toParam(42), 42);
    assert.throws(() => big.mapped.toParam(2n ** 63n), /outside the BIGINT range/);
    assert.equal(col(utf8, { types: ['object'] }).mapped.toParam(new TextEncoder().encode('{"a":1}')), '{"a":1}');
    assert.equal(col(utf8, { types: ['boolean', 'integer', 'object'] }).mapped.toParam(7), '7');
    assert.deepEqual(col(utf8, { types: ['string'], string: { contentEncoding: 'base64' } }).mapped.toParam('AAEC'), Buffer.from([0, 1, 2]));
    assert.equal(col(utf8, { types: ['string'], string: { format: 'integer' } }).mapped.toParam('9223372036854775807.000'), 9223372036854775807n);
    assert.equal(col(utf8, { types: ['string'], string: { format: 'number' } }).mapped.toParam('NaN'), null);
    assert.equal(col(utf8, { types: ['string', 'number'], string: { format: 'number' } }).mapped.toParam('-1.5e3'), -1500);
  });
});

describe('compatibility', () => {
  const d = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8' });
  const ex = (dataType: string, extra: Partial<ExistingColumn> = {}): ExistingColumn => ({
    name: 'f', dataType, nullable: true, charLength: null, numericPrecision: null, numericScale: null, datetimePrecision: null, collation: null, primaryKey: 0, ...extra,
  });
  const c = (inference: Inference, role: 'key' | 'value' = 'value', cfg: FieldConfig = {}) => buildColumn(d, { field: 'f', ptr: '/f', inference }, role, cfg);

  it('explains an incompatible type like the reference does', () => {
    assert.deepEqual(d.compatibility(ex('bit'), c({ types: ['integer'] })), {
      kind: 'incompatible',
      reason: "Field 'f' is already being materialized as endpoint type 'BIT' but endpoint type 'BIGINT' is required by its schema '{ type: [integer] }'",
    });
  });
  it('accepts same types and long enough strings; migrates what SQL Server can convert', () => {
    assert.equal(d.compatibility(ex('float'), c({ types: ['number'] })).kind, 'compatible');
    assert.equal(d.compatibility(ex('varchar', { charLength: -1 }), c({ types: ['string'] })).kind, 'compatible');
    assert.equal(d.compatibility(ex('varchar', { charLength: 100 }), c({ types: ['string'], string: { maxLength: 16 } })).kind, 'compatible');
    assert.equal(d.compatibility(ex('varchar', { charLength: 10 }), c({ types: ['string'], string: { maxLength: 16 } })).kind, 'migratable');
    assert.equal(d.compatibility(ex('varchar', { charLength: 10 }), c({ types: ['string'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('nvarchar', { charLength: -1 }), c({ types: ['string'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('bigint'), c({ types: ['number'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('bigint'), c({ types: ['object'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('datetime2'), c({ types: ['string'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('varbinary', { charLength: -1 }), c({ types: ['string'] })).kind, 'migratable');
    assert.equal(d.compatibility(ex('varchar', { charLength: -1 }), c({ types: ['string'], string: { contentEncoding: 'base64' } })).kind, 'migratable');
    assert.equal(d.compatibility(ex('float'), c({ types: ['integer'] })).kind, 'incompatible');
    assert.equal(d.compatibility(ex('bigint', { primaryKey: 1 }), c({ types: ['string'] }, 'key')).kind, 'incompatible');
    assert.equal(d.compatibility(ex('int'), c({ types: ['integer'] }, 'value', { DDL: 'INT' })).kind, 'compatible');
  });
});

describe('collation', () => {
  it('prefers BIN2, UTF-8 and the newest version; falls back to non-UTF-8 on 2017', () => {
    const y2019 = ['Latin1_General_BIN', 'Latin1_General_BIN2', 'Latin1_General_100_BIN', 'Latin1_General_100_BIN2', 'Latin1_General_100_BIN2_UTF8', 'Latin1_General_100_CI_AS_SC_UTF8', 'Latin1_General_100_BIN2_UTF8_X'];
    assert.equal(chooseCollation(y2019), 'Latin1_General_100_BIN2_UTF8');
    assert.equal(chooseCollation(['Latin1_General_BIN', 'Latin1_General_BIN2', 'Latin1_General_100_BIN', 'Latin1_General_100_BIN2']), 'Latin1_General_100_BIN2');
    assert.equal(chooseCollation(['Latin1_General_CI_AS']), undefined);
    assert.equal(stringBaseType('Latin1_General_100_BIN2_UTF8'), 'varchar');
    assert.equal(stringBaseType('Latin1_General_100_BIN2'), 'nvarchar');
  });
});

describe('value parsing', () => {
  it('rejects malformed date-times, times and dates with the field named', () => {
    assert.throws(() => parseDateTime2('2024-13-01', 'ts'), { message: "field 'ts': '2024-13-01' is not an RFC 3339 date-time (e.g. 2024-05-01T12:00:00.1234567Z), so it cannot be written to a DATETIME2 column" });
    assert.throws(() => parseTime('25:00:00Z', 't'), /is not a time/);
    assert.throws(() => parseDate('2024-02-30', 'd'), /is not a date/);
    assert.throws(() => toBigInt('12.5', 'n'), /is not an integer string/);
    assert.throws(() => toDouble('abc', 'n'), /is not a number/);
    assert.throws(() => toBinary('@@@', 'b'), /is not base64/);
  });
  it('keeps 100 ns precision and converts to UTC (lower-case z accepted)', () => {
    const a = parseDateTime2('2024-05-01T12:00:00.1234567+02:00', 'ts');
    assert.equal(a.date.toISOString(), '2024-05-01T10:00:00.123Z');
    assert.ok(Math.abs(a.nanosecondDelta - 0.0004567) < 1e-12);
    assert.equal(parseDateTime2('2024-05-01t00:00:00z', 'ts').date.toISOString(), '2024-05-01T00:00:00.000Z');
    assert.equal(parseDateTime2('2024-05-01T00:00:00.123456789Z', 'ts').nanosecondDelta.toFixed(7), '0.0004567');
    const t = parseTime('23:30:00.5-01:00', 't');
    assert.equal(t.date.toISOString(), '1970-01-01T00:30:00.500Z');
    assert.equal(parseDate('0001-01-01', 'd').toISOString(), '0001-01-01T00:00:00.000Z');
    // A bigint in an object or array is a JSON number with every digit (as the runtime sent it), not a string.
    assert.equal(jsonText({ a: 1n, b: [2n ** 64n] } as never), '{"a":1,"b":[18446744073709551616]}');
  });
});
