#!/usr/bin/env -S node --max-semi-space-size=4 --max-old-space-size=1024
// The sluice CLI. Commands: see plane/src/cli/main.ts. Plain JavaScript so that any Node can start it: the
// launcher re-executes it on the pinned Node 24 when this one cannot run the TypeScript sources.
// The V8 flags above bound the plane's heap: on a 24 GB machine V8 otherwise sizes the young generation at
// 128 MB and grows the old one lazily (measured on bench/pipeline.ts, 100k rows: peak RSS 400 → 216 MB, CPU
// no higher). `npm start` passes the same flags (package.json); a host running `node plane/bin/sluice.js`
// itself should pass them too.
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
