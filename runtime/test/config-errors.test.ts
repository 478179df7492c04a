// Config errors that name the mistake (config-errors.ts), on the connectors' own schemas (schemas/*.json, the
// spec output) and on small schemas for each rule.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { closestName, ConfigValidator, ConnectorSchemas } from '../src/connector/config.ts';
import type { JsonSchema, JsonValue } from '../src/protocol/specs.ts';

const schemaFile = (name: string): JsonSchema => JSON.parse(readFileSync(new URL(`../../schemas/${name}`, import.meta.url), 'utf8')) as JsonSchema;
const httpFile = new ConfigValidator(schemaFile('source-http-file.config.schema.json'), 'endpoint config');
const sqlserver = new ConfigValidator(schemaFile('materialize-sqlserver.config.schema.json'), 'endpoint config');

function message(v: ConfigValidator, value: JsonValue): string {
  try {
    v.validate(value, 'endpoint config');
  } catch (err) {
    return (err as Error).message;
  }
  return 'valid';
}

describe('config errors: unknown keys', () => {
  it('a top-level typo names the misspelling, not only the missing property', () => {
    assert.equal(message(httpFile, { urll: 'https://example.com/a.csv' }),
      "Invalid endpoint config (1 problem): /urll is not an allowed property; did you mean 'url'?");
  });
  it('a misspelled key deep inside the selected oneOf branch', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { format: { type: 'csv', config: { delimeter: ';' } } } }),
      "Invalid endpoint config (1 problem): /parser/format/config/delimeter is not an allowed property; did you mean 'delimiter'?");
  });
  it('an unknown key with no near name lists the allowed ones', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { zzz: 1 } }),
      'Invalid endpoint config (1 problem): /parser/zzz is not an allowed property; allowed: compression, format, defaultOffset');
  });
  it('in arrays of objects, and several at once', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', credentials: { user: 'u', pasword: 'p' }, headers: { items: [{ key: 'k', vlaue: 'v' }] } }),
      "Invalid endpoint config (2 problems): /credentials/pasword is not an allowed property; did you mean 'password'?; /headers/items/0/vlaue is not an allowed property; did you mean 'value'?");
  });
  it('valid configs pass unchanged (defaults applied)', () => {
    assert.deepEqual(httpFile.validate({ url: 'https://e.com/a', parser: { format: { type: 'csv', config: { delimiter: ',', headers: ['a'] } } } }, 'endpoint config'),
      { url: 'https://e.com/a', parser: { format: { type: 'csv', config: { delimiter: ',', headers: ['a'] } }, compression: null, defaultOffset: '+00:00' } });
  });
  it('keys a connector declares beyond its schema are accepted, others still refused', () => {
    const v = new ConfigValidator(schemaFile('source-http-file.config.schema.json'), 'endpoint config', false, { tolerate: { '/parser': ['addValues'] } });
    assert.equal(message(v, { url: 'https://e.com/a', parser: { addValues: true } }), 'valid');
    assert.equal(message(v, { url: 'https://e.com/a', parser: { addValue: true } }),
      "Invalid endpoint config (1 problem): /parser/addValue is not an allowed property; did you mean 'addValues'?");
  });
  it("tolerates the IAM tokens Flow's runtime injects into x-iam-auth credentials, and keys of other branches (Go decodes one struct)", () => {
    const base = { address: 'db:1433', user: 'u', database: 'd' };
    assert.equal(message(sqlserver, { ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/r', aws_region: 'us-east-1', aws_access_key_id: 'A', aws_secret_access_key: 'S', aws_session_token: 'T' } }), 'valid');
    assert.equal(message(sqlserver, { ...base, credentials: { auth_type: 'UserPassword', password: 'p', aws_region: 'x' } }), 'valid');
    assert.equal(message(sqlserver, { ...base, credentials: { auth_type: 'UserPassword', pasword: 'p' } }),
      "Invalid endpoint config (1 problem): /credentials/pasword is not an allowed property; did you mean 'password'?");
    assert.equal(message(sqlserver, { ...base, credentials: { auth_type: 'UserPassword', password: 'p' }, advanced: { feature_flag: '' } }),
      "Invalid endpoint config (1 problem): /advanced/feature_flag is not an allowed property; did you mean 'feature_flags'?");
  });
  it("resource configs may carry the `_meta` Flow's control plane writes into them", () => {
    const schemas = new ConnectorSchemas({ configSchema: { type: 'object' }, resourceConfigSchema: schemaFile('source-http-file.resource.schema.json') });
    assert.deepEqual(schemas.resourceValidator.validate({ stream: 'a', _meta: { path: ['a'] } }, 'resource config'), { stream: 'a', _meta: { path: ['a'] } });
    assert.throws(() => schemas.resourceValidator.validate({ stream: 'a', straem: 'b' }, 'resource config'), {
      message: "Invalid resource config (1 problem): /straem is not an allowed property; did you mean 'stream'?",
    });
  });
  it('open objects stay open: additionalProperties true or a schema, patternProperties, no properties at all', () => {
    const v = new ConfigValidator({
      type: 'object',
      properties: {
        a: { type: 'object', additionalProperties: { type: 'object', properties: { x: { type: 'string' } } } },
        b: { type: 'object' },
        c: { type: 'object', properties: { k: { type: 'string' } }, additionalProperties: true },
        d: { type: 'object', properties: { k: { type: 'string' } }, patternProperties: { '^x-': {} } },
      },
    }, 'endpoint config');
    assert.equal(message(v, { a: { any: { x: 's' } }, b: { any: 1 }, c: { other: 1 }, d: { k: 's', 'x-y': 1 } }), 'valid');
    assert.equal(message(v, { a: { any: { y: 's' } }, d: { z: 1 } }),
      'Invalid endpoint config (2 problems): /a/any/y is not an allowed property; allowed: x; /d/z is not an allowed property; allowed: k');
  });
  it('follows local $refs and allOf', () => {
    const v = new ConfigValidator({
      type: 'object', $defs: { tunnel: { type: 'object', properties: { host: { type: 'string' } } } },
      allOf: [{ properties: { one: { type: 'string' } } }, { properties: { tunnel: { $ref: '#/$defs/tunnel' } } }],
    }, 'endpoint config');
    assert.equal(message(v, { one: 'a', tunnel: { hots: 'h' } }), "Invalid endpoint config (1 problem): /tunnel/hots is not an allowed property; did you mean 'host'?");
    assert.equal(message(v, { one: 'a', tow: 1 }), "Invalid endpoint config (1 problem): /tow is not an allowed property; allowed: one, tunnel");
  });
});

describe('config errors: oneOf/anyOf reduced to the selected branch', () => {
  it('a wrong type inside parser.format names only the csv branch', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { format: { type: 'csv', config: { skipLines: 'two' } } } }),
      'Invalid endpoint config (1 problem): /parser/format/config/skipLines must be of type integer');
  });
  it('an unknown discriminator value is listed against the allowed ones', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { format: { type: 'xlsx' } } }),
      'Invalid endpoint config (1 problem): /parser/format/type "xlsx" is not a known format; allowed: "auto", "avro", "json", "csv", "protobuf", "w3cExtendedLog", "parquet"');
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { format: { type: 'jsn' } } }),
      'Invalid endpoint config (1 problem): /parser/format/type "jsn" is not a known format; allowed: "auto", "avro", "json", "csv", "protobuf", "w3cExtendedLog", "parquet" (did you mean "json"?)');
  });
  it('a oneOf of constants reads as an enum', () => {
    assert.equal(message(httpFile, { url: 'https://e.com/a', parser: { compression: 'gzp' } }),
      'Invalid endpoint config (1 problem): /parser/compression must be one of "gzip", "zip", "zstd", "none", null (did you mean "gzip"?)');
  });
  it('a discriminator pinned by const in every branch (no discriminator keyword)', () => {
    const v = new ConfigValidator({
      type: 'object',
      properties: {
        auth: {
          oneOf: [
            { title: 'Password', type: 'object', properties: { kind: { const: 'pw' }, password: { type: 'string' } }, required: ['kind', 'password'] },
            { title: 'Key', type: 'object', properties: { kind: { const: 'key' }, key: { type: 'string', minLength: 4 } }, required: ['kind', 'key'] },
          ],
        },
      },
    }, 'endpoint config');
    assert.equal(message(v, { auth: { kind: 'key', key: 'a' } }), 'Invalid endpoint config (1 problem): /auth/key must NOT have fewer than 4 characters');
    assert.equal(message(v, { auth: { password: 'a' } }), 'Invalid endpoint config (1 problem): /auth/kind is required; one of "pw", "key"');
  });
  it('without a discriminator: the one branch whose type fits, else what is allowed', () => {
    const v = new ConfigValidator({
      type: 'object',
      properties: {
        n: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: '^[0-9]+$' }] },
        m: { oneOf: [{ title: 'A number', type: 'integer' }, { title: 'A list', type: 'array' }] },
      },
    }, 'endpoint config');
    assert.equal(message(v, { n: 0 }), 'Invalid endpoint config (1 problem): /n must be >= 1');
    assert.equal(message(v, { n: 'x' }), 'Invalid endpoint config (1 problem): /n must match pattern "^[0-9]+$"');
    assert.equal(message(v, { m: 'x' }), 'Invalid endpoint config (1 problem): /m must be exactly one of: A number; A list');
  });
  it('never echoes a value other than a discriminator', () => {
    const msg = message(httpFile, { url: 'https://e.com/a', credentials: { user: 'alice', password: 12345678 } });
    assert.equal(msg, 'Invalid endpoint config (1 problem): /credentials/password must be of type string');
  });
});

describe('closestName', () => {
  it('suggests only near names', () => {
    assert.equal(closestName('delimeter', ['delimiter', 'escape']), 'delimiter');
    assert.equal(closestName('URL', ['url']), 'url');
    assert.equal(closestName('hedaers', ['headers', 'lineEnding']), 'headers');
    assert.equal(closestName('xlsx', ['csv', 'json', 'avro']), undefined);
  });
});
