import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DecodeError } from '../src/errors.ts';
import { JsonRecordParser } from '../src/json.ts';
import { CHUNK_SIZES, feedText } from './helpers.ts';

function parseAll(text: string): unknown[] {
  const first = feedText(new JsonRecordParser(), text, 1 << 20);
  for (const size of CHUNK_SIZES) assert.deepEqual(feedText(new JsonRecordParser(), text, size), first, `chunk size ${size}`);
  return first;
}

describe('json', () => {
  test('bad input: invalid JSON names line and byte offset', () => {
    for (const size of CHUNK_SIZES) {
      assert.throws(() => feedText(new JsonRecordParser(), '{"a":1}\n{"b": tru}\n', size), (e: unknown) => {
        assert.ok(e instanceof DecodeError);
        assert.match(e.message, /^failed to parse JSON at line 2 \(byte offset 8\): /);
        assert.equal(e.line, 2);
        return true;
      });
    }
  });

  test('bad input: scalars are not records', () => {
    assert.throws(() => parseAll('{"a":1} 42 '), (e: unknown) => e instanceof DecodeError && e.message === "failed to parse JSON at line 1 (byte offset 8): The JSON parser only supports objects or arrays of objects, found value: '42'");
    assert.throws(() => parseAll('[{"a":1}, "x"]'), /found value: '"x"'/);
  });

  test('bad input: a value cut off at the end of the file', () => {
    assert.throws(() => parseAll('{"a":1}\n{"b":[1,2'), (e: unknown) => e instanceof DecodeError && e.message === 'failed to parse JSON at line 2 (byte offset 8): unexpected end of input inside a value');
    assert.throws(() => parseAll('[{"a":1},'), /unexpected end of input inside a top-level array/);
  });

  test('empty input and whitespace yield nothing', () => {
    assert.deepEqual(parseAll(''), []);
    assert.deepEqual(parseAll(' \n\t\r\n'), []);
    assert.deepEqual(parseAll('[]'), []);
  });

  test('pretty-printed concatenated documents and JSON lines give the same records', () => {
    const expected = [{ city: 'Oslo' }, { n: 2 }, { ratio: 0.5 }, { ok: true }, { _meta: { note: 'kept' } }];
    const pretty = '{\n  "city": "Oslo"\n}\n{\n  "n": 2 }\n{"ratio":\n 0.5}{ "ok": true }\n\n{\n "_meta": {\n  "note": "kept"\n }\n}\n';
    assert.deepEqual(parseAll(pretty), expected);
    assert.deepEqual(parseAll(`${expected.map((d) => JSON.stringify(d)).join('\n')}\n`), expected);
  });

  test('top-level arrays are streamed element by element', () => {
    assert.deepEqual(parseAll('[\n  {"foo": "bar"},\n  {"a": 1},\n  {"b": false}\n]\n'), [{ foo: 'bar' }, { a: 1 }, { b: false }]);
    // Elements come out before the array closes.
    const p = new JsonRecordParser();
    assert.deepEqual(p.push('[{"a":1},{"b":2},'), [{ a: 1 }, { b: 2 }]);
    assert.deepEqual(p.push('{"c":"]}\\"["}]'), [{ c: ']}"[' }]);
    assert.deepEqual(p.end(), []);
  });

  test('strings with braces, escapes and multi-byte characters; objects without whitespace between them', () => {
    assert.deepEqual(parseAll('{"a":"}{\\\\","b":"é€😀"}{"c":{"d":[1,{"e":null}]}}'), [{ a: '}{\\', b: 'é€😀' }, { c: { d: [1, { e: null }] } }]);
  });
});
