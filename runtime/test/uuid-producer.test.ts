// UuidProducer.next computes the v1 clock without BigInt (two 32-bit halves): its UUIDs equal the BigInt
// reference (ticks = now·10000 + 1582→1970 offset, bumped by one when not after the last) for random
// times, repeated and backward times, and clocks whose low half wraps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UuidProducer, uuidTicks } from '../src/protocol/uuid.ts';

const OFFSET = 122192928000000000n;

class Reference {
  last = 0n;
  readonly node: string;
  constructor(node: string) {
    this.node = node;
  }
  next(now: number): string {
    let ticks = BigInt(now) * 10000n + OFFSET;
    if (ticks <= this.last) ticks = this.last + 1n;
    this.last = ticks;
    const hex = (v: bigint, n: number) => v.toString(16).padStart(n, '0');
    return `${hex(ticks & 0xffffffffn, 8)}-${hex((ticks >> 32n) & 0xffffn, 4)}-${hex(((ticks >> 48n) & 0x0fffn) | 0x1000n, 4)}-8000-${this.node}`;
  }
}

test('UuidProducer.next and writeNext equal the BigInt reference, repeats, steps back and low-half wraps included', () => {
  const producer = new UuidProducer(Uint8Array.from([2, 3, 4, 5, 6, 7]));
  const reference = new Reference(Buffer.from(producer.producer).toString('hex'));
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const times: number[] = [0, 1, 429496, 429497, 2 ** 32 - 1, 2 ** 32, 1_764_000_000_000];
  for (let i = 0; i < 5000; i++) times.push(Math.floor(rand() * 4_000_000_000_000));
  // Runs in one millisecond (the clock is bumped), steps back, and the millisecond whose clock's low half is
  // just below 2^32: bumped past it, the high half carries.
  let t = 1_764_000_000_000;
  for (let i = 0; i < 20000; i++) {
    const r = rand();
    t += r < 0.8 ? 0 : r < 0.95 ? 1 : -3;
    times.push(t);
  }
  const wrapMs = Number(((OFFSET / (1n << 32n) + 4_100_000n) * (1n << 32n) - 1n - OFFSET) / 10000n);
  for (let i = 0; i < 3000; i++) times.push(wrapMs);
  times.push(1_764_000_000_000);
  // writeNext (the bytes a capture's journal line gets) takes turns with next(): one clock, the same UUIDs.
  const bytes = Buffer.alloc(40, 0x2e);
  times.forEach((now, i) => {
    const expected = reference.next(now);
    if (i % 2 === 0) {
      assert.equal(producer.next(now), expected, `now = ${now}`);
    } else {
      assert.equal(producer.writeNext(bytes, 2, now), 38);
      assert.equal(bytes.toString('latin1'), `..${expected}..`, `writeNext, now = ${now}`);
    }
  });
  assert.equal(uuidTicks(producer.next(2 ** 42)), 2n ** 42n * 10000n + OFFSET, 'a clock beyond 2^53 ticks, exact');
  assert.throws(() => producer.next(1.5), /whole milliseconds/);
});
