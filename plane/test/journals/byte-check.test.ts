// byte-check.ts against what it stands for: a document it accepts is valid UTF-8, JSON.parse accepts it as an
// object, ajv (the collection's validator) accepts it, and the UUID goes where spliceMemberAt puts it in the
// text — checked on hand-written edge cases, on generated documents, and on random byte mutations of them.
// It must also accept the plain valid documents (else it would be a check that never decides).
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { test } from 'node:test';
import { spliceMemberAt, type JsonObject, type JsonSchema, type JsonValue } from '@sluice/runtime';
import { compileDocumentSchema } from '../../src/catalog/ajv.ts';
import { withMeta } from '../../src/catalog/collection-spec.ts';
import { type BytePlan, type BytesSplice, checkDocumentBytes, compileBytePlan } from '../../src/journals/byte-check.ts';

const UUID = '"01234567-89ab-11f1-8000-0123456789ab"';
const INSERTS = [[',"_meta":{"uuid":', '}'], ['"_meta":{"uuid":', '}'], [',"uuid":', ''], ['"uuid":', '']] as const;

/** The document's line as the bytes path builds it, or undefined when the check declines. */
function bytesLine(plan: BytePlan, doc: Buffer): string | undefined {
  // A line as the framing hands it: the document, then `}}` and the newline.
  const buf = Buffer.concat([Buffer.from('{"captured":{"doc":'), doc, Buffer.from('}}\n')]);
  const start = 19;
  const end = start + doc.length;
  const out: BytesSplice = { at: -1, kind: -1 };
  if (!checkDocumentBytes(buf, start, end, plan, out)) return undefined;
  const [before, after] = INSERTS[out.kind]!;
  return Buffer.concat([buf.subarray(start, out.at), Buffer.from(`${before}${UUID}${after}`), buf.subarray(out.at, end)]).toString('utf8');
}

const compiled = new Map<JsonSchema, { ws: JsonSchema; plan: BytePlan | undefined; validate: (doc: JsonValue) => string | null }>();

/** Asserts what an accepted document must be; returns whether it was accepted. */
function agrees(schema: JsonSchema, doc: Buffer, what: string): boolean {
  let c = compiled.get(schema);
  if (c === undefined) {
    const ws = withMeta(schema);
    compiled.set(schema, c = { ws, plan: compileBytePlan(ws, '_meta', 'uuid'), validate: compileDocumentSchema(ws) });
  }
  const { plan, validate } = c;
  assert.ok(plan !== undefined, `a plan for ${JSON.stringify(schema)}`);
  const line = bytesLine(plan, doc);
  if (line === undefined) return false;
  assert.ok(isUtf8(doc), `${what}: accepted bytes that are not UTF-8: ${doc.toString('hex')}`);
  const text = doc.toString('utf8');
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (err) {
    assert.fail(`${what}: accepted ${JSON.stringify(text)}, which JSON.parse rejects: ${(err as Error).message}`);
  }
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `${what}: accepted a non-object ${text}`);
  assert.equal(validate(value), null, `${what}: accepted ${text}, which ajv rejects`);
  const at = spliceMemberAt(text, value as JsonObject, '_meta', 'uuid', UUID);
  assert.ok(at !== undefined, `${what}: accepted ${text}, where spliceMemberAt finds no place`);
  assert.equal(line, `${text.slice(0, at.at)}${at.insert}${text.slice(at.at)}`, `${what}: the UUID is not where the text splice puts it`);
  return true;
}

const RIDES = ['ride_id', 'vehicle_id', 'city', 'fare', 'note'];
const ridesSchema: JsonSchema = { type: 'object', properties: Object.fromEntries(RIDES.map((c) => [c, { type: 'string' }])), required: ['ride_id'] };
const typedSchema: JsonSchema = {
  type: 'object',
  title: 'typed', 'x-infer-schema': true,
  properties: {
    id: { type: 'integer', description: 'an id' },
    n: { type: 'number' },
    s: { type: ['string', 'null'] },
    b: { type: 'boolean' },
    a: { type: 'array' },
    o: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] },
    any: true,
    limited: { type: 'string', maxLength: 3 },
    _meta: { type: 'object', properties: { file: { type: 'string' } } },
  },
  required: ['id'],
};
// As source-http-file discovers a CSV's schema: formats on strings, `_meta.offset` with a minimum; and lengths, bounds.
const valueSchema: JsonSchema = {
  type: 'object', 'x-infer-schema': true, required: ['_meta'],
  properties: {
    _meta: { type: 'object', properties: { file: { type: 'string' }, offset: { type: 'integer', minimum: 0 } }, required: ['file', 'offset'] },
    started_at: { type: 'string', format: 'date-time' },
    tip: { type: 'string', format: 'integer' },
    fare: { type: ['null', 'string'], format: 'number' },
    code: { type: 'string', minLength: 2, maxLength: 4 },
    score: { type: ['number', 'string'], exclusiveMinimum: 0, maximum: 10 },
  },
};
const closedSchema: JsonSchema = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false };

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

