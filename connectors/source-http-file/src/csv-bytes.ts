// CSV rows as JSON documents, written straight from the tokenizer's bytes (csv-core.ts) into the
// capture's LineSink (lines.ts), escaping as JSON.stringify does, without building strings: each row is
// exactly the JSON.stringify of the object the object sink (csv.ts) builds for it, plus `_meta`
// (test/csv-bytes.test.ts compares both on many files). An unquoted field is copied and escaped in the
// same pass that finds its end (the tokenizer's `ends` table stops it).
import { raggedRow, skipUnquoted } from './csv-core.ts';
import type { CsvCore, CsvSink } from './csv-core.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import type { DecodeError } from './errors.ts';
import type { LineSink } from './lines.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HEX = '0123456789abcdef';

/**
 * What JSON.stringify writes for each byte of a string's UTF-8: null = the byte itself, else the escape.
 * (Bytes ≥ 0x80 are UTF-8 the charset stage validated: copied as they are.)
 */
const ESCAPES: (Uint8Array | null)[] = Array.from({ length: 256 }, (_, b) => {
  if (b === QUOTE) return Buffer.from('\\"');
  if (b === BACKSLASH) return Buffer.from('\\\\');
  if (b >= 0x20) return null;
  const short: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };
  return Buffer.from(short[b] ?? `\\u00${HEX[b >> 4]}${HEX[b & 15]}`);
});
const NEEDS_ESCAPE = Uint8Array.from(ESCAPES, (e) => (e === null ? 0 : 1));

export class CsvJsonSink implements CsvSink {
  readonly #lines: LineSink;
  readonly #dt: DatetimeNormalizer;
  readonly #prefixes: Uint8Array[];
  readonly #width: number;
  readonly #ends: Uint8Array;
  /** 1 for the bytes that end an unquoted value's plain run: the tokenizer's ends and the bytes to escape. */
  readonly #stop: Uint8Array;
  /** Bytes a row may need beyond 6 per input byte: the line's fixed parts and every column prefix. */
  readonly #rowSlack: number;
  /** Whether the current row is written (not one an earlier session captured). */
  #write = false;
  #rowOut = 0;
  /** Rows completed (written or skipped). */
  rows = 0;
  /** A ragged row stopped the scan. */
  error: DecodeError | null = null;

  constructor(core: CsvCore, lines: LineSink, prefixes: string[], datetimes: DatetimeNormalizer) {
    this.#lines = lines;
    this.#dt = datetimes;
    this.#prefixes = prefixes.map((p) => Buffer.from(p, 'utf8'));
    this.#width = prefixes.length;
    this.#ends = core.ends;
    this.#stop = Uint8Array.from(NEEDS_ESCAPE);
    for (let b = 0; b < 256; b++) if (core.ends[b] === 1) this.#stop[b] = 1;
    this.#rowSlack = lines.recordSlack + this.#prefixes.reduce((n, p) => n + p.length, 0);
  }

  rowStart(maxBytes: number): void {
    const lines = this.#lines;
    this.#rowOut = lines.len;
    this.#write = lines.offset >= lines.resumeFrom;
    // Room for the whole row at its worst (every byte escaped as \u00XX), so fields need no checks.
    if (this.#write) lines.openRecord(6 * maxBytes + this.#rowSlack);
  }

  unquoted(s: Uint8Array, pos: number, n: number, index: number): number {
    if (!this.#write || index >= this.#width) return skipUnquoted(this.#ends, s, pos, n);
    const lines = this.#lines;
    const out = lines.buf;
    let o = lines.len;
    const prefix = this.#prefixes[index] as Uint8Array;
    // TypedArray.set costs ~12 ns whatever the length; a byte loop ~1.5 ns a byte.
    if (prefix.length > 8) out.set(prefix, o);
    else for (let k = 0; k < prefix.length; k++) out[o + k] = prefix[k] as number;
    o += prefix.length;
    const valueAt = o;
    out[o++] = QUOTE;
    const stop = this.#stop;
    const ends = this.#ends;
    let j = pos;
    while (j < n) {
      const c = s[j] as number;
      if (stop[c] === 0) {
        out[o++] = c;
        j++;
        continue;
      }
      if (ends[c] === 1) break;
      const e = ESCAPES[c] as Uint8Array;
      for (let k = 0; k < e.length; k++) out[o++] = e[k] as number;
      j++;
    }
    lines.len = this.#finishValue(s, pos, j, out, valueAt, o);
    return j;
  }

  quoted(src: Uint8Array, a: number, b: number, index: number): void {
    if (!this.#write || index >= this.#width) return;
    const lines = this.#lines;
    const out = lines.buf;
    let o = lines.len;
    out.set(this.#prefixes[index] as Uint8Array, o);
    o += (this.#prefixes[index] as Uint8Array).length;
    const valueAt = o;
    out[o++] = QUOTE;
    for (let i = a; i < b; i++) {
      const c = src[i] as number;
      if (NEEDS_ESCAPE[c] === 0) {
        out[o++] = c;
      } else {
        const e = ESCAPES[c] as Uint8Array;
        for (let k = 0; k < e.length; k++) out[o++] = e[k] as number;
      }
    }
    lines.len = this.#finishValue(src, a, b, out, valueAt, o);
  }

  rowEnd(fields: number, line: number, byteOffset: number): boolean {
    const lines = this.#lines;
    if (fields > this.#width) {
      lines.len = this.#rowOut;
      this.error = raggedRow(fields, this.#width, line, byteOffset);
      return false;
    }
    if (this.#write) lines.closeRecord();
    else lines.offset++;
    this.rows++;
    return true;
  }

  rowAbort(): void {
    this.#lines.len = this.#rowOut;
  }

  /**
   * The value copied to out[valueAt, o) as `"` and its escaped bytes (from src[a, b)) becomes its JSON:
   * `null` for '', NULL, null and nil, a normalised timestamp, or the string with its closing quote.
   * Returns the index after it.
   */
  #finishValue(src: Uint8Array, a: number, b: number, out: Uint8Array, valueAt: number, o: number): number {
    const len = b - a;
    if (len === 0 || (len === 4 && ((src[a] === 0x4e && src[a + 1] === 0x55 && src[a + 2] === 0x4c && src[a + 3] === 0x4c) || (src[a] === 0x6e && src[a + 1] === 0x75 && src[a + 2] === 0x6c && src[a + 3] === 0x6c))) || (len === 3 && src[a] === 0x6e && src[a + 1] === 0x69 && src[a + 2] === 0x6c)) {
      out[valueAt] = 0x6e; out[valueAt + 1] = 0x75; out[valueAt + 2] = 0x6c; out[valueAt + 3] = 0x6c;
      return valueAt + 4;
    }
    if (len >= 19 && src[a + 4] === 0x2d && src[a + 7] === 0x2d) {
      // A timestamp is written normalised (quoted; nothing in it needs escaping) over the copy.
      const end = this.#dt.bytesInto(src, a, b, out, valueAt);
      if (end !== -1) return end;
    }
    out[o] = QUOTE;
    return o + 1;
  }
}
