// A materialization covering every type mapping, hostile names and both update modes. Used by the SQL
// snapshot, the transactor tests and the offline review test.
import type { Inference, JsonObject, MaterializationBindingSpec, MaterializationSpec, Projection } from '@sluice/runtime';

type P = [field: string, inference: Inference, ptr?: string];

const must = (types: string[], extra: Partial<Inference> = {}): Inference => ({ types, exists: 'MUST', ...extra });
const may = (types: string[], extra: Partial<Inference> = {}): Inference => ({ types, exists: 'MAY', ...extra });

function projections(list: P[]): Projection[] {
  return list.map(([field, inference, ptr]) => {
    const p: Projection = { field, inference };
    if (ptr !== '') p.ptr = ptr ?? `/${field.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    return p;
  }).sort((a, b) => (a.field < b.field ? -1 : 1));
}

const DOC: P = ['flow_document', must(['object']), ''];
const PUBLISHED: P = ['flow_published_at', must(['string'], { string: { format: 'date-time' } }), '/_meta/uuid'];

function binding(name: string, resource: JsonObject, path: string[], list: P[], keys: string[], values: string[],
  opts: { document?: string; delta?: boolean; fieldConfig?: Record<string, JsonObject> } = {}): MaterializationBindingSpec {
  const b: MaterializationBindingSpec = {
    resourceConfig: resource,
    resourcePath: path,
    collection: { name, key: keys.map((k) => `/${k}`), projections: projections(list) },
    fieldSelection: { keys, values },
  };
  if (opts.document !== undefined) b.fieldSelection!.document = opts.document;
  if (opts.fieldConfig !== undefined) b.fieldSelection!.fieldConfig = opts.fieldConfig;
  if (opts.delta === true) b.deltaUpdates = true;
  return b;
}

/** Binding 0: standard updates, every value type and hostile names. */
const keyValue = binding('acmeCo/key_value', { table: 'key_value', schema: 'dbo' }, ['dbo', 'key_value'], [
  ['key1', must(['integer'])],
  ['key2', must(['boolean'])],
  ['key!binary', must(['string'], { string: { contentEncoding: 'base64' } })],
  ['array', may(['array'])],
  ['binary', may(['string'], { string: { contentEncoding: 'base64' } })],
  ['boolean', may(['boolean', 'null'])],
  ['dateField', may(['string'], { string: { format: 'date' } })],
  ['dateTimeField', must(['string'], { string: { format: 'date-time' } })],
  ['timeField', may(['string'], { string: { format: 'time' } })],
  ['field_with_projection', may(['string']), '/fieldWithProjection'],
  PUBLISHED,
  ['integer', may(['integer'])],
  ['integerGt64Bit', may(['integer'], { numeric: { hasMaximum: true, maximum: 1e19 } })],
  ['integerWithUserDDL', may(['integer'])],
  ['multiple', may(['boolean', 'integer', 'object'])],
  ['nonAsciiκόσμε', may(['string'])],
  ['number', must(['number'])],
  ['numberCastToString', may(['number'])],
  ['object', may(['object'])],
  ['string', may(['string'])],
  ['stringSized', may(['string'], { string: { maxLength: 16 } })],
  ['stringHuge', may(['string'], { string: { maxLength: 5000 } })],
  ['stringInteger', may(['string', 'integer'], { string: { format: 'integer' } })],
  ['stringInteger39Chars', may(['string', 'integer'], { string: { format: 'integer', maxLength: 39 } })],
  ['stringNumber', may(['string', 'number'], { string: { format: 'number' } })],
  ['uuidField', may(['string'], { string: { format: 'uuid' } })],
  ['_meta/op', may(['string'])],
  ['a]b', may(['string'])],
  ['a"string`with`quote\'characters', may(['string'])],
  ['with space', may(['string'])],
  ['dotted.name', may(['string'])],
  ['key', may(['string'])],
  ['Select', may(['string'])],
  ['é', may(['string'])],
  ['123', may(['integer'])],
  DOC,
], ['key1', 'key2', 'key!binary'], [
  '123', '_meta/op', 'a"string`with`quote\'characters', 'a]b', 'array', 'binary', 'boolean', 'dateField', 'dateTimeField',
  'dotted.name', 'field_with_projection', 'flow_published_at', 'integer', 'integerGt64Bit', 'integerWithUserDDL', 'key',
  'multiple', 'nonAsciiκόσμε', 'number', 'numberCastToString', 'object', 'Select', 'string', 'stringHuge', 'stringInteger',
  'stringInteger39Chars', 'stringNumber', 'stringSized', 'timeField', 'uuidField', 'with space', 'é',
], {
  document: 'flow_document',
  fieldConfig: { integerWithUserDDL: { DDL: 'DECIMAL(20)' }, numberCastToString: { castToString: true } },
});

/** Binding 1: delta updates, no document, a hostile schema and table name. */
const delta = binding('acmeCo/delta', { table: 'delta updates', schema: 'Weird "Schema"', delta_updates: true },
  ['Weird "Schema"', 'delta updates'], [
    ['theKey', must(['string'])],
    ['aValue', may(['integer'])],
    PUBLISHED,
    DOC,
  ], ['theKey'], ['aValue', 'flow_published_at'], { delta: true });

/** Binding 2: a reserved table name, date-time and sized string keys, document only (no values). */
const reservedTable = binding('acmeCo/order', { table: 'order' }, ['order'], [
  ['ts', must(['string'], { string: { format: 'date-time' } })],
  ['id', must(['string'], { string: { maxLength: 300 } })],
  DOC,
], ['ts', 'id'], [], { document: 'flow_document' });

/** Binding 3: standard updates with keys only (no values, no document). */
const keysOnly = binding('acmeCo/keys_only', { table: 'keys_only', schema: 'dbo' }, ['dbo', 'keys_only'], [
  ['id', must(['integer'])],
  DOC,
], ['id'], []);

export const ENDPOINT_CONFIG: JsonObject = {
  address: 'db.example.com:1433',
  user: 'flow',
  database: 'analytics',
  schema: 'dbo',
  hardDelete: true,
  credentials: { auth_type: 'UserPassword', password: 'secret' },
};

export const FIXTURE: MaterializationSpec = {
  name: 'acmeCo/materialize-sqlserver',
  connectorType: 'IMAGE',
  config: ENDPOINT_CONFIG,
  bindings: [keyValue, delta, reservedTable, keysOnly],
};

export const FENCE = {
  path: ['path', 'to', 'checkpoints'],
  materialization: 'some/Materialization',
  keyBegin: 1122867,
  keyEnd: 4293844428,
  fence: 123,
  checkpoint: 'AAECAwQFBgcICQ==',
};
