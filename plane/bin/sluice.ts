#!/usr/bin/env node
// The sluice CLI. Commands: see plane/src/cli/main.ts.
import { main } from '../src/cli/main.ts';

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`sluice: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
}
