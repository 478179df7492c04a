// The plane sends its built-in connectors keys and values as JSON (`key`/`values`, MaterializeDriverOptions.jsonKeys)
// instead of packed tuples (`keyPacked`/`valuesPacked`, what Flow's runtime sends). Data is sacred: the same
// documents, turned into request lines by the runtime's real materialize driver in either form and decoded as a
// connector's session decodes them (the fast path, else the envelope parse), must reach the T-SQL transactor as
// identical parameters — every bulk-loaded load key and store row, and each value as the TDS bulk encoder converts
// it — for every value shape the fixture's columns take.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SqlTransactor, buildTable } from '@sluice/materialize-sql';
import type { BulkTarget, Connection, PreparedStatement, SqlParam, SqlRow, Table } from '@sluice/materialize-sql';
import {
  MATERIALIZE_REQUESTS, MATERIALIZE_SCAN, decodeLoad, decodeStore, fastRequest, parseEnvelope,
} from '@sluice/runtime';
import type { DecodedLoad, DecodedStore, MaterializeResponse } from '@sluice/runtime';
import { MAX_KEY_UNKNOWN, runMaterializeDriver } from '@sluice/runtime/host';
import { lineSession } from '@sluice/runtime/testing';
import { createSqlServerDialect } from '../src/sqlserver-dialect.ts';
import { bulkColumn } from '../src/sqlserver-client.ts';
import { FIXTURE } from './fixture.ts';

/** Records bulk loads: each row's parameters, and each value as the bulk encoder converts it (or its error). */
class RecordingConnection implements Connection {
  readonly bulks: { target: string; rows: SqlParam[][]; converted: unknown[][] }[] = [];
  async exec(): Promise<number> { return 1; }
  async query(): Promise<SqlRow[]> { return []; }
  async *queryRows(): AsyncIterable<SqlRow> { /* no stored rows: nothing is loaded */ }
  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    const got: SqlParam[][] = [];
    for await (const r of rows) got.push([...r]);
    const converted = got.map((r) => r.map((v, i) => {
      try {
        return bulkColumn(target.columns[i]!.ddl, true).convert(v, target.columns[i]!.name);
      } catch (err) {
        return `error: ${(err as Error).message}`;
      }
    }));
    this.bulks.push({ target: target.name, rows: got, converted });
    return got.length;
  }
  prepare(): PreparedStatement { throw new Error('not used by the staged flow'); }
  async begin() {}
  async commit() {}
  async rollback() {}
  async close() {}
}

async function* iter<T>(items: T[]): AsyncIterable<T> { yield* items; }

const UUID = 'c0a8e6e0-9e1e-11ef-8000-0123456789ab';

