// The byte packer (pack-bytes.ts) must pack exactly what the parse path packs (createPacker over
// parseDocument's value) and tell deletions alike — or give up, so that the caller parses. Each case
// says whether the byte path must take it (the fast path is used, not just correct by falling back).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBytePacker, type BytePacker } from '../src/protocol/pack-bytes.ts';
import { createPacker } from '../src/protocol/pack.ts';
import { parseDocument } from '../src/protocol/documents.ts';
import { isDeletion } from '../src/host/materialize-driver.ts';
import type { CollectionSpec, FieldSelection } from '../src/protocol/specs.ts';
import { uuidMillis, uuidMillisOfBytes } from '../src/protocol/uuid.ts';
import { ByteSink, unpackTuple, type TupleValue } from '../src/protocol/tuple.ts';
import { parseJsonTuple, scanJsonTuple } from '../src/protocol/json-values.ts';

const collection: CollectionSpec = {
  name: 'a/things',
  key: ['/id'],
  projections: [
    { field: 'id', ptr: '/id' },
    { field: 'n', ptr: '/n' },
    { field: 's', ptr: '/s' },
    { field: 'obj', ptr: '/obj' },
    { field: 'arr', ptr: '/arr' },
    { field: 'deep', ptr: '/a/b/c' },
    { field: 'a_b', ptr: '/a/b' },
    { field: 'uuid', ptr: '/_meta/uuid' },
    { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { string: { format: 'date-time' } } },
    { field: 'slash', ptr: '/x~1y' },
    { field: 'tilde', ptr: '/x~0y' },
    { field: 'unicode', ptr: '/ünï' },
    { field: 'first', ptr: '/list/0' },
    { field: 'whole', ptr: '' },
  ] as NonNullable<CollectionSpec['projections']>,
};
const selection: FieldSelection = { keys: ['id'], values: ['n', 's', 'obj', 'arr', 'deep', 'a_b', 'uuid', 'flow_published_at', 'slash', 'tilde', 'unicode'], document: 'flow_document' };

const UUID = 'c0a8e6e0-9e1e-11ef-8000-0123456789ab';

/**
 * Packs `text` both ways; returns whether the byte path took it. `shared`: a packer that packed other documents
 * before (the driver keeps one per binding, and it remembers their member order), else a new one.
 */
function compare(text: string, sel: FieldSelection = selection, shared?: BytePacker): boolean {
  const bytes = Buffer.from(text, 'utf8');
  // In the middle of a larger buffer, as journal chunks hold lines.
  const buf = Buffer.concat([Buffer.from('{"x":1}\n'), bytes, Buffer.from('\n{"y":2}\n')]);
  const bp = shared ?? createBytePacker(collection, sel)!;
  const took = bp.pack(buf, 8, 8 + bytes.length);
  let parsed: unknown;
  try {
    parsed = parseDocument(buf.toString('utf8', 8, 8 + bytes.length));
  } catch {
    assert.equal(took, false, `the byte path took what JSON.parse refuses: ${text}`);
    return false;
  }
  if (!took) return false;
  const p = createPacker(collection, sel);
  const doc = parsed as Parameters<typeof p.keyBytes>[0];
  assert.deepEqual(Buffer.from(bp.key.buf.subarray(0, bp.key.len)).toString('hex'), p.keyBytes(doc).toString('hex'), `key of ${text}`);
  assert.deepEqual(Buffer.from(bp.values.buf.subarray(0, bp.values.len)).toString('hex'), Buffer.from(p.valuesView(doc)).toString('hex'), `values of ${text}`);
  assert.equal(bp.deletion, isDeletion(doc), `deletion of ${text}`);
  // The JSON form (`key`/`values`, json-values.ts) decodes to exactly what the packed form unpacks to, both
  // from the bytes (jsonInto) and from the parse path (keyJson/valuesJson); the connector's fast scan of the
  // arrays, where it takes them, agrees with their parse.
  const key = unpackTuple(p.keyBytes(doc));
  const values = unpackTuple(p.valuesView(doc));
  const out = new ByteSink();
  assert.equal(bp.jsonInto(buf, 8, 8 + bytes.length, out), true, `jsonInto takes what pack takes: ${text}`);
  assert.equal(Buffer.from(bp.key.buf.subarray(0, bp.key.len)).toString('hex'), p.keyBytes(doc).toString('hex'), `jsonInto packs the key of ${text}`);
  assert.equal(bp.deletion, isDeletion(doc), `deletion (JSON form) of ${text}`);
  const json = out.buf.toString('utf8', 0, out.len);
  const keyJson = out.buf.toString('utf8', 0, bp.jsonKeyLen);
  const valuesJson = json.slice(keyJson.length);
  assert.equal(keyJson + valuesJson, json, `the key's JSON ends on a character boundary: ${json}`);
  for (const [form, k, v] of [['bytes', keyJson, valuesJson], ['parse', p.keyJson(doc), p.valuesJson(doc)]] as const) {
    assert.deepStrictEqual(parseJsonTuple(k), key, `key (JSON from ${form}: ${k}) of ${text}`);
    assert.deepStrictEqual(parseJsonTuple(v), values, `values (JSON from ${form}: ${v}) of ${text}`);
    for (const [arr, expected] of [[k, key], [v, values]] as const) {
      const scanned: TupleValue[] = [];
      const end = scanJsonTuple(`x${arr}y`, 1, scanned);
      if (end >= 0) {
        assert.equal(end, arr.length + 1, `the scan ends after the array: ${arr}`);
        assert.deepStrictEqual(scanned, expected, `the scan of ${arr} (from ${form}) of ${text}`);
      }
    }
  }
  return true;
}

