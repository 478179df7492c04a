// The plane sends its built-in connectors keys and values as JSON (`key`/`values`, MaterializeDriverOptions.jsonKeys)
// instead of packed tuples (`keyPacked`/`valuesPacked`, what Flow's runtime sends). Data is sacred: the same
// documents, driven by the runtime's real materialize driver into the real bin, must leave byte-identical rows in
// real SQLite files whichever form carried them — for every value shape a field may hold, through stores of new
// rows, loads and updates of existing ones (the load optimization off: every key is loaded), and deletions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MAX_KEY_UNKNOWN, runMaterializeDriver, startConnector, type DriverSession } from '@sluice/runtime/host';
import type { JsonObject, MaterializeRequest, MaterializeResponse, MaterializationSpec } from '@sluice/runtime';
import { ALL_TYPES_VALUES, allTypesCollection, binding, materialization, twoKeyCollection } from './helpers/fixtures.ts';
import { BIN, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-json-keys-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const UUID = 'c0a8e6e0-9e1e-11ef-8000-0123456789ab';
const UUID2 = '0a8e6e00-9e1f-11ef-8000-0123456789ab';

/** A DriverSession over the real bin (stdin/stdout), as the plane's host session is. */
function binSession(): DriverSession<MaterializeRequest, MaterializeResponse> & { stderr: () => string } {
  const proc = startConnector({ command: process.execPath, args: [BIN] }, { protocol: 'materialize', name: 'materialize-sqlite' });
  const batches = proc.responseBatches()[Symbol.asyncIterator]() as AsyncIterator<MaterializeResponse[]>;
  let batch: MaterializeResponse[] = [];
  return {
    send: (r) => proc.send(r as never),
    sendLine: (line) => proc.sendLine(line),
    sendLines: (bytes, written) => proc.sendLines(bytes, written),
    async recv() {
      while (batch.length === 0) {
        const r = await batches.next();
        if (r.done) return undefined;
        batch = r.value;
      }
      return batch.shift();
    },
    async close() {
      proc.endInput();
      await proc.wait();
    },
    kill: () => void proc.kill(0),
    stderr: () => proc.logs.map((l) => l.msg).join('\n'),
  };
}

// Every shape per column type (the all-types collection: INTEGER, REAL, TEXT, BOOLEAN, BLOB columns, numeric
// strings, objects, arrays, a multi-type field), keyed by integers written every way JSON allows.
const INTS = ['0', '-0', '1', '-1', '1.0', '1e2', '9007199254740991', '9007199254740993', '-9007199254740993', '9223372036854775807', '-9223372036854775808'];
const BIGS = ['18446744073709551615', '18446744073709551616', '-18446744073709551617', '123456789012345678901234567890', '1e20', '0'];
const NUMS = ['1.5', '-2.25e-7', '1e300', '-0.0', '0.1', '1E+2', '12345678901234567890.5', '3', '9007199254740993', '5e-324'];
const STRS = ['"plain"', '""', '"São Paulo ☃ 🎉"', '"say \\"hi\\"\\n\\t\\\\ \\/"', '"\\u00e9\\u0041\\u20ac"', '"\\u0000nul"', '"\\ud83c\\udf89"', '"\\ud83c alone"', '"x\\udf89"', '"line\\r\\nbreak"'];
const STR_INTS = ['"12345"', '"-9223372036854775808"', '"0"', '"7.000"'];
const STR_NUMS = ['"1.5e3"', '"NaN"', '"-Infinity"', '"0.1"', '"12345678901234567890.5"'];
const OBJS = ['{"b":1, "a":[1.0,9007199254740993,-0],"2":"x","1":{}}', '{"k":1,"k":2}', '{}', '{"s":"\\u00e9\\ud800","n":1e400}', '{ "deep" : { "x" : [ 1 , 2 ] } }'];
const ARRS = ['[ ]', '[1,"a",[null]]', '[18446744073709551616,-0.0,1e2]', '["\\u0000",true,false]'];
const MULTI = ['1', '"x"', '9007199254740993', '"\\u00e9"', 'null'];

const SCALAR_VALUES = ALL_TYPES_VALUES.filter((f) => !['obj', 'arr', 'multi'].includes(f));

function doc(i: number, id: string, op = 'c', uuid = UUID): string {
  const pick = (xs: string[]) => xs[i % xs.length]!;
  const members = [
    `"id":${id}`, `"_meta":{"uuid":"${uuid}","op":"${op}"}`, `"bool":${i % 2 === 0}`, `"str":${pick(STRS)}`,
    `"num":${pick(NUMS)}`, `"bigint":${pick(BIGS)}`, `"strInt":${pick(STR_INTS)}`, `"strNum":${pick(STR_NUMS)}`,
    `"obj":${pick(OBJS)}`, `"arr":${pick(ARRS)}`, `"multi":${pick(MULTI)}`, '"bin":"AAEC/w=="', '"date":"2024-05-01"', '"ts":"2024-05-01T10:00:00.123456789Z"',
  ];
  if (i % 3 !== 0) members.push(`"int":${pick(INTS)}`); // else absent
  if (i % 4 === 1) members.push('"int":null');
  return `{${members.join(',')}}`;
}

/** The two-key collection (string, integer): string keys with escapes and non-ASCII. */
function event(i: number, tenant: string, seq: string, value: string): string {
  return `{"tenant":${tenant},"seq":${seq},"value":${value},"_meta":{"uuid":"${i % 2 ? UUID : UUID2}"}}`;
}

function transactions(): { binding: number; text: string }[][] {
  const first: { binding: number; text: string }[] = [];
  const second: { binding: number; text: string }[] = [];
  // Distinct keys (1.0 and 1e2 are the keys 1 and 100: written once each).
  const ids = ['0', '1', '2', '100', '9007199254740993', '-9007199254740993', '9223372036854775807', '-9223372036854775808', '42', '7'];
  ids.forEach((id, i) => {
    first.push({ binding: 0, text: doc(i, id) });
    first.push({ binding: 2, text: doc(i + 1, id) });
  });
  // The same keys again, written otherwise: updates of stored rows (loaded), one deletion, a later publication.
  ['-0', '1.0', '2', '1e2', '9007199254740993', '-9007199254740993', '9223372036854775807', '-9223372036854775808', '42', '7'].forEach((id, i) => {
    second.push({ binding: 0, text: doc(i + 5, id, i === 8 ? 'd' : 'u', UUID2) });
    second.push({ binding: 2, text: doc(i + 2, id, 'u', UUID2) });
  });
  const tenants = ['"acme"', '"São"', '"\\u00e9t\\u00e9"', '"q\\"uote"', '"\\ud83c\\udf89"', '""'];
  const values = ['1.5', '-0', '9007199254740993', '1e400', 'null', '0.30000000000000004'];
  tenants.forEach((t, i) => {
    first.push({ binding: 1, text: event(i, t, String(i), values[i]!) });
    second.push({ binding: 1, text: event(i + 1, t, String(i), values[(i + 2) % values.length]!) });
    second.push({ binding: 1, text: event(i, t, `${i + 10}`, values[(i + 3) % values.length]!) });
  });
  return [first, second];
}

async function materializeInto(path: string, jsonKeys: boolean): Promise<void> {
  const spec = materialization(path, [
    binding('all_types', allTypesCollection(), { keys: ['id'], values: ALL_TYPES_VALUES, document: 'flow_document' }),
    binding('events', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'], document: 'flow_document' }),
    // Scalars only, no document (delta updates): the connector reads these lines on its fast path (objects and
    // arrays take the envelope parse).
    binding('scalars', allTypesCollection(), { keys: ['id'], values: SCALAR_VALUES }, { delta: true }),
  ]) as MaterializationSpec;
  await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });
  const txns = transactions();
  let next = 0;
  const session = binSession();
  const lines: string[] = [];
  const recording: DriverSession<MaterializeRequest, MaterializeResponse> = {
    ...session,
    sendLines: (bytes, written) => {
      lines.push(...Buffer.from(bytes).toString('utf8').split('\n'));
      return session.sendLines!(bytes, written);
    },
  };
  try {
    await runMaterializeDriver({
      name: 'acmeCo/mat', spec, version: 'v1', session: recording, state: {}, checkpoint: {}, jsonKeys,
      // Every key may exist: each is loaded, so the second transaction updates the rows the first stored.
      maxKeys: [MAX_KEY_UNKNOWN, MAX_KEY_UNKNOWN, MAX_KEY_UNKNOWN],
      nextTransaction: async () => {
        const t = txns[next++];
        return t === undefined ? undefined : { docs: t.map((d) => ({ binding: d.binding, data: Buffer.from(d.text), start: 0, end: Buffer.byteLength(d.text) })), checkpoint: { sources: { j: { readThrough: String(next) } } } };
      },
    });
  } catch (err) {
    throw new Error(`the session (${jsonKeys ? 'JSON' : 'packed'} form) failed: ${(err as Error).message}\n${session.stderr()}`, { cause: err });
  }
  // The form asked for is the one that went out.
  const stores = lines.filter((l) => l.startsWith('{"store"'));
  assert.ok(stores.length > 0);
  for (const l of stores) assert.equal(/^\{"store":\{("binding":\d+,)?"key":\[/.test(l), jsonKeys, l.slice(0, 100));
}

/** Every row of a table, each column as SQLite's quote() writes it (type and exact value: integer, real, text, blob). */
function rows(path: string, table: string, order: string): string[][] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const columns = (db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name);
    const select = columns.map((c) => `quote("${c}") || ' ' || typeof("${c}")`).join(', ');
    return (db.prepare(`SELECT ${select} FROM "${table}" ORDER BY ${order}`).all() as Record<string, string>[]).map((r) => [...columns.keys()].map((i) => Object.values(r)[i]!));
  } finally {
    db.close();
  }
}

test('packed and JSON keys and values leave byte-identical rows, for every value shape', async () => {
  const packed = join(dir, 'packed.db');
  const json = join(dir, 'json.db');
  await materializeInto(packed, false);
  await materializeInto(json, true);
  const allTypes = rows(packed, 'all_types', 'id');
  const events = rows(packed, 'events', 'tenant, seq');
  const scalars = rows(packed, 'scalars', 'id, flow_published_at, _rowid_');
  // The second transaction updated the stored rows, deleted none (soft deletes), and added events.
  assert.equal(allTypes.length, 10);
  assert.equal(events.length, 12);
  assert.equal(scalars.length, 20);
  assert.deepEqual(rows(json, 'all_types', 'id'), allTypes);
  assert.deepEqual(rows(json, 'events', 'tenant, seq'), events);
  assert.deepEqual(rows(json, 'scalars', 'id, flow_published_at, _rowid_'), scalars);
  // The rows hold what the documents said (a spot check that the comparison is of real values).
  const text = [...allTypes, ...scalars].flat().join('\n');
  for (const want of ['9007199254740993 integer', '-9223372036854775808 integer', "'São Paulo ☃ 🎉' text", "X'000102FF' blob"]) {
    assert.ok(text.includes(want), `a row holds ${want}`);
  }
});
