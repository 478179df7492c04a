// The JSON → tuple packer of pack.ts, read straight from a document's UTF-8 bytes: one pass over the
// bytes finds the selected fields (no JSON.parse, no objects), and strings, integers, booleans and null
// are packed from their bytes. Why: the materialization thread parsed every journal document only to
// pack a dozen fields from it, and the parse with the garbage it left was most of that thread's CPU
// (issue 16). It packs exactly what createPacker packs from parseDocument's value — the tests compare
// both on every case they hold — and gives up (returns false) on whatever it does not handle that way:
// invalid JSON or UTF-8, escaped member names on a selected path, a pointer into an array, nesting
// deeper than MAX_DEPTH. The caller then takes the parse path, which also reports errors as it always did.
// Rare values take a slow step of their own (decimals and exponents through Number, integers of 16 or
// more digits through BigInt, objects and arrays through parseDocument + stringifyDocument of their text).
// The same scan also writes the fields as JSON arrays (jsonInto: Flow's `key`/`values`, json-values.ts), each
// element its slice of the document's bytes — what the plane sends its built-in connectors.
import { parseDocument, stringifyDocument } from './documents.ts';
import { parsePointer } from './json-pointer.ts';
import type { CollectionSpec, FieldSelection, Projection } from './specs.ts';
import { ByteSink, pushTupleElement } from './tuple.ts';
import { jsonNumberEnd, jsonScanned, jsonStringEnd } from './json-bytes.ts';
import { uuidMillis, uuidMillisOfBytes } from './uuid.ts';

/** Packs a binding's key and values from a document's bytes; undefined for a selection it cannot read so. */
export interface BytePacker {
  /**
   * Packs the key into `key` and the values into `values` (each reset first) from the JSON document
   * buf[start, end). Returns false, with the sinks' contents unspecified, when the caller must parse
   * the document instead. `deletion` then tells whether `/_meta/op` is "d".
   */
  pack(buf: Uint8Array, start: number, end: number): boolean;
  /**
   * pack(), with the values appended to `values` at its length instead (a transaction's arena: no copy
   * afterwards); on false, `values` may hold a part of them past its length before the call.
   */
  packInto(buf: Uint8Array, start: number, end: number, values: ByteSink): boolean;
  /**
   * The JSON form (json-values.ts): packs the key into `key` (the combine table keys on it) and appends to `out`
   * the key's and the values' JSON arrays back to back, `[…][…]`, each element its slice of the document's bytes
   * (a string with its quotes and escapes, a number's digits, an object's text) or `null` for an absent field;
   * `jsonKeyLen` is then the first array's length. Returns false as packInto() does.
   */
  jsonInto(buf: Uint8Array, start: number, end: number, out: ByteSink): boolean;
  /** After a successful jsonInto(): the length of the key's JSON array. */
  jsonKeyLen: number;
  readonly key: ByteSink;
  readonly values: ByteSink;
  /** After a successful pack(): the document is a deletion (`_meta/op` is "d"). */
  deletion: boolean;
}

/** Nesting deeper than this is parsed instead (the scanner recurses). */
const MAX_DEPTH = 64;

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;
const UTF8 = new TextEncoder();

// What a slot holds after a scan.
const MISSING = 0;
const NULL = 1;
const TRUE = 2;
const FALSE = 3;
/** A string without escapes (its bytes are valid UTF-8 without control characters): copied as is. */
const STRING = 4;
/** A string with backslash escapes: decoded while packed. */
const STRING_ESCAPED = 5;
const NUMBER = 6;
const OBJECT = 7;
const ARRAY = 8;

interface Node {
  /** The slot of the pointer ending here, or -1. */
  slot: number;
  /** Member names below this node (UTF-8), with their nodes. */
  names: Uint8Array[];
  children: Node[];
  /** Some child token is an array index: a pointer may go into an array here (not handled: parse). */
  indexChild: boolean;
  /** Every slot at or below this node (cleared when the member occurs again: the last one wins, as JSON.parse). */
  below: number[];
  /** Per member position: the child matched there last time (documents repeat their member order), or -1. */
  guess: number[];
  /** plain[k]: name k has no `"`, `\\` or control character, so its JSON text is its bytes between quotes. */
  plain: boolean[];
}

