// CSV: a pure incremental tokenizer (text in → rows out, across any chunk boundary), dialect detection
// over a sample, and the record layer (headers, null values, timestamps, errorThreshold).
// Behaviour follows the upstream parser (reference §4.5, §4.6): quotes are recognised only at the start
// of a field, a doubled quote is a literal quote, blank lines are skipped, CRLF mode accepts \r, \n and
// \r\n, values are strings or null, short rows omit keys and long rows are errors.
import type { JsonObject } from '@sluice/runtime';
import type { CsvConfig } from './schema.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { ConfigError, DecodeError, ErrorThresholdError } from './errors.ts';
import { columnPrefixes, jsonString } from './record.ts';
import type { DecodedRecord } from './record.ts';

export interface CsvDialect {
  delimiter: string;
  /** '' = quoting disabled. */
  quote: string;
  /** '' = no escape character. */
  escape: string;
  /** 'crlf' = \r, \n or \r\n; otherwise a single terminator character. */
  lineEnding: 'crlf' | string;
}

export interface CsvRow {
  fields: string[];
  /** 1-based line where the row starts. */
  line: number;
  /** UTF-8 byte offset of the row start within the decoded text. */
  byteOffset: number;
}

const LF = 10;
const CR = 13;

/** Upper bound on one row, so a missing closing quote cannot grow memory without limit. */
export const MAX_ROW_CHARS = 64 * 1024 * 1024;

/**
 * Linear time on long rows. A push re-scans the carried incomplete row from its start, so a row spread
 * over k chunks would cost O(k²) (a 32 MB row took 32 s). Once the carried row reaches this size it is
 * re-scanned only when the text held has grown by half since the last scan (or at the end, or past
 * MAX_ROW_CHARS): geometric growth, so every character is scanned O(1) times. Smaller rows are scanned
 * at every push, as before (batch ends unchanged).
 */
export const LONG_ROW_CHARS = 1024 * 1024;

/** Whether a carried incomplete row of `carried` units, now `held` with the new input, should wait. */
export function deferLongRow(carried: number, held: number): boolean {
  return carried >= LONG_ROW_CHARS && held < carried + (carried >> 1) && held <= MAX_ROW_CHARS;
}

/**
 * Text in → rows out. Holds at most one incomplete row between pushes.
 */
export class CsvTokenizer {
  readonly #delim: number;
  readonly #quote: number;
  readonly #escape: number;
  readonly #crlf: boolean;
  readonly #term: number;
  #buf = '';
  #line = 1;
  /** UTF-8 bytes of text consumed before #buf. */
  #bytes = 0;
  /** A \r ended the previous push in CRLF mode: a leading \n belongs to it. */
  #pendingCR = false;

  /** Rows come with empty strings for their fields (detection counts fields; it needs no values). */
  readonly #countOnly: boolean;

  constructor(dialect: CsvDialect, options: { countOnly?: boolean } = {}) {
    this.#countOnly = options.countOnly === true;
    if (dialect.delimiter.length !== 1) throw new ConfigError(`CSV delimiter must be a single character, got ${JSON.stringify(dialect.delimiter)}`);
    this.#delim = dialect.delimiter.charCodeAt(0);
    this.#quote = dialect.quote ? dialect.quote.charCodeAt(0) : -1;
    this.#escape = dialect.escape ? dialect.escape.charCodeAt(0) : -1;
    this.#crlf = dialect.lineEnding === 'crlf' || dialect.lineEnding === '\r\n';
    this.#term = this.#crlf ? -1 : dialect.lineEnding.charCodeAt(0);
  }

  /** Length of #buf when the last scan ended inside a row (0 = it did not). */
  #carried = 0;

