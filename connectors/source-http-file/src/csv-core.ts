// The one CSV tokenizer: UTF-8 bytes in (other encodings are transcoded before, charset.ts), fields and row
// ends out to a sink. Every CSV rule lives here, once: quotes are recognised only at the start of a field,
// a doubled quote is a literal quote, inside a quoted field the escape byte makes the next byte literal
// whatever it is (the escape itself included, `\\` → `\`, as Rust's csv-core), text after a closing quote
// up to the delimiter is kept (lenient, as the csv crate), blank lines are skipped, CRLF mode accepts \r, \n
// and \r\n, a row longer than MAX_ROW_BYTES is an error, and so is a quoted field left open at the end.
// (Reference §4.5, §4.6.) Sinks decide what a row becomes: framed JSON lines (csv-bytes.ts), field strings
// for objects (discover, errorThreshold) and header names (csv-field-strings.ts, used by csv.ts), or field
// counts for dialect detection (csv-dialect.ts).
import { ConfigError, DecodeError } from './errors.ts';

export interface CsvDialect {
  delimiter: string;
  /** '' = quoting disabled. */
  quote: string;
  /** '' = no escape character. */
  escape: string;
  /** 'crlf' = \r, \n or \r\n; otherwise a single terminator character. */
  lineEnding: 'crlf' | string;
}

export const LF = 10;
export const CR = 13;

/** Upper bound on one row, so a missing closing quote cannot grow memory without limit. */
export const MAX_ROW_BYTES = 64 * 1024 * 1024;

/**
 * Linear time on long rows. A push re-scans the carried incomplete row from its start, so a row spread
 * over k chunks would cost O(k²) (a 32 MB row took 32 s). Once the carried row reaches this size it is
 * re-scanned only when the bytes held have grown by half since the last scan (or at the end, or past
 * MAX_ROW_BYTES): geometric growth, so every byte is scanned O(1) times. Smaller rows are scanned at
 * every push (batch ends unchanged).
 */
export const LONG_ROW_BYTES = 1024 * 1024;

/**
 * What the tokenizer reports. Fields come in order between rowStart and rowEnd; a row the input held so
 * far does not complete is withdrawn with rowAbort (it comes again, whole, from a later push).
 */
export interface CsvSink {
  /** A row starts; at most `maxBytes` bytes of input make it up (room for the sink's output). */
  rowStart(maxBytes: number): void;
  /**
   * An unquoted field starting at src[a]: it ends at the first byte `ends` marks, or at n. The sink reads
   * it (with skipUnquoted, or its own loop over the same table) and returns where it ended.
   */
  unquoted(src: Uint8Array, a: number, n: number, index: number): number;
  /** A quoted field's value, unescaped: src[a, b). */
  quoted(src: Uint8Array, a: number, b: number, index: number): void;
  /** The row ended after `fields` fields; false stops the scan after it (the rest waits for resume/push). */
  rowEnd(fields: number, line: number, byteOffset: number): boolean;
  /** The row started is incomplete in the input held: forget it. */
  rowAbort(): void;
  /**
   * Optional fast path: complete rows from src[a] on, each on one line, handled in one loop (the JSON sink,
   * csv-bytes.ts). Returns where it stopped — at the start of the first row it does not take, which the
   * tokenizer then reads field by field — and sets fastRowCount to the rows it completed. It takes only
   * rows it handles exactly as the field-by-field path would.
   */
  fastRows?(src: Uint8Array, a: number, n: number, final: boolean): number;
  fastRowCount?: number;
}

/** End of an unquoted field from src[a]: the first byte `ends` marks, or n. */
export function skipUnquoted(ends: Uint8Array, src: Uint8Array, a: number, n: number): number {
  let j = a;
  while (j < n && ends[src[j] as number] === 0) j++;
  return j;
}

export function tooLong(line: number): DecodeError {
  return new DecodeError(`CSV row starting at line ${line} is longer than ${MAX_ROW_BYTES} bytes: check the quote and line ending settings`, { line });
}

