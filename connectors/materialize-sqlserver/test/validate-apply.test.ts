// Validate as upstream does it, rebuilt from upstream's own TestIntegration-apply inputs (the "big schema" cases of
// materialize-boilerplate/testdata/validate_apply_test_cases): constraints of a new table, of the same table
// re-validated after it was created, after incompatible type changes, and after a backfill. The expected constraints
// (snapshots/upstream-apply-constraints.json) are upstream's snapshot values; the existing table is described as
// our dialect creates it. Then: new bindings on existing tables, delta → standard, and the backfill feature flags.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildTable, planTable, validateBinding } from '@sluice/materialize-sql';
import type { ExistingColumn, ExistingTable } from '@sluice/materialize-sql';
import type { CollectionSpec, Inference, MaterializationBindingSpec, Projection } from '@sluice/runtime';
import { createSqlServerDialect } from '../src/sqlserver-dialect.ts';
import { parseFeatureFlags } from '../src/config.ts';

const dialect = createSqlServerDialect({ collation: 'Latin1_General_100_BIN2_UTF8' });
const expected = JSON.parse(readFileSync(join(import.meta.dirname, 'snapshots', 'upstream-apply-constraints.json'), 'utf8')) as Record<string, [string, string, string][]>;

type Props = Record<string, { types: string[]; format?: string }>;
const FORMATS = ['date', 'date-time', 'time', 'number', 'integer', 'duration', 'ipv4', 'ipv6', 'macaddr', 'macaddr8', 'uuid', 'email', 'hostname', 'uri',
  'uri-reference', 'uri-template', 'json-pointer', 'relative-json-pointer', 'regex', 'uint32', 'uint64', 'idn-hostname', 'idn-email', 'iri', 'iri-reference'];
const FORMAT_FIELDS = ['stringDateField', 'stringDateTimeField', 'stringTimeField', 'stringNumberField', 'stringIntegerField', 'stringDurationField',
  'stringIpv4Field', 'stringIpv6Field', 'stringMacAddrField', 'stringMacAddr8Field', 'stringUuidField', 'stringEmailField', 'stringHostnameField',
  'stringUriField', 'stringUriReferenceField', 'stringUriTemplateField', 'stringJsonPointerField', 'stringRelativeJsonPointerField', 'stringRegexField',
  'stringUint32Field', 'stringUint64Field', 'stringIdnHostnameField', 'stringIdnEmailField', 'stringIriField', 'stringIriReferenceField'];

/** The projections Flow builds for the big-schema collection: every (required) property, the document, and the metadata fields. */
function collection(props: Props): CollectionSpec {
  const projections: Projection[] = Object.entries(props).map(([field, p]) => {
    const inference: Inference = { types: p.types, exists: 'MUST' };
    if (p.types.includes('string')) inference.string = p.format === undefined ? {} : { format: p.format };
    const out: Projection = { field, ptr: `/${field}`, inference };
    if (field === 'key') out.isPrimaryKey = true;
    return out;
  });
  projections.push(
    { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } },
    { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { types: ['string'], exists: 'MUST', string: { format: 'date-time' } } },
    { field: '_meta/flow_truncated', ptr: '/_meta/flow_truncated', inference: { types: ['boolean'], exists: 'MUST' } },
  );
  return { name: 'key/value', key: ['/key'], projections: projections.sort((a, b) => (a.field < b.field ? -1 : 1)) };
}

const BIG: Props = {
  key: { types: ['string'] }, intField: { types: ['integer'] }, boolField: { types: ['boolean'] }, stringField: { types: ['string'] },
  numField: { types: ['number'] }, objField: { types: ['object'] }, arrayField: { types: ['array'] }, nullField: { types: ['null'] },
  multipleField: { types: ['integer', 'object', 'string'] },
  ...Object.fromEntries(FORMAT_FIELDS.map((f, i) => [f, { types: ['string'], format: FORMATS[i]! }])),
};
const CHANGED: Props = {
  key: { types: ['string'] }, intField: { types: ['string'] }, boolField: { types: ['integer'] }, stringField: { types: ['integer'] },
  numField: { types: ['boolean'] }, objField: { types: ['string'] }, arrayField: { types: ['object'] }, nullField: { types: ['null', 'object'] },
  multipleField: { types: ['boolean', 'integer', 'object', 'string'] },
  ...Object.fromEntries(FORMAT_FIELDS.map((f) => [f, { types: ['string'] }])),
};