  /** Rows completed by `text`; with `maxRows`, stops after that many (the rest stays for the next call). */
  push(text: string, maxRows = Infinity): CsvRow[] {
    if (text.length === 0) return [];
    this.#buf = this.#buf.length ? this.#buf + text : text;
    if (deferLongRow(this.#carried, this.#buf.length)) return [];
    return this.#parse(false, maxRows);
  }

  /** Continues a push that stopped at its `maxRows`. */
  resume(): CsvRow[] {
    return this.#parse(false);
  }

  /** UTF-8 bytes of text consumed so far: every row returned lies before this point. */
  get bytesConsumed(): number {
    return this.#bytes;
  }

  /** Where the next push continues: the unconsumed text, its line number, and whether a \r ended the last push. */
  state(): { rest: string; line: number; pendingCR: boolean } {
    return { rest: this.#buf, line: this.#line, pendingCR: this.#pendingCR };
  }

  end(): CsvRow[] {
    return this.#parse(true);
  }

  #parse(final: boolean, maxRows = Infinity): CsvRow[] {
    const s = this.#buf;
    const n = s.length;
    const rows: CsvRow[] = [];
    const D = this.#delim;
    const Q = this.#quote;
    const E = this.#escape;
    const crlf = this.#crlf;
    const T = this.#term;
    const keep = !this.#countOnly;
    let pos = 0;
    let line = this.#line;
    if (this.#pendingCR && n > 0) {
      this.#pendingCR = false;
      if (s.charCodeAt(0) === LF) pos = 1;
    }
    let consumed = pos;
    let consumedLine = line;
    rows: while (pos < n) {
      if (rows.length >= maxRows) break;
      const rowStart = pos;
      const rowLine = line;
      // Blank line: skipped.
      const c0 = s.charCodeAt(pos);
      if (crlf ? c0 === LF || c0 === CR : c0 === T) {
        pos++;
        if (crlf && c0 === CR) {
          if (pos < n) { if (s.charCodeAt(pos) === LF) pos++; } else if (!final) this.#pendingCR = true;
        }
        line++;
        consumed = pos;
        consumedLine = line;
        continue;
      }
      const fields: string[] = [];
      while (true) {
        // One field starting at pos.
        if (pos < n && s.charCodeAt(pos) === Q) {
          let value = '';
          let i = pos + 1;
          let closed = false;
          while (i < n) {
            const c = s.charCodeAt(i);
            if (c === E && E !== -1) {
              if (i + 1 >= n) break; // need the escaped char
              // The next character is literal whatever it is, the escape character included (csv-core).
              if (keep) value += s[i + 1];
              i += 2;
              continue;
            }
            if (c === Q) {
              if (i + 1 < n && s.charCodeAt(i + 1) === Q) { if (keep) value += s[i]; i += 2; continue; }
              if (i + 1 >= n && !final) break; // a doubled quote may follow in the next chunk
              closed = true;
              i++;
              break;
            }
            // Copy a run of ordinary characters at once.
            let j = i + 1;
            while (j < n) {
              const d = s.charCodeAt(j);
              if (d === Q || (d === E && E !== -1)) break;
              j++;
            }
            const run = s.slice(i, j);
            if (crlf ? run.indexOf('\n') !== -1 || run.indexOf('\r') !== -1 : run.indexOf(String.fromCharCode(T)) !== -1) line += countLines(run, crlf, T);
            if (keep) value += run;
            i = j;
          }
          if (!closed) {
            if (!final) { if (n - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine); break rows; }
            throw new DecodeError(`CSV quoted field starting at line ${rowLine} (byte offset ${this.#byteOffset(s, rowStart)}) has no closing quote before the end of the file: check the quote setting or the file`, { line: rowLine, byteOffset: this.#byteOffset(s, rowStart) });
          }
          // After the closing quote, characters up to the delimiter are kept (lenient, like the csv crate).
          let j = i;
          while (j < n) {
            const d = s.charCodeAt(j);
            if (d === D || (crlf ? d === LF || d === CR : d === T)) break;
            j++;
          }
          if (j > i && keep) value += s.slice(i, j);
          pos = j;
          fields.push(value);
        } else {
          let j = pos;
          while (j < n) {
            const d = s.charCodeAt(j);
            if (d === D || (crlf ? d === LF || d === CR : d === T)) break;
            j++;
          }
          fields.push(keep ? s.slice(pos, j) : '');
          pos = j;
        }
        if (pos >= n) {
          if (!final) { if (n - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine); break rows; }
          if (pos - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine);
          rows.push({ fields, line: rowLine, byteOffset: rowStart });
          consumed = pos;
          consumedLine = line;
          break rows;
        }
        const c = s.charCodeAt(pos);
        if (c === D) { pos++; continue; }
        // Terminator.
        pos++;
        if (crlf && c === CR) {
          if (pos < n) { if (s.charCodeAt(pos) === LF) pos++; } else if (!final) this.#pendingCR = true;
        }
        line++;
        // A row may also arrive whole: the limit holds however it was split.
        if (pos - rowStart > MAX_ROW_CHARS) throw tooLong(rowLine);
        rows.push({ fields, line: rowLine, byteOffset: rowStart });
        consumed = pos;
        consumedLine = line;
        break;
      }
    }
    // Rows carry their char index in byteOffset until here; convert to UTF-8 byte offsets.
    const bytes = Buffer.byteLength(s);
    if (rows.length) this.#resolveOffsets(s, rows, bytes === n);
    this.#bytes += consumed === n ? bytes : bytes === n ? consumed : Buffer.byteLength(s.slice(0, consumed));
    this.#buf = consumed === n ? '' : s.slice(consumed);
    this.#carried = rows.length < maxRows ? this.#buf.length : 0;
    this.#line = consumedLine;
    return rows;
  }

  #resolveOffsets(s: string, rows: CsvRow[], ascii: boolean): void {
    if (ascii) {
      for (const r of rows) r.byteOffset += this.#bytes;
      return;
    }
    let lastChar = 0;
    let lastBytes = this.#bytes;
    for (const r of rows) {
      const at = r.byteOffset;
      lastBytes += Buffer.byteLength(s.slice(lastChar, at));
      lastChar = at;
      r.byteOffset = lastBytes;
    }
  }

  #byteOffset(s: string, at: number): number {
    return this.#bytes + Buffer.byteLength(s.slice(0, at));
  }
}

function countLines(run: string, crlf: boolean, T: number): number {
  let count = 0;
  for (let i = 0; i < run.length; i++) {
    const c = run.charCodeAt(i);
    if (crlf) {
      if (c === LF) count++;
      else if (c === CR) { count++; if (run.charCodeAt(i + 1) === LF) i++; }
    } else if (c === T) count++;
  }
  return count;
}

export function tooLong(line: number): DecodeError {
  return new DecodeError(`CSV row starting at line ${line} is longer than ${MAX_ROW_CHARS} characters: check the quote and line ending settings`, { line });
}

// ------------------------------------------------------------------------------------------------
// Dialect detection (reference §4.5).

const QUOTE_CANDIDATES = ['"', "'", ''];
const DELIMITER_CANDIDATES = [',', '|', '\t', ';'];

interface Scored { quote: string; delimiter: string; good: number; mean: number; cv: number }

/** Picks quote and delimiter from a text sample; configured values pin their dimension. */
export function detectDialect(sample: string, complete: boolean, pinned: { quote?: string | null; delimiter?: string | null; escape: string; lineEnding: 'crlf' | string; headerCount?: number }): { quote: string; delimiter: string } {
  const quotes = pinned.quote !== null && pinned.quote !== undefined ? [pinned.quote] : QUOTE_CANDIDATES;
  const delimiters = pinned.delimiter !== null && pinned.delimiter !== undefined ? [pinned.delimiter] : DELIMITER_CANDIDATES;
  let best: Scored | null = null;
  for (const quote of quotes) {
    for (const delimiter of delimiters) {
      const tok = new CsvTokenizer({ delimiter, quote, escape: pinned.escape, lineEnding: pinned.lineEnding }, { countOnly: true });
      let rows: CsvRow[];
      try {
        rows = tok.push(sample);
        if (complete) rows = rows.concat(tok.end());
      } catch {
        rows = [];
      }
      const headerCount = pinned.headerCount ?? rows[0]?.fields.length ?? 0;
      const scores = rows.map((r) => (r.fields.length > headerCount ? 0 : r.fields.length - 1));
      const good = scores.filter((x) => x > 0).length;
      const mean = scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0;
      const sd = scores.length ? Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / scores.length) : 0;
      const cand: Scored = { quote, delimiter, good, mean, cv: mean > 0 ? sd / mean : Infinity };
      if (best === null || better(cand, best)) best = cand;
    }
  }
  return { quote: best?.quote ?? '"', delimiter: best?.delimiter ?? ',' };
}

function quoteRank(q: string): number {
  return q === '"' ? 2 : q === "'" ? 1 : 0;
}

/** True when `a` should replace the current best `b` (later candidates win remaining ties). */
function better(a: Scored, b: Scored): boolean {
  if (a.good !== b.good) return a.good > b.good;
  if (a.mean === 0 || b.mean === 0) {
    if (a.mean !== b.mean) return a.mean > b.mean;
  } else if (a.cv !== b.cv) return a.cv < b.cv;
  if (a.quote !== b.quote) return quoteRank(a.quote) > quoteRank(b.quote);
  return true;
}

// ------------------------------------------------------------------------------------------------
// Records.

export const ERROR_WINDOW = 1000;
const DETECTION_SAMPLE_CHARS = 64 * 1024;

type Result<R> = { record: R } | { error: DecodeError };

/** Stored in the state so a later session can parse from the middle of the file (see connector.ts). */
export interface CsvResume {
  headers: string[];
  delimiter: string;
  quote: string;
  escape: string;
  lineEnding: string;
}

/** See CsvRecordParser.handOff. */
export interface CsvHandOff extends ReturnType<CsvTokenizer['state']> {
  dialect: CsvDialect;
  headers: string[];
  /** JSON prefixes of the columns (record.ts columnPrefixes). */
  prefixes: string[];
  /** UTF-8 bytes of text the tokenizer consumed (row byte offsets in errors count from its start). */
  textBytes: number;
  /** Bytes of the lines skipped by skipLines before the tokenizer's text. */
  skippedBytes: number;
}

export interface CsvRecordOptions {
  config: CsvConfig;
  datetimes: DatetimeNormalizer;
  /** Called for each malformed row dropped under errorThreshold. */
  onSkippedRow?: (error: DecodeError) => void;
  /**
   * Emit each record as its JSON text without the closing brace (see record.ts) instead of an object,
   * when the header names allow it (otherwise objects). Use with `CsvRecordParser<DecodedRecord>`.
   */
  jsonText?: boolean;
  /**
   * Once the dialect is detected, tokenize only the header row (if the file has one) and keep the rest
   * of the text unparsed, so that another tokenizer can take over from there (handOff, csv-bytes.ts).
   */
  handOffAfterHeader?: boolean;
}

/**
 * Text in → records out (objects of string-or-null values, timestamps normalised). Applies skipLines,
 * detects the dialect over the first 64 KiB, reads the header row unless headers are configured, and
 * enforces errorThreshold with a look-ahead window of 1000 rows. With `jsonText`, records come as JSON
 * text (R = DecodedRecord); without it they are objects (R = JsonObject).
 */
export class CsvRecordParser<R extends DecodedRecord = JsonObject> {
  readonly #config: CsvConfig;
  readonly #jsonText: boolean;
  /** Column prefixes for the JSON text of the current headers, or null (objects). */
  #prefixes: string[] | null = null;
  #prefixesOf: string[] | null = null;
  readonly #dt: DatetimeNormalizer;
  readonly #threshold: number;
  readonly #onSkipped: (error: DecodeError) => void;
  #skipLinesLeft: number;
  #pending = '';
  #tokenizer: CsvTokenizer | null = null;
  #headers: string[] | null;
  #queue: Result<R>[] = [];
  #queueErrors = 0;
  #rowsRead = 0;
  /** Rows dropped under errorThreshold. */
  skippedRows = 0;

