// JSON pointers (RFC 6901), the one module for them: every package (runtime, connectors, plane) parses,
// builds, escapes and resolves pointers here. resolvePointer and pointerResolver are on the hot path
// of key and value extraction: they avoid allocating (no split into an unescaped token array per call).
import type { JsonObject, JsonValue } from './specs.ts';

/** Escapes one token for a pointer: `~` → `~0`, `/` → `~1`. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The token a pointer segment stands for: `~1` → `/`, `~0` → `~` (in that order, as RFC 6901 says). */
export function unescapePointerToken(segment: string): string {
  return segment.includes('~') ? segment.replaceAll('~1', '/').replaceAll('~0', '~') : segment;
}

/** The pointer to the location named by `tokens` (each escaped): `pointerOf('a/b', 0)` → `/a~1b/0`. */
export function pointerOf(...tokens: (string | number)[]): string {
  let out = '';
  for (const t of tokens) out += '/' + escapePointerToken(String(t));
  return out;
}

/** The tokens of a pointer, unescaped. Throws for a non-empty pointer without a leading "/". */
export function parsePointer(ptr: string): string[] {
  if (ptr === '') return [];
  if (!ptr.startsWith('/')) throw new Error(`JSON pointer must start with "/": ${JSON.stringify(ptr)}`);
  return ptr.slice(1).split('/').map(unescapePointerToken);
}

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/** Resolves a JSON pointer in a JSON value; undefined when any step is absent. */
export function resolvePointer(doc: JsonValue | undefined, pointer: string): JsonValue | undefined {
  if (pointer === '') return doc;
  if (!pointer.startsWith('/')) return undefined;
  let node = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.includes('~') ? raw.replaceAll('~1', '/').replaceAll('~0', '~') : raw;
    if (Array.isArray(node)) {
      if (!ARRAY_INDEX.test(token)) return undefined;
      node = node[Number(token)];
    } else if (typeof node === 'object' && node !== null) {
      node = Object.hasOwn(node, token) ? node[token] : undefined;
    } else {
      return undefined;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/** A resolver compiled once for a pointer (the hot path of key and value extraction). */
export function pointerResolver(pointer: string): (doc: JsonValue | undefined) => JsonValue | undefined {
  const tokens = parsePointer(pointer);
  if (tokens.length === 1 && !ARRAY_INDEX.test(tokens[0]!)) {
    const t = tokens[0]!;
    return (doc) => (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Object.hasOwn(doc, t) ? doc[t] : undefined);
  }
  // Tokens unescaped and array indexes parsed once, not per document (`/_meta/uuid` is resolved for every
  // materialized document: splitting the pointer each time cost as much as the rest of packing a value).
  const steps = tokens.map((token) => ({ token, index: ARRAY_INDEX.test(token) ? Number(token) : -1 }));
  return (doc) => {
    let node = doc;
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!;
      if (Array.isArray(node)) {
        if (step.index < 0) return undefined;
        node = node[step.index];
      } else if (typeof node === 'object' && node !== null) {
        node = Object.hasOwn(node, step.token) ? node[step.token] : undefined;
      } else {
        return undefined;
      }
      if (node === undefined) return undefined;
    }
    return node;
  };
}

/** Sets the value at `ptr`, creating (or replacing non-object) intermediate objects. */
export function setPointer(doc: JsonObject, ptr: string, value: JsonValue): void {
  const tokens = parsePointer(ptr);
  const last = tokens.pop();
  if (last === undefined) throw new Error('cannot set the document root');
  let cur: JsonObject = doc;
  for (const t of tokens) {
    const next = cur[t];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) {
      const created: JsonObject = {};
      cur[t] = created;
      cur = created;
    } else {
      cur = next;
    }
  }
  cur[last] = value;
}
