// Document UUIDs as Flow writes them at `/_meta/uuid`: RFC 4122 version 1, whose 60-bit timestamp
// (100 ns ticks since 1582-10-15) is the publication time and whose node is the producer id. Clocks
// are strictly increasing per producer, so UUIDs of one producer sort by time. `flow_published_at`
// is derived from the timestamp.
import { randomBytes } from 'node:crypto';

/** 100 ns ticks between 1582-10-15 and 1970-01-01. */
const GREGORIAN_OFFSET = 122192928000000000n;

/** GREGORIAN_OFFSET as high and low 32-bit halves. */
const OFFSET_HI = Math.floor(Number(GREGORIAN_OFFSET) / 2 ** 32);
const OFFSET_LO = Number(GREGORIAN_OFFSET - BigInt(OFFSET_HI) * 2n ** 32n);

export class UuidProducer {
  readonly producer: Uint8Array;
  /** The last clock, as hi·2^32 + lo (0 ≤ lo < 2^32): exact in doubles, no BigInt per document. */
  #lastHi = -1;
  #lastLo = 0;
  /** The UUID's text after its time-low field, for #lastHi (it changes every ~7 minutes). */
  #tailHi = -1;
  #tail = '';
  #tailBytes: Uint8Array = new Uint8Array(0);
  #node: string | undefined;

  constructor(producer?: Uint8Array) {
    const p = producer ?? randomBytes(6);
    if (p.length !== 6) throw new RangeError('a producer id is 6 bytes');
    // Flow marks producer ids as multicast addresses so they never collide with a real MAC.
    p[0] = (p[0] ?? 0) | 0x01;
    this.producer = p;
  }

  /**
   * A new UUID whose clock is after every earlier one of this producer. The clock, now·10000 + offset
   * (beyond 2^53), is kept as two 32-bit halves: with now = a·2^32 + b, it is (a·10000 + OFFSET_HI)·2^32 +
   * b·10000 + OFFSET_LO, each term exact in a double (this ran for every captured document with BigInts).
   */
  next(now: number = Date.now()): string {
    const lo = this.#tick(now);
    return lo.toString(16).padStart(8, '0') + this.#tail;
  }

  /**
   * next() written as its 36 ASCII bytes into `buf` at `at` (returns at + 36): the same UUIDs, with no
   * string per document for a writer of bytes (the capture's journal lines).
   */
  writeNext(buf: Uint8Array, at: number, now: number = Date.now()): number {
    // The low half is below 2^32: as an unsigned 32-bit integer, its digits come out by shifts, not divisions.
    let lo = this.#tick(now) >>> 0;
    for (let k = at + 7; k >= at; k--) {
      buf[k] = HEX_DIGITS[lo & 15]!;
      lo >>>= 4;
    }
    const tail = this.#tailBytes;
    const o = at + 8;
    for (let k = 0; k < tail.length; k++) buf[o + k] = tail[k]!;
    return o + tail.length;
  }

  /** Advances the clock (see next()); returns its low 32 bits, #tail being its text after them. */
  #tick(now: number): number {
    if (!Number.isSafeInteger(now) || now < 0) throw new RangeError(`a UUID clock needs a time in whole milliseconds since 1970, got ${now}`);
    const a = Math.floor(now / 2 ** 32);
    const sumLo = (now - a * 2 ** 32) * 10000 + OFFSET_LO;
    const carry = Math.floor(sumLo / 2 ** 32);
    let hi = a * 10000 + OFFSET_HI + carry;
    let lo = sumLo - carry * 2 ** 32;
    if (hi < this.#lastHi || (hi === this.#lastHi && lo <= this.#lastLo)) {
      hi = this.#lastHi;
      lo = this.#lastLo + 1;
      if (lo === 2 ** 32) {
        lo = 0;
        hi++;
      }
    }
    this.#lastHi = hi;
    this.#lastLo = lo;
    if (hi !== this.#tailHi) {
      const node = this.#node ??= Buffer.from(this.producer).toString('hex');
      const timeMid = hi % 0x10000;
      const timeHi = (Math.floor(hi / 0x10000) & 0x0fff) | 0x1000;
      // Clock sequence holds Flow's flags; 0x8000 is the RFC 4122 variant with no flags set.
      this.#tail = `-${timeMid.toString(16).padStart(4, '0')}-${timeHi.toString(16).padStart(4, '0')}-8000-${node}`;
      this.#tailBytes = Buffer.from(this.#tail, 'latin1');
      this.#tailHi = hi;
    }
    return lo;
  }
}