function newNode(): Node {
  return { slot: -1, names: [], children: [], indexChild: false, below: [], guess: [], plain: [] };
}

/** Field extraction kinds. */
const PLAIN = 0;
const PUBLISHED_AT = 1;

interface FieldPlan { slot: number; kind: number }

/**
 * A byte packer for the selection, or undefined when some field cannot be read from bytes (the whole
 * document as a field: its pointer is ""). Throws as createPacker does for a field without a projection.
 */
export function createBytePacker(collection: CollectionSpec, selection: FieldSelection): BytePacker | undefined {
  const byField = new Map((collection.projections ?? []).map((p) => [p.field, p]));
  const root = newNode();
  const slotPtrs: string[] = [];
  const slotOf = (ptr: string): number => {
    const found = slotPtrs.indexOf(ptr);
    if (found >= 0) return found;
    const tokens = parsePointer(ptr);
    let node = root;
    const path: Node[] = [root];
    for (const t of tokens) {
      const bytes = UTF8.encode(t);
      let i = node.names.findIndex((n) => Buffer.compare(n, bytes) === 0);
      if (i < 0) {
        node.names.push(bytes);
        node.children.push(newNode());
        node.plain.push(bytes.every((c) => c !== 0x22 && c !== 0x5c && c >= 0x20));
        if (ARRAY_INDEX.test(t)) node.indexChild = true;
        i = node.names.length - 1;
      }
      node = node.children[i]!;
      path.push(node);
    }
    const slot = slotPtrs.length;
    slotPtrs.push(ptr);
    node.slot = slot;
    for (const n of path) n.below.push(slot);
    return slot;
  };
  const planOf = (field: string): FieldPlan | undefined => {
    const p: Projection | undefined = byField.get(field);
    if (p === undefined) throw new Error(`field "${field}" of the field selection is not a projection of collection "${collection.name}"`);
    const ptr = p.ptr ?? '';
    if (ptr === '') return undefined;
    const published = p.field === 'flow_published_at' || (ptr === '/_meta/uuid' && p.inference?.string?.format === 'date-time');
    return { slot: slotOf(ptr), kind: published ? PUBLISHED_AT : PLAIN };
  };
  const keyPlans = (selection.keys ?? []).map(planOf);
  const valuePlans = (selection.values ?? []).map(planOf);
  if (keyPlans.includes(undefined) || valuePlans.includes(undefined)) return undefined;
  const opSlot = slotOf('/_meta/op');
  return new Scanner(root, slotPtrs.length, keyPlans as FieldPlan[], valuePlans as FieldPlan[], opSlot);
}

class Scanner implements BytePacker {
  readonly key = new ByteSink();
  readonly values = new ByteSink();
  deletion = false;
  readonly #root: Node;
  readonly #keys: FieldPlan[];
  readonly #values: FieldPlan[];
  readonly #opSlot: number;
  readonly #kind: Uint8Array;
  readonly #start: Int32Array;
  readonly #end: Int32Array;
  #buf: Uint8Array = new Uint8Array(0);
  #limit = 0;
  // The publication time of the last UUID packed (documents of one commit share their millisecond).
  #lastMs = NaN;
  /** Its tuple element (a string element of its ISO text), copied as bytes into each document's values. */
  #lastElement = new ByteSink();

  constructor(root: Node, slots: number, keys: FieldPlan[], values: FieldPlan[], opSlot: number) {
    this.#root = root;
    this.#keys = keys;
    this.#values = values;
    this.#opSlot = opSlot;
    this.#kind = new Uint8Array(slots);
    this.#start = new Int32Array(slots);
    this.#end = new Int32Array(slots);
  }

  pack(buf: Uint8Array, start: number, end: number): boolean {
    this.values.len = 0;
    return this.packInto(buf, start, end, this.values);
  }

