import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CatalogError, loadCatalog } from '../../src/catalog/index.ts';

function catalogDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-catalog-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

async function problemsOf(files: Record<string, string>): Promise<string[]> {
  const dir = catalogDir(files);
  try {
    await loadCatalog(join(dir, 'flow.yaml'));
  } catch (err) {
    assert.ok(err instanceof CatalogError, String(err));
    return err.problems.map((p) => `${p.file.slice(dir.length + 1)}:${p.line}:${p.column} ${p.pointer} ${p.message}`);
  }
  assert.fail('expected a CatalogError');
}

const ORDERS = `
collections:
  acmeCo/shop/orders:
    schema: schemas/orders.yaml#/$defs/order
    key: [/order_id]
    projections:
      region_part: {location: /region, partition: true}
      amount: /total
`;
const ORDERS_SCHEMA = `
$defs:
  money: {type: number, minimum: 0}
  order:
    type: object
    required: [order_id, region, total]
    reduce: {strategy: merge}
    properties:
      order_id: {type: string, maxLength: 32, title: Order id}
      region: {type: string}
      total: {$ref: '#/$defs/money'}
      address:
        type: object
        required: [city]
        properties:
          city: {type: string}
          zip: {type: [string, 'null'], format: integer}
`;

test('bad input: a name that breaks the grammar is reported with file, line and pointer', async () => {
  const problems = await problemsOf({ 'flow.yaml': 'collections:\n  /acme/orders:\n    schema: true\n    key: [/id]\n' });
  assert.deepEqual(problems, [
    `flow.yaml:2:3 /collections/~1acme~1orders "/acme/orders" is not a valid catalog name: names are one or more components of Unicode letters, numbers, '-', '_' or '.' (a component may not be '.' or '..'), separated by '/', with no empty component and no leading or trailing '/'`,
  ]);
});

test('loads imports, schema files with #/pointer fragments, captures, materializations and tests', async () => {
  const dir = catalogDir({
    'flow.yaml': `
import: [orders.flow.yaml]
captures:
  acmeCo/shop/source:
    endpoint:
      connector: {image: 'ghcr.io/estuary/source-http-file:dev', config: config/http.yaml}
    bindings:
      - {resource: {stream: orders}, target: acmeCo/shop/orders}
    interval: 1m30s
  acmeCo/shop/local:
    endpoint: {local: {command: [node, x.js], config: {a: 1}, env: {K: v}}}
    bindings: [{resource: {}, target: acmeCo/shop/orders, disable: true, backfill: 2}]
    shards: {disable: true}
materializations:
  acmeCo/shop/to-sqlite:
    endpoint: {sqlite: {path: data/out.db}}
    bindings:
      - source: {name: acmeCo/shop/orders, notBefore: '2024-01-01T00:00:00Z'}
        resource: {table: orders}
        fields: {recommended: false, include: {amount: {}}, exclude: [region]}
        partitions: {include: {region_part: [EU, 3]}, exclude: {region_part: [US]}}
tests:
  acmeCo/shop/test:
    - ingest: {collection: acmeCo/shop/orders, documents: [{order_id: a, region: EU, total: 1}]}
    - verify: {collection: acmeCo/shop/orders, documents: docs.jsonl}
`,
    'orders.flow.yaml': ORDERS,
    'schemas/orders.yaml': ORDERS_SCHEMA,
    'config/http.yaml': 'url: http://127.0.0.1/x.csv\n',
    'docs.jsonl': '{"order_id":"a"}\n{"order_id":"b"}\n',
  });
  const c = await loadCatalog(join(dir, 'flow.yaml'));
  assert.equal(c.file, join(dir, 'flow.yaml'));
  assert.deepEqual(new Set(c.files), new Set(['flow.yaml', 'orders.flow.yaml', 'schemas/orders.yaml', 'config/http.yaml', 'docs.jsonl'].map((f) => join(dir, f)).filter((f) => !f.endsWith('.jsonl'))));
  const orders = c.collections.get('acmeCo/shop/orders')!;
  assert.equal(orders.source.file, join(dir, 'orders.flow.yaml'));
  assert.deepEqual(orders.spec.key, ['/order_id']);
  assert.equal(orders.spec.uuidPtr, '/_meta/uuid');
  assert.deepEqual(orders.spec.partitionFields, ['region_part']);
  const ws = orders.spec.writeSchema as { properties: Record<string, { properties?: Record<string, unknown> }> };
  assert.ok(ws.properties._meta?.properties?.uuid, 'writeSchema gains _meta/uuid');

  const cap = c.captures.get('acmeCo/shop/source')!;
  assert.deepEqual(cap.endpoint, { kind: 'connector', image: 'ghcr.io/estuary/source-http-file:dev', config: { url: 'http://127.0.0.1/x.csv' } });
  assert.equal(cap.intervalSeconds, 90);
  assert.equal(cap.disabled, false);
  const local = c.captures.get('acmeCo/shop/local')!;
  assert.deepEqual(local.endpoint, { kind: 'local', command: ['node', 'x.js'], config: { a: 1 }, env: { K: 'v' } });
  assert.equal(local.intervalSeconds, 300);
  assert.equal(local.disabled, true);
  assert.deepEqual(local.bindings, [{ resource: {}, target: 'acmeCo/shop/orders', disable: true, backfill: 2 }]);

  const mat = c.materializations.get('acmeCo/shop/to-sqlite')!;
  assert.deepEqual(mat.endpoint, { kind: 'sqlite', config: { path: join(dir, 'data/out.db') } });
  assert.deepEqual(mat.bindings[0], {
    source: 'acmeCo/shop/orders', resource: { table: 'orders' },
    partitions: { include: { region_part: ['EU', 3] }, exclude: { region_part: ['US'] } },
    fields: { recommended: false, include: { amount: {} }, exclude: ['region'] },
    disable: false, backfill: 0, notBefore: '2024-01-01T00:00:00Z',
  });
  assert.deepEqual(c.tests.get('acmeCo/shop/test')!.steps, [
    { ingest: { collection: 'acmeCo/shop/orders', documents: [{ order_id: 'a', region: 'EU', total: 1 }] } },
    { verify: { collection: 'acmeCo/shop/orders', documents: [{ order_id: 'a' }, { order_id: 'b' }] } },
  ]);
});

