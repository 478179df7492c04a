// The fast path of parseEnvelope (scanEnvelope) must give exactly what the general path (JSON.parse of the
// line, rawBodyMemberText for the raw member) gives, or decline (undefined) — never a different answer. With
// ScanOptions.unparsed (a materialize session's store `doc`), the same answer with that member left as checked
// text: the same lines accepted, the same body without it, and its text parsing to what the general path has.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEnvelope, parseEnvelopeGeneral, rawBodyMemberText } from '../src/protocol/envelope.ts';
import { scanEnvelope } from '../src/protocol/envelope-scan.ts';
import { MATERIALIZE_SCAN } from '../src/connector/materialize.ts';
import { ProtocolError } from '../src/errors.ts';

const VARIANTS = ['acknowledge', 'load', 'flush', 'store', 'startCommit'];

/** Lines answered with the store doc left as checked text (so the tests below are seen to reach that branch). */
let unparsedAnswers = 0;

/** Asserts that the fast path agrees with the general path on `text`; returns whether it answered. */
function check(text: string): boolean {
  let general: ReturnType<typeof parseEnvelopeGeneral> | undefined;
  try {
    general = parseEnvelopeGeneral({ text, line: 1 }, VARIANTS, 'request', 'stdin');
  } catch {
    general = undefined;
  }
  const fast = scanEnvelope(text, VARIANTS);
  const checked = scanEnvelope(text, VARIANTS, MATERIALIZE_SCAN);
  assert.equal(checked === undefined, fast === undefined, `with the store doc unparsed, a different verdict: ${text}`);
  if (checked?.raw?.unparsed === true) {
    assert.ok(general !== undefined && fast !== undefined, text);
    assert.equal(checked.variant, 'store', text);
    assert.equal(checked.raw.member, 'doc', text);
    assert.equal(checked.raw.text, fast.raw?.text, text);
    const { doc, ...rest } = general.body;
    assert.deepStrictEqual(checked.body, rest, text);
    assert.deepStrictEqual(JSON.parse(checked.raw.text), doc, text);
    unparsedAnswers++;
  } else if (checked !== undefined) {
    assert.deepStrictEqual(checked, fast, text);
  }
  if (fast === undefined) return false;
  assert.ok(general !== undefined, `fast path accepted a line the general path rejects: ${text}`);
  assert.equal(fast.variant, general.variant, text);
  assert.deepStrictEqual(fast.body, general.body, text);
  assert.equal(JSON.stringify(fast.body), JSON.stringify(general.body), `member order: ${text}`);
  if (fast.raw !== undefined) {
    assert.equal(fast.raw.text, rawBodyMemberText(text, fast.variant, fast.raw.member), `raw text: ${text}`);
  }
  return true;
}

const STORE = '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEAFQU=","doc":{"id":1,"a":"x","_meta":{"uuid":"d6f0"}}}}';

describe('scanEnvelope: lines it must decline (the general path reports the error)', () => {
  const declined = [
    '', ' ', '[]', '1', 'null', '{}', '{"store":1}', '{"store":[]}', '{"store":null}', '{"nope":{}}',
    '{"store":{}', '{"store":{}}}', '{"store":{}} x', '{"store":{"a":1,}}', '{"store":{"a" 1}}', '{"store":{,"a":1}}',
    '{"store":{"a":01}}', '{"store":{"a":1.}}', '{"store":{"a":-}}', '{"store":{"a":tru}}', '{"store":{"a":truex}}',
    '{"store":{"a":"x}}', '{"store":{"a":"x\\u00"}}', '{"store":{"doc":{"a":1}}', '{"store":{"doc":{"a":1}}}}',
    '{"store":{"doc":{"a":1},}}', '{"store":{"doc":{"a":1}"exists":true}}', '{"store":{"doc":{"a":1},"exists":tru}}',
    '{"store":{"doc":{"a":1},"exists":"yes"}}', '{"store":{"doc":{"a":1},"binding":1,2}}', '{"store":{"doc":{"a":,}}}',
    '{"store":{"doc":{"a":1},"doc":{"b":2}}}', '{"store":{"binding":0,"binding":1}}',
    '{"store":{"doc":{"a":1},"x":[1]}}', '{"store":{"doc":{"a":1}},"$internal":{}}', '{"$internal":{},"store":{}}',
    '{"store":{},"flush":{}}', '{"st\\u006fre":{}}', '{"store":{"k\\u0065y":1}}', '{"store":{"__proto__":{"x":1}}}',
    '{"store":{"_x":1}}', '{"store":{"doc":{"a":1},"exists":true,"exists":false}}',
    '{"store":{"a":"tab\there"}}', '{"store":{"doc":{"a":"\u0001"}}}',
  ];
  for (const text of declined) {
    it(JSON.stringify(text), () => {
      assert.equal(check(text), false);
    });
  }
});

