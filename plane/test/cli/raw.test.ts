// `sluice raw` against the runtime's test connectors (real processes) and the built-in connectors.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sluice, TEST_CAPTURE, TEST_MATERIALIZE } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-raw-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const node = process.execPath;
const capture = ['--', node, TEST_CAPTURE];
const materialize = ['--', node, TEST_MATERIALIZE];

const captureConfig = file('capture.yaml', 'apiKey: k\ncount: 2\n');
const captureBindings = file('capture-bindings.yaml', '- resource: {name: users}\n  collection: acme/users\n- resource: {name: orders, prefix: o}\n  collection: acme/orders\n');
const matConfig = file('mat.json', '{"prefix":"t_"}');
const matBindings = file('mat-bindings.yaml', [
  '- resource: {table: users}',
  '  collection: acme/users',
  '  key: [/id]',
  '  fields: {values: [name, address]}',
].join('\n'));
const fixture = file('fixture.jsonl', [
  '["acme/users",{"id":1,"name":"a","address":{"city":"x"}}]',
  '["acme/users",{"id":2,"name":"b"}]',
  '["acme/users",{"id":2,"name":"b2"}]',
  '{"commit":true}',
  '["acme/users",{"id":1,"name":"a2"}]',
  '',
].join('\n'));

describe('sluice raw: bad usage (exit 2)', () => {
  const cases: [string, string[], string][] = [
    ['unknown connector', ['raw', 'source-ftp', 'spec'], 'sluice raw: unknown connector "source-ftp": use one of source-http-file, materialize-sqlserver, materialize-sqlite, or `-- <command> [args...]`'],
    ['unknown rpc', ['raw', 'materialize-sqlite', 'pull'], 'sluice raw: unknown rpc "pull": use one of spec, discover, validate, apply, capture, materialize'],
    ['missing rpc', ['raw', 'materialize-sqlite'], 'sluice raw: expected <connector> <rpc>, got materialize-sqlite'],
    ['nothing after --', ['raw', 'spec', '--'], 'sluice raw: nothing after `--`: give the connector command'],
    ['validate of a command needs --protocol', ['raw', 'validate', ...capture], 'sluice raw: validate: say whether the command is a capture or a materialization with --protocol capture|materialize'],
    ['materialize needs a fixture', ['raw', 'materialize-sqlite', 'materialize'], 'sluice raw: materialize needs --fixture FILE'],
    ['discover on a materialization', ['raw', 'materialize-sqlite', 'discover'], 'sluice raw: discover is a capture rpc, but the connector is a materialize connector'],
    ['--dry-run outside apply', ['raw', 'spec', '--dry-run', ...capture], 'sluice raw: --dry-run applies only to apply'],
    ['unknown option', ['raw', 'spec', '--colour', ...capture], 'sluice raw: unknown option --colour'],
  ];
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const r = await sluice(args);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, '');
      assert.equal(r.stderrLines[0], message);
      assert.ok(r.stderr.includes('usage: sluice raw <connector> <rpc> [options]'));
    });
  }
});

describe('sluice raw: failures (exit 1, one clear line)', () => {
  it('a missing --config file', async () => {
    const r = await sluice(['raw', 'discover', '--config', join(dir, 'nope.yaml'), ...capture]);
    assert.equal(r.code, 1);
    assert.deepEqual(r.stderrLines, [`sluice raw: cannot read the --config file ${join(dir, 'nope.yaml')}: ENOENT`]);
  });
  it('an invalid config is the connector\'s own error line', async () => {
    const bad = file('bad.yaml', 'apiKey: 5\npassword: hunter2\n');
    const r = await sluice(['raw', 'discover', '--config', bad, ...capture]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderrLines.at(-1), 'sluice raw: Invalid endpoint config (2 problems): /password is not an allowed property; allowed: apiKey, greeting, count, failWith, delayMs; /apiKey must be of type string');
    assert.doesNotMatch(r.stderr, /hunter2/);
  });
  it('a fixture naming a collection no binding reads', async () => {
    const stray = file('stray.jsonl', '["acme/other",{"id":1}]\n');
    const r = await sluice(['raw', 'materialize', '--protocol', 'materialize', '--bindings', matBindings, '--fixture', stray, ...materialize]);
    assert.equal(r.code, 1);
    assert.equal(r.stderrLines.at(-1), `sluice raw: --fixture ${stray}:1: collection "acme/other" is not the source of any binding (sources: acme/users)`);
  });
  it('a malformed fixture line', async () => {
    const bad = file('bad.jsonl', '["acme/users",{"id":1}]\n{"commit":false}\n');
    const r = await sluice(['raw', 'materialize', '--protocol', 'materialize', '--bindings', matBindings, '--fixture', bad, ...materialize]);
    assert.equal(r.code, 1);
    assert.equal(r.stderrLines.at(-1), `sluice raw: --fixture ${bad}:2: expected ["<collection>", {document}] or {"commit": true}`);
  });
});

