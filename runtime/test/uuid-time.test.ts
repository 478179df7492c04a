// uuidMillis (flow_published_at's clock, computed without BigInt) equals the BigInt reference — (ticks −
// 1582→1970 offset) / 10000n, truncated — for random 60-bit clocks on both sides of 1970 and at the edges;
// packing flow_published_at gives the same text for every document of a run sharing a millisecond and after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uuidMillis, uuidTicks, uuidTime } from '../src/protocol/uuid.ts';
import { createPacker } from '../src/protocol/pack.ts';
import { unpackTupleBase64 } from '../src/protocol/tuple.ts';

const OFFSET = 122192928000000000n;

function uuidOf(ticks: bigint): string {
  const hex = (v: bigint, n: number) => v.toString(16).padStart(n, '0');
  return `${hex(ticks & 0xffffffffn, 8)}-${hex((ticks >> 32n) & 0xffffn, 4)}-${hex(((ticks >> 48n) & 0x0fffn) | 0x1000n, 4)}-8000-0123456789ab`;
}

test('uuidMillis equals the BigInt reference on random clocks and edges', () => {
  let seed = 11n;
  const next = () => (seed = (seed * 6364136223846793005n + 1442695040888963407n) % (1n << 64n));
  const clocks = [0n, 1n, 9999n, 10000n, OFFSET - 10001n, OFFSET - 10000n, OFFSET - 1n, OFFSET, OFFSET + 1n, OFFSET + 9999n, OFFSET + 10000n, (1n << 60n) - 1n];
  for (let i = 0; i < 20000; i++) clocks.push(next() % (1n << 60n));
  for (let i = 0; i < 2000; i++) clocks.push(OFFSET + (next() % 40000n) - 20000n);
  for (const ticks of clocks) {
    const uuid = uuidOf(ticks);
    assert.equal(uuidTicks(uuid), ticks);
    assert.equal(uuidMillis(uuid), Number((ticks - OFFSET) / 10000n), uuid);
  }
  assert.equal(uuidMillis('not-a-uuid'), undefined);
  assert.equal(uuidTime('0e8a6f3c-8a5b-21ee-8000-0123456789ab'), undefined, 'a version-2 UUID has no clock');
});

test('flow_published_at packs the UUID time of each document, runs of one millisecond included', () => {
  const collection = {
    name: 'a/b', key: ['/id'],
    projections: [
      { field: 'id', ptr: '/id', isPrimaryKey: true, inference: { types: ['integer'], exists: 'MUST' } },
      { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { types: ['string'], string: { format: 'date-time' }, exists: 'MUST' } },
    ],
  };
  const packer = createPacker(collection as never, { keys: ['id'], values: ['flow_published_at'] });
  const base = OFFSET + 17_000_000_000_000_000n;
  for (const delta of [0n, 1n, 9999n, 10000n, 10001n, 10001n, 25000n, -30000n]) {
    const ticks = base + delta;
    const doc = { id: 1, _meta: { uuid: uuidOf(ticks) } };
    const expected = new Date(Number((ticks - OFFSET) / 10000n)).toISOString();
    assert.deepEqual(unpackTupleBase64(packer.values(doc)), [expected]);
  }
  assert.deepEqual(unpackTupleBase64(packer.values({ id: 1, _meta: { uuid: 'x' } })), [null]);
});

test('uuidMillis accepts exactly what the version-1 pattern accepts', () => {
  const V1 = /^([0-9a-f]{8})-([0-9a-f]{4})-1([0-9a-f]{3})-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const good = '1b2c3d4e-c9f1-11f0-8000-0b0c0d0e0f10';
  const variants = [good, good.toUpperCase(), `${good}0`, good.slice(1), good.replace('-11f0', '-21f0'), good.replace('-c9f1', '_c9f1')];
  for (let i = 0; i < 36; i++) for (const c of ['g', 'G', '-', '0', 'F', 'é', ' ']) variants.push(good.slice(0, i) + c + good.slice(i + 1));
  for (const uuid of variants) {
    const expected = V1.exec(uuid);
    assert.equal(uuidMillis(uuid) !== undefined, expected !== null, uuid);
    if (expected !== null) assert.equal(uuidMillis(uuid), Number((uuidTicks(uuid)! - OFFSET) / 10000n), uuid);
  }
});
