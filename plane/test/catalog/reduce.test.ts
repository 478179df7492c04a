import { test } from 'node:test';
import assert from 'node:assert/strict';
import { combineByKey, compileDocumentSchema, reduceDocuments } from '../../src/catalog/index.ts';

test('bad input: reducing no documents is an error', () => {
  assert.throws(() => reduceDocuments(true, []), /no documents to reduce/);
});

test('lastWriteWins is the default: the later document replaces the earlier one', () => {
  const schema = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'object' } } };
  assert.deepEqual(reduceDocuments(schema, [{ a: 1, b: { x: 1 } }, { a: 2 }]), { a: 2 });
});

test('merge at the root merges members, each by its own strategy', () => {
  const schema = {
    type: 'object',
    reduce: { strategy: 'merge' },
    properties: {
      nested: { type: 'object', reduce: { strategy: 'merge' } },
      replaced: { type: 'object' },
      list: { type: 'array', reduce: { strategy: 'merge' }, items: { type: 'object', reduce: { strategy: 'merge' } } },
    },
  };
  const out = reduceDocuments(schema, [
    { id: 'a', n: 1, nested: { x: 1, y: 1 }, replaced: { x: 1, y: 1 }, list: [{ p: 1 }, { q: 1 }] },
    { n: 2, nested: { y: 2, z: 2 }, replaced: { z: 2 }, list: [{ r: 2 }] },
    { extra: true },
  ]);
  assert.deepEqual(out, { id: 'a', n: 2, nested: { x: 1, y: 2, z: 2 }, replaced: { z: 2 }, list: [{ p: 1, r: 2 }, { q: 1 }], extra: true });
});

test('merge through $ref and additionalProperties; inputs are not modified', () => {
  const schema = {
    $defs: { m: { type: 'object', reduce: { strategy: 'merge' } } },
    type: 'object', reduce: { strategy: 'merge' },
    additionalProperties: { $ref: '#/$defs/m' },
  };
  const first = { k: { a: 1 } };
  assert.deepEqual(reduceDocuments(schema, [first, { k: { b: 2 } }]), { k: { a: 1, b: 2 } });
  assert.deepEqual(first, { k: { a: 1 } });
});

test('combineByKey groups by key (first-seen order) and reduces each group', () => {
  const schema = { type: 'object', reduce: { strategy: 'merge' } };
  const out = combineByKey(schema, ['/id', '/r'], [
    { id: 'b', r: 1, x: 1 }, { id: 'a', r: 1, x: 1 }, { id: 'b', r: 1, y: 2 }, { id: 'b', r: 2, z: 3 },
  ]);
  assert.deepEqual(out, [{ id: 'b', r: 1, x: 1, y: 2 }, { id: 'a', r: 1, x: 1 }, { id: 'b', r: 2, z: 3 }]);
});

test('compileDocumentSchema names the location and reason; Flow formats and annotations are accepted', () => {
  const validate = compileDocumentSchema({
    type: 'object', required: ['id'], reduce: { strategy: 'merge' },
    properties: { id: { type: 'string' }, n: { type: 'string', format: 'integer' }, s: { type: 'string', secret: true, format: 'x-unknown' } },
  });
  assert.equal(validate({ id: 'a', n: '12', s: 'q' }), null);
  assert.equal(validate({}), 'document root: missing required property "id"');
  assert.equal(validate({ id: 'a', n: '1.5' }), '/n: must match format "integer"');
});
