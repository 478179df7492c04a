// The catalog schema is written once (src/catalog/catalog-schema.ts); schemas/catalog.schema.json is generated
// from it (UPDATE_SNAPSHOTS=1 rewrites it), and the loader's types are derived from it: the type assertions
// below fail the typecheck when a derived type stops saying what the schema says.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { createAjv } from '../../src/catalog/ajv.ts';
import { catalogSchema, NAME_PATTERN } from '../../src/catalog/catalog-schema.ts';
import type { CaptureFile, CatalogFile, CollectionFile, MaterializationFile, TestFile } from '../../src/catalog/catalog-schema.ts';
import type { FieldsDef, OnIncompatibleSchemaChange, PartitionSelectorDef } from '../../src/catalog/types.ts';

const FILE = new URL('../../../schemas/catalog.schema.json', import.meta.url).pathname;

test('schemas/catalog.schema.json is generated from src/catalog/catalog-schema.ts', () => {
  const text = `${JSON.stringify(catalogSchema, null, 2)}\n`;
  if (process.env['UPDATE_SNAPSHOTS'] === '1') writeFileSync(FILE, text);
  assert.equal(readFileSync(FILE, 'utf8'), text, `${FILE} drifted from the code: run UPDATE_SNAPSHOTS=1 node --test ${import.meta.filename}`);
});

// The loader compiles the catalog schema without ajv's meta-schema check (catalog-file.ts: it cost ~75 ms of
// every start), so this is where a schema edit that breaks JSON Schema 2020-12 is caught.
test('the catalog schema is valid JSON Schema 2020-12 (checked here, not at every start)', () => {
  const meta = createAjv({ strict: false });
  assert.ok(meta.validateSchema(catalogSchema as object), `catalog schema: ${meta.errorsText(meta.errors)}`);
  assert.ok(!meta.validateSchema({ type: 'object', properties: 3 }), 'the meta-schema check itself must refuse a broken schema');
});

test('catalog names: the schema pattern refuses path traversal', () => {
  for (const ok of ['acmeCo/orders', 'a.b/c-d_e', 'ü/ñ', 'a/..b']) assert.ok(NAME_PATTERN.test(ok), ok);
  for (const bad of ['..', 'a/../b', './a', 'a/.', '/a', 'a/', 'a//b', 'a b', '']) assert.ok(!NAME_PATTERN.test(bad), bad);
});

// ---- Types derived from the schema (checked by tsc; a mismatch is a typecheck error) --------------------
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const typeChecks: true[] = [
  true satisfies Equal<CatalogFile['import'], string[] | undefined>,
  true satisfies Equal<CollectionFile['key'], string[]>,
  true satisfies Equal<CollectionFile['schema'], JsonObject | boolean | string | undefined>,
  true satisfies Equal<NonNullable<CollectionFile['projections']>[string], string | { location: string; partition?: boolean }>,
  true satisfies Equal<CaptureFile['bindings'][number], { resource: JsonObject; target: string; disable?: boolean; backfill?: number }>,
  true satisfies Equal<CaptureFile['endpoint'], { connector?: { image: string; config: JsonObject | string }; local?: { command: string[]; config: JsonObject | string; env?: Record<string, string>; protobuf?: false } }>,
  true satisfies Equal<MaterializationFile['bindings'][number]['source'], string | { name: string; notBefore?: string; notAfter?: string; partitions?: { include?: Record<string, (string | number | boolean)[]>; exclude?: Record<string, (string | number | boolean)[]> } }>,
  true satisfies Equal<TestFile[number]['ingest'], { collection: string; description?: string; documents: JsonObject[] | string; partitions?: Partial<PartitionSelectorDef> } | undefined>,
  true satisfies Equal<OnIncompatibleSchemaChange, 'backfill' | 'disableBinding' | 'disableTask' | 'abort'>,
  true satisfies Equal<FieldsDef, { recommended: boolean; include: Record<string, JsonObject>; exclude: string[] }>,
  true satisfies Equal<CollectionFile['derive'], JsonValue | undefined>,
];

test('derived catalog types (checked by the typecheck)', () => {
  assert.equal(typeChecks.length, 11);
});
