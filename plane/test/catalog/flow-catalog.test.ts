// Flow catalogs load unchanged (issue 15.6): a catalog shaped as Flow's tooling writes one (flowctl pull-specs
// after discovering an HTTP-file capture, with a SQL Server materialization): flow:// schemas in read schemas,
// the connector schema embedded by $id, $ref to other schema files, onIncompatibleSchemaChange.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { CatalogError, compileDocumentSchema, loadCatalog } from '../../src/catalog/index.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-flow-catalog-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function write(files: Record<string, string>): string {
  const dir = join(root, `c${++n}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

// As flowctl writes them: the discovered schema under $defs["flow://connector-schema"], the read schema
// composing the relaxed write schema with the inferred one.
const FLOW_FILES: Record<string, string> = {
  'flow.yaml': `
collections:
  acmeCo/rides/rides.csv:
    writeSchema: rides.csv.write.schema.yaml
    readSchema:
      allOf:
        - $ref: flow://relaxed-write-schema
        - $ref: flow://inferred-schema
    key: [/_meta/file, /_meta/offset]
  acmeCo/rides/stations:
    writeSchema: schemas/stations.schema.yaml
    readSchema:
      $ref: flow://write-schema
      properties:
        name: {title: Station name}
    key: [/id]
captures:
  acmeCo/rides/source-http-file:
    endpoint:
      connector:
        image: ghcr.io/estuary/source-http-file:dev
        config: source-http-file.config.yaml
    bindings:
      - resource: {stream: rides.csv}
        target: acmeCo/rides/rides.csv
    interval: 5m0s
materializations:
  acmeCo/rides/materialize-sqlserver:
    endpoint:
      connector:
        image: ghcr.io/estuary/materialize-sqlserver:v1
        config: materialize-sqlserver.config.yaml
    onIncompatibleSchemaChange: abort
    bindings:
      - resource: {table: rides_csv}
        source: acmeCo/rides/rides.csv
        fields: {recommended: true}
        onIncompatibleSchemaChange: disableBinding
      - resource: {table: stations}
        source: acmeCo/rides/stations
        fields: {recommended: true}
`,
  'rides.csv.write.schema.yaml': `
$defs:
  flow://connector-schema:
    $id: flow://connector-schema
    type: object
    x-infer-schema: true
    required: [_meta]
    properties:
      _meta:
        type: object
        required: [file, offset]
        properties:
          file: {type: string, description: The key of the source file, added automatically by Flow}
          offset: {type: integer, minimum: 0, description: The offset of the record within the source file, added automatically by Flow}
$ref: flow://connector-schema
`,
  // A schema file referencing another, relative to itself (not to flow.yaml).
  'schemas/stations.schema.yaml': `
type: object
required: [id, name]
properties:
  id: {$ref: 'common/ids.yaml#/$defs/stationId'}
  name: {type: string}
  location: {$ref: common/ids.yaml#/$defs/point}
`,
  'schemas/common/ids.yaml': `
$defs:
  stationId: {type: integer, minimum: 1}
  point:
    type: object
    properties:
      lat: {$ref: '#/$defs/degrees'}
      lon: {$ref: '#/$defs/degrees'}
  degrees: {type: number}
`,
  'source-http-file.config.yaml': 'url: https://example.com/rides.csv\n',
  'materialize-sqlserver.config.yaml': 'address: db:1433\nuser: flow\ndatabase: rides\ncredentials: {auth_type: UserPassword, password: secret}\n',
};

describe('a catalog written by Flow tooling', () => {
  it('loads: flow:// read schemas, the embedded connector schema, $ref files, onIncompatibleSchemaChange', async () => {
    const dir = write(FLOW_FILES);
    const catalog = await loadCatalog(join(dir, 'flow.yaml'));
    const rides = catalog.collections.get('acmeCo/rides/rides.csv')!;
    assert.deepEqual(rides.spec.key, ['/_meta/file', '/_meta/offset']);
    const fields = (rides.spec.projections ?? []).map((p) => `${p.field}:${(p.inference?.types ?? []).join('|')}`).sort();
    assert.deepEqual(fields, ['_meta/file:string', '_meta/offset:integer', '_meta:object', 'flow_document:object', 'flow_published_at:string']);
    // The read schema carries what its flow:// references stand for, as Flow's build inlines them.
    const read = rides.spec.readSchema as { $defs: Record<string, { $id?: string }> };
    assert.deepEqual(Object.keys(read.$defs).sort(), ['flow://connector-schema', 'flow://inferred-schema', 'flow://relaxed-write-schema']);
    const validateRead = compileDocumentSchema(rides.spec.readSchema!);
    assert.equal(validateRead({ _meta: { file: 'rides.csv', offset: 0 }, ride_id: 'r1', duration: 10 }), null);
    assert.match(validateRead({ _meta: { file: 'rides.csv', offset: -1 } }) ?? '', /offset/);
    assert.match(compileDocumentSchema(rides.spec.writeSchema!)({ _meta: { file: 7, offset: 0 } }) ?? '', /_meta\/file/);

    const stations = catalog.collections.get('acmeCo/rides/stations')!;
    const types = Object.fromEntries((stations.spec.projections ?? []).map((p) => [p.field, (p.inference?.types ?? []).join('|')]));
    assert.equal(types['id'], 'integer', 'the key type comes from the referenced file');
    assert.equal(types['location/lat'], 'number', "a local $ref inside the referenced file resolves in that file");
    assert.equal(types['name'], 'string');
    const validateStation = compileDocumentSchema(stations.spec.readSchema!);
    assert.equal(validateStation({ id: 3, name: 'Main St', location: { lat: 40.7, lon: -74 } }), null);
    assert.match(validateStation({ id: 0, name: 'x' }) ?? '', /\/id/);
    assert.match(validateStation({ id: 3, name: 'x', location: { lat: 'north' } }) ?? '', /location\/lat/);
    const ids = pathToFileURL(join(dir, 'schemas/common/ids.yaml')).href;
    assert.ok(ids in ((stations.spec.writeSchema as { $defs: Record<string, unknown> }).$defs), 'the referenced file is embedded by its URL');
    assert.ok(catalog.files!.includes(join(dir, 'schemas/common/ids.yaml')), 'referenced files are watched');

    const capture = catalog.captures.get('acmeCo/rides/source-http-file')!;
    assert.equal(capture.intervalSeconds, 300);
    const m = catalog.materializations.get('acmeCo/rides/materialize-sqlserver')!;
    assert.equal(m.onIncompatibleSchemaChange, 'abort');
    assert.deepEqual(m.bindings.map((b) => b.onIncompatibleSchemaChange), ['disableBinding', undefined]);
  });

  it('bad input: an unknown onIncompatibleSchemaChange action names the allowed ones', async () => {
    const dir = write({ 'flow.yaml': 'materializations:\n  acme/m:\n    endpoint: {sqlite: {path: m.db}}\n    onIncompatibleSchemaChange: backfil\n    bindings: []\n' });
    await assert.rejects(loadCatalog(join(dir, 'flow.yaml')), (err: unknown) => {
      assert.ok(err instanceof CatalogError);
      assert.deepEqual(err.problems.map((p) => `${p.line} ${p.pointer} ${p.message}`), [
        '4 /materializations/acme~1m/onIncompatibleSchemaChange "backfil" is not one of "backfill", "disableBinding", "disableTask", "abort"; did you mean "backfill"?',
      ]);
      return true;
    });
  });

  it('bad input: flow:// schemas outside a readSchema, undefined flow:// and remote references, missing files', async () => {
    const dir = write({
      'flow.yaml': `
collections:
  acme/a:
    schema: {$ref: flow://write-schema}
    key: [/id]
  acme/b:
    writeSchema: {$ref: flow://connector-schema}
    readSchema: {$ref: flow://write-schema}
    key: [/id]
  acme/c:
    schema: {type: object, properties: {id: {$ref: 'https://example.com/id.json'}, x: {$ref: missing.yaml}}, required: [id]}
    key: [/id]
`,
    });
    await assert.rejects(loadCatalog(join(dir, 'flow.yaml')), (err: unknown) => {
      assert.ok(err instanceof CatalogError, String(err));
      const all = err.problems.map((p) => `${p.line} ${p.pointer} ${p.message}`).join('\n');
      assert.equal(err.problems.length, 4, all);
      assert.match(all, /\/collections\/acme~1a\/schema\/\$ref collection "acme\/a": flow:\/\/write-schema may only be referenced from a collection's readSchema/);
      assert.match(all, /\/collections\/acme~1b\/writeSchema\/\$ref collection "acme\/b": flow:\/\/connector-schema is not defined in this schema: Flow's control plane embeds it under \$defs/);
      assert.match(all, /\/collections\/acme~1c\/schema\/properties\/id\/\$ref collection "acme\/c": remote schema https:\/\/example.com\/id.json is not fetched by the local plane/);
      assert.match(all, /\/collections\/acme~1c\/schema\/properties\/x\/\$ref collection "acme\/c": schema "missing.yaml" \(from .*flow.yaml\): cannot read .*missing.yaml: file not found/);
      return true;
    });
  });
});
