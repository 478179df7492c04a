// Every connector's endpoint and resource schemas are valid against their JSON Schema meta-schema.
// Validators skip that check at start-up (it costs ~40 ms per process: runtime/src/connector/config.ts);
// `spec` runs it, and so does this test, so a broken schema fails CI rather than a user's validate.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSchema } from '@sluice/runtime';
import type { JsonSchema } from '@sluice/runtime';
import { createTestCapture, createTestMaterialize } from '@sluice/runtime/testing';
import { createHttpFileConnector } from '../connectors/source-http-file/src/index.ts';
import { materializeSqlite } from '../connectors/materialize-sqlite/src/index.ts';
import { createSqlServerConnector } from '../connectors/materialize-sqlserver/src/index.ts';

const connectors: [string, { configSchema: JsonSchema; resourceConfigSchema: JsonSchema }][] = [
  ['source-http-file', createHttpFileConnector()],
  ['materialize-sqlite', materializeSqlite],
  ['materialize-sqlserver', createSqlServerConnector()],
  ['sluice-test-capture', createTestCapture()],
  ['sluice-test-materialize', createTestMaterialize()],
];

describe('connector schemas', () => {
  for (const [name, c] of connectors) {
    it(`${name}: endpoint and resource schemas pass their meta-schema`, () => {
      checkSchema(c.configSchema, 'endpoint config');
      checkSchema(c.resourceConfigSchema, 'resource config');
    });
  }

  it('checkSchema catches what only the meta-schema forbids', () => {
    assert.throws(() => checkSchema({ type: 'object', required: 'a' } as unknown as JsonSchema, 'endpoint config'), { message: /endpoint config schema is invalid: .*required/ });
  });
});
