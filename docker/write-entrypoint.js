// Writes a connector image's entrypoint at build time: a shell script that execs the image's Node on the bin
// with the Node flags its package.json declares (`sluice.nodeFlags`, read by the runtime's launcher), so a
// container start does not pay the launcher's re-execution, and the flags have one source.
// Usage (in a Dockerfile's final stage): node /app/docker/write-entrypoint.js <bin> <entrypoint file>
// @ts-check
import { chmodSync, writeFileSync } from 'node:fs';
import { nodeFlagsOf } from '../runtime/src/launch.js';

const [bin, out] = process.argv.slice(2);
if (bin === undefined || out === undefined) {
  process.stderr.write('usage: node docker/write-entrypoint.js <bin> <entrypoint file>\n');
  process.exit(2);
}
/** @param {string} word */
const quote = (word) => `'${word.replaceAll("'", `'\\''`)}'`;
const command = [process.execPath, ...nodeFlagsOf(bin), bin].map(quote).join(' ');
writeFileSync(out, `#!/bin/sh\n# Written at image build by docker/write-entrypoint.js from the bin's package.json (sluice.nodeFlags).\nexec ${command} "$@"\n`);
chmodSync(out, 0o755);
