// A collection's write schema checked against a document's JSON BYTES in one pass, for the schemas whose
// checks need no value: objects of typed properties (`type`, `properties`, `required`, `additionalProperties`
// true/false, annotations), as collections of flat records are. Why: a captured document was decoded from
// the connector's bytes into a string, JSON.parse'd into objects for ajv, and encoded into the journal's
// bytes again; that was most of the plane's main-thread work per document (issue 16). Here the bytes are
// read once: JSON's grammar (exactly: what this accepts, JSON.parse accepts), UTF-8 (exactly: what this
// accepts, decoding and encoding gives back unchanged), member names matched against the schema's
// properties as bytes, each value's type by its first byte, and a few keywords on the value itself (ValueChecks:
// format, string lengths, number bounds). The answer is only ever "valid, certainly" or
// "don't know": anything this does not decide — a keyword beyond those above on a member that is present,
// a missing required member, a type mismatch, a duplicate or escaped member name, a number that is not
// plainly an integer where only integers are allowed, nesting beyond MAX_DEPTH, invalid JSON or UTF-8 —
// declines, and the caller validates the parsed document with ajv as before (same errors, same messages).
// It also finds where `_meta/uuid` goes (see BytesSplice), as spliceMemberAt does in the text.
// Equivalence with ajv and JSON.parse: test/journals/byte-check.test.ts.
import { jsonNumberEnd, jsonScanned, jsonStringEnd } from '@sluice/runtime';
import type { JsonObject, JsonSchema } from '@sluice/runtime';
import { documentFormats } from '../catalog/ajv.ts';

const T_STRING = 1;
const T_INTEGER = 2;
const T_NUMBER = 4;
const T_BOOLEAN = 8;
const T_NULL = 16;
const T_OBJECT = 32;
const T_ARRAY = 64;
const T_ALL = 127;
const TYPE_BITS: Record<string, number> = {
  string: T_STRING, integer: T_INTEGER, number: T_NUMBER | T_INTEGER, boolean: T_BOOLEAN, null: T_NULL, object: T_OBJECT, array: T_ARRAY,
};

/** Deeper documents are left to JSON.parse (the recursion here is bounded by this). */
const MAX_DEPTH = 64;

// Keywords ajv (strict off, no useDefaults) treats as annotations; any other keyword makes a (sub)schema
// one this does not decide. Keys starting with `x-` are annotations too.
const ANNOTATIONS = new Set([
  'title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly',
  // Flow's and connectors' annotations.
  'reduce', 'secret', 'airbyte_secret', 'advanced', 'order', 'multiline',
]);
const isAnnotation = (k: string): boolean => ANNOTATIONS.has(k) || k.startsWith('x-');

interface Prop {
  /** The value types the schema allows (T_* bits). */
  types: number;
  /** For an object value: its members' plan (undefined: any members). */
  object: ObjectPlan | undefined;
  /** The member's schema has keywords this does not decide: decline when the member is present. */
  decline: boolean;
  required: boolean;
  /** Checks on the value itself, read only for the keywords present (ValueChecks). */
  checks?: ValueChecks;
}

/**
 * The keywords decided on a value's bytes: a string's `format` (the very function ajv's document validator
 * runs) and `minLength`/`maxLength` (code points: UTF-8 bytes that are not continuation bytes), for a string
 * without escapes; a number's bounds, on the number JSON.parse reads (Number of the same digits). Each
 * applies only to a value of its type, as in ajv.
 */
