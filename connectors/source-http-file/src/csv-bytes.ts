// CSV straight from UTF-8 bytes to `captured` protocol lines, for the parser thread (worker.ts).
// The string path (csv.ts: text → field strings → JSON text → line text → copied to the main thread)
// costs several allocations per field; this one reads the decoded bytes and writes each record's line
// into the LineSink's buffer (lines.ts), escaping as JSON.stringify does, without building strings.
//
// It starts as the string path: CsvRecordParser handles skipLines, dialect detection, the header row and
// the first chunk's records. Once that parser can hand off (dialect and headers known, errorThreshold 0,
// headers that allow JSON text), this tokenizer continues at the exact byte, line and CR state where it
// stopped, with the same rules (csv.ts header comment) and the same errors. Files that cannot hand off
// stay on the string path. The output is byte for byte what the string path gives, as are the batch ends,
// positions, skipped records on resume and errors (test/csv-bytes.test.ts compares both on many files).
import type { CharsetDecoder } from './charset.ts';
import { CsvRecordParser, MAX_ROW_CHARS, deferLongRow, tooLong } from './csv.ts';
import type { CsvConfig } from './schema.ts';
import type { CsvHandOff, CsvResume } from './csv.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { DecodeError } from './errors.ts';
import type { RecordDecoder } from './formats.ts';
import type { LineSink } from './lines.ts';
import type { DecodedRecord } from './record.ts';

const LF = 10;
const CR = 13;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HEX = '0123456789abcdef';
const NONE: DecodedRecord[] = [];
const EMPTY = new Uint8Array(0);

