// Rows as field strings, from the CSV tokenizer (csv-core.ts): a sink handing each row's fields to a callback
// (header rows, objects for discover and errorThreshold: csv.ts), one collecting them, and CsvTokenizer,
// the tokenizer with rows as strings (tests, and any caller that wants field strings).
import { CsvCore, skipUnquoted } from './csv-core.ts';
import type { CsvDialect, CsvSink } from './csv-core.ts';

export interface CsvRow {
  fields: string[];
  /** 1-based line where the row starts. */
  line: number;
  /** Byte offset of the row start in the tokenizer's input. */
  byteOffset: number;
}

/** Each row's fields as strings, handed to `onRow` (which returns false to stop the scan). */
export class FieldStringsSink implements CsvSink {
  readonly #ends: Uint8Array;
  readonly #onRow: (fields: string[], line: number, byteOffset: number) => boolean;
  #fields: string[] = [];
  constructor(core: CsvCore, onRow: (fields: string[], line: number, byteOffset: number) => boolean) {
    this.#ends = core.ends;
    this.#onRow = onRow;
  }
  rowStart(): void {
    this.#fields = [];
  }
  unquoted(src: Uint8Array, a: number, n: number): number {
    const j = skipUnquoted(this.#ends, src, a, n);
    this.#fields.push(Buffer.from(src.buffer, src.byteOffset + a, j - a).toString('utf8'));
    return j;
  }
  quoted(src: Uint8Array, a: number, b: number): void {
    this.#fields.push(Buffer.from(src.buffer, src.byteOffset + a, b - a).toString('utf8'));
  }
  rowEnd(_fields: number, line: number, byteOffset: number): boolean {
    return this.#onRow(this.#fields, line, byteOffset);
  }
  rowAbort(): void {
    this.#fields = [];
  }
}

/** Rows as field strings, up to `limit` rows per scan. */
export class RowCollector extends FieldStringsSink {
  rows: CsvRow[] = [];
  limit = Infinity;
  constructor(core: CsvCore) {
    super(core, (fields, line, byteOffset) => {
      this.rows.push({ fields, line, byteOffset });
      return this.rows.length < this.limit;
    });
  }
}

/**
 * The tokenizer with rows as strings: text or UTF-8 bytes in, rows out (tests, and what a caller that
 * wants field strings uses).
 */
export class CsvTokenizer {
  readonly #core: CsvCore;
  readonly #rows: RowCollector;
  constructor(dialect: CsvDialect) {
    this.#core = new CsvCore(dialect);
    this.#rows = new RowCollector(this.#core);
  }
  push(input: string | Uint8Array): CsvRow[] {
    this.#core.push(typeof input === 'string' ? Buffer.from(input, 'utf8') : input, this.#rows);
    return this.#take();
  }
  end(): CsvRow[] {
    this.#core.end(this.#rows);
    return this.#take();
  }
  #take(): CsvRow[] {
    const rows = this.#rows.rows;
    this.#rows.rows = [];
    return rows;
  }
}
