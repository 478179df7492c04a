import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Constraint } from '@sluice/runtime';
import { selectFields, type FieldSelectionInput } from '../../src/build/field-selection.ts';
import { collection } from '../journals/helpers.ts';

const orders = collection('acmeCo/orders', {
  order_id: { type: 'string' }, region: { type: 'string' }, total: { type: 'number' },
  note: { type: ['string', 'null'] }, tags: { type: 'array' }, mixed: { type: ['string', 'integer'] },
}, ['/order_id'], { partitions: ['region'] });

/** Constraints as a SQL connector returns them for standard updates. */
function sqlConstraints(extra: Record<string, Constraint> = {}): Record<string, Constraint> {
  const c: Record<string, Constraint> = {};
  for (const p of orders.projections ?? []) c[p.field] = { type: 'FIELD_OPTIONAL' };
  c.order_id = { type: 'LOCATION_REQUIRED', reason: 'All Locations that are part of the collections key are required' };
  c.flow_document = { type: 'LOCATION_REQUIRED', reason: 'The root document is needed.' };
  return { ...c, ...extra };
}

const input = (over: Partial<FieldSelectionInput> = {}): FieldSelectionInput => ({
  where: 'acmeCo/mat binding 0', collection: orders, deltaUpdates: false, constraints: sqlConstraints(),
  fields: { recommended: true, include: {}, exclude: [] }, ...over,
});

test('field selection: unknown include/exclude names and contradictions are errors', () => {
  const r = selectFields(input({ fields: { recommended: true, include: { nope: {} }, exclude: ['gone', 'total'] }, constraints: sqlConstraints() }));
  assert.deepEqual(r.errors, [
    'acmeCo/mat binding 0: `fields.include` names "nope", which is not a projection of collection "acmeCo/orders"',
    'acmeCo/mat binding 0: `fields.exclude` names "gone", which is not a projection of collection "acmeCo/orders"',
  ]);
  const both = selectFields(input({ fields: { recommended: true, include: { total: {} }, exclude: ['total'] } }));
  assert.deepEqual(both.errors, ['acmeCo/mat binding 0: field "total" is both included and excluded']);
});

test('field selection: recommended selects scalar fields of one type; keys in key order; values sorted', () => {
  const r = selectFields(input());
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.selection, { keys: ['order_id'], values: ['flow_published_at', 'note', 'region', 'total'], document: 'flow_document' });
});

test('field selection: recommended false keeps only required fields; include adds fields with their config', () => {
  const r = selectFields(input({ fields: { recommended: false, include: { tags: {}, total: { castToString: true } }, exclude: [] } }));
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.selection, { keys: ['order_id'], values: ['tags', 'total'], document: 'flow_document', fieldConfig: { total: { castToString: true } } });
});

test('field selection: exclude removes recommended fields; excluding a required field is an error', () => {
  assert.deepEqual(selectFields(input({ fields: { recommended: true, include: {}, exclude: ['region', 'note'] } })).selection.values, ['flow_published_at', 'total']);
  const r = selectFields(input({ fields: { recommended: true, include: {}, exclude: ['flow_document'] } }));
  assert.deepEqual(r.errors, ['acmeCo/mat binding 0: field "flow_document" is required by the endpoint and cannot be excluded: The root document is needed.']);
  const k = selectFields(input({ fields: { recommended: true, include: {}, exclude: ['order_id'] } }));
  assert.match(k.errors[0] ?? '', /collection key \/order_id has no selectable projection/);
});

test('field selection: including a forbidden, incompatible or unconstrained field is an error', () => {
  const r = selectFields(input({
    constraints: sqlConstraints({ tags: { type: 'FIELD_FORBIDDEN', reason: 'arrays are not supported' }, total: { type: 'INCOMPATIBLE', reason: 'column is TEXT' } }),
    fields: { recommended: true, include: { tags: {}, total: {} }, exclude: [] },
  }));
  assert.deepEqual(r.errors, [
    'acmeCo/mat binding 0: field "tags" cannot be materialized: arrays are not supported',
    'acmeCo/mat binding 0: field "total" is incompatible with the existing destination and needs a backfill (increment the binding\'s `backfill`): column is TEXT',
  ]);
  const c = sqlConstraints();
  delete c.mixed;
  const missing = selectFields(input({ constraints: c, fields: { recommended: true, include: { mixed: {} }, exclude: [] } }));
  assert.deepEqual(missing.errors, ['acmeCo/mat binding 0: field "mixed" is not supported by the endpoint (no constraint was returned for it)']);
});