/** A row with more fields than the headers name (upstream's error, with where it is and what to do). */
export function raggedRow(fields: number, width: number, line: number, byteOffset: number): DecodeError {
  return new DecodeError(`CSV row at line ${line} (byte offset ${byteOffset}) has ${fields} columns, but the headers only define ${width} columns: fix the row, set headers for every column, or raise errorThreshold`, { line, byteOffset });
}

const EMPTY = Buffer.alloc(0);

function singleByte(what: string, value: string): number {
  const b = Buffer.from(value, 'utf8');
  if (b.length !== 1) throw new ConfigError(`CSV ${what} must be a single ASCII character, got ${JSON.stringify(value)}`);
  return b[0] as number;
}

/** Bytes in → rows to a sink, across any chunk boundary. Holds at most one incomplete row between pushes. */
export class CsvCore {
  readonly dialect: CsvDialect;
  /** 1 for the bytes that end an unquoted field: the delimiter and the terminator(s). */
  readonly ends: Uint8Array;
  readonly #delim: number;
  readonly #quote: number;
  readonly #escape: number;
  readonly #crlf: boolean;
  readonly #term: number;
  /** The dialect's bytes (-1: none), for a sink's fast path. */
  readonly delimiterByte: number;
  readonly quoteByte: number;
  readonly escapeByte: number;
  readonly crlf: boolean;
  /**
   * Unconsumed bytes (at most one incomplete row) at the start of this buffer; the next chunk is appended
   * to them there: one buffer reused for the whole file instead of a concatenation per chunk.
   */
  #work: Buffer = Buffer.allocUnsafe(0);
  #carryLength = 0;
  /** Bytes carried when the last scan ended inside a row (see LONG_ROW_BYTES); 0 after a stop. */
  #carried = 0;
  #line = 1;
  /** A \r ended the previous push in CRLF mode: a leading \n belongs to it. */
  #pendingCR = false;
  #consumed = 0;
  /** An unescaped quoted value. */
  #scratch: Buffer = Buffer.allocUnsafe(1024);

