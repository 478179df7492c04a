// UTF-8 well-formedness on bytes, for the scanners that read documents without decoding them (the plane's
// byte-check on capture, the materialize driver's byte packer).

/** The length of the valid UTF-8 sequence at b[i] (a byte ≥ 0x80), or 0 when it is not one (RFC 3629). */
export function utf8SequenceLength(b: Uint8Array, i: number, n: number): number {
  const c = b[i]!;
  // The second byte's range depends on the first (no overlong forms, no surrogates, nothing above U+10FFFF).
  let len: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c === 0xe0) lo = 0xa0;
    else if (c === 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c === 0xf0) lo = 0x90;
    else if (c === 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > n) return 0;
  const x = b[i + 1]!;
  if (x < lo || x > hi) return 0;
  for (let k = 2; k < len; k++) {
    const y = b[i + k]!;
    if (y < 0x80 || y > 0xbf) return 0;
  }
  return len;
}