test('byte-check: plain valid documents are accepted, their UUID placed as in the text', () => {
  const accepted: [JsonSchema, string][] = [
    [ridesSchema, '{"ride_id":"9e3779b1-1","vehicle_id":"v","city":"São Paulo","fare":"0.5","note":"late, but \\"fine\\"","_meta":{"file":"rides.csv.gz","offset":1}}'],
    [ridesSchema, '{"ride_id":"x"}'],
    [ridesSchema, '{"ride_id":"x","_meta":{}}'],
    [ridesSchema, '{ "ride_id" : "x" , "_meta" : { } }'],
    [ridesSchema, '{"ride_id":"x","_meta":{ "offset" : 1 }}'],
    [ridesSchema, '{"ride_id":"\\u00e9\\ud83d\\ude00\\n\\t\\/","city":"日本語 🚲","extra":[1,{"deep":[null,true,false,-0.5e-3]}]}'],
    [typedSchema, '{"id":9007199254740993,"n":1.5e300,"s":null,"b":false,"a":[],"o":{"x":-0,"y":"z"},"any":{"k":[1,2]},"_meta":{"file":"f"}}'],
    [typedSchema, '{"id":123456789012345678901234567890,"n":-0,"s":"s"}'],
    [closedSchema, '{"id":"a"}'],
    [closedSchema, '{"id":"a","_meta":{"offset":3}}'],
    [valueSchema, '{"started_at":"2023-11-14T22:13:20Z","tip":"12","fare":null,"code":"é日","score":10,"_meta":{"file":"f","offset":0}}'],
    [typedSchema, '{"id":1,"limited":"ab"}'],
    [valueSchema, '{"fare":"-1.5e3","code":"abcd","score":"not a number: bounds do not apply","_meta":{"file":"f","offset":7}}'],
  ];
  for (const [schema, doc] of accepted) assert.ok(agrees(schema, b(doc), doc), `declined ${doc}`);
});

test('byte-check: what it does not decide, or what is invalid, is declined (then ajv and JSON.parse decide)', () => {
  const declined: [JsonSchema, Buffer][] = [
    // Invalid JSON.
    ...['{', '{"ride_id":"x",}', '{"ride_id":"x" "city":"y"}', '{"ride_id":01}', '{"ride_id":"x","n":1.}', '{"ride_id":"x","n":.5}',
      '{"ride_id":"x","n":1e}', '{"ride_id":"x","n":-}', '{"ride_id":"\\x"}', '{"ride_id":"\\u12g4"}', '{"ride_id":"a\tb"}',
      '{"ride_id":"x","t":tru}', '{"ride_id":"x","t":nul}', '{"ride_id":"x"}}', '{"ride_id":"x"} ', ' {"ride_id":"x"}', '{"ride_id":"x","a":[1,]}',
      '{"ride_id":"x","a":[1 2]}', '{ride_id:"x"}', "{'ride_id':'x'}", '{"ride_id":"x","n":NaN}', '{"ride_id":"x","n":+1}',
    ].map((d): [JsonSchema, Buffer] => [ridesSchema, b(d)]),
    // Not UTF-8: a lone continuation byte, an overlong `/`, a UTF-8-encoded surrogate, beyond U+10FFFF, truncated.
    ...[[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe6, 0x97]].map((bytes): [JsonSchema, Buffer] =>
      [ridesSchema, Buffer.concat([b('{"ride_id":"'), Buffer.from(bytes), b('"}')])]),
    // Valid, but not decided here (or invalid against the schema): ajv says.
    [ridesSchema, b('{"city":"no id"}')],
    [ridesSchema, b('{"ride_id":1}')],
    [ridesSchema, b('{"ride_id":"x","ride_id":"y"}')],
    [ridesSchema, b('{"ride\\u005fid":"x"}')],
    [ridesSchema, b('{"ride_id":"x","_meta":{"uuid":"already"}}')],
    [ridesSchema, b('{"ride_id":"x","_meta":{},"after":1}')],
    [ridesSchema, b('{"ride_id":"x","_meta":"not an object"}')],
    [typedSchema, b('{"id":1.0}')],
    [typedSchema, b('{"id":1e3}')],
    [typedSchema, b('{"id":1,"o":{"y":1}}')],
    [typedSchema, b('{"id":1,"o":{"x":1.5}}')],
    [typedSchema, b('{"id":1,"b":"true"}')],
    [typedSchema, b(`{"id":1,"a":${'['.repeat(100)}${']'.repeat(100)}}`)],
    [closedSchema, b('{"id":"a","other":1}')],
    // Names whose JSON text is not their bytes (a quote or backslash in them) are never matched in place.
    [{ type: 'object', properties: { 'a\\': { type: 'integer' }, 'q"': { type: 'integer' } } }, b('{"a\\\\":"s"}')],
    [{ type: 'object', properties: { 'a\\': { type: 'integer' }, 'q"': { type: 'integer' } } }, b('{"q\\"":"s"}')],
    // Values the keywords on them reject.
    ...['"started_at":"2023-11-14 22:13:20"', '"tip":"1.5"', '"fare":"x"', '"code":"a"', '"code":"abcde"', '"code":"é日本語!"', '"score":0', '"score":10.5',
      '"started_at":"2023-11-14T22:13:20\\u005a"'].map((m): [JsonSchema, Buffer] => [valueSchema, b(`{${m},"_meta":{"file":"f","offset":1}}`)]),
    [valueSchema, b('{"_meta":{"file":"f","offset":-1}}')],
    [valueSchema, b('{"_meta":{"file":"f"}}')],
    // A duplicate counts once towards `required` (JSON.parse keeps one member).
    [{ ...(ridesSchema as JsonObject), required: ['ride_id', 'city'] }, b('{"ride_id":"x","ride_id":"y"}')],
  ];
  for (const [schema, doc] of declined) assert.equal(agrees(schema, doc, doc.toString('hex')), false, `accepted ${doc.toString('utf8')}`);
});