describe('scanEnvelope: lines it answers, exactly as JSON.parse does', () => {
  const answered = [
    STORE,
    '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEAFQU="}}',
    '{"acknowledge":{}}', '{"flush":{}}', ' { "flush" : { } } ', '\t{"acknowledge":{}}\t',
    '{"load":{"binding":2,"keyPacked":"FQE="}}',
    '{"store":{"binding":1,"keyPacked":"FQE=","doc":{"a":1},"exists":true,"delete":false}}',
    '{"store":{"doc":{"a":1}, "exists" : true ,"delete":true }}',
    '{"store":{"doc":{"exists":true},"exists":true}}',
    '{"store":{"doc":{"q":"say \\"hi\\" {","n":[1,{"b":"}]\\\\"}]}}}',
    '{"store":{"doc":{"a":1},"n":-1.5e+3,"m":0,"z":null}}',
    '{"store":{"doc":{"big":12345678901234567890,"neg":-0,"e":1E400}}}',
    '{"store":{"doc":{"é☃":"ü 🎉","\\u00e9":"\\ud83c\\udf89"}}}',
    '{"store":{"doc":[1,2,3]}}', '{"store":{"doc":"text"}}', '{"store":{"doc":"esc\\naped"}}',
    '{"store":{"keyPacked":"","note":"ü plain ☃"}}', '{"store":{"doc":{}}}', '{"store":{"doc":{"a":{"b":{"c":[]}}}}}',
    '{"startCommit":{"runtimeCheckpoint":{"sources":{"a/b;c":{"readThrough":"7"}}}}}',
    '{"store":{"doc": {"a":1} ,"exists":true}}', '{"store":{"constructor":1,"toString":"x"}}',
  ];
  for (const text of answered) {
    it(text, () => {
      assert.equal(check(text), true);
    });
  }
});

describe('scanEnvelope: random variations agree with the general path', () => {
  it('mutated store lines (whitespace, escapes, reordering, truncation, byte flips)', () => {
    // A fixed-seed generator: the same cases every run.
    let seed = 42;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = [' ', '\t', '\\', '"', '{', '}', '[', ']', ',', ':', '1', 'e', '-', 'true', 'null', '\\"', 'é', '\u0000'];
    const bases = [
      STORE, '{"store":{"keyPacked":"FQE=","valuesPacked":"AmEAFQU="}}',
      '{"store":{"binding":1,"keyPacked":"FQE=","doc":{"a":[1,"x]"],"b":{"c":"}"}},"exists":true,"delete":false}}',
      '{"load":{"binding":0,"keyPacked":"FQE="}}', '{"acknowledge":{}}',
    ];
    let answered = 0;
    let total = 0;
    for (let round = 0; round < 4000; round++) {
      let text = bases[rand(bases.length)]!;
      const edits = 1 + rand(3);
      for (let k = 0; k < edits; k++) {
        const at = rand(text.length + 1);
        switch (rand(4)) {
          case 0: text = text.slice(0, at) + pieces[rand(pieces.length)]! + text.slice(at); break;
          case 1: text = text.slice(0, at) + text.slice(at + 1 + rand(3)); break;
          case 2: text = text.slice(0, at) + ' ' + text.slice(at); break;
          default: text = text.slice(0, at) + String.fromCharCode(32 + rand(95)) + text.slice(at + 1);
        }
      }
      total++;
      if (check(text)) answered++;
    }
    // Both branches are exercised (the mutations keep some lines valid).
    assert.ok(answered > 200 && answered < total, `answered ${answered} of ${total}`);
    assert.ok(unparsedAnswers > 100, `store docs left unparsed: ${unparsedAnswers}`);
  });
});

describe('parseEnvelope with the fast path', () => {
  it('carries the raw member text and the line', () => {
    const env = parseEnvelope({ text: STORE, line: 7 }, VARIANTS, 'request', 'stdin');
    assert.equal(env.variant, 'store');
    assert.equal(env.line, 7);
    assert.equal(env.text, STORE);
    assert.deepEqual(env.raw, { member: 'doc', text: '{"id":1,"a":"x","_meta":{"uuid":"d6f0"}}' });
  });
  it('with ScanOptions.unparsed, carries the store doc as checked text and leaves it out of the body', () => {
    const env = parseEnvelope({ text: STORE, line: 7 }, VARIANTS, 'request', 'stdin', MATERIALIZE_SCAN);
    assert.deepEqual(env.body, { keyPacked: 'FQE=', valuesPacked: 'AmEAFQU=' });
    assert.deepEqual(env.raw, { member: 'doc', text: '{"id":1,"a":"x","_meta":{"uuid":"d6f0"}}', unparsed: true });
    // Nested deeper than the check follows: parsed as before.
    const deep = '{"store":{"keyPacked":"FQE=","doc":{"a":{"b":{"c":{"d":1}}}}}}';
    const parsed = parseEnvelope({ text: deep, line: 8 }, VARIANTS, 'request', 'stdin', MATERIALIZE_SCAN);
    assert.deepEqual(parsed.body, { keyPacked: 'FQE=', doc: { a: { b: { c: { d: 1 } } } } });
    assert.equal(parsed.raw?.unparsed, undefined);
    // Another variant's member of that name is parsed.
    const flush = parseEnvelope({ text: '{"flush":{"doc":{"a":1}}}', line: 9 }, VARIANTS, 'request', 'stdin', MATERIALIZE_SCAN);
    assert.deepEqual(flush.body, { doc: { a: 1 } });
  });
  it('reports malformed store lines exactly as before (the general path), the store doc unparsed or not', () => {
    const bad = '{"store":{"keyPacked":"FQE=","doc":{"id":1,"a":}}}';
    let expected: unknown;
    try {
      JSON.parse(bad);
    } catch (err) {
      expected = (err as Error).message;
    }
    for (const scan of [undefined, MATERIALIZE_SCAN]) {
      assert.throws(() => parseEnvelope({ text: bad, line: 3 }, VARIANTS, 'request', 'stdin', scan), (err: unknown) => {
        assert.ok(err instanceof ProtocolError);
        assert.equal(err.message, `stdin line 3 is not valid JSON: ${String(expected)}`);
        return true;
      });
    }
    assert.throws(() => parseEnvelope({ text: '{"store":{"doc":{"a":1}},"flush":{}}', line: 4 }, VARIANTS, 'request', 'stdin'), {
      message: 'stdin line 4: a request must have exactly one of "acknowledge", "load", "flush", "store", "startCommit"; found "store", "flush"',
    });
  });
});
