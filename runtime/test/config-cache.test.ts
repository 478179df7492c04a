// Compiled validators cached beside Node's module compile cache (config.ts): a process that finds the
// cached code validates exactly as one that compiled the schema — defaults, formats, oneOf, annotation
// and x- keywords, every error — and a corrupt cache file only means compiling again.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigValidator } from '../src/connector/config.ts';
import type { JsonSchema, JsonValue } from '../src/protocol/specs.ts';

const SCHEMA: JsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  required: ['url'],
  properties: {
    url: { type: 'string', format: 'uri', title: 'URL', order: 0 },
    when: { type: 'string', format: 'date-time' },
    mail: { type: 'string', format: 'email' },
    password: { type: 'string', secret: true, 'x-hint': 'hidden' },
    mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 1433 },
    parser: {
      type: 'object',
      default: {},
      properties: {
        compression: { oneOf: [{ type: 'null' }, { const: 'gzip' }, { const: 'zstd' }], default: null },
        items: { type: 'array', items: { type: 'object', required: ['key'], properties: { key: { type: 'string', pattern: '^[a-z]+$' } } } },
      },
      additionalProperties: false,
    },
  },
};

const INPUTS: JsonValue[] = [
  { url: 'https://example.com/a.csv' },
  { url: 'https://example.com/a.csv', mode: 'b', port: 80, parser: { compression: 'gzip', items: [{ key: 'abc' }] } },
  { url: 'not a uri', when: 'yesterday', mail: 'nobody', port: 0 },
  { url: 3, mode: 'c', parser: { compression: 'lz4', extra: 1, items: [{ key: 'A1' }, {}] } },
  {},
  { url: 'https://example.com/', when: '2024-01-01T10:00:00Z', mail: 'a@b.co', password: 'secret' },
];

/** What a validator gives for INPUTS: the validated value (with defaults) or the error message. */
const CHILD = `
import { ConfigValidator } from ${JSON.stringify(new URL('../src/connector/config.ts', import.meta.url).href)};
import { enableCompileCache } from 'node:module';
enableCompileCache();
const v = new ConfigValidator(${JSON.stringify(SCHEMA)}, 'endpoint config');
const out = ${JSON.stringify(INPUTS)}.map((input) => { try { return v.validate(input, 'endpoint config'); } catch (e) { return e.message; } });
process.stdout.write(JSON.stringify(out));
`;

describe('cached validators', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ajv-cache-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const runChild = (): unknown => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', CHILD], { env: { ...process.env, NODE_COMPILE_CACHE: dir }, encoding: 'utf8' }));
  const cached = (): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.includes('sluice-ajv') && f.endsWith('.cjs'));

  it('validate exactly as a freshly compiled validator, and a corrupt cache file is compiled again', () => {
    const fresh = new ConfigValidator(SCHEMA, 'endpoint config');
    const expected = INPUTS.map((input) => { try { return fresh.validate(input, 'endpoint config'); } catch (e) { return (e as Error).message; } });
    assert.deepEqual(runChild(), expected, 'compiled (and stored)');
    const files = cached();
    assert.equal(files.length, 1, `one cached validator: ${files.join(', ')}`);
    assert.deepEqual(runChild(), expected, 'loaded from the cache');
    // The cached code is what runs: a planted validator that accepts anything changes the results.
    writeFileSync(join(dir, files[0]!), 'module.exports = function validate() { return true; };');
    assert.deepEqual(runChild(), INPUTS.map((input) => input ?? {}), 'the planted validator ran');
    writeFileSync(join(dir, files[0]!), 'this is not JavaScript (');
    assert.deepEqual(runChild(), expected, 'corrupt cache: compiled again');
    assert.deepEqual(runChild(), expected, 'and stored again');
  });
});
