// The plane's validators kept as code between starts (catalog/ajv.ts compiledValidator): the catalog schema's,
// the 2020-12 meta-schema's and collection documents'. A start that finds their code must answer exactly as a
// start that compiles them — the same verdicts and the same messages — and must not load ajv's compiler.
// Each start is a real Node process over one validator-cache directory: compiled (cache off), cold (compiles
// and stores), warm (loads the stored code).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const src = (p: string) => new URL(`../../src/${p}`, import.meta.url).href;

// Loads each catalog (its problems, as the user reads them), checks schemas for defects and documents against a
// collection schema, and lists which of ajv's modules the process loaded.
const SCRIPT = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const { loadCatalog } = await import(${JSON.stringify(src('catalog/load.ts'))});
const { schemaDefects } = await import(${JSON.stringify(src('catalog/schema-checks.ts'))});
const { compileDocumentSchema } = await import(${JSON.stringify(src('catalog/ajv.ts'))});
const out = { catalogs: [], defects: [], documents: [] };
for (const file of process.argv.slice(1)) {
  try { const c = await loadCatalog(file); out.catalogs.push('ok ' + [...c.collections.keys()].join(',')); } catch (err) { out.catalogs.push(err.message); }
}
for (const s of [{ type: 'object' }, { type: 'objec' }, { properties: { a: { type: 5 } }, minLength: -1 }, { allOf: [{ required: 'x' }] }, true,
  { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'strin' }]) {
  out.defects.push(schemaDefects(s));
}
const validate = compileDocumentSchema({ type: 'object', properties: { id: { type: 'string' }, at: { type: 'string', format: 'date-time' },
  n: { type: 'string', format: 'integer' }, mac: { type: 'string', format: 'macaddr' }, tags: { type: 'array', items: { type: 'string' }, maxItems: 2 } },
  required: ['id'], additionalProperties: false });
for (const d of [{ id: 'a' }, {}, { id: 1 }, { id: 'a', at: 'yesterday' }, { id: 'a', at: '2024-01-01T00:00:00Z', n: '12', mac: '01:23:45:67:89:ab' },
  { id: 'a', n: '1.5' }, { id: 'a', mac: 'nope' }, { id: 'a', tags: ['x', 'y', 'z'] }, { id: 'a', extra: true }]) {
  out.documents.push(validate(d));
}
out.ajvCompiler = loaded.some((u) => /\\/ajv\\/dist\\/(core|2020)\\.js$/.test(u));
// Another dialect is checked by ajv itself (its meta-schema is not one kept as code).
out.defects.push(schemaDefects({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }));
process.stdout.write(JSON.stringify(out));
`;

const CATALOGS: Record<string, string> = {
  'good.yaml': 'collections:\n  acmeCo/rides:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n',
  'no-key.yaml': 'collections:\n  acmeCo/rides:\n    schema: {type: object}\n',
  'bad-names.yaml': 'collections:\n  acmeCo//rides:\n    schema: 1\n    key: x\ncaptures:\n  acmeCo/x:\n    endpoint: {foo: 1}\n',
  'bad-endpoint.yaml': 'materializations:\n  acmeCo/m:\n    endpoint: {sqlite: {path: 3}}\n    bindings: [{source: acmeCo/rides, resource: 7}]\n',
  'unknown-keys.yaml': 'import: [1]\nbogus: true\ncollections:\n  acmeCo/a:\n    schema: {type: object}\n    key: [/id]\n    projections: {x: 5}\n',
};

function start(dir: string, cache: string): { catalogs: string[]; defects: unknown[]; documents: unknown[]; ajvCompiler: boolean } {
  const files = Object.keys(CATALOGS).map((f) => join(dir, f));
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT, ...files], {
    encoding: 'utf8',
    // The cache is used while Node's compile cache is on (validatorCacheDir): on, in a directory of the test's.
    env: { ...process.env, SLUICE_VALIDATOR_CACHE: cache, NODE_COMPILE_CACHE: join(dir, 'compile-cache') },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof start>;
}

test('validators kept as code: a warm start answers exactly as a compiling one, without loading ajv\'s compiler', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cached-validators-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(CATALOGS)) writeFileSync(join(dir, name), text);
  const cache = join(dir, 'validators');
  mkdirSync(cache, { mode: 0o700 });

  const compiled = start(dir, 'off');
  assert.equal(compiled.ajvCompiler, true);
  assert.equal(compiled.catalogs[0], 'ok acmeCo/rides');
  assert.ok(compiled.catalogs.slice(1).every((m) => m.length > 0 && !m.startsWith('ok')), 'the bad catalogs are refused');
  assert.ok(compiled.documents.filter((d) => d === null).length === 2, 'two documents are valid');

  const cold = start(dir, cache);
  assert.deepEqual(cold, compiled);
  const stored = readdirSync(cache).filter((f) => f.endsWith('.cjs'));
  // The catalog schema, the meta-schema and the collection schemas compiled (documents' and the catalogs').
  assert.ok(stored.length >= 3, `stored: ${stored.join(', ')}`);

  const warm = start(dir, cache);
  assert.deepEqual({ ...warm, ajvCompiler: true }, compiled);
  assert.equal(warm.ajvCompiler, false, 'a warm start loads none of ajv\'s compiler');
});

test('validators kept as code: a tampered file is not run — the validator is compiled again', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cached-validators-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(CATALOGS)) writeFileSync(join(dir, name), text);
  const cache = join(dir, 'validators');
  mkdirSync(cache, { mode: 0o700 });
  const compiled = start(dir, cache);
  // Every stored validator accepts anything and says so: were it run, the bad catalogs would load.
  for (const f of readdirSync(cache).filter((n) => n.endsWith('.cjs'))) {
    writeFileSync(join(cache, f), '// sluice-validator hmac-sha256 0000\nmodule.exports = function v() { return true; };\n');
  }
  const again = start(dir, cache);
  assert.deepEqual({ ...again, ajvCompiler: compiled.ajvCompiler }, compiled);
  assert.equal(again.ajvCompiler, true);
});
