import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyStateUpdate, mergePatch } from '../src/protocol/merge-patch.ts';
import type { JsonValue } from '../src/protocol/specs.ts';

// RFC 7396 Appendix A test cases: [target, patch, result].
const rfc: [JsonValue, JsonValue, JsonValue][] = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
];

describe('mergePatch (RFC 7396 appendix A)', () => {
  rfc.forEach(([target, patch, result], i) => {
    it(`case ${i + 1}: ${JSON.stringify(patch)}`, () => {
      const before = JSON.stringify(target);
      assert.deepEqual(mergePatch(target, patch), result);
      assert.equal(JSON.stringify(target), before, 'target not modified');
    });
  });
});

describe('applyStateUpdate', () => {
  it('merges with mergePatch, replaces without, ignores an absent update', () => {
    const state = { bindingStateV1: { a: { cursor: 1 }, b: { cursor: 2 } } };
    assert.deepEqual(applyStateUpdate(state, { updated: { bindingStateV1: { a: null, c: { cursor: 3 } } }, mergePatch: true }),
      { bindingStateV1: { b: { cursor: 2 }, c: { cursor: 3 } } });
    assert.deepEqual(applyStateUpdate(state, { updated: { x: 1 } }), { x: 1 });
    assert.deepEqual(applyStateUpdate(state, undefined), state);
    assert.deepEqual(applyStateUpdate(state, {}), state);
  });
});
