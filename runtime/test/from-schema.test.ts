// FromSchema: the type of a value valid against a schema literal. The assertions are types, checked by the
// typecheck (tsc fails when a derived type stops saying what its schema says); the test only counts them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FromSchema, FromSchemaDef } from '../src/connector/from-schema.ts';
import type { JsonObject, JsonValue } from '../src/protocol/specs.ts';

const _schema = {
  type: 'object',
  required: ['id', 'kind'],
  properties: {
    id: { type: 'integer' },
    name: { type: ['string', 'null'] },
    kind: { $ref: '#/$defs/Kind' },
    flag: { type: 'boolean', default: false },
    tags: { type: 'array', items: { type: 'string' } },
    labels: { type: 'object', additionalProperties: { $ref: '#/$defs/Kind' } },
    extra: { type: 'object' },
    anything: { title: 'Anything' },
    auth: {
      oneOf: [
        { type: 'object', required: ['type'], properties: { type: { const: 'token' }, token: { type: 'string' }, ttl: { type: 'integer', default: 60 } } },
        { type: 'object', required: ['type'], properties: { type: { const: 'none' } } },
      ],
    },
  },
  $defs: { Kind: { enum: ['a', 'b'] } },
} as const;

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type Value = FromSchema<typeof _schema>;
type Defaulted = FromSchema<typeof _schema, { defaults: true }>;
const typeChecks: true[] = [
  true satisfies Equal<Value['id'], number>,
  true satisfies Equal<Value['name'], string | null | undefined>,
  true satisfies Equal<Value['kind'], 'a' | 'b'>,
  true satisfies Equal<Value['flag'], boolean | undefined>,
  true satisfies Equal<Value['tags'], string[] | undefined>,
  true satisfies Equal<Value['labels'], Record<string, 'a' | 'b'> | undefined>,
  true satisfies Equal<Value['extra'], JsonObject | undefined>,
  true satisfies Equal<Value['anything'], JsonValue | undefined>,
  true satisfies Equal<Value['auth'], { type: 'token'; token?: string; ttl?: number } | { type: 'none' } | undefined>,
  // With defaults applied, a property with a default is present; not inside oneOf branches (ajv applies none there).
  true satisfies Equal<Defaulted['flag'], boolean>,
  true satisfies Equal<Defaulted['auth'], { type: 'token'; token?: string; ttl?: number } | { type: 'none' } | undefined>,
  true satisfies Equal<FromSchemaDef<typeof _schema, 'Kind'>, 'a' | 'b'>,
];

test('FromSchema types (checked by the typecheck)', () => {
  assert.equal(typeChecks.length, 12);
});