// Per field of the fixture's binding 0 (key_value): the shapes it is given, round robin. Integers beyond 2^53 and
// 2^64 (both signs), -0, decimals, exponents, integral doubles, strings with escapes, \u escapes, lone surrogates,
// NUL and non-ASCII, true/false/null, absent (undefined), objects and arrays, numeric strings.
const SHAPES: Record<string, string[]> = {
  '123': ['1', '-0', '9007199254740993', '1e2'],
  '_meta/op': ['"c"', '"d"', '"u"'],
  array: ['[ ]', '[1,"a",[null]]', '[18446744073709551616,-0.0,1e2]', '["\\u0000",true,false]'],
  binary: ['"AAEC/w=="', '""'],
  boolean: ['true', 'false', 'null'],
  dateField: ['"2024-05-01"'],
  dateTimeField: ['"2024-05-01T10:00:00.1234567Z"', '"2024-05-01T10:00:00+02:00"'],
  timeField: ['"10:00:00.123Z"'],
  fieldWithProjection: ['"projected"', '"\\u00e9"'],
  integer: ['0', '-0', '-1', '9007199254740991', '9007199254740993', '-9223372036854775808', '9223372036854775807', '1.0', '1e2', 'null'],
  integerGt64Bit: ['18446744073709551615', '18446744073709551616', '-18446744073709551617', '123456789012345678901234567890', '1e19'],
  integerWithUserDDL: ['12345678901234567890', '-5', '1e3'],
  multiple: ['true', '7', '{"a":9007199254740993}', '1.5'],
  'nonAsciiκόσμε': ['"κόσμε"', '"\\ud83c\\udf89"'],
  number: ['1.5', '-2.25e-7', '1e300', '-0.0', '0.1', '1E+2', '12345678901234567890.5', '3', '9007199254740993', '5e-324', '1e400'],
  numberCastToString: ['1.5', '9007199254740993', '-0', '1e21'],
  object: ['{"b":1, "a":[1.0,9007199254740993,-0],"2":"x","1":{}}', '{"k":1,"k":2}', '{}', '{"s":"\\u00e9\\ud800","n":1e400}'],
  string: ['"plain"', '""', '"say \\"hi\\"\\n\\t\\\\ \\/"', '"\\u00e9\\u0041\\u20ac"', '"\\u0000nul"', '"\\ud83c alone"', '"x\\udf89"'],
  stringSized: ['"short"', '"São"'],
  stringHuge: ['"' + 'é'.repeat(300) + '"'],
  stringInteger: ['"1234567890123456789"', '7', '"-1"', '9007199254740993'],
  stringInteger39Chars: ['"123456789012345678901234567890123456789"', '"-0"'],
  stringNumber: ['"1.5e3"', '"NaN"', '2.5', '"-Infinity"', '"12345678901234567890.5"'],
  uuidField: [`"${UUID}"`],
  'a]b': ['"]"'],
  'a"string`with`quote\'characters': ['"\'"'],
  'with space': ['" "'],
  'dotted.name': ['"."'],
  key: ['"k"'],
  Select: ['"s"'],
  'é': ['"é"'],
};
const KEY1 = ['0', '-0', '1', '1.0', '9007199254740993', '-9223372036854775808', '9223372036854775807', '1e2', '42', '-7'];
const KEY_BINARY = ['"AA=="', '"/w=="', '"AAEC"', '""'];

/** JSON text of a member name (the fixture's hostile names included); `/` in a field name is a nested member. */
function member(field: string, value: string): string {
  if (field === '_meta/op') return '';
  return `${JSON.stringify(field === 'fieldWithProjection' ? 'fieldWithProjection' : field)}:${value}`;
}

function keyValueDoc(i: number, op: string): string {
  const parts = [`"key1":${KEY1[i % KEY1.length]}`, `"key2":${i % 2 === 0}`, `"key!binary":${KEY_BINARY[i % KEY_BINARY.length]}`];
  for (const [field, shapes] of Object.entries(SHAPES)) {
    if ((i + field.length) % 7 === 0) continue; // absent
    const m = member(field, shapes[(i + field.length) % shapes.length]!);
    if (m !== '') parts.push(m);
  }
  parts.push(`"_meta":{"uuid":"${UUID}","op":"${op}"}`);
  return `{${parts.join(',')}}`;
}

function transactions(): { binding: number; text: string }[][] {
  const txns: { binding: number; text: string }[][] = [[], []];
  for (let i = 0; i < 40; i++) {
    txns[i % 2]!.push({ binding: 0, text: keyValueDoc(i, i % 5 === 0 ? 'd' : 'c') });
    txns[i % 2]!.push({ binding: 1, text: `{"theKey":${['"k"', '"\\u00e9"', '"q\\"uote"', '"🎉"'][i % 4]},"aValue":${['1', '-0', '9007199254740993', '1e2', 'null'][i % 5]},"_meta":{"uuid":"${UUID}"}}` });
    txns[i % 2]!.push({ binding: 2, text: `{"ts":"2024-05-01T10:00:0${i % 10}Z","id":${['"a"', '"\\u0000"', '"São"'][i % 3]}}` });
    // Binding 3 has no document: it cannot serve loads, so its keys come in the first transaction only (all new).
    if (i % 2 === 0) txns[0]!.push({ binding: 3, text: `{"id":${['1', '-0', '9007199254740993', '2.0', '-9223372036854775808'][i % 5]}}` });
  }
  return txns;
}