const asList = (c: Record<string, { type: string; reason?: string }>) => Object.keys(c).sort().map((f) => [f, c[f]!.type, c[f]!.reason]);

/** The table as SQL Server describes it after our CREATE TABLE (information_schema: base type, -1 for MAX). */
function describe_(binding: MaterializationBindingSpec): ExistingTable {
  const table = buildTable(dialect, 0, ['key_value'], binding);
  const columns: ExistingColumn[] = table.columns.map((c) => {
    const m = /^(DOUBLE PRECISION|\w+)(?:\((\d+|MAX)\))?/i.exec(c.mapped.ddl)!;
    const dataType = m[1]!.toUpperCase() === 'DOUBLE PRECISION' ? 'float' : m[1]!.toLowerCase();
    return {
      name: c.field, dataType, nullable: c.nullable, charLength: m[2] === undefined ? null : m[2] === 'MAX' ? -1 : Number(m[2]),
      numericPrecision: null, numericScale: null, datetimePrecision: null, collation: null,
      primaryKey: table.keys.indexOf(c) + 1,
    };
  });
  return { path: ['key_value'], columns };
}

describe('Validate as upstream (TestIntegration-apply, big schema)', () => {
  const big = collection(BIG);
  const initial = validateBinding(dialect, { path: ['key_value'], deltaUpdates: false, collection: big, fieldConfig: {}, backfill: 0, featureFlags: parseFeatureFlags(undefined) });
  // The materialization as published: every field upstream selected (all but the forbidden nullField).
  const selected = Object.keys(initial).filter((f) => initial[f]!.type !== 'FIELD_FORBIDDEN' && f !== 'key' && f !== 'flow_document').sort();
  const last: MaterializationBindingSpec = { resourceConfig: { table: 'key_value' }, resourcePath: ['key_value'], collection: big, fieldSelection: { keys: ['key'], values: selected, document: 'flow_document' } };
  const existing = describe_(last);
  const revalidate = (c: CollectionSpec, backfill = 0) => validateBinding(dialect, {
    path: ['key_value'], deltaUpdates: false, collection: c, fieldConfig: {}, backfill, existing, last, featureFlags: parseFeatureFlags(undefined),
  });

  it('initial constraints (a new table)', () => {
    assert.deepEqual(asList(initial), expected['Big Schema Initial Constraints']);
  });
  it('re-validated: FIELD_REQUIRED for the current key and document, FIELD_OPTIONAL "part of the current materialization" for the rest', () => {
    assert.deepEqual(asList(revalidate(big)), expected['Big Schema Re-validated Constraints']);
  });
  it('changed types: INCOMPATIBLE with upstream\'s reason where the column cannot be migrated', () => {
    assert.deepEqual(asList(revalidate(collection(CHANGED))), expected['Big Schema Changed Types Constraints']);
  });
  it('changed types with a backfill: validated as a new table', () => {
    assert.deepEqual(asList(revalidate(collection(CHANGED), 1)), expected['Big Schema Changed Types With Backfill Constraints']);
  });

  it('a new binding onto an existing table is refused unless allow_existing_tables_for_new_bindings', () => {
    const input = { path: ['key_value'], deltaUpdates: false, collection: big, fieldConfig: {}, backfill: 0, existing };
    assert.throws(() => validateBinding(dialect, { ...input, featureFlags: parseFeatureFlags(undefined) }),
      /table key_value already exists for this new binding\. Drop the table \(or choose another 'table'\) to continue; the 'allow_existing_tables_for_new_bindings' feature flag/);
    const allowed = validateBinding(dialect, { ...input, featureFlags: parseFeatureFlags('allow_existing_tables_for_new_bindings') });
    assert.deepEqual(allowed.key, { type: 'FIELD_REQUIRED', reason: 'This field is a key in the current materialization' });
    assert.deepEqual(allowed.intField, { type: 'FIELD_OPTIONAL', reason: 'This location is part of the current materialization' });
  });

  it('delta → standard on an existing table is refused; a new root projection or key location needs a backfill', () => {
    const deltaLast = { ...last, deltaUpdates: true };
    assert.throws(() => validateBinding(dialect, { path: ['key_value'], deltaUpdates: false, collection: big, fieldConfig: {}, backfill: 0, existing, last: deltaLast }), /cannot switch from delta updates to standard updates/);
    const second = structuredClone(big);
    second.projections!.push({ field: 'doc2', inference: { types: ['object'], exists: 'MUST' } });
    const c = revalidate(second);
    assert.deepEqual(c.doc2, { type: 'FIELD_FORBIDDEN', reason: 'Cannot materialize root document projection \'doc2\' because field \'flow_document\' is already being materialized as the document' });
    const noDoc = { ...last, fieldSelection: { ...last.fieldSelection!, document: '' } };
    const v = validateBinding(dialect, { path: ['key_value'], deltaUpdates: false, collection: big, fieldConfig: {}, backfill: 0, existing, last: noDoc });
    assert.deepEqual(v.flow_document, { type: 'INCOMPATIBLE', reason: 'Cannot add a new root document projection to materialization without backfilling' });
    const newKey = structuredClone(big);
    newKey.key = ['/key', '/intField'];
    newKey.projections!.find((p) => p.field === 'intField')!.isPrimaryKey = true;
    const k = validateBinding(dialect, { path: ['key_value'], deltaUpdates: false, collection: newKey, fieldConfig: {}, backfill: 0, existing, last });
    // Upstream answers FIELD_REQUIRED here and fails later in Apply; the table's primary key cannot change in place.
    assert.deepEqual(k.intField, { type: 'INCOMPATIBLE', reason: 'Field \'intField\' is a collection key but column intField is not part of the table\'s primary key; backfill to re-create the table' });
    const unselected = { ...last, fieldSelection: { ...last.fieldSelection!, values: selected.filter((f) => f !== 'intField') } };
    const k2 = validateBinding(dialect, { path: ['key_value'], deltaUpdates: false, collection: newKey, fieldConfig: {}, backfill: 0, existing, last: unselected });
    assert.deepEqual(k2.intField, { type: 'FIELD_FORBIDDEN', reason: 'Cannot add a new key location to the field selection of an existing non-delta-updates materialization without backfilling' });
  });
});

