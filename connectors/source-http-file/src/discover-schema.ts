// Discover's document schema (issue 14.5). Every type and format it states must hold for every record
// of the file it came from, so discover reads the whole file when it can (up to DISCOVER_MAX_RECORDS);
// when it stops early it states only what later records cannot contradict: CSV values are strings or
// null (no format), JSON values get no type. Formats are only those Flow defines for strings (integer,
// number, date, date-time); a field seen only as null gets no `type: null` (CSV: string or null).
// `x-infer-schema: true` lets Flow widen the schema from the documents it then sees.
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';
import { isRawJson } from './json.ts';

/** Records read by discover before it settles for the widened schema. */
export const DISCOVER_MAX_RECORDS = 100_000;

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** Digits only, optional minus, at most 18 digits (within i64, whatever Flow's integer format parses). */
const INTEGER = /^-?\d{1,18}$/;
/** What Rust's f64 parser and Flow's number format accept, minus NaN/inf spellings. */
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const days = m === 2 ? ((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
  return d <= days;
}

const FORMATS: [string, (s: string) => boolean][] = [
  ['integer', (s) => INTEGER.test(s)],
  ['number', (s) => NUMBER.test(s)],
  ['date', (s) => {
    const m = DATE.exec(s);
    return m !== null && validDate(Number(m[1]), Number(m[2]), Number(m[3]));
  }],
  ['date-time', (s) => {
    if (s.length < 20 || !isDigit(s.charCodeAt(0))) return false;
    const m = DATE_TIME.exec(s);
    if (m === null || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
    if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) return false;
    return m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
  }],
];

interface FieldStats { types: Set<string>; formats: Set<string> | null }

function typeOf(value: JsonValue): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'object') return isRawJson(value) ? 'integer' : Array.isArray(value) ? 'array' : 'object';
  return typeof value;
}

/** Accumulates the types and string formats of each top-level field over the records added. */
export class SchemaInference {
  readonly #fields = new Map<string, FieldStats>();
  records = 0;

  add(record: JsonObject): void {
    this.records++;
    for (const key of Object.keys(record)) {
      if (key === '_meta') continue;
      const value = record[key] as JsonValue;
      let s = this.#fields.get(key);
      if (!s) { s = { types: new Set(), formats: null }; this.#fields.set(key, s); }
      s.types.add(typeOf(value));
      if (typeof value === 'string') {
        const known = s.formats;
        if (known === null) s.formats = new Set(FORMATS.filter(([, test]) => test(value)).map(([f]) => f));
        else if (known.size) for (const [f, test] of FORMATS) if (known.has(f) && !test(value)) known.delete(f);
      }
    }
  }

  /**
   * The schema. `complete`: every record of the file was added (else the widened form). `csv`: values
   * are strings or null (so a field seen only as null is still a string or null).
   */
  schema(options: { complete: boolean; csv: boolean }): JsonSchema {
    const properties: Record<string, JsonValue> = {
      _meta: {
        type: 'object',
        properties: {
          file: { type: 'string', description: 'The key of the source file, added automatically by Flow' },
          offset: { type: 'integer', minimum: 0, description: 'The offset of the record within the source file, added automatically by Flow' },
        },
        required: ['file', 'offset'],
      },
    };
    for (const [key, s] of this.#fields) {
      if (!options.complete) {
        properties[key] = options.csv ? { type: ['null', 'string'] } : {};
        continue;
      }
      const types = [...s.types];
      if (types.includes('integer') && types.includes('number')) types.splice(types.indexOf('integer'), 1);
      const stated = types.length === 1 && types[0] === 'null' ? (options.csv ? ['null', 'string'] : []) : types.sort();
      const prop: JsonObject = stated.length === 0 ? {} : { type: stated.length === 1 ? (stated[0] as string) : stated };
      const format = s.formats ? FORMATS.map(([f]) => f).find((f) => s.formats?.has(f)) : undefined;
      if (format) prop['format'] = format;
      properties[key] = prop;
    }
    return { type: 'object', 'x-infer-schema': true, required: ['_meta'], properties };
  }
}

/** The schema of these records, taken as the whole file (see SchemaInference). */
export function inferSchema(records: JsonObject[], options: { complete?: boolean; csv?: boolean } = {}): JsonSchema {
  const inference = new SchemaInference();
  for (const r of records) inference.add(r);
  return inference.schema({ complete: options.complete ?? true, csv: options.csv ?? false });
}
