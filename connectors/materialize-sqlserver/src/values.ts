// Value conversions that are pure (no driver): JSON/tuple values into what a SQL Server column holds.
// Dates and times travel as canonical strings (SqlParam has no date type); the client turns them into the
// driver's Date + nanosecondDelta form when it binds them, using parseDateTime2 / parseTime here.
import { SqlError } from '@sluice/materialize-sql';
import { stringifyDocument } from '@sluice/runtime';
import type { JsonValue, TupleValue } from '@sluice/runtime';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export type InputValue = TupleValue | JsonValue | undefined;

/** JSON text of a value: Flow sends object/array fields as the bytes of their JSON text (tuple code 0x01). */
export function jsonText(value: InputValue): string | null {
  if (value === undefined || value === null) return null;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'object' && !Array.isArray(value) && 'uuid' in value && value.uuid instanceof Uint8Array) {
    return JSON.stringify(uuidText(value.uuid));
  }
  // A bigint inside an object or array is written as its digits (a JSON number), not as a string.
  return stringifyDocument(value as JsonValue);
}

function uuidText(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A plain string column: strings as is, anything else as its JSON text. */
export function toText(value: InputValue): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return jsonText(value);
}

/** BIGINT: integers exactly (bigint beyond 2^53); integral numeric strings (`12`, `12.000`) parsed. */
export function toBigInt(value: InputValue, field: string): number | bigint | null {
  if (value === undefined || value === null) return null;
  let n: bigint;
  if (typeof value === 'bigint') n = value;
  else if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new SqlError(`field '${field}': ${value} is not an integer, so it cannot be written to a BIGINT column`);
    return value;
  } else if (typeof value === 'string') {
    const m = /^\s*([+-]?\d+)(?:\.0*)?\s*$/.exec(value);
    if (m === null) throw new SqlError(`field '${field}': '${value}' is not an integer string, so it cannot be written to a BIGINT column`);
    n = BigInt(m[1]!);
  } else if (typeof value === 'boolean') {
    throw new SqlError(`field '${field}': boolean ${value} cannot be written to a BIGINT column`);
  } else {
    throw new SqlError(`field '${field}': ${jsonText(value)} cannot be written to a BIGINT column`);
  }
  if (n < INT64_MIN || n > INT64_MAX) {
    throw new SqlError(`field '${field}': ${n} is outside the BIGINT range (-2^63 .. 2^63-1); give the field a larger type with fields.include {"DDL": "DECIMAL(38)"}`);
  }
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** Integers too large for BIGINT are stored as decimal text. */
export function toDecimalText(value: InputValue): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) return BigInt(value).toString();
  return toText(value);
}

/**
 * DECIMAL/NUMERIC (user DDL): the value's exact decimal text — integers beyond 2^53 and numeric strings keep every
 * digit (the client scales the text into the column's fixed-point form without floating point).
 */
export function toNumericText(value: InputValue, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SqlError(`field '${field}': ${value} cannot be written to a DECIMAL column`);
    return Number.isInteger(value) && !Number.isSafeInteger(value) ? BigInt(value).toString() : String(value);
  }
  if (typeof value === 'string' && NUMERIC_TEXT.test(value)) return value.trim();
  throw new SqlError(`field '${field}': ${jsonText(value)} is not a number, so it cannot be written to a DECIMAL column`);
}

/** A decimal number as text: sign, digits, optional fraction and exponent (what JSON and Flow's numeric strings hold). */
export const NUMERIC_TEXT = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/**
 * Scale decimal text to the integer a DECIMAL(precision, scale) column stores (value × 10^scale), rounding half
 * away from zero past `scale` digits as SQL Server's own conversion does; an integer part wider than
 * precision − scale digits is an error, as it is for SQL Server.
 */
export function scaleDecimal(text: string, precision: number, scale: number, field: string): bigint {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) throw new SqlError(`field '${field}': '${text}' is not a number, so it cannot be written to a DECIMAL(${precision}, ${scale}) column`);
  const digits = `${m[2]}${m[3] ?? ''}`;
  // The value is digits × 10^exp; we want round(digits × 10^(exp + scale)).
  const shift = Number(m[4] ?? '0') - (m[3] ?? '').length + scale;
  let n: bigint;
  if (shift >= 0) {
    if (shift > 4 * precision + 80) n = BigInt(digits) === 0n ? 0n : 10n ** BigInt(precision); // far too large: overflow below
    else n = BigInt(digits) * 10n ** BigInt(shift);
  } else if (-shift > digits.length) {
    n = 0n; // below half a unit of the last place
  } else {
    const d = 10n ** BigInt(-shift);
    const whole = BigInt(digits);
    n = whole / d;
    if ((whole % d) * 2n >= d) n += 1n; // half away from zero (the sign is applied after)
  }
  if (n >= 10n ** BigInt(precision)) {
    throw new SqlError(`field '${field}': ${text.trim()} does not fit a DECIMAL(${precision}, ${scale}) column (at most ${precision - scale} integer digits); widen the field's DDL`);
  }
  return m[1] === '-' ? -n : n;
}