  packInto(buf: Uint8Array, start: number, end: number, values: ByteSink): boolean {
    if (!this.#scan(buf, start, end)) return false;
    this.key.len = 0;
    if (!this.#pack(this.#keys, this.key) || !this.#pack(this.#values, values)) return false;
    this.deletion = this.#isD(this.#opSlot);
    return true;
  }

  jsonKeyLen = 0;

  jsonInto(buf: Uint8Array, start: number, end: number, out: ByteSink): boolean {
    if (!this.#scan(buf, start, end)) return false;
    this.key.len = 0;
    if (!this.#pack(this.#keys, this.key)) return false;
    const at = out.len;
    this.#json(this.#keys, out);
    this.jsonKeyLen = out.len - at;
    this.#json(this.#values, out);
    this.deletion = this.#isD(this.#opSlot);
    return true;
  }

  /** Scans the document buf[start, end), recording the selected fields' slots; false when it must be parsed instead. */
  #scan(buf: Uint8Array, start: number, end: number): boolean {
    this.#buf = buf;
    this.#limit = end;
    this.#kind.fill(MISSING);
    let i = this.#ws(start);
    if (i >= end || buf[i] !== 0x7b) return false;
    i = this.#object(i, this.#root, 0);
    return i >= 0 && this.#ws(i) === end;
  }

  /** Appends the fields as a JSON array of their texts (json-values.ts decodes it as #pack's tuple unpacks). */
  #json(plans: FieldPlan[], out: ByteSink): void {
    out.ensure(2 + plans.length);
    out.buf[out.len++] = 0x5b;
    for (let f = 0; f < plans.length; f++) {
      if (f > 0) {
        out.ensure(1);
        out.buf[out.len++] = 0x2c;
      }
      const plan = plans[f]!;
      const slot = plan.slot;
      const kind = this.#kind[slot]!;
      let s = this.#start[slot]!;
      let e = this.#end[slot]!;
      if (plan.kind === PUBLISHED_AT) {
        const text = this.#publishedAtJson(kind, s, e);
        out.ensure(text.length);
        const o = out.buf;
        let at = out.len;
        for (let j = 0; j < text.length; j++) o[at++] = text.charCodeAt(j);
        out.len = at;
        continue;
      }
      switch (kind) {
        case MISSING:
        case NULL:
          copyAscii(out, 'null');
          continue;
        case TRUE:
          copyAscii(out, 'true');
          continue;
        case FALSE:
          copyAscii(out, 'false');
          continue;
        case STRING:
        case STRING_ESCAPED:
          // With its quotes (the slot holds the text between them).
          s--;
          e++;
          break;
      }
      // A string, number, object or array: its bytes as the document holds them (the scan checked their grammar).
      const len = e - s;
      out.ensure(len);
      const o = out.buf;
      const b = this.#buf;
      let at = out.len;
      if (len <= 64) {
        for (let j = s; j < e; j++) o[at++] = b[j]!;
      } else {
        o.set(b.subarray(s, e), at);
        at += len;
      }
      out.len = at;
    }
    out.ensure(1);
    out.buf[out.len++] = 0x5d;
  }

  // The publication time of the last UUID written as JSON (documents of one commit share their millisecond).
  #lastJsonMs = NaN;
  #lastJson = 'null';

  /** The JSON text (`"<ISO time>"`, or `null`) of the publication time of the UUID in a slot. */
  #publishedAtJson(kind: number, s: number, e: number): string {
    if (kind !== STRING && kind !== STRING_ESCAPED) return 'null';
    const ms = kind === STRING ? uuidMillisOfBytes(this.#buf, s, e) : uuidMillis(JSON.parse(this.#text(s - 1, e + 1)) as string);
    if (ms === undefined) return 'null';
    if (ms !== this.#lastJsonMs) {
      this.#lastJson = `"${new Date(ms).toISOString()}"`;
      this.#lastJsonMs = ms;
    }
    return this.#lastJson;
  }

  #ws(i: number): number {
    const b = this.#buf;
    const n = this.#limit;
    while (i < n) {
      const c = b[i]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      i++;
    }
    return i;
  }

  /** Scans the object at `i` (its `{`); records the selected members under `node` (may be null). Returns the index after `}`, or -1. */
  #object(i: number, node: Node | null, depth: number): number {
    if (depth > MAX_DEPTH) return -1;
    const b = this.#buf;
    i = this.#ws(i + 1);
    if (i < this.#limit && b[i] === 0x7d) return i + 1;
    let member = 0;
    const limit = this.#limit;
    while (true) {
      if (i >= limit || b[i] !== 0x22) return -1;
      let child: Node | null = null;
      // The member matched at this position last time, compared in place: a plain name's bytes then a quote
      // are exactly that name (documents repeat their member order), with no scan of the name.
      const guess = node !== null && member < 64 ? node.guess[member] ?? -1 : -1;
      let nameEnd = -1;
      if (guess >= 0 && node!.plain[guess]) {
        const name = node!.names[guess]!;
        const from = i + 1;
        const len = name.length;
        if (from + len < limit && b[from + len] === 0x22) {
          let m = 0;
          while (m < len && b[from + m] === name[m]) m++;
          if (m === len) {
            child = node!.children[guess]!;
            nameEnd = from + len + 1;
            member++;
          }
        }
      }
      if (nameEnd < 0) {
        const nameStart = i + 1;
        nameEnd = jsonStringEnd(b, i, limit);
        if (nameEnd < 0) return -1;
        if (node !== null) {
          if (jsonScanned.escaped) return -1;
          child = this.#child(node, nameStart, nameEnd - 1, member++);
        }
      }
      i = this.#ws(nameEnd);
      if (i >= this.#limit || b[i] !== 0x3a) return -1;
      i = this.#ws(i + 1);
      if (child !== null) {
        // This member replaces any earlier one of the same name (JSON.parse keeps the last).
        const below = child.below;
        for (let k = 0; k < below.length; k++) this.#kind[below[k]!] = MISSING;
      }
      i = this.#value(i, child, depth);
      if (i < 0) return -1;
      i = this.#ws(i);
      if (i >= this.#limit) return -1;
      const c = b[i]!;
      if (c === 0x7d) return i + 1;
      if (c !== 0x2c) return -1;
      i = this.#ws(i + 1);
    }
  }

  #array(i: number, depth: number): number {
    if (depth > MAX_DEPTH) return -1;
    const b = this.#buf;
    i = this.#ws(i + 1);
    if (i < this.#limit && b[i] === 0x5d) return i + 1;
    while (true) {
      i = this.#value(i, null, depth);
      if (i < 0) return -1;
      i = this.#ws(i);
      if (i >= this.#limit) return -1;
      const c = b[i]!;
      if (c === 0x5d) return i + 1;
      if (c !== 0x2c) return -1;
      i = this.#ws(i + 1);
    }
  }

  /** The child of `node` named by the bytes [s, e) (the object's member number `at`), or null. */
  #child(node: Node, s: number, e: number, at: number): Node | null {
    const names = node.names;
    const b = this.#buf;
    const len = e - s;
    const guess = node.guess[at] ?? -1;
    if (guess >= 0) {
      const n = names[guess]!;
      if (n.length === len) {
        let j = 0;
        while (j < len && n[j] === b[s + j]) j++;
        if (j === len) return node.children[guess]!;
      }
    }
    outer: for (let k = 0; k < names.length; k++) {
      const n = names[k]!;
      if (n.length !== len) continue;
      for (let j = 0; j < len; j++) if (n[j] !== b[s + j]) continue outer;
      if (at < 64) node.guess[at] = k;
      return node.children[k]!;
    }
    return null;
  }

  /** Scans the value at `i`, recording it in `node`'s slot (if any) and descending into an object. */
  #value(i: number, node: Node | null, depth: number): number {
    if (i >= this.#limit) return -1;
    const b = this.#buf;
    const c = b[i]!;
    let kind: number;
    let end: number;
    let s = i;
    let e: number;
    if (c === 0x22) {
      end = jsonStringEnd(b, i, this.#limit);
      if (end < 0) return -1;
      kind = jsonScanned.escaped ? STRING_ESCAPED : STRING;
      s = i + 1;
      e = end - 1;
    } else if (c === 0x7b) {
      if (node !== null && node.children.length > 0) {
        end = this.#object(i, node, depth + 1);
      } else {
        end = this.#object(i, null, depth + 1);
      }
      kind = OBJECT;
      e = end;
    } else if (c === 0x5b) {
      // A pointer that may step into this array is not handled here.
      if (node !== null && node.indexChild) return -1;
      end = this.#array(i, depth + 1);
      kind = ARRAY;
      e = end;
    } else if (c === 0x74) {
      end = this.#literal(i, 0x72, 0x75, 0x65) ? i + 4 : -1;
      kind = TRUE;
      e = end;
    } else if (c === 0x66) {
      end = i + 5 <= this.#limit && b[i + 1] === 0x61 && this.#literal(i + 1, 0x6c, 0x73, 0x65) ? i + 5 : -1;
      kind = FALSE;
      e = end;
    } else if (c === 0x6e) {
      end = this.#literal(i, 0x75, 0x6c, 0x6c) ? i + 4 : -1;
      kind = NULL;
      e = end;
    } else {
      end = jsonNumberEnd(b, i, this.#limit);
      kind = NUMBER;
      e = end;
    }
    if (end < 0) return -1;
    if (node !== null && node.slot >= 0) {
      this.#kind[node.slot] = kind;
      this.#start[node.slot] = s;
      this.#end[node.slot] = e;
    }
    return end;
  }

  /** True when the three bytes after `i` are x, y, z. */
  #literal(i: number, x: number, y: number, z: number): boolean {
    const b = this.#buf;
    return i + 4 <= this.#limit && b[i + 1] === x && b[i + 2] === y && b[i + 3] === z;
  }

  /** True when the slot holds the string "d". */
  #isD(slot: number): boolean {
    const kind = this.#kind[slot];
    const s = this.#start[slot]!;
    const e = this.#end[slot]!;
    if (kind === STRING) return e - s === 1 && this.#buf[s] === 0x64;
    if (kind === STRING_ESCAPED) return JSON.parse(this.#text(s - 1, e + 1)) === 'd';
    return false;
  }

  #text(s: number, e: number): string {
    const b = this.#buf;
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8', s, e);
  }

  /** Appends the fields' elements to `out`. */
  #pack(plans: FieldPlan[], out: ByteSink): boolean {
    for (let f = 0; f < plans.length; f++) {
      const plan = plans[f]!;
      const slot = plan.slot;
      const kind = this.#kind[slot]!;
      const s = this.#start[slot]!;
      const e = this.#end[slot]!;
      if (plan.kind === PUBLISHED_AT) {
        const element = this.#publishedAt(kind, s, e);
        if (element === null) {
          out.ensure(1);
          out.buf[out.len++] = 0x00;
        } else {
          const n = element.len;
          out.ensure(n);
          const o = out.buf;
          const src = element.buf;
          let at = out.len;
          for (let j = 0; j < n; j++) o[at++] = src[j]!;
          out.len = at;
        }
        continue;
      }
      switch (kind) {
        case MISSING:
        case NULL:
          out.ensure(1);
          out.buf[out.len++] = 0x00;
          break;
        case TRUE:
          out.ensure(1);
          out.buf[out.len++] = 0x27;
          break;
        case FALSE:
          out.ensure(1);
          out.buf[out.len++] = 0x26;
          break;
        case STRING: {
          // Valid UTF-8 without NUL (a JSON string holds no raw control character): its bytes as they are.
          const len = e - s;
          out.ensure(len + 2);
          const o = out.buf;
          let at = out.len;
          o[at++] = 0x02;
          const b = this.#buf;
          if (len <= 64) {
            for (let j = s; j < e; j++) o[at++] = b[j]!;
          } else {
            o.set(b.subarray(s, e), at);
            at += len;
          }
          o[at++] = 0x00;
          out.len = at;
          break;
        }
        case STRING_ESCAPED:
          this.#unescape(s, e, out);
          break;
        case NUMBER:
          this.#numberElement(s, e, out);
          break;
        default: {
          // An object or array: the bytes of its JSON text as JSON.stringify writes it (parseDocument keeps
          // integers exact), as pack.ts packs it.
          const v = parseDocument(this.#text(s, e));
          pushTupleElement(out, UTF8.encode(stringifyDocument(v)));
        }
      }
    }
    return true;
  }

  /** The element of the publication time of the UUID in a slot, or null when it has none (packed as null). */
  #publishedAt(kind: number, s: number, e: number): ByteSink | null {
    if (kind !== STRING && kind !== STRING_ESCAPED) return null;
    const ms = kind === STRING ? uuidMillisOfBytes(this.#buf, s, e) : uuidMillis(JSON.parse(this.#text(s - 1, e + 1)) as string);
    if (ms === undefined) return null;
    if (ms !== this.#lastMs) {
      this.#lastElement.len = 0;
      pushTupleElement(this.#lastElement, new Date(ms).toISOString());
      this.#lastMs = ms;
    }
    return this.#lastElement;
  }

  /** A number's element: an integer of up to 15 digits from its bytes; any other through its text as parseDocument reads it. */
  #numberElement(s: number, e: number, out: ByteSink): void {
    const b = this.#buf;
    let j = s;
    const negative = b[j] === 0x2d;
    if (negative) j++;
    let v = 0;
    let digits = 0;
    for (; j < e; j++) {
      const c = b[j]!;
      if (c < 0x30 || c > 0x39) break;
      v = v * 10 + (c - 0x30);
      digits++;
    }
    if (j === e && digits <= 15) {
      pushTupleElement(out, negative ? -v : v);
      return;
    }
    const text = this.#text(s, e);
    const n = Number(text);
    // parseDocument: an integer written as such beyond ±2^53 is the bigint of its digits; any other number
    // is JSON.parse's double, and pack.ts packs an integral double beyond ±2^53 as that integer.
    if (j === e && !Number.isSafeInteger(n)) pushTupleElement(out, BigInt(text));
    else pushTupleElement(out, n);
  }

  /** A string with escapes, decoded to UTF-8 as a string element (NUL escaped as 00 FF; a lone surrogate as U+FFFD). */
  #unescape(s: number, e: number, out: ByteSink): void {
    const b = this.#buf;
    // At most the escaped text's length, +1 per byte for NUL escapes, +2 for the code and terminator.
    out.ensure(2 * (e - s) + 2);
    const o = out.buf;
    let at = out.len;
    o[at++] = 0x02;
    let j = s;
    while (j < e) {
      const c = b[j]!;
      if (c !== 0x5c) {
        o[at++] = c;
        j++;
        continue;
      }
      const x = b[j + 1]!;
      j += 2;
      switch (x) {
        case 0x62: o[at++] = 0x08; continue;
        case 0x66: o[at++] = 0x0c; continue;
        case 0x6e: o[at++] = 0x0a; continue;
        case 0x72: o[at++] = 0x0d; continue;
        case 0x74: o[at++] = 0x09; continue;
        case 0x75: break;
        default: o[at++] = x; continue;
      }
      let u = hex4(b, j);
      j += 4;
      if (u >= 0xd800 && u <= 0xdbff) {
        // A high surrogate: with a following \u low surrogate it is one code point; alone it is U+FFFD.
        const lo = j + 6 <= e && b[j] === 0x5c && b[j + 1] === 0x75 ? hex4(b, j + 2) : -1;
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          j += 6;
          const cp = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
          o[at++] = 0xf0 | (cp >> 18);
          o[at++] = 0x80 | ((cp >> 12) & 0x3f);
          o[at++] = 0x80 | ((cp >> 6) & 0x3f);
          o[at++] = 0x80 | (cp & 0x3f);
          continue;
        }
        u = 0xfffd;
      } else if (u >= 0xdc00 && u <= 0xdfff) {
        u = 0xfffd;
      }
      if (u === 0) {
        o[at++] = 0x00;
        o[at++] = 0xff;
      } else if (u < 0x80) {
        o[at++] = u;
      } else if (u < 0x800) {
        o[at++] = 0xc0 | (u >> 6);
        o[at++] = 0x80 | (u & 0x3f);
      } else {
        o[at++] = 0xe0 | (u >> 12);
        o[at++] = 0x80 | ((u >> 6) & 0x3f);
        o[at++] = 0x80 | (u & 0x3f);
      }
    }
    o[at++] = 0x00;
    out.len = at;
  }
}

function copyAscii(out: ByteSink, text: string): void {
  out.ensure(text.length);
  const o = out.buf;
  let at = out.len;
  for (let j = 0; j < text.length; j++) o[at++] = text.charCodeAt(j);
  out.len = at;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

function hex4(b: Uint8Array, j: number): number {
  return (hexValue(b[j]!) << 12) | (hexValue(b[j + 1]!) << 8) | (hexValue(b[j + 2]!) << 4) | hexValue(b[j + 3]!);
}

