// JSON: a pure incremental scanner over text that finds each top-level value (newline-delimited,
// concatenated or pretty-printed) and each element of a top-level array, and parses them one at a time
// with JSON.parse, so a top-level array is streamed, never held whole.
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { parseDocumentRaw } from '@sluice/runtime/documents';
import { DecodeError } from './errors.ts';

// Node 24's JSON.rawJSON / JSON.isRawJSON (not yet in TypeScript's lib).
const RawJson = JSON as unknown as { rawJSON(text: string): object; isRawJSON(value: unknown): boolean };

/** A value JSON.stringify writes as the given text: how integers beyond ±2^53 pass through exactly. */
export const rawJson = (text: string): JsonValue => RawJson.rawJSON(text) as JsonValue;
export const isRawJson = (value: unknown): boolean => RawJson.isRawJSON(value);

/** Upper bound on one JSON value (one record), so a broken file cannot grow memory without limit. */
export const MAX_VALUE_CHARS = 64 * 1024 * 1024;

const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/** Text in → objects out. Holds at most one incomplete value between pushes. */
export class JsonRecordParser {
  #buf = '';
  /** Index in #buf where the current value starts, or -1 between values. */
  #start = -1;
  /** Scan position inside the current value. */
  #scan = 0;
  #depth = 0;
  #inString = false;
  /** Inside a top-level array: 'value' = expecting an element, 'sep' = expecting ',' or ']'. */
  #array: 'none' | 'value' | 'sep' = 'none';
  /** Lines and UTF-8 bytes of text consumed before #buf. */
  #line = 1;
  #bytes = 0;

  push(text: string): JsonObject[] {
    if (text.length === 0) return [];
    this.#buf = this.#buf.length ? this.#buf + text : text;
    return this.#parse(false);
  }

  end(): JsonObject[] {
    return this.#parse(true);
  }

  /** UTF-8 bytes of text after which the next value starts, or null inside a top-level array. */
  position(): number | null {
    return this.#array === 'none' ? this.#bytes : null;
  }

  #where(at: number): { line: number; byteOffset: number } {
    const prefix = this.#buf.slice(0, at);
    let line = this.#line;
    for (let i = prefix.indexOf('\n'); i !== -1; i = prefix.indexOf('\n', i + 1)) line++;
    return { line, byteOffset: this.#bytes + Buffer.byteLength(prefix) };
  }

  #fail(message: string, at: number, cause?: unknown): DecodeError {
    const where = this.#where(at);
    return new DecodeError(`failed to parse JSON at line ${where.line} (byte offset ${where.byteOffset}): ${message}`, where, cause === undefined ? {} : { cause });
  }

  #parse(final: boolean): JsonObject[] {
    const s = this.#buf;
    const n = s.length;
    const out: JsonObject[] = [];
    let pos = this.#start === -1 ? 0 : this.#scan;
    let consumed = this.#start === -1 ? 0 : this.#start;
    while (true) {
      if (this.#start === -1) {
        // Between values: skip whitespace (and array separators).
        while (pos < n && isSpace(s.charCodeAt(pos))) pos++;
        consumed = pos;
        if (pos >= n) break;
        const c = s.charCodeAt(pos);
        if (this.#array === 'sep') {
          if (c === COMMA) { this.#array = 'value'; pos++; consumed = pos; continue; }
          if (c === CLOSE_BRACKET) { this.#array = 'none'; pos++; consumed = pos; continue; }
          throw this.#fail(`expected ',' or ']' after an array element, found '${s[pos]}'`, pos);
        }
        if (c === OPEN_BRACKET && this.#array === 'none') { this.#array = 'value'; pos++; consumed = pos; continue; }
        if (c === CLOSE_BRACKET && this.#array === 'value') { this.#array = 'none'; pos++; consumed = pos; continue; }
        if (c !== OPEN_BRACE) {
          // A scalar (or a nested array inside a top-level array): not a record.
          let end = pos;
          while (end < n && end - pos < 100 && !isSpace(s.charCodeAt(end)) && s.charCodeAt(end) !== COMMA && s.charCodeAt(end) !== CLOSE_BRACKET) end++;
          if (end >= n && !final && end - pos < 100) break; // the scalar may continue in the next chunk
          throw this.#fail(`The JSON parser only supports objects or arrays of objects, found value: '${s.slice(pos, end)}'`, pos);
        }
        this.#start = pos;
        this.#depth = 0;
        this.#inString = false;
      }
      // Scan the current value for its end.
      let depth = this.#depth;
      let inString = this.#inString;
      let done = -1;
      while (pos < n) {
        const c = s.charCodeAt(pos);
        if (inString) {
          if (c === BACKSLASH) {
            if (pos + 1 >= n) break; // the escaped character is in the next chunk
            pos += 2;
            continue;
          }
          if (c === QUOTE) inString = false;
          pos++;
          continue;
        }
        if (c === QUOTE) inString = true;
        else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
        else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          depth--;
          if (depth === 0) { done = pos + 1; pos++; break; }
        }
        pos++;
      }
      if (done === -1) {
        this.#depth = depth;
        this.#inString = inString;
        if (pos - this.#start > MAX_VALUE_CHARS) throw this.#fail(`a JSON value is longer than ${MAX_VALUE_CHARS} characters`, this.#start);
        if (final) throw this.#fail('unexpected end of input inside a value', this.#start);
        // Keep the scan position relative to the retained text.
        this.#scan = Math.min(pos, n);
        consumed = this.#start;
        break;
      }
      const start = this.#start;
      let value: JsonValue;
      try {
        // Integers beyond ±2^53 stay exact: raw JSON of their digits (the runtime's exact-integer parse).
        value = parseDocumentRaw(s.slice(start, done));
      } catch (err) {
        throw this.#fail((err as Error).message, start, err);
      }
      out.push(value as JsonObject);
      this.#start = -1;
      if (this.#array !== 'none') this.#array = 'sep';
      consumed = done;
    }
    if (final && this.#array !== 'none') throw this.#fail('unexpected end of input inside a top-level array', n);
    // Drop consumed text, keeping line and byte accounting.
    if (consumed > 0) {
      const dropped = s.slice(0, consumed);
      for (let i = dropped.indexOf('\n'); i !== -1; i = dropped.indexOf('\n', i + 1)) this.#line++;
      this.#bytes += Buffer.byteLength(dropped);
      this.#buf = s.slice(consumed);
      if (this.#start !== -1) {
        this.#scan -= consumed;
        this.#start -= consumed;
      }
    } else if (this.#start === -1) this.#buf = s.slice(pos);
    return out;
  }
}
