// isJsonObjectText answers true only for a text JSON.parse accepts as an object; it may answer false for one
// nested deeper than it follows (the caller then parses), never true for anything else.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JSON_CHECK_DEPTH, isJsonObjectText } from '../src/protocol/json-check.ts';

function parsesToObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** Containers nested in `v` (an object or array counts one, its deepest child's count added). */
function depthOf(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe('isJsonObjectText: fixed cases', () => {
  const yes = [
    '{}', ' {} ', '\t\r\n{\t"a"\r:\n1\t}\n', '{"a":1}', '{"a":-0,"b":0.5,"c":1e5,"d":1E+5,"e":-1.25e-3,"f":12345678901234567890123}',
    '{"a":true,"b":false,"c":null}', '{"a":"","b":"x y","c":"\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83C\\udf89"}',
    '{"é☃":"ü 🎉","lone":"\ud800"}', '{"a":{"b":{"c":1}}}', '{"a":[1,[2,3]],"b":{"c":[]}}',
    '{"a":{},"b":[],"c":[{}],"d":{"e":[]}}', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', '{"1e400":1e400}',
    '{"ride_id":"9e3779b1-1","note":"late, but \\"fine\\"","_meta":{"file":"rides.csv.gz","offset":1,"uuid":"83e9c470-e935-11f1-8000-c9e947e380c5"}}',
  ];
  for (const text of yes) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      assert.ok(parsesToObject(text), 'the case itself must be a JSON object');
      assert.equal(isJsonObjectText(text), true);
    });
  }
  const no = [
    '', ' ', '[]', '1', '"{}"', 'null', '{', '}', '{}}', '{}{}', '{} x', '{"a"}', '{"a":}', '{"a":1,}', '{,"a":1}', '{"a" 1}',
    '{a:1}', "{'a':1}", '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":+1}', '{"a":-}', '{"a":1e}', '{"a":0x10}', '{"a":NaN}',
    '{"a":Infinity}', '{"a":tru}', '{"a":True}', '{"a":nul}', '{"a":"x}', '{"a":"\\x"}', '{"a":"\\u00g0"}', '{"a":"\\u00"}',
    '{"a":"\u0001"}', '{"a":"tab\there"}', '{"a":"nl\nhere"}', '{"a":[1,]}', '{"a":[,1]}', '{"a":[1 2]}', '{"a":{"b":1,}}',
    '\u00a0{}', '{}\u00a0', '{"a":1}\u2028', '\ufeff{}', '{"a\\"}', '{"a":"b"c"}',
  ];
  for (const text of no) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.equal(parsesToObject(text), false, 'the case itself must not be a JSON object');
      assert.equal(isJsonObjectText(text), false);
    });
  }
  it(`objects nested deeper than ${JSON_CHECK_DEPTH} containers answer false (the caller parses them)`, () => {
    assert.equal(JSON_CHECK_DEPTH, 3);
    assert.equal(isJsonObjectText('{"a":{"b":[1]}}'), true);
    assert.equal(isJsonObjectText('{"a":{"b":{"c":{}}}}'), false);
    assert.equal(isJsonObjectText('{"a":[[[1]]]}'), false);
  });
  it('huge texts answer without throwing', () => {
    const members = Array.from({ length: 300_000 }, (_, i) => `"k${i}":"${'v'.repeat(i % 40)}"`).join(',');
    assert.equal(isJsonObjectText(`{${members}}`), true);
    assert.equal(isJsonObjectText(`{${members},}`), false);
    assert.equal(isJsonObjectText(`{"a":"${'x'.repeat(2_000_000)}"}`), true);
    assert.equal(isJsonObjectText(`{"a":"${'x'.repeat(2_000_000)}}`), false);
  });
});

describe('isJsonObjectText: random texts agree with JSON.parse', () => {
  // A fixed-seed generator (mulberry32): the same cases every run.
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296 * n) | 0;
  };
  const strings = ['', 'a', 'x y', 'é', '☃🎉', '"', '\\', '\n', '\u0001', '\ud800', '}', ']', ',', ':'];
  const numbers = [0, -0, 1, -1, 0.5, 1e21, 1e-7, 123456789, -2.5e-300];
  function value(depth: number): unknown {
    const r = rand(depth >= 4 ? 4 : 7);
    if (r === 0) return strings[rand(strings.length)];
    if (r === 1) return numbers[rand(numbers.length)];
    if (r === 2) return [true, false, null][rand(3)];
    if (r === 3) return strings[rand(strings.length)]! + String(rand(100));
    if (r === 4 || r === 5) {
      const o: Record<string, unknown> = {};
      for (let i = rand(4); i > 0; i--) o[strings[rand(strings.length)]! + String(i)] = value(depth + 1);
      return o;
    }
    return Array.from({ length: rand(4) }, () => value(depth + 1));
  }
  const spaces = ['', ' ', '\t', '\n', '\r\n  '];
  /** JSON text of `v` with random whitespace between tokens. */
  function text(v: unknown): string {
    const ws = () => spaces[rand(spaces.length)]!;
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => `${text(x)}${ws()}`).join(`,${ws()}`)}]`;
    if (typeof v === 'object' && v !== null) return `{${ws()}${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}${ws()}:${ws()}${text(x)}${ws()}`).join(`,${ws()}`)}}`;
    return JSON.stringify(v);
  }
  it('generated objects: true exactly when nested at most JSON_CHECK_DEPTH levels', () => {
    let shallow = 0;
    let deep = 0;
    for (let round = 0; round < 3000; round++) {
      const o: Record<string, unknown> = {};
      for (let i = rand(6); i > 0; i--) o[`m${i}`] = value(1);
      const t = text(o);
      const fits = depthOf(o) <= JSON_CHECK_DEPTH;
      assert.equal(isJsonObjectText(t), fits, t);
      if (fits) shallow++;
      else deep++;
    }
    assert.ok(shallow > 500 && deep > 100, `shallow ${shallow}, deep ${deep}`);
  });
  it('mutated objects: never true where JSON.parse rejects', () => {
    const pieces = [' ', '\t', '\\', '"', '{', '}', '[', ']', ',', ':', '1', '0', '.', 'e', '-', '+', 'true', 'null', '\\u', '\u0000', '\u00a0'];
    let accepted = 0;
    let total = 0;
    for (let round = 0; round < 6000; round++) {
      const o: Record<string, unknown> = {};
      for (let i = 1 + rand(4); i > 0; i--) o[`m${i}`] = value(2);
      let t = text(o);
      for (let k = 1 + rand(2); k > 0; k--) {
        const at = rand(t.length + 1);
        switch (rand(3)) {
          case 0: t = t.slice(0, at) + pieces[rand(pieces.length)]! + t.slice(at); break;
          case 1: t = t.slice(0, at) + t.slice(at + 1 + rand(2)); break;
          default: t = t.slice(0, at) + String.fromCharCode(32 + rand(95)) + t.slice(at + 1);
        }
      }
      total++;
      const verdict = isJsonObjectText(t);
      if (verdict) {
        accepted++;
        assert.ok(parsesToObject(t), `accepted what JSON.parse rejects: ${JSON.stringify(t)}`);
      } else if (parsesToObject(t)) {
        assert.ok(depthOf(JSON.parse(t)) > JSON_CHECK_DEPTH, `rejected a JSON object within the depth: ${JSON.stringify(t)}`);
      }
    }
    assert.ok(accepted > 300 && accepted < total, `accepted ${accepted} of ${total}`);
  });
});
