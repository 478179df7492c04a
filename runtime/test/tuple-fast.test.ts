// unpackTupleBase64's fast path (one latin1 string per tuple) must decode exactly what the byte reader
// (unpackTupleReference) decodes, and fail with the same errors; so must unpackTuple from bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packTuple, unpackTuple, unpackTupleBase64, unpackTupleReference } from '../src/protocol/tuple.ts';
import type { TupleValue } from '../src/protocol/tuple.ts';

function both(bytes: Uint8Array): { fast: unknown; slow: unknown } {
  const b64 = Buffer.from(bytes).toString('base64');
  const attempt = (f: () => unknown): unknown => {
    try { return f(); } catch (err) { return `${(err as Error).name}: ${(err as Error).message}`; }
  };
  const fast = attempt(() => unpackTupleBase64(b64));
  // From bytes (a view into a larger buffer, as the writer thread has them) too.
  const padded = new Uint8Array(bytes.length + 6);
  padded.set(bytes, 3);
  assert.deepStrictEqual(attempt(() => unpackTuple(padded.subarray(3, 3 + bytes.length))), fast, 'unpackTuple agrees with unpackTupleBase64');
  return { fast, slow: attempt(() => unpackTupleReference(bytes)) };
}

describe('unpackTupleBase64 fast path', () => {
  it('decodes every common element as the byte reader does', () => {
    const values: TupleValue[] = [
      null, true, false, 0, 1, -1, 255, -255, 256, 65535, -65536, 2 ** 31, -(2 ** 31), 2 ** 48 - 1, -(2 ** 48), 2 ** 53 - 1, -(2 ** 53 - 1),
      2n ** 53n, -(2n ** 53n), 2n ** 63n, 2n ** 70n, 0.5, -0.5, 1e300, -1e-300, Number.NaN, Infinity, -Infinity, -0,
      '', 'a', 'plain ascii string longer than thirteen', 'é', '☃ snow', '🎉', 'nul\u0000inside', '\uFFFD literal',
      Uint8Array.of(1, 2, 0, 3), [1, 'x', null], { uuid: Uint8Array.from({ length: 16 }, (_, i) => i) },
    ];
    for (const v of values) {
      const { fast, slow } = both(packTuple([v]));
      assert.deepStrictEqual(fast, slow, `value ${String(v)}`);
      const mixed = both(packTuple(['k', v, 42, v, 'z']));
      assert.deepStrictEqual(mixed.fast, mixed.slow, `mixed ${String(v)}`);
    }
  });
  it('random tuples and their truncations agree, errors included', () => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pick = (): TupleValue => {
      switch (rand(9)) {
        case 0: return null;
        case 1: return rand(2) === 0;
        case 2: return rand(1 << 30) - (1 << 29);
        case 3: return (rand(1 << 30) * 4096 + rand(4096)) * (rand(2) === 0 ? 1 : -1);
        case 4: return rand(100000) / 7;
        case 5: return `s${rand(1000)}`.repeat(1 + rand(5));
        case 6: return ['ü', 'x', '\u0000', 'ab'][rand(4)]!;
        case 7: return Uint8Array.of(rand(256), 0, rand(256));
        default: return BigInt(rand(1000)) * 2n ** 60n;
      }
    };
    for (let round = 0; round < 2000; round++) {
      const tuple = Array.from({ length: 1 + rand(12) }, pick);
      const bytes = packTuple(tuple);
      const whole = both(bytes);
      assert.deepStrictEqual(whole.fast, whole.slow);
      const cut = both(bytes.subarray(0, rand(bytes.length)));
      assert.deepStrictEqual(cut.fast, cut.slow, 'truncated');
    }
  });
  it('invalid UTF-8 in a string is the same error', () => {
    const bad = Uint8Array.of(0x02, 0x61, 0xff, 0xfe, 0x00);
    const { fast, slow } = both(bad);
    assert.equal(fast, slow);
    assert.equal(fast, 'ProtocolError: invalid packed tuple: string is not valid UTF-8 at byte 0');
  });
});