test('projections and inference', async () => {
  const dir = catalogDir({ 'flow.yaml': ORDERS, 'schemas/orders.yaml': ORDERS_SCHEMA });
  const c = await loadCatalog(join(dir, 'flow.yaml'));
  const p = c.collections.get('acmeCo/shop/orders')!.spec.projections!;
  assert.deepEqual(p.map((x) => x.field), ['address', 'address/city', 'address/zip', 'amount', 'flow_document', 'flow_published_at', 'order_id', 'region', 'region_part', 'total']);
  const by = new Map(p.map((x) => [x.field, x]));
  assert.deepEqual(by.get('flow_document'), { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } });
  assert.equal(by.get('flow_document')!.ptr, undefined);
  assert.deepEqual(by.get('flow_published_at')!.ptr, '/_meta/uuid');
  assert.deepEqual(by.get('flow_published_at')!.inference!.string, { format: 'date-time' });
  assert.deepEqual(by.get('order_id'), { field: 'order_id', ptr: '/order_id', isPrimaryKey: true, inference: { types: ['string'], string: { maxLength: 32 }, title: 'Order id', exists: 'MUST' } });
  assert.deepEqual(by.get('total')!.inference, { types: ['number'], numeric: { hasMinimum: true, minimum: 0 }, exists: 'MUST' });
  assert.deepEqual(by.get('amount'), { field: 'amount', ptr: '/total', explicit: true, inference: { types: ['number'], numeric: { hasMinimum: true, minimum: 0 }, exists: 'MUST' } });
  assert.deepEqual(by.get('region_part'), { field: 'region_part', ptr: '/region', explicit: true, isPartitionKey: true, inference: { types: ['string'], string: {}, exists: 'MUST' } });
  assert.deepEqual(by.get('address/city')!.inference, { types: ['string'], string: {}, exists: 'MAY' });
  assert.deepEqual(by.get('address/zip')!.inference, { types: ['null', 'string'], string: { format: 'integer' }, exists: 'MAY' });
});

test('unsupported reduce strategy names file, line and location (in a referenced schema file)', async () => {
  const problems = await problemsOf({
    'flow.yaml': 'collections:\n  a/b:\n    schema: s.yaml\n    key: [/id]\n',
    's.yaml': 'type: object\nrequired: [id]\nproperties:\n  id: {type: string}\n  n:\n    type: number\n    reduce: {strategy: sum}\n',
  });
  assert.deepEqual(problems, [
    's.yaml:7:24 /properties/n/reduce/strategy collection "a/b": strategy "sum" is not supported; the local plane supports reduce strategies "lastWriteWins" and "merge" (remove the annotation for lastWriteWins)',
  ]);
});

test('keys and partitions that may not exist or are not string/integer/boolean', async () => {
  const problems = await problemsOf({
    'flow.yaml': `collections:
  a/b:
    schema:
      type: object
      required: [id, n]
      properties: {id: {type: string}, opt: {type: string}, n: {type: number}, o: {type: object, required: [x], properties: {x: {type: integer}}}}
    key: [/id, /opt, /n, /o/x]
    projections:
      p: {location: /opt, partition: true}
`,
  });
  assert.deepEqual(problems.map((p) => p.split(' collection')[0]), [
    'flow.yaml:7:16 /collections/a~1b/key/1',
    'flow.yaml:7:22 /collections/a~1b/key/2',
    'flow.yaml:7:26 /collections/a~1b/key/3',
    'flow.yaml:9:10 /collections/a~1b/projections/p',
  ]);
  assert.match(problems[0]!, /key \/opt may not exist/);
  assert.match(problems[1]!, /key \/n may be of type number/);
  assert.match(problems[3]!, /logical partition "p" at \/opt may not exist/);
});