interface ValueChecks {
  format?: (s: string) => boolean;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

const LENGTH_KEYWORDS = ['minLength', 'maxLength'] as const;
const BOUND_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;

/** ajv's string format functions: the table every document validator's ajv gets (catalog/ajv.ts). */
let formats: Record<string, unknown> | undefined;

/** The test ajv runs for `format` on a string, or undefined when it is not one this can run (unknown, async, for numbers). */
function formatTest(name: unknown): ((s: string) => boolean) | undefined {
  if (typeof name !== 'string') return undefined;
  formats ??= documentFormats() as Record<string, unknown>;
  if (!Object.hasOwn(formats, name)) return undefined;
  let def = formats[name];
  if (def !== null && typeof def === 'object' && !(def instanceof RegExp)) {
    const d = def as { type?: unknown; async?: unknown; validate?: unknown };
    if ((d.type !== undefined && d.type !== 'string') || d.async === true) return undefined;
    def = d.validate;
  }
  if (def instanceof RegExp) return (s) => def.test(s);
  if (typeof def === 'function') return def as (s: string) => boolean;
  return undefined;
}

/** A compiled object schema. */
export interface ObjectPlan {
  /** The properties' names as UTF-8, matched against member names' bytes. */
  names: Uint8Array[];
  /** plain[k] = 1: name k has no `"`, `\` or control character (its JSON text is its bytes between quotes). */
  plain: Uint8Array;
  props: Prop[];
  requiredCount: number;
  /** Members not in `properties` are allowed (additionalProperties absent or true). */
  additional: boolean;
  /** next[k + 1]: the property that followed property k in the last document (k = -1: the first). */
  next: Int32Array;
  /** seen[k] === generation: property k is present in the object being read (duplicates decline). */
  seen: Uint32Array;
}

/** The per-name arrays of a plan with these names (ObjectPlan.plain, next, seen). */
function nameArrays(names: Uint8Array[]): Pick<ObjectPlan, 'plain' | 'next' | 'seen'> {
  return {
    plain: Uint8Array.from(names, (n) => (n.every((c) => c !== 0x22 && c !== 0x5c && c >= 0x20) ? 1 : 0)),
    next: new Int32Array(names.length + 1).fill(-1),
    seen: new Uint32Array(names.length),
  };
}

const DECLINE: Prop = { types: 0, object: undefined, decline: true, required: false };

function typesOf(type: unknown): number | undefined {
  if (type === undefined) return T_ALL;
  const list = typeof type === 'string' ? [type] : Array.isArray(type) ? type : undefined;
  if (list === undefined || list.length === 0) return undefined;
  let bits = 0;
  for (const t of list) {
    const b = typeof t === 'string' ? TYPE_BITS[t] : undefined;
    if (b === undefined) return undefined;
    bits |= b;
  }
  return bits;
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function compileProp(schema: JsonSchema | undefined): Prop {
  if (schema === undefined || schema === true) return { types: T_ALL, object: undefined, decline: false, required: false };
  if (!isObject(schema)) return DECLINE;
  let objectKeywords = false;
  let checks: ValueChecks | undefined;
  for (const k in schema) {
    if (k === 'type' || isAnnotation(k)) continue;
    if (k === 'properties' || k === 'required' || k === 'additionalProperties') {
      objectKeywords = true;
      continue;
    }
    const v = schema[k];
    if (k === 'format') {
      const test = formatTest(v);
      if (test === undefined) return DECLINE;
      (checks ??= {}).format = test;
    } else if ((LENGTH_KEYWORDS as readonly string[]).includes(k)) {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) return DECLINE;
      (checks ??= {})[k as typeof LENGTH_KEYWORDS[number]] = v;
    } else if ((BOUND_KEYWORDS as readonly string[]).includes(k)) {
      if (typeof v !== 'number' || !Number.isFinite(v)) return DECLINE;
      (checks ??= {})[k as typeof BOUND_KEYWORDS[number]] = v;
    } else {
      return DECLINE;
    }
  }
  const types = typesOf(schema['type']);
  if (types === undefined) return DECLINE;
  let object: ObjectPlan | undefined;
  if (objectKeywords) {
    object = compileObject(schema);
    if (object === undefined) return DECLINE;
  }
  return checks === undefined ? { types, object, decline: false, required: false } : { types, object, decline: false, required: false, checks };
}

/** A string's checks, on its bytes b[start, end) (between the quotes; jsonScanned.escaped from reading it). */
function stringPasses(b: Buffer, start: number, end: number, c: ValueChecks): boolean {
  if (jsonScanned.escaped) return false;
  if (c.minLength !== undefined || c.maxLength !== undefined) {
    let n = 0;
    for (let k = start; k < end; k++) if ((b[k]! & 0xc0) !== 0x80) n++;
    if ((c.minLength !== undefined && n < c.minLength) || (c.maxLength !== undefined && n > c.maxLength)) return false;
  }
  return c.format === undefined || c.format(b.toString('utf8', start, end)) === true;
}

/** A number's bounds, on its token b[start, end). */
function numberPasses(b: Buffer, start: number, end: number, c: ValueChecks): boolean {
  if (c.minimum === undefined && c.maximum === undefined && c.exclusiveMinimum === undefined && c.exclusiveMaximum === undefined) return true;
  const v = Number(b.toString('latin1', start, end));
  return !((c.minimum !== undefined && v < c.minimum) || (c.maximum !== undefined && v > c.maximum)
    || (c.exclusiveMinimum !== undefined && v <= c.exclusiveMinimum) || (c.exclusiveMaximum !== undefined && v >= c.exclusiveMaximum));
}

/** `properties`, `required` and `additionalProperties` of an object schema as a plan; undefined when not decidable. */
function compileObject(schema: JsonObject): ObjectPlan | undefined {
  const properties = schema['properties'] ?? {};
  const required = schema['required'] ?? [];
  const additional = schema['additionalProperties'] ?? true;
  if (!isObject(properties) || !Array.isArray(required) || typeof additional !== 'boolean') return undefined;
  const names: string[] = [];
  const props: Prop[] = [];
  for (const name of Object.keys(properties)) {
    names.push(name);
    props.push(compileProp(properties[name] as JsonSchema));
  }
  let requiredCount = 0;
  for (const r of new Set(required)) {
    if (typeof r !== 'string') return undefined;
    let k = names.indexOf(r);
    if (k < 0) {
      names.push(r);
      props.push({ types: T_ALL, object: undefined, decline: false, required: false });
      k = names.length - 1;
    }
    // A copy: DECLINE is shared.
    props[k] = { ...props[k]!, required: true };
    requiredCount++;
  }
  const bytes = names.map((n) => Buffer.from(n, 'utf8'));
  return { names: bytes, props, requiredCount, additional, ...nameArrays(bytes) };
}

/** A collection's compiled write schema, with where its UUID goes. */
export interface BytePlan {
  root: ObjectPlan;
  /** The root property index of the UUID's parent (`_meta`). */
  parent: number;
}

const ANY: Prop = { types: T_ALL, object: undefined, decline: false, required: false };

/**
 * The plan of a collection's write schema for a two-token uuidPtr `/<parent>/<name>`, or undefined when the
 * root is not an object schema of the kind this decides (then every document is validated by ajv). A
 * present `/<parent>/<name>` always declines (spliceMemberAt does not splice over an existing member).
 */
export function compileBytePlan(schema: JsonSchema, parent: string, name: string): BytePlan | undefined {
  if (!isObject(schema)) return undefined;
  for (const k in schema) {
    if (k === 'type' || k === 'properties' || k === 'required' || k === 'additionalProperties' || k === '$schema' || isAnnotation(k)) continue;
    return undefined;
  }
  const types = typesOf(schema['type']);
  if (types === undefined || (types & T_OBJECT) === 0) return undefined;
  const root = compileObject(schema);
  if (root === undefined) return undefined;
  const declineName = (plan: ObjectPlan | undefined): ObjectPlan => {
    const o = plan ?? { names: [], props: [], requiredCount: 0, additional: true, ...nameArrays([]) };
    const nameBytes = Buffer.from(name, 'utf8');
    const j = o.names.findIndex((n) => Buffer.compare(n, nameBytes) === 0);
    if (j >= 0) return { ...o, props: o.props.map((p, i) => (i === j ? { ...DECLINE, required: p.required } : p)) };
    const names = [...o.names, nameBytes];
    return { ...o, names, props: [...o.props, DECLINE], ...nameArrays(names) };
  };
  const parentBytes = Buffer.from(parent, 'utf8');
  let k = root.names.findIndex((n) => Buffer.compare(n, parentBytes) === 0);
  if (k < 0) {
    root.names.push(parentBytes);
    root.props.push(root.additional ? { ...ANY, object: declineName(undefined) } : DECLINE);
    Object.assign(root, nameArrays(root.names));
    k = root.names.length - 1;
  } else {
    const p = root.props[k]!;
    if (!p.decline) root.props[k] = { ...p, object: declineName(p.object) };
  }
  return { root, parent: k };
}

// ---- Reading the bytes -------------------------------------------------------------------------------

/** Set by readObject: how many members the object had. */
let members = 0;
/** Bumped per object read with a plan (for ObjectPlan.seen). */
let generation = 0;

// Strings and numbers are read by the runtime's jsonStringEnd / jsonNumberEnd (also the byte packer's), bounded
// by the document's end. The rest reads without bounds checks: a line holds no newline, and the one at or after
// the document's end (see checkDocumentBytes) stops every loop here, so no read goes past the buffer (an
// out-of-bounds read makes V8's element loads generic: ~5× slower).
function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d;
}

