// A materialize session's fast path for store and load lines (fastRequest) must decode exactly what the usual
// path (parseEnvelope with MATERIALIZE_SCAN, then decodeStore / decodeLoad) decodes, or decline (undefined) —
// never a different answer, and never accept a line the usual path rejects.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEnvelope } from '../src/protocol/envelope.ts';
import { MATERIALIZE_REQUESTS, MATERIALIZE_SCAN, decodeLoad, decodeStore, fastRequest } from '../src/connector/materialize.ts';
import { packTupleBase64, type TupleValue } from '../src/protocol/tuple.ts';
import type { DecodedLoad, DecodedStore } from '../src/connector/types.ts';

const BINDINGS = 3;

type Usual = { variant: string; store?: DecodedStore; load?: DecodedLoad } | undefined;

function usual(text: string): Usual {
  try {
    const env = parseEnvelope({ text, line: 5 }, MATERIALIZE_REQUESTS, 'request', 'stdin', MATERIALIZE_SCAN);
    if (env.variant === 'store') return { variant: 'store', store: decodeStore(env, BINDINGS) };
    if (env.variant === 'load') return { variant: 'load', load: decodeLoad(env, BINDINGS) };
    return { variant: env.variant };
  } catch {
    return undefined;
  }
}

function plainStore(s: DecodedStore): object {
  return { binding: s.binding, key: s.key, values: s.values, keyPacked: s.keyPacked, exists: s.exists, delete: s.delete, docJson: s.docJson, doc: s.doc };
}

/** Asserts that fastRequest agrees with the usual path on `text`; returns whether it answered. */
function check(text: string): boolean {
  const fast = fastRequest({ text, line: 5 }, BINDINGS);
  if (fast === undefined) return false;
  const want = usual(text);
  assert.ok(want !== undefined, `the fast path accepted a line the usual path rejects: ${text}`);
  assert.equal(fast.variant, want.variant, text);
  assert.equal(fast.line, 5);
  if (want.variant === 'store') {
    assert.ok(fast.store !== undefined && want.store !== undefined, text);
    assert.deepStrictEqual(plainStore(fast.store), plainStore(want.store), text);
  } else {
    assert.equal(want.variant, 'load', text);
    assert.deepStrictEqual(fast.load, want.load, text);
  }
  return true;
}

const KEY = packTupleBase64(['c1df93be-499998']);
const VALUES = packTupleBase64(['Reykjavík', 'ios-17.5.1', '50.1', 42, -7, 2 ** 53 + 2, 10n ** 20n, 1.5, null, true, false, 'nul\u0000in', '🎉 ☃', new Uint8Array([1, 0, 255]), ['a', 1]]);
const DOC = '{"ride_id":"c1df93be-499998","city":"Reykjavík","n":12345678901234567890,"e":"say \\"hi\\"\\n","_meta":{"uuid":"98b78aec-e935-11f1-8000-c9e947e380c5","a":[1,null]}}';
const STORE = `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC}}}`;
const LOAD = `{"load":{"keyPacked":"${KEY}"}}`;
// The JSON form (`key`/`values`, what the plane sends its built-in connectors): the same values where JSON has them.
const KEY_JSON = '["c1df93be-499998"]';
const VALUES_JSON = '["Reykjavík","ios-17.5.1","50.1",42,-7,9007199254740994,100000000000000000000,1.5,null,true,false,"nul\\u0000in","🎉 ☃","say \\"hi\\"\\n\\ud800",1e2,-0,-0.0,1E-3,18446744073709551616]';
const VALUES_JSON_TUPLE: TupleValue[] = ['Reykjavík', 'ios-17.5.1', '50.1', 42, -7, 2n ** 53n + 2n, 10n ** 20n, 1.5, null, true, false, 'nul\u0000in', '🎉 ☃', 'say "hi"\n\ufffd', 100, 0, 0, 0.001, 2n ** 64n];
const STORE_JSON = `{"store":{"key":${KEY_JSON},"values":${VALUES_JSON},"doc":${DOC}}}`;
const LOAD_JSON = `{"load":{"key":${KEY_JSON}}}`;