describe('Apply on backfill, with upstream\'s feature flags', () => {
  const base = collection({ key: { types: ['string'] }, intField: { types: ['integer'] } });
  const spec = (backfill: number, c = base): MaterializationBindingSpec => ({
    resourceConfig: { table: 'kv' }, resourcePath: ['kv'], collection: c, backfill, fieldSelection: { keys: ['key'], values: ['intField'], document: 'flow_document' },
  });
  const table = buildTable(dialect, 0, ['kv'], spec(1));
  const existing = describe_({ ...spec(0), resourcePath: ['kv'] });
  const plan = (flags: string | undefined, s = spec(1)) => planTable(dialect, { table: buildTable(dialect, 0, ['kv'], s), spec: s, last: spec(0), existing }, parseFeatureFlags(flags));

  it('a compatible table is truncated by default, dropped and re-created with always_drop_tables_on_backfill, kept with retain_existing_data_on_backfill', () => {
    assert.deepEqual(plan(undefined), [dialect.templates.truncateTable(table)]);
    assert.deepEqual(plan('always_drop_tables_on_backfill'), [dialect.templates.dropTable(table), dialect.templates.createTable(table)]);
    assert.deepEqual(plan('retain_existing_data_on_backfill'), []);
  });
  it('a changed collection key re-creates the table; with retain_existing_data_on_backfill that is refused with what to do', () => {
    const rekeyed = structuredClone(base);
    rekeyed.key = ['/key', '/intField'];
    const s = { ...spec(1, rekeyed), fieldSelection: { keys: ['key', 'intField'], values: [], document: 'flow_document' } };
    assert.equal(plan(undefined, s)[0], dialect.templates.dropTable(table));
    assert.throws(() => plan('retain_existing_data_on_backfill', s), /backfill for binding \["kv"\] requires dropping and re-creating the table \(.*\), but the 'retain_existing_data_on_backfill' feature flag is enabled\. Disable the feature flag by removing 'retain_existing_data_on_backfill' from 'advanced\.feature_flags'/);
  });
});