  constructor(options: CsvRecordOptions) {
    const config = options.config;
    this.#config = config;
    this.#dt = options.datetimes;
    const t = config.errorThreshold ?? 0;
    if (!Number.isInteger(t) || t < 0) throw new ConfigError(`errorThreshold must be a non-negative integer percentage, got ${t}`);
    if (t > 100) throw new ConfigError(`ErrorThreshold cannot be greater than 100%: ${t}%`);
    this.#threshold = t;
    this.#headers = config.headers && config.headers.length ? [...config.headers] : null;
    this.#skipLinesLeft = config.skipLines ?? 0;
    this.#onSkipped = options.onSkippedRow ?? (() => {});
    this.#jsonText = options.jsonText === true;
    this.#handOffAfterHeader = options.handOffAfterHeader === true;
  }

  readonly #handOffAfterHeader: boolean;

  /** The dialect in use, once detected. */
  dialect: CsvDialect | null = null;

  /** An error found after some records of the same call: those are returned first, then it is thrown. */
  #deferred: Error | null = null;

  push(text: string): R[] {
    if (this.#deferred) throw this.#deferred;
    if (this.#tokenizer) return this.#rows(this.#tokenizer.push(text), false);
    if (this.#skipLinesLeft > 0) text = this.#skipLines(text);
    if (text.length === 0) return [];
    this.#pending += text;
    if (this.#pending.length < DETECTION_SAMPLE_CHARS) return [];
    return this.#start(false);
  }

  end(): R[] {
    if (this.#deferred) throw this.#deferred;
    if (!this.#tokenizer) {
      const out = this.#start(true);
      if (this.#deferred) return out;
      return out.concat(this.#rows((this.#tokenizer as CsvTokenizer | null)?.end() ?? [], true));
    }
    return this.#rows(this.#tokenizer.end(), true);
  }

  #skipLines(text: string): string {
    // Each skipped line ends at the next LF, whatever lineEnding says (as upstream).
    let pos = 0;
    while (this.#skipLinesLeft > 0) {
      const nl = text.indexOf('\n', pos);
      if (nl === -1) { this.#skippedBytes += Buffer.byteLength(text); return ''; }
      pos = nl + 1;
      this.#skipLinesLeft--;
    }
    this.#skippedBytes += Buffer.byteLength(text.slice(0, pos));
    return text.slice(pos);
  }

  #skippedBytes = 0;

  /**
   * UTF-8 bytes of text after which the next record starts (every record returned so far lies before
   * it), or null when unknown: before the dialect is known, and with errorThreshold (rows wait in the
   * look-ahead window).
   */
  position(): number | null {
    if (this.#tokenizer === null || this.#threshold > 0 || this.#headers === null || this.#deferred) return null;
    return this.#skippedBytes + this.#tokenizer.bytesConsumed;
  }

  /** What a parser resuming mid-file needs: the header names and the dialect in use. */
  resumeConfig(): CsvResume | null {
    if (this.dialect === null || this.#headers === null) return null;
    const d = this.dialect;
    return { headers: [...this.#headers], delimiter: d.delimiter, quote: d.quote, escape: d.escape, lineEnding: d.lineEnding === 'crlf' ? '\r\n' : d.lineEnding };
  }

  /**
   * Once the dialect and headers are known, without errorThreshold or a pending error, and the headers
   * allow JSON text: everything another tokenizer needs to continue exactly where this one stopped
   * (csv-bytes.ts). Null before that, or when the file must stay on this parser.
   */
  handOff(): CsvHandOff | null {
    if (this.#tokenizer === null || this.dialect === null || this.#headers === null || this.#threshold > 0 || this.#deferred || !this.#jsonText) return null;
    const prefixes = columnPrefixes(this.#headers);
    if (prefixes === null) return null;
    return { dialect: this.dialect, headers: [...this.#headers], prefixes, textBytes: this.#tokenizer.bytesConsumed, skippedBytes: this.#skippedBytes, ...this.#tokenizer.state() };
  }

  #start(complete: boolean): R[] {
    const c = this.#config;
    const lineEnding = c.lineEnding === null || c.lineEnding === undefined || c.lineEnding === '\r\n' ? 'crlf' : c.lineEnding;
    const escape = c.escape ?? '';
    let sample = this.#pending;
    if (!complete) {
      const cut = Math.max(sample.lastIndexOf('\n'), sample.lastIndexOf('\r'));
      if (cut > 0) sample = sample.slice(0, cut);
    }
    const detected = (c.quote === null || c.quote === undefined || c.delimiter === null || c.delimiter === undefined)
      ? detectDialect(sample, complete, { quote: c.quote ?? null, delimiter: c.delimiter ?? null, escape, lineEnding, ...(this.#headers ? { headerCount: this.#headers.length } : {}) })
      : { quote: c.quote, delimiter: c.delimiter };
    this.dialect = { delimiter: detected.delimiter, quote: detected.quote, escape, lineEnding };
    this.#tokenizer = new CsvTokenizer(this.dialect);
    const text = this.#pending;
    this.#pending = '';
    if (this.#handOffAfterHeader && !complete) {
      const first = this.#rows(this.#tokenizer.push(text, this.#headers === null ? 1 : 0), false);
      // Headers that keep the file here (no JSON text for them): the rest of the sample is parsed now.
      if (this.handOff() !== null || this.#deferred) return first;
      return first.concat(this.#rows(this.#tokenizer.resume(), false));
    }
    return this.#rows(this.#tokenizer.push(text), false);
  }

  #rows(rows: CsvRow[], final: boolean): R[] {
    const out: R[] = [];
    try {
      return this.#rowsInto(rows, final, out);
    } catch (err) {
      if (out.length === 0) throw err;
      this.#deferred = err as Error;
      return out;
    }
  }

  #rowsInto(rows: CsvRow[], final: boolean, out: R[]): R[] {
    let i = 0;
    if (this.#headers === null) {
      const first = rows[0];
      if (first === undefined) return final ? this.#drain(out, true) : out;
      this.#headers = first.fields;
      i = 1;
    }
    const headers = this.#headers;
    const width = headers.length;
    const dt = this.#dt;
    const strict = this.#threshold === 0;
    if (this.#jsonText && this.#prefixesOf !== headers) {
      this.#prefixesOf = headers;
      this.#prefixes = columnPrefixes(headers);
    }
    const prefixes = this.#prefixes;
    for (; i < rows.length; i++) {
      const row = rows[i] as CsvRow;
      const fields = row.fields;
      if (fields.length > width) {
        const error = new DecodeError(`CSV row at line ${row.line} (byte offset ${row.byteOffset}) has ${fields.length} columns, but the headers only define ${width} columns: fix the row, set headers for every column, or raise errorThreshold`, { line: row.line, byteOffset: row.byteOffset });
        if (strict) throw error;
        this.#enqueue({ error }, out);
        continue;
      }
      let record: R;
      if (prefixes !== null) {
        // The JSON text JSON.stringify would give for the object below (record.ts).
        let json = fields.length === 0 ? '{' : '';
        for (let k = 0; k < fields.length; k++) {
          const v = fields[k] as string;
          json += (prefixes[k] as string) + (v === '' || v === 'NULL' || v === 'null' || v === 'nil' ? 'null' : jsonString(dt.string(v)));
        }
        record = json as R;
      } else {
        const object: JsonObject = {};
        for (let k = 0; k < fields.length; k++) {
          const v = fields[k] as string;
          object[headers[k] as string] = v === '' || v === 'NULL' || v === 'null' || v === 'nil' ? null : dt.string(v);
        }
        record = object as R;
      }
      if (strict) out.push(record);
      else this.#enqueue({ record }, out);
    }
    return final ? this.#drain(out, true) : out;
  }

  #enqueue(result: Result<R>, out: R[]): void {
    this.#queue.push(result);
    this.#rowsRead++;
    if ('error' in result) this.#queueErrors++;
    while (this.#queue.length >= ERROR_WINDOW) this.#pop(out);
  }

  #drain(out: R[], _final: boolean): R[] {
    while (this.#queue.length) this.#pop(out);
    return out;
  }

  #pop(out: R[]): void {
    if (this.#queueErrors > 0) {
      const pct = Math.floor((100 * this.#queueErrors) / Math.min(this.#rowsRead, ERROR_WINDOW));
      if (pct >= this.#threshold) {
        const first = this.#queue.find((r): r is { error: DecodeError } => 'error' in r)?.error;
        throw new ErrorThresholdError(`error limit exceeded: ${this.#queueErrors} of the last ${Math.min(this.#rowsRead, ERROR_WINDOW)} CSV rows are malformed (${pct}%), at or above errorThreshold ${this.#threshold}%; first: ${first?.message ?? 'unknown'}`, { line: first?.line ?? null, byteOffset: first?.byteOffset ?? null });
      }
    }
    const head = this.#queue.shift() as Result<R>;
    if ('error' in head) {
      this.#queueErrors--;
      this.skippedRows++;
      this.#onSkipped(head.error);
    } else out.push(head.record);
  }
}
