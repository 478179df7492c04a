// examples/quickstart is the quickstart as a catalog to run by hand: it loads, and it names the same specs as the
// template `sluice start` fills in (plane/src/quickstart/flow.yaml), which product code reads — never examples/.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../plane/src/catalog/load.ts';
import { QUICKSTART_TEMPLATE } from '../plane/src/quickstart/index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('examples/quickstart/flow.yaml loads, with the template\'s specs', async () => {
  const example = await loadCatalog(join(ROOT, 'examples', 'quickstart', 'flow.yaml'));
  const names = (c: typeof example) => [...c.collections.keys(), ...c.captures.keys(), ...c.materializations.keys(), ...c.tests.keys()].sort();
  const template = readFileSync(QUICKSTART_TEMPLATE, 'utf8');
  for (const name of names(example)) assert.ok(template.includes(`  ${name}:`), `${name} is in the template too`);
  const db = example.materializations.get('quickstart/to-sqlite')?.endpoint;
  assert.deepEqual(db, { kind: 'sqlite', config: { path: join(ROOT, 'examples', 'quickstart', 'rides.db') } });
});

test('product code does not import examples/', () => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) { if (e.name !== 'node_modules' && e.name !== 'test') walk(p); continue; }
      if (/\.(ts|js)$/.test(e.name) && /from ['"][^'"]*examples\//.test(readFileSync(p, 'utf8'))) offenders.push(p.slice(ROOT.length));
    }
  };
  for (const top of ['runtime', 'connectors', 'plane']) walk(join(ROOT, top));
  assert.deepEqual(offenders, []);
});
