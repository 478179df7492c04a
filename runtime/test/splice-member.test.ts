// spliceMemberAt (how the plane stamps /_meta/uuid into a captured document's own text): for compact text
// its pieces join to exactly JSON.stringify of the document with the member set; shapes it does not handle
// give undefined.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spliceMemberAt } from '../src/protocol/documents.ts';
import type { JsonObject } from '../src/protocol/specs.ts';

const UUID = '"1b2c3d4e-c9f1-11f0-8000-0b0c0d0e0f10"';

/** The text with the UUID spliced in as the writer writes it: text[0, at) + insert + text[at, …). */
function spliced(text: string, doc: JsonObject): string | undefined {
  const at = spliceMemberAt(text, doc, '_meta', 'uuid', UUID);
  return at === undefined ? undefined : text.slice(0, at.at) + at.insert + text.slice(at.at);
}

test('spliceMemberAt gives the pieces of JSON.stringify of the stamped document', () => {
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
    assert.equal(spliced(text, doc), JSON.stringify(stamped), text);
  }
});

test('spliceMemberAt declines the shapes it does not handle', () => {
  const notLast = { _meta: { file: 'f' }, a: 1 };
  assert.equal(spliced(JSON.stringify(notLast), notLast), undefined, '_meta is not the last member');
  const has = { _meta: { uuid: 'x' } };
  assert.equal(spliced(JSON.stringify(has), has), undefined, 'the member exists');
  const scalar = { _meta: 5 };
  assert.equal(spliced(JSON.stringify(scalar), scalar), undefined, '_meta is not an object');
});