describe('fastRequest: the lines the plane writes are answered, as the usual path answers them', () => {
  const answered = [
    STORE, LOAD,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"exists":true}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"exists":false,"delete":true}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":{"exists":true},"delete":false}}`,
    `{"store":{"binding":2,"keyPacked":"${KEY}","valuesPacked":"","doc":{}}}`,
    `{"store":{"binding":0,"keyPacked":"FQE=","valuesPacked":"AmEAFQU=","doc":{"a":1}}}`,
    '{"load":{"binding":1,"keyPacked":"FQE="}}',
    // No document selected.
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}"}}`,
    `{"store":{"binding":1,"keyPacked":"${KEY}","valuesPacked":"","exists":true,"delete":true}}`,
    // base64url characters decode as the usual path decodes them (the same decoder).
    '{"load":{"keyPacked":"Ams_AA=="}}',
    // The JSON form.
    STORE_JSON, LOAD_JSON,
    `{"store":{"key":${KEY_JSON},"values":${VALUES_JSON},"doc":${DOC},"exists":true,"delete":true}}`,
    `{"store":{"binding":2,"key":[1,"a",null],"values":[],"doc":{}}}`,
    `{"store":{"binding":1,"key":[${'9'.repeat(30)}],"values":["x"],"exists":true}}`,
    `{"store":{"key":${KEY_JSON},"values":${VALUES_JSON}}}`,
    '{"load":{"binding":2,"key":[true,false,-1.5e-300,""]}}',
  ];
  for (const text of answered) {
    it(text.slice(0, 100), () => {
      assert.equal(check(text), true);
    });
  }
  it('the JSON form decodes to the values the packed form unpacks to', () => {
    const fast = fastRequest({ text: STORE_JSON, line: 1 }, BINDINGS);
    const packed = fastRequest({ text: `{"store":{"keyPacked":"${KEY}","valuesPacked":"${packTupleBase64(VALUES_JSON_TUPLE)}","doc":${DOC}}}`, line: 1 }, BINDINGS);
    assert.ok(fast?.store !== undefined && packed?.store !== undefined);
    assert.deepStrictEqual(fast.store.key, packed.store.key);
    assert.deepStrictEqual(fast.store.values, packed.store.values);
    assert.deepStrictEqual(fast.store.values, VALUES_JSON_TUPLE);
    // Objects and arrays (left to the usual path) are the bytes of their compact JSON text, as Flow packs them.
    const withObjects = usual(`{"store":{"key":[{"b":1, "a":[1.0,9007199254740993]}],"values":[["x",{}]],"doc":{}}}`);
    assert.deepStrictEqual(withObjects?.store?.key, [new TextEncoder().encode('{"b":1,"a":[1,9007199254740993]}')]);
    assert.deepStrictEqual(withObjects?.store?.values, [new TextEncoder().encode('["x",{}]')]);
    // Integers beyond 2^53 keep their digits on the usual path too (it reads the member's text, not JSON.parse's number).
    const big = usual('{"store":{"key":[9007199254740993],"values":[-18446744073709551617], "doc":{}}}');
    assert.deepStrictEqual(big?.store?.key, [9007199254740993n]);
    assert.deepStrictEqual(big?.store?.values, [-18446744073709551617n]);
  });
  it('the store doc is its text, its integers exact when parsed', () => {
    const fast = fastRequest({ text: STORE, line: 1 }, BINDINGS);
    assert.equal(fast?.store?.docJson, DOC);
    assert.equal((fast?.store?.doc as { n: unknown }).n, 12345678901234567890n);
  });
});

