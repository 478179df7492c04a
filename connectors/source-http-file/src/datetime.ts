// Timestamp normalisation applied to every string of every format, recursively (reference §4.10):
// a string that is exactly `YYYY-MM-DD[T][ ]HH:MM:SS[.fraction][Z|z|±HH:MM]` is rewritten as RFC 3339,
// keeping its offset or assuming the configured default offset; UTC is written `Z`; a zero fraction is
// dropped and others are written with 3, 6 or 9 digits. Anything else is left untouched.
import type { JsonValue } from '@sluice/runtime';

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})T? ?(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})?$/;

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
    // Cheap prefilter: every match is at least 19 characters with '-' at 4 and 7.
    if (s.length < 19 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return s;
    const m = PATTERN.exec(s);
    if (!m) return s;
    const [, y, mo, d, h, mi, sec, frac, zone] = m as unknown as string[];
    const month = Number(mo);
    const day = Number(d);
    if (month < 1 || month > 12 || day < 1 || day > daysInMonth(Number(y), month)) return s;
    if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 60) return s;
    let offset: string;
    if (zone === undefined) offset = this.#defaultOffset;
    else if (zone === 'Z' || zone === 'z') offset = 'Z';
    else {
      const minutes = parseOffset(zone);
      if (minutes === null) return s;
      offset = formatOffset(minutes);
    }
    let fraction = '';
    if (frac !== undefined) {
      const digits = frac.length > 9 ? frac.slice(0, 9) : frac.padEnd(9, '0');
      if (!/^0+$/.test(digits)) {
        fraction = digits.endsWith('000000') ? digits.slice(0, 3) : digits.endsWith('000') ? digits.slice(0, 6) : digits;
        fraction = `.${fraction}`;
      }
    }
    return `${y}-${mo}-${d}T${h}:${mi}:${sec}${fraction}${offset}`;
  }

  /** Rewrites every string inside a JSON value, in place where possible; returns the value. */
  value(v: JsonValue): JsonValue {
    if (typeof v === 'string') return this.string(v);
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = this.value(v[i] as JsonValue);
      return v;
    }
    for (const k of Object.keys(v)) v[k] = this.value(v[k] as JsonValue);
    return v;
  }
}
