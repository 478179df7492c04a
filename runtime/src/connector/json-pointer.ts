// JSON pointers (RFC 6901): escaping one token and resolving a pointer in a JSON value.
import type { JsonValue } from '../protocol/specs.ts';

/** Escapes one JSON pointer token. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Resolves a JSON pointer (RFC 6901) in a JSON value; undefined when absent. */
export function resolvePointer(doc: JsonValue | undefined, pointer: string): JsonValue | undefined {
  if (pointer === '') return doc;
  if (!pointer.startsWith('/')) return undefined;
  let node = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
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
