// The config schemas in schemas/ are generated from the code: this test fails when they drift
// (UPDATE_SNAPSHOTS=1 rewrites them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endpointSchema, resourceSchema } from '../src/config.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..', 'schemas');

for (const [name, schema] of [['config', endpointSchema], ['resource', resourceSchema]] as const) {
  test(`schemas/materialize-sqlite.${name}.schema.json matches the code`, () => {
    const file = join(ROOT, `materialize-sqlite.${name}.schema.json`);
    const text = `${JSON.stringify(schema, null, 2)}\n`;
    if (process.env.UPDATE_SNAPSHOTS === '1') writeFileSync(file, text);
    assert.equal(readFileSync(file, 'utf8'), text, `${file} drifted from src/config.ts: run with UPDATE_SNAPSHOTS=1`);
  });
}

test('every property has a title and a description; booleans have defaults', () => {
  for (const schema of [endpointSchema, resourceSchema]) {
    for (const [key, prop] of Object.entries(schema.properties) as [string, { title?: string; description?: string; type: string; default?: unknown }][]) {
      assert.ok(prop.title && prop.description, `${schema.title}.${key} needs a title and a description`);
      if (prop.type === 'boolean') assert.equal(typeof prop.default, 'boolean', `${schema.title}.${key} needs a default`);
    }
  }
});