/** DOUBLE PRECISION: numbers; numeric strings parsed, NaN and ±Infinity become NULL (SQL Server has no such floats). */
export function toDouble(value: InputValue, field: string): number | null {
  if (value === undefined || value === null) return null;
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'bigint') n = Number(value);
  else if (typeof value === 'string') {
    const t = value.trim();
    if (t === 'NaN' || t === 'Infinity' || t === '-Infinity' || t === '+Infinity') return null;
    n = Number(t);
    if (t === '' || Number.isNaN(n)) throw new SqlError(`field '${field}': '${value}' is not a number, so it cannot be written to a DOUBLE PRECISION column`);
  } else {
    throw new SqlError(`field '${field}': ${jsonText(value)} cannot be written to a DOUBLE PRECISION column`);
  }
  return Number.isFinite(n) ? n : null;
}

export function toBit(value: InputValue, field: string): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value;
  throw new SqlError(`field '${field}': ${jsonText(value)} cannot be written to a BIT column`);
}

/** VARBINARY: base64 content (as Flow sends contentEncoding: base64 strings) decoded into bytes. */
export function toBinary(value: InputValue, field: string): Uint8Array | null {
  if (value === undefined || value === null) return null;
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') {
    const t = value.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(t)) throw new SqlError(`field '${field}': the value is not base64, so it cannot be decoded into a VARBINARY column`);
    return Buffer.from(t, t.includes('-') || t.includes('_') ? 'base64url' : 'base64');
  }
  throw new SqlError(`field '${field}': ${jsonText(value)} cannot be written to a VARBINARY column`);
}

export interface PreciseTime {
  /** Millisecond part (UTC). */
  date: Date;
  /** Seconds below the millisecond, in [0, 0.001), at 100 ns resolution (what DATETIME2(7)/TIME(7) hold). */
  nanosecondDelta: number;
}

function fraction(frac: string | undefined): { ms: number; delta: number } {
  const digits = (frac ?? '').padEnd(7, '0').slice(0, 7); // 100 ns resolution; finer digits are truncated
  const ms = Number(digits.slice(0, 3));
  const rest = Number(digits.slice(3, 7)); // units of 100 ns
  return { ms, delta: rest / 1e7 };
}

function offsetMinutes(tz: string): number {
  if (tz === 'Z' || tz === 'z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(tz);
  if (m === null) return NaN;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

/** RFC 3339 date-time (`z` accepted) → UTC instant at 100 ns resolution. */
export function parseDateTime2(value: string, field: string): PreciseTime {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:?\d{2})$/.exec(value);
  const bad = () => new SqlError(`field '${field}': '${value}' is not an RFC 3339 date-time (e.g. 2024-05-01T12:00:00.1234567Z), so it cannot be written to a DATETIME2 column`);
  if (m === null) throw bad();
  const off = offsetMinutes(m[8]!);
  const { ms, delta } = fraction(m[7]);
  const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), ms) - off * 60_000;
  const date = new Date(t);
  if (Number.isNaN(t) || Number.isNaN(off) || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) throw bad();
  if (m[1]!.startsWith('00')) date.setUTCFullYear(Number(m[1])); // Date.UTC maps years 0..99 to 1900..1999
  return { date, nanosecondDelta: delta };
}

/** `HH:MM:SS[.frac]` with an optional zone → UTC time of day (on 1970-01-01) at 100 ns resolution. */
export function parseTime(value: string, field: string): PreciseTime {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:?\d{2})?$/.exec(value);
  const bad = () => new SqlError(`field '${field}': '${value}' is not a time (HH:MM:SS[.fraction][Z|±HH:MM]), so it cannot be written to a TIME column`);
  if (m === null) throw bad();
  const off = m[5] === undefined ? 0 : offsetMinutes(m[5]);
  const h = Number(m[1]); const mi = Number(m[2]); const s = Number(m[3]);
  if (Number.isNaN(off) || h > 23 || mi > 59 || s > 60) throw bad();
  const { ms, delta } = fraction(m[4]);
  const day = 86_400_000;
  const t = ((((h * 60 + mi) * 60 + Math.min(s, 59)) * 1000 + ms - off * 60_000) % day + day) % day;
  return { date: new Date(t), nanosecondDelta: delta };
}

/** `YYYY-MM-DD` → that day at UTC midnight. */
export function parseDate(value: string, field: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const d = m === null ? new Date(NaN) : new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  if (m !== null && m[1]!.startsWith('00')) d.setUTCFullYear(Number(m[1]));
  if (m === null || Number.isNaN(d.getTime()) || d.getUTCDate() !== Number(m[3])) {
    throw new SqlError(`field '${field}': '${value}' is not a date (YYYY-MM-DD), so it cannot be written to a DATE column`);
  }
  return d;
}
