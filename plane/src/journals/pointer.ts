// RFC 6901 JSON pointers over plain JSON values.
import type { JsonObject, JsonValue } from '@sluice/runtime';

export function parsePointer(ptr: string): string[] {
  if (ptr === '') return [];
  if (!ptr.startsWith('/')) throw new Error(`JSON pointer must start with "/": ${JSON.stringify(ptr)}`);
  return ptr.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The value at `ptr`, or undefined when any step is missing. */
export function resolvePointer(doc: JsonValue | undefined, ptr: string): JsonValue | undefined {
  let cur: JsonValue | undefined = doc;
  for (const token of parsePointer(ptr)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else {
      cur = Object.prototype.hasOwnProperty.call(cur, token) ? cur[token] : undefined;
    }
  }
  return cur;
}

/** Sets the value at `ptr`, creating intermediate objects. */
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
