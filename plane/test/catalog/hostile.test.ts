// Hostile catalogs (issue 17.10): imports and referenced files must be regular files under the size limit
// (a device, FIFO or directory is refused without being read — `/dev/zero` used to exhaust memory and a
// FIFO to hang), and names with empty, `.` or `..` components or control characters are refused, echoed
// escaped.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, ftruncateSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CatalogError, formatProblem, loadCatalog } from '../../src/catalog/index.ts';
import { MAX_SOURCE_FILE_BYTES } from '../../src/catalog/source-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-hostile-catalog-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function messages(yaml: string): Promise<string[]> {
  const file = join(dir, `flow-${++n}.yaml`);
  writeFileSync(file, yaml);
  try {
    await loadCatalog(file);
  } catch (err) {
    assert.ok(err instanceof CatalogError, String(err));
    return err.problems.map(formatProblem).map((m) => m.slice(file.length + 1));
  }
  assert.fail('expected a CatalogError');
}

const COLLECTION = 'collections:\n  acme/ok:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n';

describe('catalog files are regular files under a size limit', () => {
  it('import: [/dev/zero] is refused without reading it', async () => {
    assert.deepEqual(await messages(`import: [/dev/zero]\n${COLLECTION}`), [
      '1:10: /import/0: cannot read /dev/zero: it is a device; only regular files can be read (imports, schemas, configs and documents)',
    ]);
  });
  it('a FIFO is refused without waiting for a writer', async () => {
    const fifo = join(dir, 'pipe.yaml');
    execFileSync('mkfifo', [fifo]);
    assert.deepEqual(await messages(`import: [pipe.yaml]\n${COLLECTION}`), [
      `1:10: /import/0: cannot read ${fifo}: it is a FIFO; only regular files can be read (imports, schemas, configs and documents)`,
    ]);
  });
  it('a directory, and a file over the limit (sparse, so nothing is written)', async () => {
    const big = join(dir, 'big.yaml');
    const fd = openSync(big, 'w');
    ftruncateSync(fd, MAX_SOURCE_FILE_BYTES + 1);
    closeSync(fd);
    assert.deepEqual(await messages(`import: [${dir}, big.yaml]\n${COLLECTION}`), [
      `1:10: /import/0: cannot read ${dir}: it is a directory; only regular files can be read (imports, schemas, configs and documents)`,
      `1:${'import: ['.length + dir.length + 3}: /import/1: cannot read ${big}: it is ${MAX_SOURCE_FILE_BYTES + 1} bytes; files of more than ${MAX_SOURCE_FILE_BYTES} bytes (64 MiB) are refused`,
    ]);
  });
  it('a schema file and test documents are held to the same rule', async () => {
    const out = await messages([
      COLLECTION + '  acme/c:', '    schema: /dev/zero', '    key: [/id]',
      'tests:', '  acme/t:', '    - ingest: {collection: acme/ok, documents: /dev/zero}', '',
    ].join('\n'));
    assert.ok(out.some((m) => m.includes('/collections/acme~1c/schema: schema: cannot read /dev/zero: it is a device')), out.join('\n'));
    assert.ok(out.some((m) => m.includes('/tests/acme~1t/0/ingest/documents') && m.includes('cannot read /dev/zero: it is a device')), out.join('\n'));
  });
});

describe('catalog names', () => {
  const RULE = "one or more components of Unicode letters, numbers, '-', '_' or '.' (a component may not be '.' or '..'), separated by '/', with no empty component and no leading or trailing '/'";
  for (const name of ['acme/./orders', 'acme/../orders', '..', '.', 'acme/..', 'acme//orders', '/acme', 'acme/']) {
    it(`refuses ${JSON.stringify(name)}`, async () => {
      const out = await messages(`collections:\n  ${JSON.stringify(name)}:\n    schema: {type: object, properties: {id: {type: string}}, required: [id]}\n    key: [/id]\n`);
      assert.equal(out.length, 1, out.join('\n'));
      assert.ok(out[0]!.endsWith(`${JSON.stringify(name)} is not a valid catalog name: names are ${RULE}`), out[0]);
    });
  }
  it('accepts dots inside components', async () => {
    const file = join(dir, `flow-${++n}.yaml`);
    writeFileSync(file, COLLECTION.replace('acme/ok', 'acme.co/v1.2/.hidden/orders..old'));
    const catalog = await loadCatalog(file);
    assert.deepEqual([...catalog.collections.keys()], ['acme.co/v1.2/.hidden/orders..old']);
  });
  it('echoes control and bidi characters escaped, never raw', async () => {
    const out = await messages('collections:\n  "acme/bell\\a\\e[2Jx\\u202Eevil":\n    schema: {type: object}\n    key: [/id]\nmaterializations:\n  acme/m:\n    endpoint: {sqlite: {path: x.db}}\n    bindings: [{source: "acme/\\x1b[31mred", resource: {table: t}}]\n');
    const all = out.join('\n');
    // eslint-disable-next-line no-control-regex -- looking for raw control characters is the point
    assert.doesNotMatch(all, /[\u0000-\u0008\u000b-\u001f\u007f\u202e]/u, 'no raw control characters');
    assert.match(all, /"acme\/bell\\u0007\\u001b\[2Jx\\u202eevil" is not a valid catalog name/);
    assert.match(all, /"acme\/\\u001b\[31mred" is not a valid catalog name/);
  });
});