/**
 * What JSON.stringify writes for each byte of a string's UTF-8: 0 = the byte itself, else the escape.
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

export interface CsvByteOptions {
  config: CsvConfig;
  datetimes: DatetimeNormalizer;
  sink: LineSink;
  charset: CharsetDecoder;
  onSkippedRow?: (error: DecodeError) => void;
}

export class CsvByteDecoder implements RecordDecoder {
  readonly #charset: CharsetDecoder;
  readonly #sink: LineSink;
  readonly #dt: DatetimeNormalizer;
  /** The string path, until it hands off (then null). */
  #start: CsvRecordParser<DecodedRecord> | null;
  #startEnded = false;
  // After the hand-off:
  #delim = -1;
  #quote = -1;
  #escape = -1;
  #crlf = false;
  #term = -1;
  #prefixes: Uint8Array[] = [];
  /** 1 for the bytes that end an unquoted value's plain run: the delimiter, terminators, bytes to escape. */
  #stop = new Uint8Array(256);
  /** Bytes a row may need beyond 6 per input byte: the line's fixed parts and every column prefix. */
  #rowSlack = 0;
  #resume: CsvResume | null = null;
  /**
   * Unconsumed bytes (at most one incomplete row) are kept at the start of this buffer, and the next chunk
   * is appended to them there: one buffer reused for the whole file instead of a concatenation per chunk.
   */
  #work: Buffer = Buffer.allocUnsafe(0);
  #carryLength = 0;
  /** Bytes carried when the last scan ended inside a row (see deferLongRow). */
  #carried = 0;
  #line = 1;
  #pendingCR = false;
  /** UTF-8 bytes of tokenizer text consumed (row offsets in errors count from here). */
  #textBytes = 0;
  #skippedBytes = 0;
  #deferred: Error | null = null;
  #ended = false;
  /** An unescaped quoted value. */
  #scratch: Buffer = Buffer.allocUnsafe(1024);

  constructor(options: CsvByteOptions) {
    this.#charset = options.charset;
    this.#sink = options.sink;
    this.#dt = options.datetimes;
    this.#start = new CsvRecordParser<DecodedRecord>({ config: options.config, datetimes: options.datetimes, jsonText: true, handOffAfterHeader: true, ...(options.onSkippedRow ? { onSkippedRow: options.onSkippedRow } : {}) });
  }

  push(chunk: Uint8Array): DecodedRecord[] {
    const start = this.#start;
    if (start !== null) {
      const text = this.#charset.push(chunk);
      const records = text.length ? start.push(text) : NONE;
      // The string path stops after the header row: the rows of this chunk are parsed here, now.
      if (this.#tryHandOff(start) && this.#carryLength > 0) this.#parse(EMPTY, false);
      return records;
    }
    if (this.#deferred) throw this.#deferred;
    const bytes = this.#charset.pushBytes(chunk);
    if (bytes.length) this.#parse(bytes, false);
    return NONE;
  }

  end(): DecodedRecord[] {
    const start = this.#start;
    if (start !== null) {
      if (!this.#startEnded) {
        this.#startEnded = true;
        const a = start.push(this.#charset.end());
        if (a.length) return a;
      }
      return start.end();
    }
    if (this.#deferred) throw this.#deferred;
    if (this.#ended) return NONE;
    this.#ended = true;
    this.#parse(this.#charset.endBytes(), true);
    return NONE;
  }

  position(): number | null {
    if (this.#charset.encoding !== 'utf-8') return null;
    if (this.#start !== null) {
      const p = this.#start.position();
      return p === null ? null : p + this.#charset.bomLength;
    }
    if (this.#deferred) return null;
    return this.#charset.bomLength + this.#skippedBytes + this.#textBytes;
  }

  resumeConfig(): CsvResume | null {
    return this.#start !== null ? this.#start.resumeConfig() : this.#resume;
  }

  #tryHandOff(start: CsvRecordParser<DecodedRecord>): boolean {
    const h: CsvHandOff | null = start.handOff();
    if (h === null) return false;
    this.#start = null;
    const d = h.dialect;
    this.#delim = d.delimiter.charCodeAt(0);
    this.#quote = d.quote ? d.quote.charCodeAt(0) : -1;
    this.#escape = d.escape ? d.escape.charCodeAt(0) : -1;
    this.#crlf = d.lineEnding === 'crlf' || d.lineEnding === '\r\n';
    this.#term = this.#crlf ? -1 : d.lineEnding.charCodeAt(0);
    this.#prefixes = h.prefixes.map((p) => Buffer.from(p, 'utf8'));
    this.#rowSlack = this.#sink.docOpen.length + this.#sink.metaOpen.length + 64 + this.#prefixes.reduce((n, p) => n + p.length, 0);
    this.#stop = Uint8Array.from(NEEDS_ESCAPE);
    this.#stop[this.#delim] = 1;
    if (this.#crlf) {
      this.#stop[LF] = 1;
      this.#stop[CR] = 1;
    } else this.#stop[this.#term] = 1;
    this.#resume = start.resumeConfig();
    this.#work = Buffer.from(h.rest, 'utf8');
    this.#carryLength = this.#work.length;
    this.#line = h.line;
    this.#pendingCR = h.pendingCR;
    this.#textBytes = h.textBytes;
    this.#skippedBytes = h.skippedBytes;
    return true;
  }

  /** Tokenizes `bytes` after the carried incomplete row; writes complete rows to the sink. */
  #parse(bytes: Uint8Array, final: boolean): void {
    let s: Buffer;
    const carried = this.#carryLength;
    if (carried > 0) {
      if (this.#work.length < carried + bytes.length) {
        const bigger = Buffer.allocUnsafe(Math.max(carried + bytes.length, this.#work.length * 2, 128 * 1024));
        this.#work.copy(bigger, 0, 0, carried);
        this.#work = bigger;
      }
      this.#work.set(bytes, carried);
      // A long incomplete row is re-scanned only once the bytes held have grown by half (csv.ts).
      if (!final && deferLongRow(this.#carried, carried + bytes.length)) {
        this.#carryLength = carried + bytes.length;
        return;
      }
      s = this.#work.subarray(0, carried + bytes.length);
    } else {
      s = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    }
    const n = s.length;
    const sink = this.#sink;
    // An error that fails the whole call drops the lines written in it (as the string path returns no rows).
    const mark = { len: sink.len, documents: sink.documents, offset: sink.offset };
    const D = this.#delim;
    const Q = this.#quote;
    const E = this.#escape;
    const crlf = this.#crlf;
    const T = this.#term;
    const prefixes = this.#prefixes;
    const width = prefixes.length;
    const stop = this.#stop;
    let pos = 0;
    let line = this.#line;
    if (this.#pendingCR && n > 0) {
      this.#pendingCR = false;
      if (s[0] === LF) pos = 1;
    }
    let consumed = pos;
    let consumedLine = line;
    /** Rows completed in this call (written or skipped on resume). */
    let rowsDone = 0;
    try {
      rows: while (pos < n) {
        const rowStart = pos;
        const rowLine = line;
        const c0 = s[pos] as number;
        if (crlf ? c0 === LF || c0 === CR : c0 === T) {
          // Blank line: skipped.
          pos++;
          if (crlf && c0 === CR) {
            if (pos < n) { if (s[pos] === LF) pos++; } else if (!final) this.#pendingCR = true;
          }
          line++;
          consumed = pos;
          consumedLine = line;
          continue;
        }
        const write = sink.offset >= sink.resumeFrom;
        const rowOut = sink.len;
        if (write) {
          // Room for the whole row at its worst (every byte escaped as \u00XX), so fields need no checks.
          sink.ensure(6 * (n - rowStart) + this.#rowSlack);
          sink.put(sink.docOpen);
        }
        let fields = 0;
        while (true) {
          // One field starting at pos.
          if (pos < n && s[pos] === Q) {
            let i = pos + 1;
            let closed = false;
            let len = 0;
            let scratch: Buffer = this.#scratch;
            while (i < n) {
              const c = s[i] as number;
              if (c === E) {
                if (i + 1 >= n) break; // need the escaped char
                // The next byte is literal whatever it is, the escape byte included (csv-core).
                if (len + 1 > scratch.length) scratch = this.#grow(len + 1);
                scratch[len++] = s[i + 1] as number;
                i += 2;
                continue;
              }
              if (c === Q) {
                if (i + 1 < n && s[i + 1] === Q) {
                  if (len + 1 > scratch.length) scratch = this.#grow(len + 1);
                  scratch[len++] = c;
                  i += 2;
                  continue;
                }
                if (i + 1 >= n && !final) break; // a doubled quote may follow in the next chunk
                closed = true;
                i++;
                break;
              }
              if (crlf) {
                if (c === LF) line++;
                else if (c === CR) {
                  line++;
                  if (s[i + 1] === LF) {
                    if (len + 2 > scratch.length) scratch = this.#grow(len + 2);
                    scratch[len++] = c;
                    scratch[len++] = LF;
                    i += 2;
                    continue;
                  }
                }
              } else if (c === T) line++;
              if (len + 1 > scratch.length) scratch = this.#grow(len + 1);
              scratch[len++] = c;
              i++;
            }
            if (!closed) {
              if (!final) { if (n - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine); sink.len = rowOut; break rows; }
              const at = this.#textBytes + rowStart;
              throw new DecodeError(`CSV quoted field starting at line ${rowLine} (byte offset ${at}) has no closing quote before the end of the file: check the quote setting or the file`, { line: rowLine, byteOffset: at });
            }
            // After the closing quote, characters up to the delimiter are kept (lenient, like the csv crate).
            let j = i;
            while (j < n) {
              const d = s[j] as number;
              if (d === D || (crlf ? d === LF || d === CR : d === T)) break;
              j++;
            }
            if (j > i) {
              if (len + (j - i) > scratch.length) scratch = this.#grow(len + (j - i));
              s.copy(scratch, len, i, j);
              len += j - i;
            }
            pos = j;
            if (write && fields < width) this.#value(prefixes[fields] as Uint8Array, scratch, 0, len);
          } else if (write && fields < width) {
            // Unquoted: copied and escaped in the same pass that finds its end.
            const out = sink.buf;
            let o = sink.len;
            const prefix = prefixes[fields] as Uint8Array;
            // TypedArray.set costs ~12 ns whatever the length; a byte loop ~1.5 ns a byte.
            if (prefix.length > 8) out.set(prefix, o);
            else for (let k = 0; k < prefix.length; k++) out[o + k] = prefix[k] as number;
            o += prefix.length;
            const valueAt = o;
            out[o++] = QUOTE;
            let j = pos;
            while (j < n) {
              const c = s[j] as number;
              if (stop[c] === 0) {
                out[o++] = c;
                j++;
                continue;
              }
              if (c === D || (crlf ? c === LF || c === CR : c === T)) break;
              const e = ESCAPES[c] as Uint8Array;
              for (let k = 0; k < e.length; k++) out[o++] = e[k] as number;
              j++;
            }
            o = this.#finishValue(s, pos, j, out, valueAt, o);
            sink.len = o;
            pos = j;
          } else {
            let j = pos;
            while (j < n) {
              const d = s[j] as number;
              if (d === D || (crlf ? d === LF || d === CR : d === T)) break;
              j++;
            }
            pos = j;
          }
          fields++;
          if (pos >= n) {
            if (!final) { if (n - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine); sink.len = rowOut; break rows; }
            break;
          }
          const c = s[pos] as number;
          if (c === D) { pos++; continue; }
          // Terminator.
          pos++;
          if (crlf && c === CR) {
            if (pos < n) { if (s[pos] === LF) pos++; } else if (!final) this.#pendingCR = true;
          }
          line++;
          break;
        }
        // A complete row (the length limit holds however the row was split into chunks).
        if (pos - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine);
        if (fields > width) {
          sink.len = rowOut;
          const at = this.#textBytes + rowStart;
          const error = new DecodeError(`CSV row at line ${rowLine} (byte offset ${at}) has ${fields} columns, but the headers only define ${width} columns: fix the row, set headers for every column, or raise errorThreshold`, { line: rowLine, byteOffset: at });
          if (rowsDone === 0) throw error;
          // The rows before it go out; the error comes with the next call (as CsvRecordParser defers it).
          this.#deferred = error;
          consumed = pos;
          consumedLine = line;
          break;
        }
        if (write) sink.closeRecord();
        else sink.offset++;
        rowsDone++;
        consumed = pos;
        consumedLine = line;
      }
    } catch (err) {
      sink.len = mark.len;
      sink.documents = mark.documents;
      sink.offset = mark.offset;
      throw err;
    }
    if (this.#deferred) {
      this.#carryLength = 0;
      return;
    }
    this.#textBytes += consumed;
    const rest = n - consumed;
    if (rest > 0) {
      if (s.buffer === this.#work.buffer && s.byteOffset === this.#work.byteOffset) this.#work.copyWithin(0, consumed, n);
      else {
        if (this.#work.length < rest) this.#work = Buffer.allocUnsafe(Math.max(rest, 128 * 1024));
        s.copy(this.#work, 0, consumed, n);
      }
    }
    this.#carryLength = rest;
    this.#carried = rest;
    this.#line = consumedLine;
  }

  #grow(min: number): Buffer {
    let size = this.#scratch.length * 2;
    while (size < min) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#scratch.copy(next);
    this.#scratch = next;
    return next;
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

  /** Writes `prefix` and the JSON of the value in src[a, b) (a quoted field, unescaped). Room was made for the row. */
  #value(prefix: Uint8Array, src: Uint8Array, a: number, b: number): void {
    const sink = this.#sink;
    const out = sink.buf;
    let o = sink.len;
    out.set(prefix, o);
    o += prefix.length;
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
    sink.len = this.#finishValue(src, a, b, out, valueAt, o);
  }
}
