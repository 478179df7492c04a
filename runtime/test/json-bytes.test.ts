// jsonStringEnd / jsonNumberEnd (the string and number grammar both byte scanners share: pack-bytes.ts and the
// plane's byte-check.ts) accept exactly the tokens JSON.parse accepts, say whether a string had an escape and a
// number is written as an integer, and never read at or past `end` (the bytes after it would complete the token).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonNumberEnd, jsonScanned, jsonStringEnd } from '../src/protocol/json-bytes.ts';

function parses(text: string, type: 'string' | 'number'): boolean {
  try {
    return typeof JSON.parse(text) === type;
  } catch {
    return false;
  }
}

const STRINGS = [
  '""', '"a"', '"abc"', '"abcdefghijklmnop"', '"é"', '"€😀 and more text"', '"a\\"b"', '"\\\\"', '"\\/\\b\\f\\n\\r\\t"', '"\\u0041"', '"\\uD83D\\uDE00"',
  '"\\uD800"', '"x\\u00e9yz0123456789"', '"\\x"', '"\\u00G1"', '"\\u12"', '"a\tb"', '"a\nb"', '"\u0001"', '"abc', '"abc\\"', '"abcdefgh\\',
  '"\\u', '"\\u00', '"', `"${'y'.repeat(37)}"`, `"${'y'.repeat(37)}\\"`,
];

test('jsonStringEnd: the tokens JSON.parse accepts as a string, the escape flag, nothing read past the end', () => {
  for (const text of STRINGS) {
    // What follows `end` would end the string or complete an escape: a scanner reading it would accept.
    for (const after of ['', '"', '0041"', '\\""']) {
      const b = Buffer.from(text + after);
      const end = Buffer.byteLength(text);
      const got = jsonStringEnd(b, 0, end);
      const ok = parses(text, 'string');
      assert.equal(got, ok ? end : -1, `${JSON.stringify(text)} + ${JSON.stringify(after)}`);
      if (ok) assert.equal(jsonScanned.escaped, text.includes('\\'), text);
    }
  }
  // Bytes that are not UTF-8 (overlong, a surrogate, a cut sequence, a stray continuation byte).
  for (const bytes of [[0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x80], [0xf4, 0x90, 0x80, 0x80]]) {
    const b = Buffer.from([0x22, 0x61, ...bytes, 0x22]);
    assert.equal(jsonStringEnd(b, 0, b.length), -1, bytes.join(','));
  }
  // A sequence cut by `end` (the rest of it, and a quote, after end).
  const euro = Buffer.from('"a€"');
  assert.equal(jsonStringEnd(euro, 0, 3), -1);
  assert.equal(jsonStringEnd(euro, 0, euro.length), euro.length);
  // At an offset inside a larger buffer, and in a Uint8Array view that does not start its buffer.
  const inner = Buffer.from('xx{"k":"value with ünïcode","n":1}');
  assert.equal(jsonStringEnd(inner, 7, inner.length), 29, "the string's 20 bytes and its quotes from index 7");
  const view = new Uint8Array(inner.buffer, inner.byteOffset + 2, inner.length - 2);
  assert.equal(jsonStringEnd(view, 5, view.length), 27);
});

const NUMBERS = ['0', '-0', '7', '-7', '10', '1234567890123456789012', '0.5', '-0.5', '1e5', '1E+5', '1e-5', '2.5e10', '01', '-', '1.', '.5', '1e', '1e+', '-a', '+1', '1.5.', '0x1'];

test('jsonNumberEnd: where JSON\'s number grammar ends, the integer flag, nothing read past the end', () => {
  for (const text of NUMBERS) {
    for (const after of ['', '5', 'e5', '.5']) {
      const b = Buffer.from(text + after);
      const got = jsonNumberEnd(b, 0, text.length);
      if (parses(text, 'number')) {
        assert.equal(got, text.length, `${text} + ${after}`);
        assert.equal(jsonScanned.integer, !/[.eE]/.test(text), text);
      } else {
        // Either no number at all, or a valid one that ends before the text does (`01` is `0` then `1`).
        assert.ok(got === -1 || (got < text.length && parses(text.slice(0, got), 'number')), `${text} + ${after}: ${got}`);
      }
    }
  }
});
