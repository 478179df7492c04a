// CSV rows as JSON documents, written straight from the tokenizer's bytes (csv-core.ts) into the
// capture's LineSink (lines.ts), escaping as JSON.stringify does, without building strings: each row is
// exactly the JSON.stringify of the object the object sink (csv.ts) builds for it, plus `_meta`
// (test/csv-bytes.test.ts compares both on many files). An unquoted field is copied and escaped in the
// same pass that finds its end (the tokenizer's `ends` table stops it).
import { CR, LF, MAX_ROW_BYTES, raggedRow, skipUnquoted } from './csv-core.ts';
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
/** Tests: the fast path's switch (off: every row field by field) and the rows it has taken. */
export const csvFastPath = { enabled: true, rows: 0 };

/** Byte classes of an unquoted value in the fast path (fastRows): copied, escaped, the delimiter, a line end. */
const PLAIN = 0;
const ESCAPED = 1;
const DELIMITER = 2;
const TERMINATOR = 3;

/**
 * True when #finishValue would only close the string for src[a, b): not empty, not of a null spelling's
 * length (3, 4), not shaped like a timestamp. Most values: the fast path then skips the call.
 */
function isPlainValue(src: Uint8Array, a: number, b: number): boolean {
  const len = b - a;
  return len > 4 ? len < 19 || src[a + 4] !== 0x2d || src[a + 7] !== 0x2d : len !== 0 && len !== 3 && len !== 4;
}

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
  /** Byte classes for fastRows (PLAIN, ESCAPED, DELIMITER, TERMINATOR). */
  readonly #cls: Uint8Array;
  readonly #delim: number;
  readonly #quote: number;
  readonly #escape: number;
  readonly #crlf: boolean;
  /**
   * The quote byte cannot be part of a null spelling or a timestamp, so a value with a doubled quote is a
   * plain string (otherwise such rows are left to the field-by-field path).
   */
  readonly #plainQuote: boolean;
  /** Rows the last fastRows call completed. */
  fastRowCount = 0;
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
    this.#delim = core.delimiterByte;
    this.#quote = core.quoteByte;
    this.#escape = core.escapeByte;
    this.#crlf = core.crlf;
    this.#plainQuote = this.#quote !== -1 && !/[-0-9A-Za-z :.+]/.test(String.fromCharCode(this.#quote));
    this.#cls = Uint8Array.from(NEEDS_ESCAPE, (e) => (e === 1 ? ESCAPED : PLAIN));
    for (let b = 0; b < 256; b++) if (core.ends[b] === 1) this.#cls[b] = b === this.#delim ? DELIMITER : TERMINATOR;
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
   * The fast path (CsvSink.fastRows): whole rows from s[pos] written in one loop — no call per field — while
   * each is on one line and plain: unquoted fields, and quoted fields without the escape byte, a line end or
   * text after the closing quote; no more fields than headers, not a blank line, not a row an earlier
   * session captured, complete before n (a CR at n waits for the next input unless final). Every value is
   * written exactly as unquoted()/quoted() write it (the same tables and #finishValue). Stops at the start
   * of the first row it does not take (its bytes written so far are withdrawn); fastRowCount says how many
   * it completed.
   */
  fastRows(s: Uint8Array, pos: number, n: number, final: boolean): number {
    let rows = 0;
    const lines = this.#lines;
    if (lines.offset < lines.resumeFrom || !csvFastPath.enabled) {
      this.fastRowCount = 0;
      return pos;
    }
    const cls = this.#cls;
    const prefixes = this.#prefixes;
    const width = this.#width;
    const Q = this.#quote;
    const E = this.#escape;
    const crlf = this.#crlf;
    let rowStart = pos;
    rows: while (pos < n) {
      rowStart = pos;
      if (cls[s[pos] as number] === TERMINATOR) break; // a blank line: the tokenizer skips it
      const rowOut = lines.len;
      lines.openRecord(6 * (n - pos) + this.#rowSlack);
      const out = lines.buf;
      let o = lines.len;
      let index = 0;
      while (true) {
        // One field at pos.
        if (index >= width) { lines.len = rowOut; break rows; } // more fields than headers: the tokenizer's error
        const prefix = prefixes[index] as Uint8Array;
        for (let k = 0; k < prefix.length; k++) out[o++] = prefix[k] as number;
        const valueAt = o;
        out[o++] = QUOTE;
        let j = pos;
        let c = 0;
        if (pos < n && s[pos] === Q) {
          // Quoted: doubled quotes only.
          let doubled = false;
          j = pos + 1;
          while (true) {
            if (j >= n) { lines.len = rowOut; break rows; }
            c = s[j] as number;
            if (c === Q) {
              if (j + 1 >= n) { lines.len = rowOut; break rows; } // a doubled quote may follow
              if (s[j + 1] !== Q) break;
              // A doubled quote: the quote byte itself, escaped as JSON needs (`"` → `\"`).
              if (!this.#plainQuote) { lines.len = rowOut; break rows; }
              const e = ESCAPES[Q];
              if (e === null || e === undefined) out[o++] = Q;
              else for (let k = 0; k < e.length; k++) out[o++] = e[k] as number;
              doubled = true;
              j += 2;
              continue;
            }
            if (c === E || cls[c] === TERMINATOR) { lines.len = rowOut; break rows; }
            if (NEEDS_ESCAPE[c] === 0) out[o++] = c;
            else {
              const e = ESCAPES[c] as Uint8Array;
              for (let k = 0; k < e.length; k++) out[o++] = e[k] as number;
            }
            j++;
          }
          // j is at the closing quote: a delimiter, a line end or the end of the input must follow.
          const closeAt = j;
          j++;
          if (j < n) {
            c = s[j] as number;
            const k = cls[c];
            if (k !== DELIMITER && k !== TERMINATOR) { lines.len = rowOut; break rows; }
          } else if (!final) { lines.len = rowOut; break rows; }
          if (doubled) {
            // A value with the quote byte in it is neither a null spelling nor a timestamp (#plainQuote).
            out[o++] = QUOTE;
          } else if (isPlainValue(s, pos + 1, closeAt)) out[o++] = QUOTE;
          else o = this.#finishValue(s, pos + 1, closeAt, out, valueAt, o);
        } else {
          while (j < n) {
            c = s[j] as number;
            const k = cls[c];
            if (k === PLAIN) {
              out[o++] = c;
              j++;
              continue;
            }
            if (k !== ESCAPED) break;
            const e = ESCAPES[c] as Uint8Array;
            for (let q = 0; q < e.length; q++) out[o++] = e[q] as number;
            j++;
          }
          if (j >= n && !final) { lines.len = rowOut; break rows; }
          if (isPlainValue(s, pos, j)) out[o++] = QUOTE;
          else o = this.#finishValue(s, pos, j, out, valueAt, o);
        }
        index++;
        if (j >= n) {
          // The last row of the input (final): no terminator.
          pos = j;
          break;
        }
        if (c === this.#delim) {
          pos = j + 1;
          continue;
        }
        // A line end.
        pos = j + 1;
        if (crlf && c === CR) {
          if (pos < n) { if (s[pos] === LF) pos++; } else if (!final) { lines.len = rowOut; break rows; }
        }
        break;
      }
      if (pos - rowStart > MAX_ROW_BYTES) { lines.len = rowOut; break; }
      lines.len = o;
      lines.closeRecord();
      rows++;
      rowStart = pos;
    }
    this.rows += rows;
    this.fastRowCount = rows;
    csvFastPath.rows += rows;
    return rowStart;
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