function literal(b: Buffer, i: number, end: number, text: string): number {
  if (i + text.length > end) return -1;
  for (let k = 0; k < text.length; k++) if (b[i + k] !== text.charCodeAt(k)) return -1;
  return i + text.length;
}

/** The T_* bit of the value starting with byte c (a number's is T_NUMBER; see readValue). */
function typeOfByte(c: number): number {
  switch (c) {
    case 0x22: return T_STRING;
    case 0x7b: return T_OBJECT;
    case 0x5b: return T_ARRAY;
    case 0x74: case 0x66: return T_BOOLEAN;
    case 0x6e: return T_NULL;
    default: return (c >= 0x30 && c <= 0x39) || c === 0x2d ? T_NUMBER : 0;
  }
}

/** Any JSON value at `i` (no whitespace before it): the index after it, or -1. */
function readValue(b: Buffer, i: number, end: number, depth: number): number {
  const c = b[i]!;
  switch (c) {
    case 0x22: return jsonStringEnd(b, i, end);
    case 0x7b: return readObject(b, i, end, undefined, depth + 1);
    case 0x5b: return readArray(b, i, end, depth + 1);
    case 0x74: return literal(b, i, end, 'true');
    case 0x66: return literal(b, i, end, 'false');
    case 0x6e: return literal(b, i, end, 'null');
    default: return jsonNumberEnd(b, i, end);
  }
}

