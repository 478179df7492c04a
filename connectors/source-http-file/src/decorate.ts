// Upstream's document decoration (flow crates/parser `Decorator`, as filesource configures it): the
// record offset at `parser.addRecordOffset` (default /_meta/offset), then `parser.addValues` in key
// order, with /_meta/file always the file's name. Locations are JSON pointers with Flow's rules: "~1" and
// "~0" escapes, a token of digits (no leading zero or "+") is an array index, an object takes it as a
// property name; missing parents are created (objects for properties, arrays for indices); a scalar
// parent is an error. Used only when the parser options ask for more than the default `_meta`.
import { unescapePointerToken } from '@sluice/runtime';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { DecodeError } from './errors.ts';

export const META_FILE = '/_meta/file';
export const META_OFFSET = '/_meta/offset';

type Token = { index: number } | { prop: string };

/** A JSON pointer's tokens, as Flow parses them (an unrooted pointer is taken as rooted). */
export function pointerTokens(pointer: string): Token[] {
  if (pointer === '') return [];
  const parts = pointer.split('/');
  if (pointer.startsWith('/')) parts.shift();
  return parts.map((raw) => {
    const t = unescapePointerToken(raw);
    if (/^(0|[1-9][0-9]*)$/.test(t) && Number.isSafeInteger(Number(t))) return { index: Number(t) };
    return { prop: t };
  });
}

type Holder = { v: JsonValue };

/** Sets `value` at `tokens` under `root.v`, creating parents; false when a parent is a scalar (or an array meets a property). */
function setAt(root: Holder, tokens: Token[], value: JsonValue): boolean {
  let parent: Holder | JsonObject | JsonValue[] = root;
  let key: string | number = 'v';
  for (const token of tokens) {
    let cur: JsonValue | undefined = (parent as Record<string | number, JsonValue>)[key];
    if (cur === null || cur === undefined) {
      cur = 'index' in token ? [] : {};
      (parent as Record<string | number, JsonValue>)[key] = cur;
    }
    if (Array.isArray(cur)) {
      if (!('index' in token)) return false;
      while (cur.length <= token.index) cur.push(null);
      parent = cur;
      key = token.index;
    } else if (typeof cur === 'object') {
      parent = cur;
      key = 'index' in token ? String(token.index) : token.prop;
    } else return false;
  }
  (parent as Record<string | number, JsonValue>)[key] = value;
  return true;
}

export interface DecorationOptions {
  addRecordOffset?: string | undefined;
  addValues?: Record<string, unknown> | undefined;
}

/** True when the options ask for more than the default `_meta: {file, offset}`. */
export function isCustomDecoration(options: DecorationOptions | undefined): boolean {
  if (!options) return false;
  const offset = options.addRecordOffset;
  const values = Object.keys(options.addValues ?? {}).filter((k) => k !== META_FILE);
  return (offset !== undefined && offset !== '' && offset !== META_OFFSET) || values.length > 0;
}

export class Decorator {
  readonly offsetPointer: string;
  readonly #offset: Token[];
  readonly #values: [string, Token[], JsonValue][];

  constructor(options: DecorationOptions, file: string) {
    // Upstream: an empty addRecordOffset means the default.
    this.offsetPointer = options.addRecordOffset ? options.addRecordOffset : META_OFFSET;
    this.#offset = pointerTokens(this.offsetPointer);
    const values = new Map<string, JsonValue>(Object.entries(options.addValues ?? {}) as [string, JsonValue][]);
    values.set(META_FILE, file);
    // A BTreeMap upstream: byte order of the pointers.
    const keys = [...values.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    this.#values = keys.map((k) => [k, pointerTokens(k), values.get(k) as JsonValue]);
  }

  /** The decorated document (a new root when a pointer is ""). */
  apply(record: JsonObject, offset: number): JsonValue {
    const root: Holder = { v: record };
    const put = (pointer: string, tokens: Token[], value: JsonValue): void => {
      // Each document gets its own copy of an added object or array.
      const v = value !== null && typeof value === 'object' ? structuredClone(value) : value;
      if (!setAt(root, tokens, v)) {
        throw new DecodeError(`unable to add value: ${JSON.stringify(value)} at location: ${pointer} in record ${offset}: a parent of that location is not an object${tokens.some((t) => 'index' in t) ? ' or array' : ''} (${JSON.stringify(record).slice(0, 120)}); choose another location in parser.addRecordOffset / parser.addValues, or rename the conflicting field`);
      }
    };
    put(this.offsetPointer, this.#offset, offset);
    for (const [pointer, tokens, value] of this.#values) put(pointer, tokens, value);
    return root.v;
  }
}
