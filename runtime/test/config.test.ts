import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigValidator } from '../src/connector/config.ts';

const schema = {
  type: 'object',
  properties: {
    host: { type: 'string', title: 'Host', order: 0 },
    port: { type: 'integer', default: 1433, minimum: 1, maximum: 65535 },
    password: { type: 'string', secret: true, minLength: 12 },
    mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
    url: { type: 'string', format: 'uri' },
    advancedOpts: {
      type: 'object', advanced: true, 'x-ui-group': 'x',
      properties: { retries: { type: 'integer', default: 3 } }, default: {},
    },
    auth: {
      discriminator: { propertyName: 'kind' },
      oneOf: [
        { title: 'Password', properties: { kind: { const: 'pw', default: 'pw' }, user: { type: 'string' } }, required: ['kind', 'user'] },
        { title: 'Token', properties: { kind: { const: 'token', default: 'token' }, token: { type: 'string', secret: true, multiline: true } }, required: ['kind', 'token'] },
      ],
    },
  },
  required: ['host', 'password'],
  additionalProperties: false,
};

describe('ConfigValidator: bad input', () => {
  it('reports every problem in one message with JSON pointers, never the values', () => {
    const v = new ConfigValidator(schema, 'endpoint config');
    assert.throws(() => v.validate({ port: 0, password: 'shh', mode: 'c', extra: 1, url: 'not a uri' }, 'endpoint config'), (err: Error & { code?: string }) => {
      assert.equal(err.name, 'ConfigError');
      assert.equal(err.code, 'CONFIG');
      assert.equal(err.message,
        'Invalid endpoint config (6 problems): /extra is not an allowed property; allowed: host, port, password, mode, url, advancedOpts, auth; ' +
        '/host is required; /port must be >= 1; /password must NOT have fewer than 12 characters; /mode must be one of "a", "b"; /url must match format "uri"');
      assert.doesNotMatch(err.message, /shh/);
      return true;
    });
  });
  it('reports a wrong type at the root', () => {
    const v = new ConfigValidator(schema, 'endpoint config');
    assert.throws(() => v.validate([] as never, 'endpoint config'), { message: 'Invalid endpoint config (1 problem): (root) must be of type object' });
  });
  it('reports the problems of the oneOf branch its discriminator selects', () => {
    const v = new ConfigValidator(schema, 'endpoint config');
    assert.throws(() => v.validate({ host: 'h', password: 'long-enough-pw', auth: { kind: 'token' } }, 'endpoint config'), {
      message: 'Invalid endpoint config (1 problem): /auth/token is required',
    });
  });
  it('a broken connector schema is an internal (not user-facing) error', () => {
    assert.throws(() => new ConfigValidator({ type: 'object', properties: { a: { tpye: 'string' } } }, 'endpoint config'), (err: Error & { userFacing?: boolean }) => {
      assert.equal(err.message, 'the connector\'s endpoint config schema is invalid: strict mode: unknown keyword: "tpye"');
      assert.equal(err.userFacing, false);
      return true;
    });
  });
});

describe('ConfigValidator', () => {
  it('applies defaults, accepts annotation keywords, freezes, leaves the input alone', () => {
    const v = new ConfigValidator(schema, 'endpoint config');
    const input = { host: 'db', password: 'long-enough-pw', auth: { kind: 'pw', user: 'u' } };
    const out = v.validate<Record<string, unknown>>(input, 'endpoint config');
    assert.deepEqual(out, { host: 'db', password: 'long-enough-pw', port: 1433, mode: 'a', advancedOpts: { retries: 3 }, auth: { kind: 'pw', user: 'u' } });
    assert.ok(Object.isFrozen(out) && Object.isFrozen(out['advancedOpts']));
    assert.deepEqual(input, { host: 'db', password: 'long-enough-pw', auth: { kind: 'pw', user: 'u' } });
  });
  it('absent config validates as {}', () => {
    const v = new ConfigValidator({ type: 'object', properties: { n: { type: 'integer', default: 2 } } }, 'resource config');
    assert.deepEqual(v.validate(undefined, 'resource config'), { n: 2 });
  });
  it('supports draft 2020-12 schemas', () => {
    const v = new ConfigValidator({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { type: 'string', default: 'x' } } }, 'endpoint config');
    assert.deepEqual(v.validate({}, 'endpoint config'), { a: 'x' });
  });
});