test('unknown sources, targets and test collections; duplicate names across files', async () => {
  const problems = await problemsOf({
    'flow.yaml': `import: [other.yaml]
collections:
  a/c: {schema: {type: object, required: [id], properties: {id: {type: string}}}, key: [/id]}
captures:
  a/cap: {endpoint: {local: {command: [x], config: {}}}, bindings: [{resource: {}, target: a/nope}]}
materializations:
  a/mat:
    endpoint: {connector: {image: 'x/materialize-sqlserver:v2', config: {}}}
    bindings:
      - {source: a/cap, resource: {table: t}}
      - {source: a/c, resource: {table: t}, fields: {exclude: [nope]}, partitions: {include: {zz: [1]}}}
tests:
  a/t: [{verify: {collection: a/missing, documents: []}}]
`,
    'other.yaml': 'collections:\n  a/c: {schema: true, key: [/id]}\n',
  });
  assert.equal(problems.length, 6, problems.join('\n'));
  assert.match(problems[0]!, /^other.yaml:2:3 \/collections\/a~1c collection "a\/c" is already defined as a collection at .*flow.yaml:3; catalog names must be unique/);
  assert.match(problems[1]!, /flow.yaml:5:.* target "a\/nope" is not a collection of this catalog/);
  assert.match(problems[2]!, /source "a\/cap" is not a collection of this catalog; it is a capture, not a collection/);
  assert.match(problems[3]!, /"zz" is not a logical partition of collection "a\/c"; it has no logical partitions/);
  assert.match(problems[4]!, /"nope" is not a field of collection "a\/c"; its fields are "flow_document", "flow_published_at", "id"/);
  assert.match(problems[5]!, /test "a\/t": verify collection "a\/missing" is not a collection/);
});

test('schema-level problems: unknown property, missing member, two endpoints, bad interval, YAML syntax', async () => {
  const problems = await problemsOf({
    'flow.yaml': `collections:
  a/c: {schema: true, key: [/id], bogus: 1}
  a/d: {schema: true}
captures:
  a/cap:
    endpoint: {local: {command: [x], config: {}}, connector: {image: i, config: {}}}
    bindings: []
    interval: 5 minutes
`,
  });
  assert.deepEqual(problems, [
    'flow.yaml:2:35 /collections/a~1c/bogus unknown property "bogus"; expected one of: schema, writeSchema, readSchema, key, projections, derive, journals, expectPubId, delete',
    'flow.yaml:3:8 /collections/a~1d missing required property "key"',
    'flow.yaml:6:15 /captures/a~1cap/endpoint must have exactly one of: connector, local',
    'flow.yaml:8:15 /captures/a~1cap/interval "5 minutes" is not a duration; write e.g. 30s, 5m, 1h or 1h30m',
  ]);
  const syntax = await problemsOf({ 'flow.yaml': 'collections:\n  a/c: {schema: true\n' });
  assert.equal(syntax.length >= 1, true);
  assert.match(syntax[0]!, /^flow.yaml:\d+:\d+ {2}.*fix the YAML syntax$/);
});

test('missing files: schema, config and import are reported at the referencing location', async () => {
  const problems = await problemsOf({
    'flow.yaml': `import: [nope.yaml]
collections:
  a/c: {schema: none.json, key: [/id]}
captures:
  a/cap: {endpoint: {connector: {image: i, config: cfg.yaml}}, bindings: []}
`,
  });
  assert.equal(problems.length, 3, problems.join('\n'));
  assert.match(problems[0]!, /^flow.yaml:1:10 \/import\/0 cannot read .*nope.yaml: file not found/);
  assert.match(problems[1]!, /^flow.yaml:3:17 \/collections\/a~1c\/schema schema: cannot read .*none.json: file not found/);
  assert.match(problems[2]!, /^flow.yaml:5:52 \/captures\/a~1cap\/endpoint\/connector\/config config of "a\/cap": cannot read .*cfg.yaml: file not found/);
});

test('schema and writeSchema/readSchema forms; derivations are refused', async () => {
  const problems = await problemsOf({
    'flow.yaml': `collections:
  a/both: {schema: true, writeSchema: true, key: [/id]}
  a/half: {writeSchema: true, key: [/id]}
  a/der: {schema: true, key: [/id], derive: {using: {sqlite: {}}}}
`,
  });
  assert.equal(problems.length, 3, problems.join('\n'));
  assert.match(problems[0]!, /give either "schema" or both "writeSchema" and "readSchema", not both forms/);
  assert.match(problems[1]!, /missing "readSchema" \(writeSchema is given\)/);
  assert.match(problems[2]!, /derivations are not supported by the local plane/);

  const dir = catalogDir({
    'flow.yaml': `collections:
  a/rw:
    writeSchema: {type: object, required: [id], properties: {id: {type: string}}}
    readSchema: {type: object, required: [id, n], properties: {id: {type: string}, n: {type: integer}}}
    key: [/id]
`,
  });
  const c = await loadCatalog(join(dir, 'flow.yaml'));
  const spec = c.collections.get('a/rw')!.spec;
  assert.deepEqual((spec.readSchema as { required: string[] }).required, ['id', 'n']);
  assert.deepEqual(spec.projections!.find((p) => p.field === 'n')!.inference, { types: ['integer'], exists: 'MUST' });
});
