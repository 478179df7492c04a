// spliceMember / spliceMemberAt (how the plane stamps /_meta/uuid into a captured document's own text):
// for compact text the result is exactly JSON.stringify of the document with the member set, and the
// pieces spliceMemberAt gives join to that same text; shapes it does not handle give undefined.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spliceMember, spliceMemberAt } from '../src/protocol/documents.ts';
import type { JsonObject } from '../src/protocol/specs.ts';

const UUID = '"1b2c3d4e-c9f1-11f0-8000-0b0c0d0e0f10"';

test('spliceMember gives JSON.stringify of the stamped document; spliceMemberAt its pieces', () => {
  const docs: JsonObject[] = [
    {},
    { a: 1 },
    { a: 'x}"\\', b: [1, { c: '}' }] },
    { a: 'é€😀', _meta: {} },
    { a: 1, _meta: { file: 'f"}', offset: 3 } },
    { _meta: { op: 'c' } },
    { a: { _meta: 1 }, _meta: { nested: { x: [1, 2] } } },
  ];
  for (const doc of docs) {
    const text = JSON.stringify(doc);
    const stamped = structuredClone(doc);
    const meta = (stamped['_meta'] ??= {}) as JsonObject;
    meta['uuid'] = JSON.parse(UUID) as string;
    const expected = JSON.stringify(stamped);
    assert.equal(spliceMember(text, doc, '_meta', 'uuid', UUID), expected, text);
    const at = spliceMemberAt(text, doc, '_meta', 'uuid', UUID)!;
    assert.equal(text.slice(0, at.at) + at.insert + text.slice(at.at), expected, text);
  }
});

test('spliceMember declines the shapes it does not handle', () => {
  const notLast = { _meta: { file: 'f' }, a: 1 };
  assert.equal(spliceMember(JSON.stringify(notLast), notLast, '_meta', 'uuid', UUID), undefined, '_meta is not the last member');
  const has = { _meta: { uuid: 'x' } };
  assert.equal(spliceMember(JSON.stringify(has), has, '_meta', 'uuid', UUID), undefined, 'the member exists');
  const scalar = { _meta: 5 };
  assert.equal(spliceMember(JSON.stringify(scalar), scalar, '_meta', 'uuid', UUID), undefined, '_meta is not an object');
});