test('byte-check: a string is read 4 bytes at a time — a control character, quote, backslash or non-ASCII byte anywhere in it is seen', () => {
  for (let length = 1; length <= 13; length++) {
    for (let at = 0; at < length; at++) {
      const text = (piece: string) => `${'x'.repeat(at)}${piece}${'y'.repeat(length - at - 1)}`;
      assert.equal(agrees(ridesSchema, b(`{"ride_id":"${text('\t')}"}`), `tab at ${at}`), false, `a tab at ${at} of ${length}`);
      assert.equal(agrees(ridesSchema, Buffer.concat([b(`{"ride_id":"${'x'.repeat(at)}`), Buffer.from([0xff]), b(`${'y'.repeat(length - at - 1)}"}`)]), `0xff at ${at}`), false, `0xff at ${at} of ${length}`);
      assert.ok(agrees(ridesSchema, b(`{"ride_id":"${text('\\"')}"}`), `escaped quote at ${at}`), `an escaped quote at ${at} of ${length}`);
      assert.ok(agrees(ridesSchema, b(`{"ride_id":"${text('é')}"}`), `é at ${at}`), `é at ${at} of ${length}`);
      assert.equal(agrees(ridesSchema, b(`{"ride_id":"${text('"')}"}`), `quote at ${at}`), false, `a quote at ${at} of ${length}`);
    }
  }
});

test('byte-check: schemas it does not decide at the root get no plan; a keyword it does not know on a member declines only that member', () => {
  for (const schema of [true, false, { type: 'array' }, { type: 'object', minProperties: 1 }, { type: 'object', patternProperties: { a: {} } }, { $ref: '#/$defs/x', $defs: { x: {} } }, { type: 'object', additionalProperties: { type: 'string' } }] as JsonSchema[]) {
    assert.equal(compileBytePlan(schema, '_meta', 'uuid'), undefined, JSON.stringify(schema));
  }
  const schema: JsonSchema = { type: 'object', properties: { id: { type: 'string' }, e: { enum: ['a'] } } };
  assert.ok(agrees(schema, b('{"id":"a"}'), 'without e'));
  assert.equal(agrees(schema, b('{"id":"a","e":"a"}'), 'with e'), false);
});

// A seeded generator, so a failure names a document that can be found again.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['a', 'Z', ' ', '\\"', '\\\\', '\\n', '\\u00e9', '\\ud800', 'é', '日', '🚲', '"', ',', '{', '}', '[', ']', ':', '\\'];

