// JSON pointers (RFC 6901): escaping one token; resolving is the runtime's one resolver (protocol/documents.ts).
export { resolvePointer } from '../protocol/documents.ts';

/** Escapes one JSON pointer token. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}
