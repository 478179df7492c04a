// The catalog's ajv set-up (src/catalog/ajv.ts): ajv-formats' format table is registered without its plugin entry
// (whose formatMinimum-style keywords load a second copy of ajv); every format must still be checked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileDocumentSchema } from '../../src/catalog/ajv.ts';

test('document schemas: every format of the table and Flow\'s extra ones are checked', () => {
  const dated = compileDocumentSchema({ type: 'object', properties: { d: { type: 'string', format: 'date' }, e: { type: 'string', format: 'email' }, n: { type: 'string', format: 'integer' } } });
  assert.equal(dated({ d: '2024-02-29', e: 'a@example.com', n: '-12' }), null);
  assert.match(dated({ d: '2024-02-30' }) ?? '', /\/d: must match format "date"/);
  assert.match(dated({ e: 'nope' }) ?? '', /\/e: must match format "email"/);
  assert.match(dated({ n: '1.5' }) ?? '', /\/n: must match format "integer"/);
});

test('document schemas: formatMinimum/formatMaximum and the exclusive ones compare by the format (they threw "compare is not a function")', () => {
  const v = compileDocumentSchema({
    type: 'object',
    properties: {
      d: { type: 'string', format: 'date', formatMinimum: '2020-01-01', formatExclusiveMaximum: '2021-01-01' },
      t: { type: 'string', format: 'date-time', formatMaximum: '2024-01-01T00:00:00Z', formatExclusiveMinimum: '2023-01-01T00:00:00Z' },
      e: { type: 'string', format: 'email', formatMinimum: 'b' },
    },
  });
  assert.equal(v({ d: '2020-01-01', t: '2024-01-01T00:00:00Z', e: 'a@example.com' }), null);
  assert.match(v({ d: '2019-12-31' }) ?? '', /\/d: must pass "formatMinimum" keyword validation/);
  assert.match(v({ d: '2021-01-01' }) ?? '', /\/d: must pass "formatExclusiveMaximum" keyword validation/);
  assert.match(v({ t: '2024-01-01T00:00:01Z' }) ?? '', /\/t: must pass "formatMaximum" keyword validation/);
  assert.match(v({ t: '2023-01-01T00:00:00Z' }) ?? '', /\/t: must pass "formatExclusiveMinimum" keyword validation/);
  assert.equal(v({ d: 2019 }), '/d: must be string');
});
