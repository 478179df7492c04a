// Compiled validators cached between connector starts (validator-cache.ts): a process that finds the cached
// code validates exactly as one that compiled the schema, and no code is ever run from a shared temp path,
// from a directory another user owns or can write, or without its keyed MAC.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/** What a validator gives for INPUTS (validated value with defaults, or the error message), and Node's compile cache dir. */
const CHILD = `
import { ConfigValidator } from ${JSON.stringify(new URL('../src/connector/config.ts', import.meta.url).href)};
import { enableCompileCache, getCompileCacheDir } from 'node:module';
enableCompileCache();
const v = new ConfigValidator(${JSON.stringify(SCHEMA)}, 'endpoint config');
const out = ${JSON.stringify(INPUTS)}.map((input) => { try { return v.validate(input, 'endpoint config'); } catch (e) { return e.message; } });
process.stdout.write(JSON.stringify({ out, compileCache: getCompileCacheDir() }));
`;

const fresh = new ConfigValidator(SCHEMA, 'endpoint config');
const EXPECTED = INPUTS.map((input) => { try { return fresh.validate(input, 'endpoint config'); } catch (e) { return (e as Error).message; } });
const ajvVersion = (createRequire(import.meta.url)('ajv/package.json') as { version: string }).version;

describe('cached validators', () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-ajv-cache-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const marker = join(root, 'planted-code-ran');
  const EVIL = `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran'); module.exports = function validate() { return true; };`;
  let n = 0;
  const runChild = (env: Record<string, string>): { out: unknown; compileCache: string } => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', CHILD], {
    env: { ...process.env, SLUICE_VALIDATOR_CACHE: '', XDG_CACHE_HOME: '', ...env }, encoding: 'utf8',
  })) as { out: unknown; compileCache: string };
  const validators = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.cjs'));
  const notRun = (what: string) => {
    assert.equal(existsSync(marker), false, `${what}: the planted code ran`);
  };

  it('validates exactly as a freshly compiled validator, from a per-user cache created 0700 (key 0600)', () => {
    const xdg = join(root, `xdg-${++n}`);
    const env = { XDG_CACHE_HOME: xdg, NODE_COMPILE_CACHE: join(root, 'ncc') };
    assert.deepEqual(runChild(env).out, EXPECTED, 'compiled (and stored)');
    const dir = join(xdg, 'sluice', 'validators');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'key')).mode & 0o777, 0o600);
    const files = validators(dir);
    assert.equal(files.length, 1, `one cached validator: ${files.join(', ')}`);
    assert.equal(statSync(join(dir, files[0]!)).mode & 0o777, 0o600);
    assert.deepEqual(runChild(env).out, EXPECTED, 'loaded from the cache');
    // The cached code is what runs: re-MAC'd with the key, a validator that accepts anything changes the results.
    const key = readFileSync(join(dir, 'key'));
    const fileKey = files[0]!.slice(0, -'.cjs'.length);
    const accepting = 'module.exports = function validate() { return true; };';
    const mac = createHmac('sha256', key).update(fileKey).update('\0').update(accepting).digest('hex');
    writeFileSync(join(dir, files[0]!), `// sluice-validator hmac-sha256 ${mac}\n${accepting}`);
    // INPUTS[2] fails the schema (not a uri, port 0): accepted, so the cached code is what ran.
    assert.deepEqual((runChild(env).out as unknown[])[2], INPUTS[2], 'the cached (MAC-valid) code ran');
    // Without a valid MAC, nothing runs: planted and corrupt files are compiled over.
    writeFileSync(join(dir, files[0]!), `// sluice-validator hmac-sha256 ${'0'.repeat(64)}\n${EVIL}`);
    assert.deepEqual(runChild(env).out, EXPECTED, 'wrong MAC: compiled again');
    notRun('wrong MAC');
    writeFileSync(join(dir, files[0]!), EVIL);
    assert.deepEqual(runChild(env).out, EXPECTED, 'no MAC');
    notRun('no MAC');
    writeFileSync(join(dir, files[0]!), 'this is not JavaScript (');
    assert.deepEqual(runChild(env).out, EXPECTED, 'corrupt cache: compiled again');
    assert.deepEqual(runChild(env).out, EXPECTED, 'and stored again');
  });

  it("never runs a file planted at the old shared path under Node's compile cache", () => {
    const ncc = join(root, 'shared-ncc');
    const env = { XDG_CACHE_HOME: join(root, `xdg-${++n}`), NODE_COMPILE_CACHE: ncc };
    const { compileCache } = runChild(env);
    // The old location: <compile cache>/sluice-ajv/<sha256(format 1, ajv version, schema)>.cjs, run with new Function.
    const oldKey = createHash('sha256').update(`1\0${ajvVersion}\0${JSON.stringify(SCHEMA)}`).digest('hex').slice(0, 40);
    for (const dir of [join(compileCache, 'sluice-ajv'), join(ncc, 'sluice-ajv')]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${oldKey}.cjs`), EVIL);
    }
    // Also when the per-user cache is empty (first start) and when the cache is off.
    rmSync(join(root, `xdg-${n}`), { recursive: true, force: true });
    assert.deepEqual(runChild(env).out, EXPECTED);
    assert.deepEqual(runChild({ ...env, SLUICE_VALIDATOR_CACHE: 'off' }).out, EXPECTED);
    notRun('old shared path');
  });

  it('never runs code from a cache directory others can write, or owned by another user', () => {
    const dir = join(root, `explicit-${++n}`);
    const env = { SLUICE_VALIDATOR_CACHE: dir, NODE_COMPILE_CACHE: join(root, 'ncc') };
    assert.deepEqual(runChild(env).out, EXPECTED);
    const file = join(dir, validators(dir)[0]!);
    const key = readFileSync(join(dir, 'key'));
    const fileKey = validators(dir)[0]!.slice(0, -'.cjs'.length);
    // Whoever can write the directory can also read the key: plant a file with a valid MAC.
    const mac = createHmac('sha256', key).update(fileKey).update('\0').update(EVIL).digest('hex');
    writeFileSync(file, `// sluice-validator hmac-sha256 ${mac}\n${EVIL}`);
    chmodSync(dir, 0o777);
    assert.deepEqual(runChild(env).out, EXPECTED, 'world-writable directory');
    notRun('world-writable directory');
    chmodSync(dir, 0o700);
    chmodSync(file, 0o666);
    assert.deepEqual(runChild(env).out, EXPECTED, 'world-writable file');
    notRun('world-writable file');
    chmodSync(file, 0o600);
    if (process.getuid?.() !== 0) {
      console.log('# skipped the other-owner case: chown needs root (the mode cases above ran)');
      return;
    }
    chownSync(dir, 65534, 65534);
    assert.deepEqual(runChild(env).out, EXPECTED, 'directory owned by another user');
    notRun('directory owned by another user');
    chownSync(dir, 0, 0);
    chownSync(file, 65534, 65534);
    assert.deepEqual(runChild(env).out, EXPECTED, 'file owned by another user');
    notRun('file owned by another user');
  });
});
