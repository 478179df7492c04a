// `sluice test --catalog flow.yaml`: loads the catalog and runs its `tests` (each against a temporary
// journal store: ingest, then verify by reduction). Prints one line per test; exit 1 if any fails.
import { resolve } from 'node:path';
import { loadCatalog } from '../catalog/load.ts';
import { runCatalogTest } from '../tasks/catalog-tests.ts';
import { parse, runCommand, UsageError } from './plane-common.ts';

export const description = "run a catalog's tests (ingest, then verify the reduced documents)";
const USAGE = `usage: sluice test --catalog flow.yaml

Runs the catalog's tests, each against a temporary journal store (ingest the documents, then verify the
collection's reduced documents); the data dir is not used. One line per test; exit 1 if any fails.
  --catalog FILE  the flow.yaml (required)
  -h, --help      this help`;

export async function testCommand(argv: string[], out: (line: string) => void = (l) => process.stdout.write(l + '\n')): Promise<number> {
  return runCommand(async () => {
    const { values } = parse(argv, { catalog: { type: 'string' } }, USAGE);
    if (!values.catalog) throw new UsageError(`--catalog is required\n${USAGE}`);
    const catalog = await loadCatalog(resolve(values.catalog));
    if (catalog.tests.size === 0) {
      out(`no tests in ${values.catalog}`);
      return 0;
    }
    let failed = 0;
    for (const def of catalog.tests.values()) {
      const started = Date.now();
      const r = runCatalogTest(catalog, def);
      if (r.passing) {
        out(`✔ ${r.name} (${Date.now() - started} ms)`);
      } else {
        failed++;
        out(`✖ ${r.name}: ${r.error ?? 'failed'}`);
      }
    }
    out(`${catalog.tests.size - failed} passed, ${failed} failed`);
    return failed ? 1 : 0;
  });
}
