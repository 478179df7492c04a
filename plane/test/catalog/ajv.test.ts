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
