// Timestamp normalisation applied to every string of every format, recursively (reference §4.10):
// a string that is exactly `YYYY-MM-DD[T][ ]HH:MM:SS[.fraction][Z|z|±HH:MM]` is rewritten as RFC 3339,
// keeping its offset or assuming the configured default offset; UTC is written `Z`; the fraction keeps
// its significant digits, up to nanoseconds (`12:30:00.250` → `12:30:00.25Z`, as the Rust `time` crate
// formats RFC 3339), and a zero fraction is dropped. Anything else is left untouched.
import type { JsonValue } from '@sluice/runtime';

const isRawJson = (JSON as unknown as { isRawJSON(value: unknown): boolean }).isRawJSON;

function digitBytes(s: Uint8Array, at: number, count: number): boolean {
  for (let k = at; k < at + count; k++) {
    const c = s[k] as number;
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function numBytes(s: Uint8Array, at: number, count: number): number {
  let v = 0;
  for (let k = at; k < at + count; k++) v = v * 10 + ((s[k] as number) - 48);
  return v;
}

/** Holds string()'s normalised form (bytesInto writes it quoted). */
let scratch = Buffer.allocUnsafe(64);

/** Parses a `±HH:MM` offset; returns minutes or null when malformed. */
export function parseOffset(offset: string): number | null {
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(offset);
  if (!m) return null;
  const h = Number(m[2]);
  const min = Number(m[3]);
  if (h > 23 || min > 59) return null;
  return (m[1] === '-' ? -1 : 1) * (h * 60 + min);
}

function formatOffset(minutes: number): string {
  if (minutes === 0) return 'Z';
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

export class DatetimeNormalizer {
  readonly #defaultOffset: string;

  constructor(defaultOffset = '+00:00') {
    const minutes = parseOffset(defaultOffset);
    if (minutes === null) throw new Error(`could not parse offset '${defaultOffset}': expected +HH:MM or -HH:MM`);
    this.#defaultOffset = formatOffset(minutes);
  }

  /** Returns the normalised string, or the input unchanged when it is not a whole timestamp. */
  string(s: string): string {
    // Cheap rejection on the string (hot path: every CSV value of the string path, every JSON string);
    // the rules themselves are bytesInto's, on the UTF-8 bytes (the pattern is ASCII, so they match
    // exactly when the string does).
    const n = s.length;
    if (n < 19 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return s;
    const src = Buffer.from(s, 'utf8');
    if (scratch.length < src.length + 16) scratch = Buffer.allocUnsafe(src.length + 16);
    const end = this.bytesInto(src, 0, src.length, scratch, 0);
    return end === -1 ? s : scratch.toString('latin1', 1, end - 1);
  }

  /**
   * The rewrite on the UTF-8 bytes src[a, b) (the CSV byte path; string() too): when they are a whole timestamp, writes its normalised
   * form as a JSON string (quoted) into `out` at `o` (room for b − a + 16 bytes needed) and returns the
   * index after it; otherwise returns −1 and writes nothing. (The pattern is ASCII, so bytes match it
   * exactly when the string does.)
   */
  bytesInto(src: Uint8Array, a: number, b: number, out: Uint8Array, o: number): number {
    const n = b - a;
    if (n < 19 || src[a + 4] !== 45 || src[a + 7] !== 45) return -1;
    if (!digitBytes(src, a, 4) || !digitBytes(src, a + 5, 2) || !digitBytes(src, a + 8, 2)) return -1;
    let i = a + 10;
    if (src[i] === 84) i++; // T
    if (src[i] === 32) i++; // space
    if (i + 8 > b || src[i + 2] !== 58 || src[i + 5] !== 58 || !digitBytes(src, i, 2) || !digitBytes(src, i + 3, 2) || !digitBytes(src, i + 6, 2)) return -1;
    const timeAt = i;
    i += 8;
    let fracStart = -1;
    let fracEnd = -1;
    if (i < b && src[i] === 46) {
      fracStart = i + 1;
      let j = fracStart;
      while (j < b && (src[j] as number) >= 48 && (src[j] as number) <= 57) j++;
      if (j === fracStart) return -1;
      fracEnd = j;
      i = j;
    }
    let offset: string;
    if (i === b) offset = this.#defaultOffset;
    else {
      const c = src[i];
      if ((c === 90 || c === 122) && i + 1 === b) offset = 'Z';
      else if ((c === 43 || c === 45) && i + 6 === b) {
        const minutes = parseOffset(String.fromCharCode(...src.subarray(i, b)));
        if (minutes === null) return -1;
        offset = formatOffset(minutes);
      } else return -1;
    }
    const month = numBytes(src, a + 5, 2);
    const day = numBytes(src, a + 8, 2);
    if (month < 1 || month > 12 || day < 1 || day > daysInMonth(numBytes(src, a, 4), month)) return -1;
    if (numBytes(src, timeAt, 2) > 23 || numBytes(src, timeAt + 3, 2) > 59 || numBytes(src, timeAt + 6, 2) > 60) return -1;
    out[o++] = 34; // "
    for (let k = a; k < a + 10; k++) out[o++] = src[k] as number;
    out[o++] = 84; // T
    for (let k = timeAt; k < timeAt + 8; k++) out[o++] = src[k] as number;
    if (fracStart !== -1) {
      // Nanoseconds (digits past the ninth are truncated) written as the time crate's RFC 3339 does:
      // the significant digits only (`.250` → `.25`), nothing when zero.
      let sig = Math.min(fracEnd - fracStart, 9);
      while (sig > 0 && src[fracStart + sig - 1] === 48) sig--;
      if (sig > 0) {
        out[o++] = 46; // .
        for (let k = 0; k < sig; k++) out[o++] = src[fracStart + k] as number;
      }
    }
    for (let k = 0; k < offset.length; k++) out[o++] = offset.charCodeAt(k);
    out[o++] = 34;
    return o;
  }

  /** Rewrites every string inside a JSON value, in place where possible; returns the value. */
  value(v: JsonValue): JsonValue {
    if (typeof v === 'string') return this.string(v);
    if (v === null || typeof v !== 'object') return v;
    if (isRawJson(v)) return v; // an exact integer (json.ts, avro.ts)
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = this.value(v[i] as JsonValue);
      return v;
    }
    for (const k of Object.keys(v)) v[k] = this.value(v[k] as JsonValue);
    return v;
  }
}
