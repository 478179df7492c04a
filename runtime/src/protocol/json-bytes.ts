// JSON's string and number grammar on UTF-8 bytes, for the scanners that read documents without decoding
// them: the plane's write-schema check on capture (plane/src/journals/byte-check.ts) and the materialize
// driver's byte packer (pack-bytes.ts). Each answers where the token ends, or -1 when it is not one JSON.parse
// accepts, and never reads at or past `end`. What else a caller wants to know of the token (a string had an
// escape, a number is written as an integer) is left in `jsonScanned`: one shared object, no allocation per value.
import { utf8SequenceLength } from './utf8.ts';

/** Set by jsonStringEnd and jsonNumberEnd about the token they last read. */
export const jsonScanned = {
  /** The string had a backslash escape. */
  escaped: false,
  /** The number had no fraction and no exponent. */
  integer: false,
};

/** Bytes in a string: 0 plain, 1 `"`, 2 `\`, 3 a control character, 4 not ASCII. */
const STR = new Uint8Array(256);
for (let c = 0; c < 256; c++) STR[c] = c === 0x22 ? 1 : c === 0x5c ? 2 : c < 0x20 ? 3 : c >= 0x80 ? 4 : 0;
/** Bytes that may follow `\` in a string. */
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrtu') ESCAPE[c.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** The buffer last scanned, read 4 bytes at a time by jsonStringEnd (a view made once per buffer). */
let words: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(4));
let wordsOf: Uint8Array | undefined;

/**
 * `i` at a string's opening quote: the index after its closing quote, or -1 when the string is not valid
 * (an escape JSON does not have, a raw control character, bytes that are not UTF-8, no closing quote before
 * `end`). Sets jsonScanned.escaped.
 */
export function jsonStringEnd(b: Uint8Array, i: number, end: number): number {
  if (b !== wordsOf) {
    words = new DataView(b.buffer, b.byteOffset, b.byteLength);
    wordsOf = b;
  }
  i++;
  let escaped = false;
  const last = end - 4;
  while (true) {
    // Four bytes at a time while none is a quote, a backslash, a control character or not ASCII (each test
    // is exact for "some byte is": see haszero/hasless in Bit Twiddling Hacks); then byte by byte.
    while (i <= last) {
      const v = words.getUint32(i, true) | 0;
      const q = v ^ 0x22222222;
      const s = v ^ 0x5c5c5c5c;
      if ((((q - 0x01010101) & ~q) | ((s - 0x01010101) & ~s) | ((v - 0x20202020) & ~v) | v) & 0x80808080) break;
      i += 4;
    }
    while (i < end && STR[b[i]!] === 0) i++;
    if (i >= end) return -1;
    const k = STR[b[i]!];
    if (k === 1) {
      jsonScanned.escaped = escaped;
      return i + 1;
    }
    if (k === 2) {
      if (i + 1 >= end) return -1;
      const e = b[i + 1]!;
      if (ESCAPE[e] !== 1) return -1;
      escaped = true;
      if (e === 0x75) {
        if (i + 6 > end || HEX[b[i + 2]!] !== 1 || HEX[b[i + 3]!] !== 1 || HEX[b[i + 4]!] !== 1 || HEX[b[i + 5]!] !== 1) return -1;
        i += 6;
      } else {
        i += 2;
      }
    } else if (k === 4) {
      const len = utf8SequenceLength(b, i, end);
      if (len === 0) return -1;
      i += len;
    } else {
      return -1;
    }
  }
}

/** `i` at a number's first byte: the index after the number, or -1 when JSON's grammar has none there. Sets jsonScanned.integer. */
export function jsonNumberEnd(b: Uint8Array, i: number, end: number): number {
  if (i < end && b[i] === 0x2d) i++;
  if (i >= end) return -1;
  let c = b[i]!;
  if (c === 0x30) {
    i++;
  } else if (c >= 0x31 && c <= 0x39) {
    do i++; while (i < end && (c = b[i]!) >= 0x30 && c <= 0x39);
  } else {
    return -1;
  }
  let integer = true;
  if (i < end && b[i] === 0x2e) {
    integer = false;
    const from = ++i;
    while (i < end && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
    if (i === from) return -1;
  }
  if (i < end && ((c = b[i]!) === 0x65 || c === 0x45)) {
    integer = false;
    i++;
    if (i < end && ((c = b[i]!) === 0x2b || c === 0x2d)) i++;
    const from = i;
    while (i < end && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
    if (i === from) return -1;
  }
  jsonScanned.integer = integer;
  return i;
}