const taken = (text: string) => assert.equal(compare(text), true, `the byte path should take ${text}`);
const refused = (text: string) => assert.equal(compare(text), false, `the byte path should leave ${text} to the parse`);

describe('byte packer: the same bytes as the parse path', () => {
  it('strings, plain and escaped, ASCII and not', () => {
    taken(`{"id":"k1","s":"plain","_meta":{"uuid":"${UUID}"}}`);
    taken('{"id":"São Paulo","s":"Zürich ☃ 🎉 Reykjavík"}');
    taken('{"id":"q","s":"late, but \\"fine\\""}');
    taken('{"id":"e","s":"\\\\ \\/ \\b \\f \\n \\r \\t"}');
    taken('{"id":"u","s":"\\u00e9\\u0041\\u20ac\\u0000 nul"}');
    taken('{"id":"pair","s":"\\ud83c\\udf89 party"}');
    taken('{"id":"lone-hi","s":"\\ud83c alone"}');
    taken('{"id":"lone-hi-end","s":"x\\ud83c"}');
    taken('{"id":"lone-lo","s":"\\udf89 alone"}');
    taken('{"id":"hi-hi","s":"\\ud83c\\ud83c\\udf89"}');
    taken('{"id":"hi-then-char","s":"\\ud83c\\u0041"}');
    taken(`{"id":"${'long'.repeat(40)}","s":"${'é'.repeat(100)}"}`);
    taken('{"id":"","s":""}');
  });
  it('numbers: small and large integers, decimals, exponents, negative zero', () => {
    taken('{"id":1,"n":0}');
    taken('{"id":-1,"n":-0}');
    taken('{"id":999999999999999,"n":-999999999999999}');
    taken('{"id":9007199254740991,"n":9007199254740992}');
    taken('{"id":9007199254740993,"n":-9007199254740993}');
    taken('{"id":123456789012345678901234567890,"n":18446744073709551616}');
    taken('{"id":1.5,"n":-0.25}');
    taken('{"id":1.0,"n":1e2}');
    taken('{"id":1E+2,"n":2.5e-3}');
    taken('{"id":12345678901234567890.5,"n":1.234567890123456789012345}');
    taken('{"id":1e300,"n":1e400}');
    taken('{"id":9007199254740993.0,"n":1e20}');
    taken('{"id":1000000000000000,"n":-0.0}');
  });
  it('null, booleans, absent fields, objects and arrays as values', () => {
    taken('{"id":null,"n":true,"s":false}');
    taken('{}');
    taken('{"id":"o","obj":{"b":1,"a":[1,2,{"c":null}],"big":9007199254740993,"d":1.0,"e":"\\u00e9"},"arr":[3,"x",[],{}]}');
    taken('{"id":"o2","obj":{"2":"b","1":"a","x":1},"arr":[ 1 , 2 ]}');
    taken('{"id":"o3","obj":{"k":1,"k":2}}');
    taken('{"id":"deep","a":{"b":{"c":"here","d":[1]}}}');
    taken('{"id":"deep2","a":{"b":5}}');
    taken('{"id":"deep3","a":{"b":[{"c":1}]}}');
    taken('{"id":"deep4","a":[1]}');
    taken('{"id":"names","x/y":"slash","x~y":"tilde","ünï":"unicode","x~1y":"not slash"}');
  });
  it('duplicate members: the last one wins, nested ones too', () => {
    taken('{"id":"first","id":"second"}');
    taken('{"id":"d","a":{"b":{"c":"one"}},"a":{"b":{}}}');
    taken('{"id":"d2","a":{"b":{"c":"one"}},"a":5}');
    taken('{"id":"d3","a":{"b":{"c":"one"},"b":{"c":"two"}}}');
    taken(`{"id":"m","_meta":{"uuid":"${UUID}","op":"d"},"_meta":{"uuid":"${UUID}"}}`);
    taken(`{"id":"m2","_meta":{"uuid":"${UUID}"},"_meta":{"op":"d"}}`);
  });
  it('deletions: _meta/op is "d" (escaped too), and nothing else is', () => {
    taken(`{"id":"del","_meta":{"uuid":"${UUID}","op":"d"}}`);
    taken('{"id":"del2","_meta":{"op":"\\u0064"}}');
    taken('{"id":"not","_meta":{"op":"u"}}');
    taken('{"id":"not2","_meta":{"op":"dd"}}');
    taken('{"id":"not3","_meta":["op","d"]}');
    taken('{"id":"not4","_meta":{"op":null},"op":"d"}');
    taken('{"id":"not5","_meta":"d"}');
  });
  it('published-at: from the UUID, absent or not a v1 UUID', () => {
    taken(`{"id":1,"_meta":{"uuid":"${UUID}"}}`);
    taken('{"id":1,"_meta":{"uuid":"not-a-uuid"}}');
    taken('{"id":1,"_meta":{"uuid":7}}');
    taken(`{"id":1,"_meta":{"uuid":"\\u0063${UUID.slice(1)}"}}`);
  });
  it('uuidMillisOfBytes reads what uuidMillis reads', () => {
    const uuids = [UUID, UUID.toUpperCase(), '00000000-0000-1000-8000-000000000000', 'ffffffff-ffff-1fff-bfff-ffffffffffff',
      '13814000-1dd2-11b2-8000-000000000000', '13813fff-1dd2-11b2-8000-000000000000', '1381e3c0-1dd2-11b2-8000-000000000000',
      'c0a8e6e0-9e1e-21ef-8000-0123456789ab', 'c0a8e6e0-9e1e-11ef-8000-0123456789a', 'c0a8e6e0+9e1e-11ef-8000-0123456789ab', 'g0a8e6e0-9e1e-11ef-8000-0123456789ab'];
    for (let i = 0; i < 200; i++) uuids.push(`${(i * 2654435761 >>> 0).toString(16).padStart(8, '0')}-${(i * 40503 & 0xffff).toString(16).padStart(4, '0')}-1${(i * 7 & 0xfff).toString(16).padStart(3, '0')}-8000-000000000000`);
    for (const u of uuids) {
      const b = Buffer.from(`xx${u}yy`, 'latin1');
      assert.equal(uuidMillisOfBytes(b, 2, 2 + u.length), uuidMillis(u), u);
    }
  });
  it('whitespace anywhere JSON allows it', () => {
    taken(' \t\r\n{ "id" : "w" , "n" : [ 1 , 2 ] , "obj" : { "a" : 1 } , "s" : "x" } \n');
  });
  it('leaves to the parse what it does not handle, and what JSON.parse refuses', () => {
    // A pointer into an array.
    assert.equal(compare('{"id":1,"list":[7]}', { keys: ['id'], values: ['first'] }), false);
    // …but an object member named "0" is fine.
    assert.equal(compare('{"id":1,"list":{"0":7}}', { keys: ['id'], values: ['first'] }), true);
    // An escaped member name on a selected path.
    refused('{"\\u0069d":"escaped name"}');
    // Invalid JSON (the parse then throws as it always did).
    for (const bad of ['', '{', '{"id":}', '{"id":1,}', '{"id":01}', '{"id":1.}', '{"id":-}', '{"id":1e}', '{"id":tru}', '{"id":"a\u0001"}',
      '{"id":"\\x"}', '{"id":"\\u12"}', '{"id":1} x', '[1]', '"s"', '{"id":[1,]}', '{"id":{"a" 1}}', '{id:1}', '{"id":nul}', '{"id":fals}']) {
      refused(bad);
    }
    // Nesting deeper than the scanner recurses.
    refused(`{"id":1,"obj":${'['.repeat(100)}${']'.repeat(100)}}`);
  });
  it('invalid UTF-8 is left to the parse (which decodes it to U+FFFD)', () => {
    const bp = createBytePacker(collection, selection)!;
    for (const bytes of [[0xc3], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xff], [0x80]]) {
      const doc = Buffer.concat([Buffer.from('{"id":"'), Buffer.from(bytes), Buffer.from('"}')]);
      assert.equal(bp.pack(doc, 0, doc.length), false, `bytes ${bytes.join(',')}`);
    }
  });
  it('a selection with the whole document as a field is not read from bytes', () => {
    assert.equal(createBytePacker(collection, { keys: ['id'], values: ['whole'] }), undefined);
  });
  it('one packer over many documents: member order remembered, and any other order, name or escape still read right', () => {
    // The packer compares the member it saw at a position last time in place; every other case must still be read
    // as a new packer reads it.
    const bp = createBytePacker(collection, selection)!;
    const u2 = 'c1a8e6e0-9e1e-11ef-8000-0123456789ab'; // another millisecond (the packer keeps the last one's element)
    const docs = [
      `{"id":"a","n":1,"s":"x","_meta":{"uuid":"${UUID}"}}`,
      `{"id":"b","n":2,"s":"y","_meta":{"uuid":"${UUID}"}}`,
      `{"id":"b2","nn":4,"n":5,"s":"v"}`,
      // Another member where "n" was, one whose name starts with a remembered one, one the remembered one starts with.
      `{"id":"c","s":"z","n":3,"_meta":{"uuid":"${u2}"}}`,
      `{"id":"d","nn":4,"n":5,"s":"w","_meta":{"uuid":"${u2}"}}`,
      `{"i":"e","id":"f","n":6}`,
      // The remembered name escaped (declined, as by a new packer), then plain again.
      '{"\\u0069d":"g","n":7}',
      '{"id":"h","n":8}',
      // Fewer members, then more, nested ones reordered, a name with escapes that is not selected.
      '{"id":"i"}',
      `{"id":"j","a":{"b":{"c":1}},"n":9,"x\\"y":1,"_meta":{"op":"d","uuid":"${UUID}"}}`,
      `{"id":"k","_meta":{"uuid":"${UUID}","op":"d"},"a":{"b":{"c":2}},"n":10}`,
      `{"id":"l","n":11,"_meta":{"uuid":"not a uuid"}}`,
      `{"id":"m","n":12,"_meta":{"uuid":"${UUID}"}}`,
    ];
    for (let r = 0; r < 3; r++) {
      for (const d of docs) assert.equal(compare(d, selection, bp), compare(d), `taken alike: ${d}`);
    }
  });
  it('random documents agree', () => {
    let seed = 11;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const scalar = (): string => {
      switch (rand(10)) {
        case 0: return 'null';
        case 1: return rand(2) ? 'true' : 'false';
        case 2: return String(rand(1 << 30) - (1 << 29));
        case 3: return `${rand(2) ? '-' : ''}${rand(9) + 1}${'0123456789'.slice(rand(10)).repeat(1 + rand(3))}`;
        case 4: return `${rand(1000)}.${rand(1000)}e${rand(40) - 20}`;
        case 5: return JSON.stringify(['é', 'a"b', 'x\\y', '\u0000', '🎉', 'tab\t', 'plain', '\ud800'][rand(8)]);
        case 6: return `"${['\\u00e9', '\\ud83c\\udf89', '\\n', '\\/', 'ü', 'z'][rand(6)]!.repeat(1 + rand(4))}"`;
        case 7: return `[${scalar()},${scalar()}]`;
        case 8: return `{"k":${scalar()},"${['a', 'b', 'k'][rand(3)]}":${scalar()}}`;
        default: return `"s${rand(100)}"`;
      }
    };
    const names = ['id', 'n', 's', 'obj', 'arr', 'a', 'x/y', 'ünï', '_meta', 'other'];
    let fast = 0;
    const shared = createBytePacker(collection, selection)!;
    for (let round = 0; round < 3000; round++) {
      const members: string[] = [];
      for (let m = rand(8); m >= 0; m--) {
        const name = names[rand(names.length)]!;
        let value = scalar();
        if (name === 'a') value = rand(2) ? `{"b":{"c":${scalar()}},"b":${rand(2) ? scalar() : `{"c":${scalar()}}`}}` : `{"b":${scalar()}}`;
        if (name === '_meta') value = `{"uuid":"${UUID}"${rand(2) ? `,"op":${rand(2) ? '"d"' : scalar()}` : ''}}`;
        members.push(`${JSON.stringify(name)}:${value}`);
      }
      const text = `{${members.join(',')}}`;
      const took = compare(text);
      if (took) fast++;
      // Also through one packer that read every earlier document (it remembers their member orders).
      assert.equal(compare(text, selection, shared), took, `a packer used before takes alike: ${text}`);
    }
    // Nearly all of them are valid JSON the byte path reads.
    assert.ok(fast > 2900, `the byte path took ${fast} of 3000`);
  });
});