  constructor(dialect: CsvDialect) {
    this.dialect = dialect;
    this.#delim = singleByte('delimiter', dialect.delimiter);
    this.#quote = dialect.quote ? singleByte('quote', dialect.quote) : -1;
    this.#escape = dialect.escape ? singleByte('escape', dialect.escape) : -1;
    this.#crlf = dialect.lineEnding === 'crlf' || dialect.lineEnding === '\r\n';
    this.#term = this.#crlf ? -1 : singleByte('lineEnding', dialect.lineEnding);
    this.delimiterByte = this.#delim;
    this.quoteByte = this.#quote;
    this.escapeByte = this.#escape;
    this.crlf = this.#crlf;
    this.ends = new Uint8Array(256);
    this.ends[this.#delim] = 1;
    if (this.#crlf) {
      this.ends[LF] = 1;
      this.ends[CR] = 1;
    } else this.ends[this.#term] = 1;
  }

  /** Bytes consumed so far: every row reported lies before this point (error offsets count from 0 here). */
  get bytesConsumed(): number {
    return this.#consumed;
  }

  /** Bytes held: the incomplete row after bytesConsumed. */
  get bytesHeld(): number {
    return this.#carryLength;
  }

  /** Scans `bytes` after the held ones; returns the rows completed. Throws DecodeError (too long, unclosed quote at the end). */
  push(bytes: Uint8Array, sink: CsvSink): number {
    return this.#scan(bytes, false, sink);
  }

  /** Continues after a stop (rowEnd returned false), without new input. */
  resume(sink: CsvSink): number {
    return this.#scan(EMPTY, false, sink, true);
  }

  /** The input ended: the held bytes are the last row (may stop early too: call again until it returns 0). */
  end(sink: CsvSink): number {
    return this.#scan(EMPTY, true, sink, true);
  }

  #scan(bytes: Uint8Array, final: boolean, sink: CsvSink, force = false): number {
    let s: Buffer;
    const held = this.#carryLength;
    if (held > 0) {
      if (bytes.length > 0) {
        const needed = held + bytes.length;
        if (this.#work.length < needed) {
          // Past LONG_ROW_BYTES, room for the longest row at once: doubling would copy the row again at every
          // step and touch fresh pages each time (most of the cost of a 64 MB row). Pages are backed as written.
          const bigger = Buffer.allocUnsafe(needed > LONG_ROW_BYTES ? Math.max(needed, MAX_ROW_BYTES + (1 << 20)) : Math.max(needed, this.#work.length * 2, 128 * 1024));
          this.#work.copy(bigger, 0, 0, held);
          this.#work = bigger;
        }
        this.#work.set(bytes, held);
        this.#carryLength = held + bytes.length;
      }
      const total = this.#carryLength;
      // A long incomplete row is re-scanned only once the bytes held have grown by half (LONG_ROW_BYTES).
      const carried = this.#carried;
      if (!final && !force && carried >= LONG_ROW_BYTES) {
        if (total < carried + (carried >> 1) && total <= MAX_ROW_BYTES) return 0;
        // Before the sink sees a long row again, check that it is complete now (the sink would write it
        // only to withdraw it: 6 bytes of room per byte, and the copy). Not complete: wait for more.
        if (!this.#rowComplete(this.#work, total)) {
          if (total > MAX_ROW_BYTES) throw tooLong(this.#line);
          this.#carried = total;
          return 0;
        }
      }
      s = this.#work.subarray(0, total);
    } else {
      if (bytes.length === 0 && !final) return 0;
      s = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    }
    const n = s.length;
    const D = this.#delim;
    const Q = this.#quote;
    const E = this.#escape;
    const crlf = this.#crlf;
    const T = this.#term;
    let pos = 0;
    let line = this.#line;
    if (this.#pendingCR && n > 0) {
      this.#pendingCR = false;
      if (s[0] === LF) pos = 1;
    }
    let consumed = pos;
    let consumedLine = line;
    let rowsDone = 0;
    let stopped = false;
    // The sink's fast path takes the rows it can; the tokenizer reads the others (one each time it stops).
    // A fast path that keeps taking none (rows it never takes) is left alone for the rest of this input.
    const fast = sink.fastRows === undefined ? null : sink;
    let fastMisses = 0;
    rows: while (pos < n) {
      if (fast !== null && fastMisses < 8) {
        const at = (fast.fastRows as (src: Uint8Array, a: number, n: number, final: boolean) => number)(s, pos, n, final);
        const done = fast.fastRowCount as number;
        if (done > 0) {
          fastMisses = 0;
          rowsDone += done;
          line += done;
          pos = at;
          consumed = pos;
          consumedLine = line;
          if (pos >= n) break;
        } else fastMisses++;
      }
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
      sink.rowStart(n - rowStart);
      let fields = 0;
      while (true) {
        // One field starting at pos.
        if (pos < n && s[pos] === Q) {
          let i = pos + 1;
          let closed = false;
          let len = 0;
          // The value unescaped is never longer than the bytes it comes from: room for all of them, once.
          const scratch: Buffer = n - pos > this.#scratch.length ? this.#grow(n - pos) : this.#scratch;
          while (i < n) {
            const c = s[i] as number;
            if (c === E) {
              if (i + 1 >= n) break; // need the escaped byte
              // The next byte is literal whatever it is, the escape byte included (csv-core).
              scratch[len++] = s[i + 1] as number;
              i += 2;
              continue;
            }
            if (c === Q) {
              if (i + 1 < n && s[i + 1] === Q) {
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
                  scratch[len++] = c;
                  scratch[len++] = LF;
                  i += 2;
                  continue;
                }
              }
            } else if (c === T) line++;
            scratch[len++] = c;
            i++;
          }
          if (!closed) {
            sink.rowAbort();
            if (!final) { if (n - rowStart > MAX_ROW_BYTES) throw tooLong(rowLine); line = rowLine; break rows; }
            const at = this.#consumed + rowStart;
            throw new DecodeError(`CSV quoted field starting at line ${rowLine} (byte offset ${at}) has no closing quote before the end of the file: check the quote setting or the file`, { line: rowLine, byteOffset: at });
          }
          // After the closing quote, bytes up to the delimiter are kept (lenient, like the csv crate).
          let j = i;
          while (j < n) {
            const d = s[j] as number;
            if (d === D || (crlf ? d === LF || d === CR : d === T)) break;
            j++;
          }
          if (j > i) {
            s.copy(scratch, len, i, j);
            len += j - i;
          }
          pos = j;
          sink.quoted(scratch, 0, len, fields);
        } else {
          pos = sink.unquoted(s, pos, n, fields);
        }
        fields++;
        if (pos >= n) {
          if (!final) {
            sink.rowAbort();
            if (n - rowStart > MAX_ROW_BYTES) throw tooLong(rowLine);
            line = rowLine;
            break rows;
          }
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
      if (pos - rowStart > MAX_ROW_BYTES) { sink.rowAbort(); throw tooLong(rowLine); }
      rowsDone++;
      const go = sink.rowEnd(fields, rowLine, this.#consumed + rowStart);
      consumed = pos;
      consumedLine = line;
      if (!go) { stopped = true; break; }
    }
    this.#consumed += consumed;
    // The held bytes start at a row start again: a later probe starts there.
    this.#probeAt = 0;
    this.#probeMode = 0;
    const rest = n - consumed;
    // After a long row, the big buffers go (their pages stay resident while they are held).
    if (this.#scratch.length > 4 * LONG_ROW_BYTES) this.#scratch = Buffer.allocUnsafe(1024);
    if (this.#work.length > 4 * LONG_ROW_BYTES && rest <= LONG_ROW_BYTES) {
      const work = this.#work;
      this.#work = Buffer.allocUnsafe(Math.max(rest, 128 * 1024));
      if (rest > 0) (s.buffer === work.buffer ? work : s).copy(this.#work, 0, consumed, n);
      this.#carryLength = rest;
      this.#carried = stopped ? 0 : rest;
      this.#line = consumedLine;
      return rowsDone;
    }
    if (rest > 0) {
      if (s.buffer === this.#work.buffer && s.byteOffset === this.#work.byteOffset) this.#work.copyWithin(0, consumed, n);
      else {
        if (this.#work.length < rest) this.#work = Buffer.allocUnsafe(Math.max(rest, 128 * 1024));
        s.copy(this.#work, 0, consumed, n);
      }
    }
    this.#carryLength = rest;
    this.#carried = stopped ? 0 : rest;
    this.#line = consumedLine;
    return rowsDone;
  }

  /** Where the last probe of the held row stopped, and in which part of a field (see #rowComplete). */
  #probeAt = 0;
  #probeMode = 0;

  /**
   * Whether the held bytes hold the end of their first row, found without reporting anything: a scan that
   * resumes where the previous one stopped, so a long row is probed in linear time whatever its chunks.
   * It follows the rules of #scan conservatively — it may call a row complete early (the scan then
   * decides), never late. Modes: 0 field start, 1 unquoted, 2 quoted, 3 after the closing quote.
   */
  #rowComplete(s: Buffer, n: number): boolean {
    const ends = this.ends;
    const D = this.#delim;
    const Q = this.#quote;
    const E = this.#escape;
    let i = this.#probeAt;
    let m = this.#probeMode;
    while (i < n) {
      if (m === 0) {
        if (s[i] === Q) { m = 2; i++; } else m = 1;
        continue;
      }
      if (m === 2) {
        const c = s[i] as number;
        if (c === E) {
          if (i + 1 >= n) break;
          i += 2;
        } else if (c === Q) {
          if (i + 1 >= n) break; // a doubled quote may follow
          if (s[i + 1] === Q) i += 2;
          else { i++; m = 3; }
        } else i++;
        continue;
      }
      // Unquoted, or after the closing quote: up to the delimiter or a terminator.
      while (i < n && ends[s[i] as number] === 0) i++;
      if (i >= n) break;
      if (s[i] !== D) return true;
      i++;
      m = 0;
    }
    this.#probeAt = i;
    this.#probeMode = m;
    return false;
  }

  /** A bigger scratch buffer (nothing in it is kept: it is taken at a field's start). */
  #grow(min: number): Buffer {
    let size = this.#scratch.length * 2;
    while (size < min) size *= 2;
    this.#scratch = Buffer.allocUnsafe(size);
    return this.#scratch;
  }
}
