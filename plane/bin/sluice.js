#!/usr/bin/env node
// The sluice CLI. Commands: see plane/src/cli/main.ts. Plain JavaScript so that any Node can start it: the
// launcher re-executes it on the pinned Node 24 when this one cannot run the TypeScript sources.
// @ts-check
import { runOnSupportedNode } from '@sluice/runtime/launch';

await runOnSupportedNode(import.meta.url);
const { main } = await import('../src/cli/main.ts');
const { reportCliError } = await import('../src/cli/errors.ts');

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.exitCode = reportCliError(err);
}
