// onIncompatibleSchemaChange (issue 15.6) with Flow's meaning: when the connector's validate says a selected field
// is UNSATISFIABLE (its schema changed in a way the destination cannot take), the binding's action — else the
// materialization's, else backfill — is taken: backfill the binding, disable it, disable the task, or abort the
// publication. Runs the real test materialization (its `unsatisfiable` option) as a child process.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { BuildError, buildMaterialization } from '../../src/build/build.ts';
import { loadCatalog } from '../../src/catalog/index.ts';
import { Launcher } from '../../src/tasks/launcher.ts';

const BIN = fileURLToPath(new URL('../../../runtime/bin/sluice-test-materialize.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-incompatible-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function build(materializationAction: string | undefined, bindingAction: string | undefined) {
  const file = join(dir, `flow-${++n}.yaml`);
  writeFileSync(file, `
collections:
  acme/things:
    schema: {type: object, properties: {id: {type: string}, n: {type: integer}}, required: [id]}
    key: [/id]
  acme/others:
    schema: {type: object, properties: {id: {type: string}}, required: [id]}
    key: [/id]
materializations:
  acme/m:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(BIN)}]
        config: {unsatisfiable: [n]}
${materializationAction ? `    onIncompatibleSchemaChange: ${materializationAction}\n` : ''}    bindings:
      - source: acme/things
        resource: {table: things}
${bindingAction ? `        onIncompatibleSchemaChange: ${bindingAction}\n` : ''}      - source: acme/others
        resource: {table: others}
`);
  const catalog = await loadCatalog(file);
  return buildMaterialization(catalog, catalog.materializations.get('acme/m')!, { launcher: new Launcher(), version: 'v1', apply: false });
}

describe('onIncompatibleSchemaChange', () => {
  it('default (backfill): the binding is backfilled and built with the field, under a new state key', async () => {
    const built = await build(undefined, undefined);
    assert.equal(built.incompatible.disabledTask, undefined);
    assert.equal(built.spec.bindings?.length, 2);
    const things = built.spec.bindings![0]!;
    assert.equal(things.backfill, 1);
    assert.equal(things.stateKey, 'things.v1');
    assert.deepEqual(things.fieldSelection?.values, ['flow_published_at', 'n']);
    assert.equal(built.incompatible.notes.length, 1);
    assert.match(built.incompatible.notes[0]!, /^binding 0 \(acme\/things\): field "n" is incompatible with the destination: the column for "n" cannot hold its new type; backfill to re-create the table: backfilled, backfill 0 → 1/);
  });
  it("disableBinding (the binding's own setting wins over the materialization's)", async () => {
    const built = await build('abort', 'disableBinding');
    assert.deepEqual(built.spec.bindings?.map((b) => b.resourcePath?.[0]), ['others']);
    assert.equal(built.def.bindings[0]!.disable, true);
    assert.match(built.incompatible.notes[0]!, /binding 0 \(acme\/things\): .*: binding disabled \(onIncompatibleSchemaChange: disableBinding\)$/);
  });
  it('disableTask: the materialization is built with no bindings and marked not to run', async () => {
    const built = await build('disableTask', undefined);
    assert.match(built.incompatible.disabledTask ?? '', /binding 0 \(acme\/things\): field "n" is incompatible .*\(onIncompatibleSchemaChange: disableTask\)$/);
  });
  it('abort: the publication fails, naming the field and the setting', async () => {
    await assert.rejects(build('abort', undefined), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(err.message, /^materialization "acme\/m" binding 0 \(acme\/things\): field "n" is incompatible with the destination: .* \(onIncompatibleSchemaChange: abort\): increment the binding's backfill/);
      return true;
    });
  });
});
