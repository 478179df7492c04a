// hasLongDigits (parseDocument's fast-path test) says exactly what /\d{16}/ says — a run of 16 or more
// digits anywhere — on random texts of digits and other characters, and documents keep integers beyond 2^53
// (parseDocument as bigints, parseDocumentRaw as raw JSON that plain JSON.stringify writes back).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasLongDigits, parseDocument, parseDocumentRaw, stringifyDocument } from '../src/protocol/documents.ts';

test('hasLongDigits matches a run of 16+ digits anywhere, as /\\d{16}/ does', () => {
  let seed = 7;
  const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  let longs = 0;
  for (let i = 0; i < 5000; i++) {
    let text = '';
    const parts = 1 + rand(6);
    for (let p = 0; p < parts; p++) text += rand(3) === 0 ? ['"', 'a', '-', ':', ' ', '.', 'é'][rand(7)]!.repeat(1 + rand(3)) : '9876543210'.repeat(3).slice(rand(10), rand(10) + 1 + rand(20));
    const expected = /\d{16}/.test(text);
    if (expected) longs++;
    assert.equal(hasLongDigits(text), expected, JSON.stringify(text));
  }
  assert.ok(longs > 100 && longs < 4900, `both outcomes were tried (${longs} long)`);
  assert.equal(hasLongDigits('1234567890123456'), true);
  assert.equal(hasLongDigits('123456789012345'), false);
  assert.equal(hasLongDigits('x123456789012345-1234567890123456'), true);
  // hasLongDigits reads every 16th character: runs of 15, 16 and 17 digits at every position of texts
  // of every length up to 80, with non-digits or shorter runs around them.
  for (let n = 0; n <= 80; n++) {
    for (const run of [15, 16, 17]) {
      for (let at = 0; at + run <= n; at++) {
        for (const filler of ['a', '1a', '123456789012345x']) {
          const text = filler.repeat(n).slice(0, at) + '7'.repeat(run) + filler.repeat(n).slice(0, n - at - run);
          const fixed = at > 0 ? text.slice(0, at - 1) + '-' + text.slice(at) : text;
          const bounded = fixed.length > at + run ? fixed.slice(0, at + run) + '-' + fixed.slice(at + run + 1) : fixed;
          assert.equal(hasLongDigits(bounded), /\d{16}/.test(bounded), JSON.stringify(bounded));
        }
      }
    }
  }
});

test('a document keeps an integer beyond 2^53 whether it starts the text or follows a non-digit', () => {
  for (const text of ['{"n":9007199254740993}', '{"n":[1,9007199254740993]}', '{"n":-9007199254740993}']) {
    assert.equal(stringifyDocument(parseDocument(text)), text);
  }
});

test('parseDocumentRaw keeps integers beyond 2^53 as raw JSON of their digits; other numbers as JSON.parse reads them', () => {
  const isRawJSON = (JSON as unknown as { isRawJSON(v: unknown): boolean }).isRawJSON;
  for (const text of ['{"n":9007199254740993}', '{"n":[1,-9007199254740993,{"m":18446744073709551615}]}', '{"s":"12345678901234567","n":1}']) {
    assert.equal(JSON.stringify(parseDocumentRaw(text)), text);
    assert.equal(stringifyDocument(parseDocument(text)), text);
  }
  const v = parseDocumentRaw('{"big":9007199254740993,"safe":9007199254740991,"x":1.5e300,"f":12345678901234567.5}') as Record<string, unknown>;
  assert.ok(isRawJSON(v['big']), 'beyond 2^53: raw JSON');
  assert.equal(v['safe'], 9007199254740991);
  assert.equal(v['x'], 1.5e300);
  assert.equal(v['f'], Number('12345678901234567.5'), 'a fraction is a double, as JSON.parse reads it');
  assert.throws(() => parseDocumentRaw('{"n":12345678901234567,}'), SyntaxError);
});