/** Lower-case hex digits' ASCII codes. */
const HEX_DIGITS = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

const V1_UUID = /^([0-9a-f]{8})-([0-9a-f]{4})-1([0-9a-f]{3})-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Hex digits (either case) by char code. */
const HEX = new Uint8Array(128);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/**
 * What V1_UUID matches, without a match array and its strings: uuidMillis runs for every materialized
 * document (flow_published_at), where the regex's exec was most of its cost.
 */
function isV1Uuid(uuid: string): boolean {
  if (uuid.length !== 36 || uuid.charCodeAt(14) !== 0x31) return false;
  for (let i = 0; i < 36; i++) {
    const c = uuid.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return false;
    } else if (c >= 128 || HEX[c] !== 1) {
      return false;
    }
  }
  return true;
}

/** The clock of a version-1 UUID: 100 ns ticks since 1582-10-15; undefined if it is not one. */
export function uuidTicks(uuid: string): bigint | undefined {
  const m = V1_UUID.exec(uuid);
  if (!m) return undefined;
  return (BigInt(`0x${m[3]}`) << 48n) | (BigInt(`0x${m[2]}`) << 32n) | BigInt(`0x${m[1]}`);
}

/**
 * The publication time of a version-1 UUID in milliseconds since 1970 (truncated toward zero, as
 * `(ticks - offset) / 10000n` is), or undefined if it is not one. Exact without BigInt (it runs for every
 * materialized document with `flow_published_at`; BigInt parsing and division cost ~13× this): the 60-bit
 * clock minus the offset is hi·2^32 + lo (0 ≤ lo < 2^32), and 2^32 = 429496·10000 + 7296, so the quotient is
 * hi·429496 + (hi·7296 + lo) / 10000 with every term exact in a double.
 */
export function uuidMillis(uuid: string): number | undefined {
  if (!isV1Uuid(uuid)) return undefined;
  // time_hi (after the version digit) and time_mid, then time_low: 28 and 32 bits.
  return millisOf(parseInt(uuid.slice(15, 18) + uuid.slice(9, 13), 16), parseInt(uuid.slice(0, 8), 16));
}

/** uuidMillis of a UUID's text as bytes b[start, end) (ASCII), without a string (pack-bytes.ts, per document). */
export function uuidMillisOfBytes(b: Uint8Array, start: number, end: number): number | undefined {
  if (end - start !== 36 || b[start + 14] !== 0x31) return undefined;
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 36; i++) {
    const c = b[start + i]!;
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return undefined;
      continue;
    }
    if (c >= 128 || HEX[c] !== 1) return undefined;
    const v = c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57;
    if (i < 8) lo = lo * 16 + v;
    else if (i >= 15 && i < 18) hi = hi * 16 + v;
  }
  // time_mid (bytes 9–12) follows time_hi's three digits.
  for (let i = 9; i < 13; i++) {
    const c = b[start + i]!;
    hi = hi * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  }
  return millisOf(hi, lo);
}

/** The milliseconds of the 60-bit clock hi·2^32 + lo (see uuidMillis). */
function millisOf(clockHi: number, clockLo: number): number {
  let hi = clockHi - OFFSET_HI;
  let lo = clockLo - OFFSET_LO;
  if (lo < 0) {
    lo += 2 ** 32;
    hi--;
  }
  const rest = hi * 7296 + lo;
  const q = Math.floor(rest / 10000);
  // Floor division so far; BigInt division truncates, which differs for a negative, inexact quotient.
  return hi * 429496 + q + (hi < 0 && rest - q * 10000 !== 0 ? 1 : 0);
}

/** The publication time of a version-1 UUID, or undefined if it is not one. */
export function uuidTime(uuid: string): Date | undefined {
  const ms = uuidMillis(uuid);
  return ms === undefined ? undefined : new Date(ms);
}

/**
 * An RFC 3339 timestamp as a UUID clock (100 ns ticks since 1582-10-15), keeping fractional seconds to
 * the tick, so it compares exactly with document UUIDs (notBefore/notAfter).
 */
export function timestampTicks(rfc3339: string): bigint {
  const m = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/i.exec(rfc3339.trim());
  const ms = Date.parse(m ? `${m[1]}${m[3]}` : rfc3339);
  if (!m || Number.isNaN(ms)) throw new RangeError(`${JSON.stringify(rfc3339)} is not an RFC 3339 date-time`);
  const frac = BigInt((m[2] ?? '').slice(0, 7).padEnd(7, '0'));
  return BigInt(ms) * 10000n + frac + GREGORIAN_OFFSET;
}