describe('fastRequest: lines it declines (the usual path answers or reports them)', () => {
  const declined = [
    '{"acknowledge":{}}', '{"flush":{}}', '{"startCommit":{"runtimeCheckpoint":{}}}',
    // Another order, whitespace, JSON keys, missing members.
    `{"store":{"valuesPacked":"${VALUES}","keyPacked":"${KEY}","doc":${DOC}}}`,
    `{"store":{"keyPacked":"${KEY}", "valuesPacked":"${VALUES}","doc":${DOC}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC} }}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc": ${DOC}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC} ,"exists":true}}`,
    `{"store":{"values":[1],"key":["a"],"doc":${DOC}}}`,
    `{"store":{"key":["a"], "values":[1],"doc":${DOC}}}`,
    `{"store":{"key":[ "a"],"values":[1],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[1 ],"doc":${DOC}}}`,
    `{"store":{"key":[],"values":[1],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[{"o":1}],"doc":${DOC}}}`,
    `{"store":{"key":[["a"]],"values":[1],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[01],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[1.],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":["\\x"],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":["tab\there"],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[tru],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[1,],"doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":[1],"keyPacked":"FQE=","doc":${DOC}}}`,
    `{"store":{"key":["a"],"values":"x","doc":${DOC}}}`,
    '{"load":{"key":["a"],"keyPacked":"FQE="}}', '{"load":{"key":[]}}', '{"load":{"key":["a"] }}', '{"load":{"key":{"a":1}}}',
    '{"load":{"binding":3,"key":["a"]}}', '{"load":{"key":[{"a":1}]}}',
    `{"store":{"keyPacked":"${KEY}","doc":${DOC}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","exists":true,"exists":true}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","x":1}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}" }}`,
    `{"store":{"keyPacked":"","valuesPacked":"${VALUES}","doc":${DOC}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"delete":true,"exists":true}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"exists":true,"exists":false}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"exists":1}}`,
    // A doc deeper than the grammar check follows, or not an object, or malformed.
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"","doc":{"a":{"b":{"c":{"d":1}}}}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"","doc":[1]}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"","doc":{"a":}}}`,
    `{"store":{"keyPacked":"${KEY}","valuesPacked":"","doc":{"a":1},"x":2}}`,
    // Escapes or non-alphabet characters in a base64 string; a tuple that does not decode; bad bindings.
    '{"load":{"keyPacked":"FQ\\u0045="}}', '{"load":{"keyPacked":"FQ\\/="}}', '{"load":{"keyPacked":"FQ E="}}',
    '{"load":{"keyPacked":"FQE"}}', '{"load":{"keyPacked":"/w=="}}', '{"load":{"keyPacked":"FQE=","x":"AA=="}}',
    '{"load":{"binding":3,"keyPacked":"FQE="}}', '{"load":{"binding":01,"keyPacked":"FQE="}}',
    '{"load":{"binding":-1,"keyPacked":"FQE="}}', '{"load":{"binding":1.0,"keyPacked":"FQE="}}',
    `{"store":{"binding":7,"keyPacked":"${KEY}","valuesPacked":"","doc":{}}}`,
    '{"load":{"keyPacked":"FQE="}}x', ' {"load":{"keyPacked":"FQE="}}', '{"load":{"keyPacked":"FQE="}',
    '{"load":{"binding":1234567890,"keyPacked":"FQE="}}', '{"load":{"binding":,"keyPacked":"FQE="}}', '{"load":{"keyPacked":"FQE="}}}',
    // The same in stores: escapes in either packed string, members after a bad one.
    '{"store":{"keyPacked":"FQ\\/=","valuesPacked":"","doc":{}}}', '{"store":{"keyPacked":"FQE=","valuesPacked":"Am\\u0045AFQU=","doc":{"a":1}}}',
    '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEAFQU=\\"","doc":{"a":1}}}', '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEA\tFQU="}}',
    '{"store":{"binding":0,"keyPacked":"FQE=","valuesPacked":"AmEAFQU=","doc":{"a":1}}', '{"store":{"binding":1,"keyPacked":"FQE=","valuesPacked":"AmEAFQU=",doc":{}}}',
  ];
  for (const text of declined) {
    it(text.slice(0, 100), () => {
      assert.equal(check(text), false);
    });
  }
});

describe('fastRequest: random variations agree with the usual path', () => {
  it('mutated store and load lines (insertions, deletions, byte flips)', () => {
    // A fixed-seed generator: the same cases every run.
    let seed = 16;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = [' ', '\\', '"', '{', '}', '[', ']', ',', ':', '1', 'A', '=', '-', '_', '+', '/', 'true', 'null', '\\"', 'é', '\u0000', '\u0001'];
    const bases = [
      STORE, LOAD, `{"store":{"keyPacked":"${KEY}","valuesPacked":"${VALUES}","exists":true}}`, `{"store":{"binding":1,"keyPacked":"${KEY}","valuesPacked":"${VALUES}","doc":${DOC},"exists":true,"delete":false}}`,
      '{"load":{"binding":2,"keyPacked":"FQE="}}', '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEAFQU=","doc":{"a":[1,"x]"]},"exists":true}}',
      STORE_JSON, LOAD_JSON, `{"store":{"binding":1,"key":[1,"a\\"b"],"values":${VALUES_JSON},"exists":true}}`, '{"load":{"binding":2,"key":[-12.5e3,null]}}',
    ];
    let answered = 0;
    let total = 0;
    for (let round = 0; round < 4000; round++) {
      let text = bases[rand(bases.length)]!;
      const edits = 1 + rand(2);
      for (let k = 0; k < edits; k++) {
        const at = rand(text.length + 1);
        switch (rand(3)) {
          case 0: text = text.slice(0, at) + pieces[rand(pieces.length)]! + text.slice(at); break;
          case 1: text = text.slice(0, at) + text.slice(at + 1 + rand(3)); break;
          default: text = text.slice(0, at) + String.fromCharCode(32 + rand(95)) + text.slice(at + 1);
        }
      }
      total++;
      if (check(text)) answered++;
    }
    // Both verdicts are exercised (some mutations keep lines valid: inside the doc's strings, say).
    assert.ok(answered > 100 && answered < total, `answered ${answered} of ${total}`);
  });
});