function readArray(b: Buffer, i: number, end: number, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  i++;
  while (isWs(b[i]!)) i++;
  if (b[i] === 0x5d) return i + 1;
  while (true) {
    i = readValue(b, i, end, depth);
    if (i < 0) return -1;
    while (isWs(b[i]!)) i++;
    const c = b[i];
    if (c === 0x5d) return i + 1;
    if (c !== 0x2c) return -1;
    i++;
    while (isWs(b[i]!)) i++;
  }
}

function sameBytes(name: Uint8Array, b: Buffer, start: number, length: number): boolean {
  if (name.length !== length) return false;
  for (let k = 0; k < length; k++) if (name[k] !== b[start + k]) return false;
  return true;
}

/** The property named b[start, start + length), or -1; `prev` is the property before it in this object (or -1). */
function findProp(plan: ObjectPlan, b: Buffer, start: number, length: number, prev: number): number {
  const guess = plan.next[prev + 1]!;
  if (guess >= 0 && sameBytes(plan.names[guess]!, b, start, length)) return guess;
  const names = plan.names;
  for (let k = 0; k < names.length; k++) {
    if (k !== guess && sameBytes(names[k]!, b, start, length)) {
      plan.next[prev + 1] = k;
      return k;
    }
  }
  return -1;
}

/** Where the root object's last member was, for the splice (readObject with `root` set fills it). */
interface RootInfo {
  /** The root object's generation (ObjectPlan.seen). */
  gen: number;
  /** The last member's property index (-1: not a property, or no member). */
  lastProp: number;
  /** The index of the last member's value's last byte. */
  lastValueEnd: number;
  /** How many members the last member's value had (when it is an object). */
  lastMembers: number;
}

/**
 * The object at `i` (its `{`): the index after it, or -1 (invalid, or not certainly valid against `plan`).
 * Without a plan any members are fine (grammar only). Sets `members`.
 */
