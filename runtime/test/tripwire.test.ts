import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INTERRUPTED, Tripwire } from '../src/connector/session.ts';
import { AsyncQueue } from '../src/connector/async-queue.ts';

describe('Tripwire', () => {
  it('passes values and errors through while armed', async () => {
    const t = new Tripwire();
    assert.equal(await t.race(Promise.resolve(1)), 1);
    await assert.rejects(t.race(Promise.reject(new Error('boom'))), { message: 'boom' });
  });
  it('trip() resolves pending and later races with INTERRUPTED', async () => {
    const t = new Tripwire();
    const pending = t.race(new Promise(() => undefined));
    t.trip();
    assert.equal(await pending, INTERRUPTED);
    assert.equal(await t.race(new Promise(() => undefined)), INTERRUPTED);
  });
  it('fail() rejects pending and later races; watch() fails it from a background promise', async () => {
    const t = new Tripwire();
    const pending = t.race(new Promise(() => undefined));
    void t.watch(Promise.reject(new Error('background failed')));
    await assert.rejects(pending, { message: 'background failed' });
    await assert.rejects(t.must(Promise.resolve(1)), { message: 'background failed' });
  });
  it('keeps no waiter once a race settles (no growth over many messages)', async () => {
    const t = new Tripwire();
    for (let i = 0; i < 10_000; i++) await t.race(Promise.resolve(i));
    assert.equal((t as unknown as { waiters: Set<unknown> }).waiters.size, 0);
  });
});

describe('AsyncQueue', () => {
  it('delivers in order, applies capacity, ends, fails', async () => {
    const q = new AsyncQueue<number>(2);
    let released = false;
    void q.push(1);
    const full = q.push(2).then(() => { released = true; });
    const it = q[Symbol.asyncIterator]();
    await new Promise((r) => setImmediate(r));
    assert.equal(released, false);
    assert.deepEqual(await it.next(), { value: 1, done: false });
    await full;
    assert.equal(released, true);
    q.fail(new Error('stop'));
    assert.deepEqual(await it.next(), { value: 2, done: false });
    await assert.rejects(it.next(), { message: 'stop' });
  });
  it('abandon() drops and counts, and unblocks producers', async () => {
    const q = new AsyncQueue<number>(1);
    const blocked = q.push(1);
    q.abandon();
    await blocked;
    await q.push(2);
    assert.equal(q.unread, 2);
  });
  it('only one consumer', () => {
    const q = new AsyncQueue<number>();
    q[Symbol.asyncIterator]();
    assert.throws(() => q[Symbol.asyncIterator](), { message: 'AsyncQueue: only one consumer may iterate' });
  });
});