describe('sluice raw: against a command', () => {
  it('spec', async () => {
    const r = await sluice(['raw', 'spec', ...capture]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.lines.length, 1);
    assert.equal(JSON.parse(r.lines[0]!).spec.protocol, 3032023);
  });
  it('discover', async () => {
    const r = await sluice(['raw', 'discover', '--config', captureConfig, ...capture]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.lines[0]!).discovered.bindings.map((b: { recommendedName: string }) => b.recommendedName), ['alpha', 'beta']);
  });
  it('validate (capture)', async () => {
    const r = await sluice(['raw', 'validate', '--protocol', 'capture', '--config', captureConfig, '--bindings', captureBindings, ...capture]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines, ['{"validated":{"bindings":[{"resourcePath":["users"]},{"resourcePath":["orders"]}]}}']);
  });
  it('capture prints every response line; state from --state', async () => {
    const state = file('state.json', '{"bindingStateV1":{"users":{"next":10}}}');
    const withKeys = file('capture-keys.yaml', '- resource: {name: users}\n  stateKey: users\n');
    const r = await sluice(['raw', 'capture', '--config', captureConfig, '--bindings', withKeys, '--state', state, ...capture]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines, [
      '{"opened":{}}',
      '{"captured":{"doc":{"id":"users-10","greeting":"hello","n":10}}}',
      '{"captured":{"doc":{"id":"users-11","greeting":"hello","n":11}}}',
      '{"checkpoint":{"state":{"updated":{"bindingStateV1":{"users":{"next":12}}},"mergePatch":true}}}',
    ]);
    const summary = JSON.parse(r.stderrLines.at(-1)!);
    assert.deepEqual(summary.fields, { documents: 2, checkpoints: 1, state: { bindingStateV1: { users: { next: 12 } } } });
  });
  it('capture --state-out writes the state of the last checkpoint, which --state resumes from', async () => {
    const withKeys = file('capture-keys-out.yaml', '- resource: {name: users}\n  stateKey: users\n');
    const out = join(dir, 'state-out.json');
    const r = await sluice(['raw', 'capture', '--config', captureConfig, '--bindings', withKeys, '--state-out', out, ...capture]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), { bindingStateV1: { users: { next: 2 } } });
    const again = await sluice(['raw', 'capture', '--config', captureConfig, '--bindings', withKeys, '--state', out, '--state-out', out, ...capture]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.lines[1], '{"captured":{"doc":{"id":"users-2","greeting":"hello","n":2}}}');
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), { bindingStateV1: { users: { next: 4 } } });
  });
  it('--bindings takes Flow\'s MaterializationSpec JSON (resourceConfig, collection.projections, fieldSelection)', async () => {
    const spec = file('mat-spec.json', JSON.stringify({
      name: 'acme/mat', connectorType: 'LOCAL', config: {},
      bindings: [{
        resourceConfig: { table: 'users' }, resourcePath: ['users'],
        collection: {
          name: 'acme/users', key: ['/id'], writeSchema: { type: 'object' },
          projections: [
            { field: 'id', ptr: '/id', isPrimaryKey: true, inference: { types: ['integer'], exists: 'MUST' } },
            { field: 'name', ptr: '/name', inference: { types: ['string'], exists: 'MAY' } },
            { field: 'flow_document', ptr: '', inference: { types: ['object'], exists: 'MUST' } },
          ],
        },
        fieldSelection: { keys: ['id'], values: ['name'], document: 'flow_document' },
      }],
    }));
    const r = await sluice(['raw', 'materialize', '--protocol', 'materialize', '--config', matConfig, '--bindings', spec, '--fixture', fixture, ...materialize]);
    assert.equal(r.code, 0, r.stderr);
    const commits = r.stderrLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'committed transaction').map((l) => l.fields.stores);
    assert.deepEqual(commits, [2, 1]);
  });
  it('a shorthand binding with a collection spec object is refused naming the binding by its resource', async () => {
    const bad = file('bad-bindings.yaml', '- resource: {table: users}\n  collection: {name: acme/users}\n');
    const r = await sluice(['raw', 'validate', '--protocol', 'materialize', '--config', matConfig, '--bindings', bad, ...materialize]);
    assert.equal(r.code, 1);
    assert.equal(r.stderrLines.at(-1), `sluice raw: --bindings ${bad}: binding 0 ({"table":"users"}): "collection" must be a collection name; a collection spec object belongs in Flow's binding form, with "resourceConfig"`);
  });
  it('materialize drives transactions from the fixture', async () => {
    const r = await sluice(['raw', 'materialize', '--protocol', 'materialize', '--config', matConfig, '--bindings', matBindings, '--fixture', fixture, ...materialize]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines, [
      '{"opened":{}}',
      '{"acknowledged":{}}',
      '{"flushed":{}}',
      '{"startedCommit":{"state":{"updated":{"lastCommit":1},"mergePatch":true}}}',
      '{"acknowledged":{"state":{"updated":{"committed":1},"mergePatch":true}}}',
      '{"loaded":{"doc":{"id":1,"name":"a","address":{"city":"x"}}}}',
      '{"flushed":{}}',
      '{"startedCommit":{"state":{"updated":{"lastCommit":2},"mergePatch":true}}}',
      '{"acknowledged":{"state":{"updated":{"committed":2},"mergePatch":true}}}',
    ]);
    const commits = r.stderrLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'committed transaction').map((l) => l.fields.stores);
    assert.deepEqual(commits, [2, 1], 'id 2 was reduced to one store in the first transaction');
  });
  it('apply --dry-run sets dryRun on the request', async () => {
    const r = await sluice(['raw', 'apply', '--dry-run', '--protocol', 'materialize', '--config', matConfig, '--bindings', matBindings, ...materialize]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines, ['{"applied":{"actionDescription":"would create t_users"}}']);
  });
  it('validate (materialize) sees projections built from the bindings file', async () => {
    const r = await sluice(['raw', 'validate', '--protocol', 'materialize', '--config', matConfig, '--bindings', matBindings, ...materialize]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.lines[0]!).validated.bindings[0].resourcePath, ['t_users']);
    // The catalog's projections: flow_published_at too, as Flow builds every collection.
    assert.deepEqual(Object.keys(JSON.parse(r.lines[0]!).validated.bindings[0].constraints), ['address', 'flow_document', 'flow_published_at', 'id', 'name']);
  });
  it('specs are built as for a catalog: the state key comes from the validated resource path', async () => {
    const keyed = file('mat-keyed.yaml', '- resource: {table: users}\n  collection: acme/users\n  stateKey: acme/users\n');
    const r = await sluice(['raw', 'apply', '--protocol', 'materialize', '--config', matConfig, '--bindings', keyed, ...materialize]);
    assert.equal(r.code, 1);
    assert.equal(r.stderrLines.at(-1), 'sluice raw: binding 0 ({"table":"users"}): "stateKey" is "acme/users", but the state key of resource path ["t_users"] is "t_users" (Flow\'s rule: the path\'s components percent-encoded, joined by %2F, .v<backfill> after a backfill); remove it');
  });
  it('field selection is the build\'s: a value that is not a projection is refused naming it', async () => {
    const bad = file('mat-bad-field.yaml', '- resource: {table: users}\n  collection: acme/users\n  schema: {type: object, required: [id], properties: {id: {type: integer}}}\n  fields: {values: [nmae]}\n');
    const r = await sluice(['raw', 'apply', '--protocol', 'materialize', '--config', matConfig, '--bindings', bad, ...materialize]);
    assert.equal(r.code, 1);
    assert.match(r.stderrLines.at(-1)!, /^sluice raw: materialization "sluice\/raw" binding 0 \(acme\/users\): `fields.include` names "nmae", which is not a projection of collection "acme\/users"$/);
  });
  it('every binding with a resourcePath: an offline build, no validate (a connector without one still applies)', async () => {
    const offline = file('mat-offline.yaml', '- resource: {table: users}\n  resourcePath: [t_users]\n  collection: acme/users\n  fields: {values: [name]}\n');
    const noValidate = file('no-validate.ts', [
      "import { createInterface } from 'node:readline';",
      'for await (const line of createInterface({ input: process.stdin })) {',
      '  const req = JSON.parse(line);',
      "  if (!req.apply) { process.stderr.write('validate must not run\\n'); process.exit(1); }",
      '  const b = req.apply.materialization.bindings[0];',
      '  process.stdout.write(JSON.stringify({ applied: { actionDescription: `${b.stateKey} ${b.fieldSelection.keys} ${b.fieldSelection.values} ${b.fieldSelection.document}` } }) + "\\n");',
      '}',
    ].join('\n'));
    const r = await sluice(['raw', 'apply', '--protocol', 'materialize', '--bindings', offline, '--', node, noValidate]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines, ['{"applied":{"actionDescription":"t_users id name flow_document"}}']);
  });
});

describe('sluice raw: built-in connectors', () => {
  for (const [name, pointers] of [['source-http-file', true], ['materialize-sqlite', false], ['materialize-sqlserver', false]] as const) {
    it(`${name} spec`, async () => {
      const r = await sluice(['raw', name, 'spec']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.lines.length, 1);
      const spec = JSON.parse(r.lines[0]!).spec;
      assert.equal(spec.protocol, 3032023);
      assert.equal('resourcePathPointers' in spec, pointers);
    });
  }
});

