// W3C Extended Log File Format: `#` directive lines (a `#Fields:` line names the columns), then
// TAB-delimited rows with standard double-quote quoting; `#` lines anywhere are comments; `-` is null.
// A pure incremental core over text, built on the CSV tokenizer.
import type { JsonObject } from '@sluice/runtime';
import { CsvTokenizer } from './csv.ts';
import type { DatetimeNormalizer } from './datetime.ts';
import { DecodeError } from './errors.ts';

const MAX_HEADER_CHARS = 1024 * 1024;

export class W3cRecordParser {
  readonly #dt: DatetimeNormalizer;
  #fields: string[] | null = null;
  #header = '';
  #headerDone = false;
  #tokenizer = new CsvTokenizer({ delimiter: '\t', quote: '"', escape: '', lineEnding: 'crlf' });
  #width = -1;
  #headerLines = 0;

  constructor(datetimes: DatetimeNormalizer) {
    this.#dt = datetimes;
  }

  push(text: string): JsonObject[] {
    if (this.#headerDone) return this.#records(this.#tokenizer.push(text));
    this.#header += text;
    return this.#readHeader(false);
  }

  end(): JsonObject[] {
    if (!this.#headerDone) {
      const out = this.#readHeader(true);
      if (!this.#headerDone) return out;
      return out.concat(this.#records(this.#tokenizer.end()));
    }
    return this.#records(this.#tokenizer.end());
  }

  #readHeader(final: boolean): JsonObject[] {
    let pos = 0;
    const s = this.#header;
    while (pos < s.length) {
      if (s[pos] !== '#') break;
      const nl = s.indexOf('\n', pos);
      if (nl === -1 && !final) {
        if (s.length > MAX_HEADER_CHARS) throw new DecodeError('W3C Extended Log file headers are malformed: a directive line is longer than 1 MiB');
        this.#header = s.slice(pos);
        return [];
      }
      const line = s.slice(pos + 1, nl === -1 ? s.length : nl).replace(/\r$/, '');
      this.#headerLines++;
      const colon = line.indexOf(':');
      if (colon === -1) throw new DecodeError(`W3C Extended Log file headers are malformed: directive line ${this.#headerLines} has no ':' ('#${line}')`, { line: this.#headerLines });
      if (line.slice(0, colon).trim() === 'Fields') this.#fields = line.slice(colon + 1).trim().split(/\s+/).filter((f) => f.length > 0);
      pos = nl === -1 ? s.length : nl + 1;
    }
    if (pos >= s.length && !final) {
      this.#header = '';
      return [];
    }
    if (this.#fields === null) {
      if (final && s.length === 0 && this.#headerLines === 0) {
        this.#headerDone = true; // empty file: no records, no error
        return [];
      }
      throw new DecodeError('W3C Extended Log file is missing the required #Fields directive: the file must start with a "#Fields: <names>" line');
    }
    this.#headerDone = true;
    const rest = s.slice(pos);
    this.#header = '';
    return this.#records(this.#tokenizer.push(rest));
  }

  #records(rows: { fields: string[]; line: number; byteOffset: number }[]): JsonObject[] {
    const names = this.#fields as string[];
    const out: JsonObject[] = [];
    for (const row of rows) {
      const f = row.fields;
      if ((f[0] ?? '').startsWith('#')) continue; // comment or directive
      const line = row.line + this.#headerLines;
      if (f.length > names.length) throw new DecodeError(`W3C log row at line ${line} has ${f.length} fields, but #Fields defines ${names.length}`, { line });
      if (this.#width === -1) this.#width = f.length;
      else if (f.length !== this.#width) throw new DecodeError(`W3C log row at line ${line} has ${f.length} fields, but the first row has ${this.#width}`, { line });
      const record: JsonObject = {};
      for (let i = 0; i < f.length; i++) {
        const v = f[i] as string;
        record[names[i] as string] = v === '-' ? null : this.#dt.string(v);
      }
      out.push(record);
    }
    return out;
  }
}