function readObject(b: Buffer, i: number, end: number, plan: ObjectPlan | undefined, depth: number, root?: RootInfo): number {
  if (depth > MAX_DEPTH) return -1;
  const gen = plan === undefined ? 0 : (generation = (generation + 1) >>> 0 || 1);
  if (root !== undefined) root.gen = gen;
  let count = 0;
  let required = 0;
  let prev = -1;
  i++;
  while (isWs(b[i]!)) i++;
  if (b[i] !== 0x7d) {
    while (true) {
      if (b[i] !== 0x22) return -1;
      let k = -1;
      // The property that followed the previous one last time, compared in place (a plain name's bytes then a
      // quote are exactly that name): most members, with no scan of the name.
      const guess = plan === undefined ? -1 : plan.next[prev + 1]!;
      let known = false;
      if (guess >= 0 && plan!.plain[guess] === 1) {
        const name = plan!.names[guess]!;
        const from = i + 1;
        let m = 0;
        while (m < name.length && b[from + m] === name[m]) m++;
        if (m === name.length && b[from + m] === 0x22) {
          k = guess;
          known = true;
          i = from + m + 1;
        }
      }
      if (!known) {
        const keyStart = i + 1;
        i = jsonStringEnd(b, i, end);
        if (i < 0) return -1;
        if (plan !== undefined) {
          if (jsonScanned.escaped) return -1;
          k = findProp(plan, b, keyStart, i - 1 - keyStart, prev);
        }
      }
      while (isWs(b[i]!)) i++;
      if (b[i] !== 0x3a) return -1;
      i++;
      while (isWs(b[i]!)) i++;
      count++;
      if (plan === undefined) {
        i = readValue(b, i, end, depth);
      } else {
        if (k < 0) {
          if (!plan.additional) return -1;
          i = readValue(b, i, end, depth);
        } else {
          prev = k;
          const p = plan.props[k]!;
          if (p.decline || plan.seen[k] === gen) return -1;
          plan.seen[k] = gen;
          if (p.required) required++;
          const c = b[i]!;
          let type = typeOfByte(c);
          if ((p.types & type) === 0 && type !== T_NUMBER) return -1;
          if (type === T_STRING) {
            const from = i;
            i = jsonStringEnd(b, i, end);
            if (i >= 0 && p.checks !== undefined && !stringPasses(b, from + 1, i - 1, p.checks)) return -1;
          } else if (type === T_OBJECT && p.object !== undefined) {
            i = readObject(b, i, end, p.object, depth + 1);
          } else if (type === T_NUMBER) {
            const from = i;
            i = jsonNumberEnd(b, i, end);
            if (i < 0) return -1;
            if (jsonScanned.integer) type = T_INTEGER;
            if ((p.types & type) === 0) return -1;
            if (p.checks !== undefined && !numberPasses(b, from, i, p.checks)) return -1;
          } else {
            i = readValue(b, i, end, depth);
          }
        }
      }
      if (i < 0) return -1;
      if (root !== undefined) {
        root.lastProp = k;
        root.lastValueEnd = i - 1;
        root.lastMembers = members;
      }
      while (isWs(b[i]!)) i++;
      const c = b[i];
      if (c === 0x7d) break;
      if (c !== 0x2c) return -1;
      i++;
      while (isWs(b[i]!)) i++;
    }
  }
  if (plan !== undefined && required !== plan.requiredCount) return -1;
  members = count;
  return i + 1;
}

/**
 * Where `/<parent>/<name>` goes into a document's bytes, as spliceMemberAt decides it in the text: `at`
 * (a byte index of the document) and which of the four inserts (see CollectionWriter).
 */
export interface BytesSplice {
  at: number;
  /** 0: no parent, the document has members; 1: no parent, empty document; 2: the parent (last member) has members; 3: it is empty. */
  kind: number;
}

const ROOT: RootInfo = { gen: 0, lastProp: -1, lastValueEnd: -1, lastMembers: 0 };

/**
 * Checks the document `b[start, end)` against the plan (see above); true when it is certainly valid JSON of an
 * object, in UTF-8, valid against the schema, and the UUID can be spliced in: `out` says where. False: not
 * decided here. `b` must hold a newline (0x0a) at or after `end`, and none before it from `start` (a line).
 */
export function checkDocumentBytes(b: Buffer, start: number, end: number, plan: BytePlan, out: BytesSplice): boolean {
  if (b[start] !== 0x7b) return false;
  ROOT.lastProp = -1;
  const after = readObject(b, start, end, plan.root, 1, ROOT);
  if (after !== end) return false;
  if (plan.root.seen[plan.parent] !== ROOT.gen) {
    out.at = end - 1;
    out.kind = members === 0 ? 1 : 0;
    return true;
  }
  // The parent exists: it must be the last member and an object (its plan declined the UUID's member).
  if (ROOT.lastProp !== plan.parent || b[ROOT.lastValueEnd] !== 0x7d) return false;
  out.at = ROOT.lastValueEnd;
  out.kind = ROOT.lastMembers === 0 ? 3 : 2;
  return true;
}
