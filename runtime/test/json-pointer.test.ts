// JSON pointers (RFC 6901): the runtime's one module, used by the runtime, the connectors and the plane.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  escapePointerToken, parsePointer, pointerOf, pointerResolver, resolvePointer, setPointer, unescapePointerToken,
} from '../src/protocol/json-pointer.ts';
import type { JsonObject } from '../src/protocol/specs.ts';

describe('JSON pointers', () => {
  it('parsePointer refuses a pointer without a leading "/"', () => {
    assert.throws(() => parsePointer('a/b'), { message: 'JSON pointer must start with "/": "a/b"' });
    assert.deepEqual(parsePointer(''), []);
    assert.deepEqual(parsePointer('/'), ['']);
    assert.deepEqual(parsePointer('/a~1b/~0c/~01/0'), ['a/b', '~c', '~1', '0']);
  });

  it('escapes and unescapes tokens in RFC 6901 order (~01 is "~1", not "/")', () => {
    for (const token of ['plain', 'a/b', '~', '~1', '~0/~1', '', 'ü/∂']) {
      assert.equal(unescapePointerToken(escapePointerToken(token)), token);
    }
    assert.equal(escapePointerToken('a/~b'), 'a~1~0b');
    assert.equal(unescapePointerToken('~01'), '~1');
  });

  it('pointerOf builds a pointer from raw tokens', () => {
    assert.equal(pointerOf(), '');
    assert.equal(pointerOf('collections', 'acmeCo/orders', 0), '/collections/acmeCo~1orders/0');
    assert.deepEqual(parsePointer(pointerOf('a/b', '~', 3)), ['a/b', '~', '3']);
  });

  it('resolvePointer: escapes, array indices (no leading zero), absent steps', () => {
    const doc = { a: { 'b/c': [10, 20], '~k': 1 } };
    assert.equal(resolvePointer(doc, '/a/b~1c/1'), 20);
    assert.equal(resolvePointer(doc, '/a/~0k'), 1);
    assert.equal(resolvePointer(doc, '/a/x'), undefined);
    assert.equal(resolvePointer(doc, '/a/b~1c/01'), undefined);
    assert.equal(resolvePointer(doc, 'a'), undefined);
    assert.equal(resolvePointer(doc, '/a/toString'), undefined, 'inherited members are not members');
    assert.deepEqual(resolvePointer(doc, ''), doc);
  });

  it('pointerResolver answers as resolvePointer does', () => {
    const docs = [{ id: 1, 'a/b': 2, n: { m: [3], '01': 4, 'x~y': [[5, 6]] }, _meta: { uuid: 'u' } }, { id: null, n: [7, 8] }, { n: { m: 'str' } }, [1, 2], 'text', null];
    for (const ptr of ['/id', '/a~1b', '/n/m/0', '/n/01', '/n/1', '/n/x~0y/0/1', '/n/m/length', '/n/toString', '/_meta/uuid', '/0', '/missing', '/missing/deeper', '']) {
      const at = pointerResolver(ptr);
      for (const d of docs) assert.deepEqual(at(d), resolvePointer(d, ptr), `${ptr} in ${JSON.stringify(d)}`);
    }
  });

  it('setPointer creates intermediate objects; the root cannot be set', () => {
    const doc: JsonObject = { a: 1 };
    setPointer(doc, '/_meta/uuid', 'u');
    setPointer(doc, '/a/b~1c', 2);
    assert.deepEqual(doc, { a: { 'b/c': 2 }, _meta: { uuid: 'u' } });
    assert.throws(() => setPointer(doc, '', 1), { message: 'cannot set the document root' });
  });
});