/** The request lines the driver writes for the transactions, in either form (the connector answers as one with no rows). */
async function requestLines(jsonKeys: boolean): Promise<string[]> {
  const lines: string[] = [];
  const mem = lineSession((line) => {
    lines.push(line);
    const variant = line.slice(2, line.indexOf('"', 2));
    const answer = { open: 'opened', acknowledge: 'acknowledged', flush: 'flushed', startCommit: 'startedCommit' }[variant];
    if (answer !== undefined) mem.respond({ [answer]: {} } as unknown as MaterializeResponse);
  });
  const { session } = mem;
  const txns = transactions();
  let next = 0;
  await runMaterializeDriver({
    name: 'acmeCo/materialize-sqlserver', spec: FIXTURE, version: 'v1', session, state: {}, checkpoint: {}, jsonKeys,
    // The keys of the standard bindings with a document are loaded (each may exist).
    maxKeys: [MAX_KEY_UNKNOWN, MAX_KEY_UNKNOWN, MAX_KEY_UNKNOWN, undefined],
    nextTransaction: async () => {
      const t = txns[next++];
      return t === undefined ? undefined : { docs: t.map((d) => ({ binding: d.binding, data: Buffer.from(d.text), start: 0, end: Buffer.byteLength(d.text) })), checkpoint: { sources: { j: { readThrough: String(next) } } } };
    },
  });
  return lines;
}

/** Decodes the lines as a connector session does and runs them through the T-SQL transactor; its bulk loads. */
async function transactorParameters(lines: string[]): Promise<RecordingConnection['bulks']> {
  const dialect = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8' });
  const tables: Table[] = FIXTURE.bindings!.map((b, i) => buildTable(dialect, i, b.resourcePath!, b));
  const loadConn = new RecordingConnection();
  const storeConn = new RecordingConnection();
  const fence = { path: ['dbo', 'flow_checkpoints_v1'], materialization: 'acmeCo/materialize-sqlserver', keyBegin: 0, keyEnd: 4294967295, fence: 7, checkpoint: undefined };
  const t = new SqlTransactor({ dialect, loadConn, storeConn, tables, fence, hardDelete: false });
  const count = tables.length;
  let loads: DecodedLoad[] = [];
  let stores: DecodedStore[] = [];
  let n = 0;
  for (const text of lines) {
    const line = { text, line: ++n };
    const fast = fastRequest(line, count);
    const env = fast ?? parseEnvelope(line, MATERIALIZE_REQUESTS, 'request', 'stdin', MATERIALIZE_SCAN);
    if (env.variant === 'load') loads.push(fast?.load ?? decodeLoad(env, count));
    else if (env.variant === 'store') stores.push(fast?.store ?? decodeStore(env, count));
    else if (env.variant === 'flush') {
      if (loads.length > 0) await t.load(iter(loads), async () => undefined);
      loads = [];
    } else if (env.variant === 'startCommit') {
      await t.store(iter(stores));
      stores = [];
      await t.startCommit({ sources: {} });
      await t.acknowledge();
    }
  }
  await t.close?.();
  return [...loadConn.bulks, ...storeConn.bulks];
}

describe('materialize-sqlserver: keys and values as JSON or packed', () => {
  it('give the transactor identical parameters, for every value shape', async () => {
    const packedLines = await requestLines(false);
    const jsonLines = await requestLines(true);
    // The forms differ on the wire…
    const storesOf = (ls: string[]) => ls.filter((l) => l.startsWith('{"store"') || l.startsWith('{"load"'));
    assert.ok(storesOf(packedLines).every((l) => /"keyPacked":"/.test(l) && !/^\{"(store|load)":\{("binding":\d+,)?"key":\[/.test(l)));
    assert.ok(storesOf(jsonLines).every((l) => /^\{"(store|load)":\{("binding":\d+,)?"key":\[/.test(l)));
    assert.equal(storesOf(jsonLines).length, storesOf(packedLines).length);
    // …and nothing else does.
    const packed = await transactorParameters(packedLines);
    const json = await transactorParameters(jsonLines);
    assert.ok(packed.some((b) => b.target.startsWith('#flow_temp_load_')), 'keys were bulk-loaded');
    assert.ok(packed.reduce((n, b) => n + b.rows.length, 0) > 100, 'rows were bulk-loaded');
    assert.deepStrictEqual(json, packed);
  });
});
