import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CollectionSpec, Constraint } from '@sluice/runtime';
import { selectFields, SqlConfigError } from '../src/index.ts';

const collection: CollectionSpec = {
  name: 'acmeCo/c',
  key: ['/id'],
  projections: [
    { field: '_meta/op', ptr: '/_meta/op' },
    { field: 'flow_document' },
    { field: 'flow_published_at', ptr: '/_meta/uuid' },
    { field: 'id', ptr: '/id', isPrimaryKey: true },
    { field: 'ID_alias', ptr: '/id' },
    { field: 'Name', ptr: '/Name' },
    { field: 'name', ptr: '/name' },
    { field: 'obj', ptr: '/obj' },
    { field: 'nothing', ptr: '/nothing' },
  ],
};
const constraints: Record<string, Constraint> = {
  '_meta/op': { type: 'LOCATION_RECOMMENDED' },
  flow_document: { type: 'LOCATION_REQUIRED' },
  flow_published_at: { type: 'LOCATION_RECOMMENDED' },
  id: { type: 'LOCATION_REQUIRED' },
  ID_alias: { type: 'LOCATION_REQUIRED' },
  Name: { type: 'LOCATION_RECOMMENDED' },
  name: { type: 'LOCATION_RECOMMENDED' },
  obj: { type: 'FIELD_OPTIONAL' },
  nothing: { type: 'FIELD_FORBIDDEN', reason: 'Cannot materialize a field with no types or only null' },
};

test('bad input: unknown, forbidden, both included and excluded, excluding what is required', () => {
  assert.throws(() => selectFields(collection, constraints, { include: { nope: {} } }), (e: Error) => e instanceof SqlConfigError && /fields.include names 'nope', which is not a projection/.test(e.message));
  assert.throws(() => selectFields(collection, constraints, { include: { nothing: {} } }), /'nothing', which cannot be materialized: Cannot materialize a field with no types/);
  assert.throws(() => selectFields(collection, constraints, { include: { obj: {} }, exclude: ['obj'] }), /'obj' is both included and excluded/);
  assert.throws(() => selectFields(collection, constraints, { exclude: ['flow_document'] }), /'flow_document' is required by the endpoint/);
  assert.throws(() => selectFields(collection, constraints, { exclude: ['zzz'] }), /fields.exclude names 'zzz'/);
  assert.throws(() => selectFields(collection, constraints, { exclude: ['id', 'ID_alias'] }), /no field can be selected for key location '\/id'/);
});

test('recommended (default): keys, document, every recommended field; optional fields only when included', () => {
  assert.deepEqual(selectFields(collection, constraints), { keys: ['id'], values: ['Name', '_meta/op', 'flow_published_at', 'name'], document: 'flow_document' });
});

test('recommended: false keeps only what is required; include adds fields with their config', () => {
  assert.deepEqual(selectFields(collection, constraints, { recommended: false, include: { obj: { castToString: true }, name: {} } }),
    { keys: ['id'], values: ['name', 'obj'], document: 'flow_document', fieldConfig: { obj: { castToString: true } } });
});

test('exclude removes recommended fields; an included alias of a key location becomes the key', () => {
  assert.deepEqual(selectFields(collection, constraints, { exclude: ['_meta/op', 'Name'], include: { ID_alias: {} } }),
    { keys: ['ID_alias'], values: ['flow_published_at', 'name'], document: 'flow_document' });
});

test('case-insensitive destinations: the second spelling of a name is skipped, or refused when included', () => {
  assert.deepEqual(selectFields(collection, constraints, {}, { caseInsensitive: true }).values, ['Name', '_meta/op', 'flow_published_at']);
  assert.throws(() => selectFields(collection, constraints, { include: { name: {}, Name: {} } }, { caseInsensitive: true }), /collides with another selected field that differs only by case/);
});