test('field selection: FIELD_REQUIRED fields are always selected; a required field absent from projections is an error', () => {
  const r = selectFields(input({ fields: { recommended: false, include: {}, exclude: [] }, constraints: sqlConstraints({ note: { type: 'FIELD_REQUIRED', reason: 'needed' }, text: { type: 'FIELD_REQUIRED', reason: 'Slack needs text' } }) }));
  assert.deepEqual(r.selection.values, ['note']);
  assert.deepEqual(r.errors, ['acmeCo/mat binding 0: the endpoint requires field "text", which is not a projection of collection "acmeCo/orders": Slack needs text']);
});

test('field selection: delta updates without recommended fields and an optional document leave the document out', () => {
  const c = sqlConstraints({ flow_document: { type: 'FIELD_OPTIONAL' } });
  const r = selectFields(input({ deltaUpdates: true, constraints: c, fields: { recommended: false, include: {}, exclude: [] } }));
  assert.deepEqual(r.selection, { keys: ['order_id'], values: [] });
  const withDoc = selectFields(input({ deltaUpdates: true, constraints: c, fields: { recommended: false, include: { flow_document: {} }, exclude: [] } }));
  assert.equal(withDoc.selection.document, 'flow_document');
});

test('field selection: an included alias of a key location becomes the key; excluding every projection of a key is an error', () => {
  const aliased = { ...orders, projections: [...orders.projections ?? [], { field: 'ID_alias', ptr: '/order_id', explicit: true, inference: { types: ['string'], exists: 'MUST' as const } }] };
  const constraints = sqlConstraints({ ID_alias: { type: 'LOCATION_REQUIRED' } });
  const r = selectFields(input({ collection: aliased, constraints, fields: { recommended: true, include: { ID_alias: {} }, exclude: [] } }));
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.selection.keys, ['ID_alias']);
  assert.ok(!(r.selection.values ?? []).includes('order_id'), `the key location is selected once: ${JSON.stringify(r.selection.values)}`);
  const none = selectFields(input({ collection: aliased, constraints, fields: { recommended: true, include: {}, exclude: ['order_id', 'ID_alias'] } }));
  assert.match(none.errors[0] ?? '', /collection key \/order_id has no selectable projection/);
});

test('field selection: case-insensitive endpoints select one of two names differing by case, and refuse including both', () => {
  const cased = collection('acmeCo/people', { id: { type: 'string' }, Name: { type: 'string' }, name: { type: 'string' } }, ['/id']);
  const constraints: Record<string, Constraint> = { id: { type: 'LOCATION_REQUIRED' }, flow_document: { type: 'LOCATION_REQUIRED' } };
  for (const f of ['Name', 'name', 'flow_published_at']) constraints[f] = { type: 'LOCATION_RECOMMENDED' };
  const base = { where: 'acmeCo/mat binding 0', collection: cased, deltaUpdates: false, constraints };
  // Case-sensitive: both are columns.
  assert.deepEqual(selectFields({ ...base, fields: { recommended: true, include: {}, exclude: [] } }).selection.values, ['Name', 'flow_published_at', 'name']);
  const folded = selectFields({ ...base, caseInsensitive: true, fields: { recommended: true, include: {}, exclude: [] } });
  assert.deepEqual(folded.errors, []);
  assert.deepEqual(folded.selection.values, ['Name', 'flow_published_at']);
  const both = selectFields({ ...base, caseInsensitive: true, fields: { recommended: false, include: { Name: {}, name: {} }, exclude: [] } });
  assert.deepEqual(both.errors, ['acmeCo/mat binding 0: field "name" collides with selected field "Name": the endpoint\'s field names are case-insensitive; exclude one of them']);
});
