#!/usr/bin/env -S node --max-semi-space-size=4 --max-old-space-size=1024
// The sluice CLI. Commands: see plane/src/cli/main.ts. Plain JavaScript so that any Node can start it: the
// launcher re-executes it on the pinned Node 24 when this one cannot run the TypeScript sources.
// Its V8 flags are declared in plane/package.json (`sluice.nodeFlags`), repeated in the shebang above (env -S:
// run from PATH on Node 24 it starts once; test/cli-launcher.test.ts keeps the two equal), and applied by the
// launcher (the same process re-executed with them when they are missing). They bound the plane's heap: on a
// 24 GB machine V8 otherwise sizes the young generation at 128 MB and grows the old one lazily (measured on
// bench/pipeline.ts, 100k rows: peak RSS 400 → 216 MB, CPU no higher).
// @ts-check
import { runOnSupportedNode } from '@sluice/runtime/launch';

await runOnSupportedNode(import.meta.url);
// Before any command: a stop signal never leaves a connector behind (plane/src/cli/stop-signals.ts).
const { installStopSignals } = await import('../src/cli/stop-signals.ts');
installStopSignals();
const { main } = await import('../src/cli/main.ts');
const { reportCliError } = await import('../src/cli/errors.ts');

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.exitCode = reportCliError(err);
}
