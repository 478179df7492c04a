// The schemas written once in code are what `spec` returns and what schemas/*.json hold.
// UPDATE_SNAPSHOTS=1 rewrites schemas/source-http-file.*.json and test/snapshots/spec.json.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { configSchema, createHttpFileConnector, resourceSchema } from '../src/index.ts';
import { runProtocol } from './helpers.ts';

const update = process.env['UPDATE_SNAPSHOTS'] === '1';
const root = new URL('../../../', import.meta.url).pathname;

function checkFile(path: string, value: unknown): void {
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (update || !existsSync(path)) {
    writeFileSync(path, text);
    if (!update) assert.fail(`${path} did not exist; it was written — run the test again (UPDATE_SNAPSHOTS=1 to rewrite)`);
    return;
  }
  assert.equal(readFileSync(path, 'utf8'), text, `${path} drifted from the code: run UPDATE_SNAPSHOTS=1 node --test ${import.meta.filename}`);
}

test('schemas/ files match the schemas in code', () => {
  checkFile(`${root}schemas/source-http-file.config.schema.json`, configSchema);
  checkFile(`${root}schemas/source-http-file.resource.schema.json`, resourceSchema);
});

test('spec response matches the snapshot', async () => {
  const run = await runProtocol(createHttpFileConnector(), [{ spec: { connectorType: 'IMAGE' } }]);
  assert.equal(run.error, undefined);
  assert.equal(run.responses.length, 1);
  checkFile(new URL('./snapshots/spec.json', import.meta.url).pathname, run.responses[0]);
});

test('spec: endpoint schema has the SPEC shape', () => {
  const s = configSchema;
  assert.deepEqual(s.required, ['url']);
  assert.deepEqual(Object.keys(s.properties), ['url', 'credentials', 'parser', 'headers']);
  assert.equal(s.properties.credentials.oneOf[0].properties.password.secret, true);
  assert.equal(s.properties.headers.properties.items.items.properties.value.secret, true);
  assert.equal(s.properties.parser.advanced, true);
  const compression = s.properties.parser.properties.compression.oneOf.map((o) => o.const);
  assert.deepEqual(compression, ['gzip', 'zip', 'zstd', 'none', null]);
  const types = s.properties.parser.properties.format.oneOf.map((o) => o.properties.type.const);
  assert.deepEqual(types, ['auto', 'avro', 'json', 'csv', 'protobuf', 'w3cExtendedLog', 'parquet']);
  const csv = s.properties.parser.properties.format.oneOf[3].properties.config.properties;
  assert.deepEqual(csv.delimiter.oneOf.map((o) => o.const), [',', '|', ' ', ';', '\t', '\u000b', '\u001f', '\u0001', null]);
  assert.deepEqual(csv.quote.oneOf.map((o) => o.const), ['"', "'", '', null]);
  assert.deepEqual(csv.escape.oneOf.map((o) => o.const), ['\\', '', null]);
  assert.deepEqual(csv.lineEnding.oneOf.map((o) => o.const), ['\r\n', '\r', '\n', '\u001e', null]);
  for (const key of ['delimiter', 'encoding', 'errorThreshold', 'escape', 'headers', 'lineEnding', 'quote']) assert.ok(key in csv, key);
  assert.deepEqual(resourceSchema.required, ['stream']);
});

test('spec: every property has a title and a description', () => {
  const missing: string[] = [];
  const walk = (node: any, path: string): void => {
    if (!node || typeof node !== 'object') return;
    if (node.properties) {
      for (const [k, v] of Object.entries<any>(node.properties)) {
        if (!v.title || !v.description) missing.push(`${path}/${k}`);
        walk(v, `${path}/${k}`);
      }
    }
    for (const branch of node.oneOf ?? []) walk(branch, path);
    if (node.items) walk(node.items, `${path}/items`);
  };
  walk(configSchema, '');
  walk(resourceSchema, '');
  assert.deepEqual(missing, []);
});