function randomDoc(r: () => number): string {
  const str = (): string => {
    let s = '';
    for (let n = Math.floor(r() * 6); n > 0; n--) s += PIECES[Math.floor(r() * 11)]!;
    return `"${s}"`;
  };
  const scalar = (): string => {
    const k = Math.floor(r() * 8);
    return [str(), '0', '-12', '3.25', '9007199254740993', '1e5', 'true', 'null'][k]!;
  };
  const value = (depth: number): string => {
    const k = Math.floor(r() * (depth > 2 ? 1 : 4));
    if (k === 0) return scalar();
    if (k === 1) return `[${Array.from({ length: Math.floor(r() * 3) }, () => value(depth + 1)).join(',')}]`;
    return `{${Array.from({ length: Math.floor(r() * 3) }, (_, i) => `"k${i}":${value(depth + 1)}`).join(',')}}`;
  };
  const members: string[] = [];
  const names = ['id', 'n', 's', 'b', 'a', 'o', 'any', 'ride_id', 'city', 'x', 'started_at', 'tip', 'fare', 'code', 'score'];
  const pick = (xs: string[]): string => xs[Math.floor(r() * xs.length)]!;
  // Mostly of the type the test schemas ask for, sometimes anything.
  const typed: Record<string, () => string> = {
    id: () => String(Math.floor(r() * 1e6)), n: () => ['1.5', '-2', '0.1e-2'][Math.floor(r() * 3)]!, s: () => (r() < 0.5 ? 'null' : str()),
    b: () => (r() < 0.5 ? 'true' : 'false'), a: () => value(1), o: () => `{"x":${Math.floor(r() * 10)}}`, ride_id: str, city: str,
    started_at: () => pick(['"2023-11-14T22:13:20Z"', '"2023-11-14T22:13:20.5+01:00"', '"2023-02-30T00:00:00Z"', '"yesterday"']),
    tip: () => pick(['"12"', '"-3"', '"1.5"', '""']), fare: () => pick(['null', '"0.5"', '"-1e3"', '"abc"']),
    code: () => pick(['"ab"', '"é日"', '"abcde"', '"a"', '"🚲🚲"']), score: () => pick(['0', '0.5', '10', '10.5', '-1', '"s"']),
  };
  for (const name of names) {
    if (r() < 0.4) continue;
    const v = typed[name] !== undefined && r() < 0.8 ? (name === 'a' ? `[${typed[name]()}]` : typed[name]()) : value(0);
    members.push(`${r() < 0.1 ? ' ' : ''}"${name}":${r() < 0.1 ? ' ' : ''}${v}`);
  }
  if (r() < 0.7) members.push(`"_meta":{${r() < 0.5 ? `"file":"f.csv","offset":${pick(['7', '0', '-1', '2.5'])}` : ''}}`);
  return `{${members.join(',')}}`;
}

test('byte-check: generated documents and random byte mutations of them — whatever it accepts, JSON.parse, ajv and the text splice agree with', () => {
  const r = rng(16);
  let accepted = 0;
  let valid = 0;
  let mutants = 0;
  for (let n = 0; n < 3000; n++) {
    const doc = randomDoc(r);
    const schemas: JsonSchema[] = [ridesSchema, typedSchema, closedSchema, valueSchema];
    for (const schema of schemas) {
      const ok = agrees(schema, b(doc), doc);
      if (ok) accepted++;
      // Valid, and of the kind it decides (no exponent where an integer is asked for).
      const { validate } = compiled.get(schema)!;
      if (validate(JSON.parse(doc) as JsonValue) === null && !(schema === typedSchema && /"id":\s*-?\d+e/.test(doc))) {
        valid++;
        assert.ok(ok, `declined ${doc}, which is valid (and of the kind it decides) for ${JSON.stringify(schema)}`);
      }
    }
    const bytes = b(doc);
    for (let m = 0; m < 4; m++) {
      const mutant = Buffer.from(bytes);
      const at = Math.floor(r() * mutant.length);
      // A random byte, but never a newline (a line holds none).
      let v = Math.floor(r() * 256);
      if (v === 0x0a) v = 0x0b;
      mutant[at] = v;
      for (const schema of [ridesSchema, typedSchema, valueSchema]) if (agrees(schema, mutant, `${doc} with byte ${at} = ${v}`)) mutants++;
    }
  }
  // A check that declined valid documents would fail here.
  assert.ok(valid > 1500 && accepted === valid, `accepted ${accepted} of ${valid} valid generated documents`);
  assert.ok(mutants > 100, `accepted ${mutants} mutants`);
});
