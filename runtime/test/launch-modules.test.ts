// What the launcher every bin runs first (launch.js) loads on the way to the bin's own modules when no
// re-execution is needed: each module is CPU of every connector start (issue 16). node:child_process (~8 ms) is
// for re-executing on the pinned Node only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const LAUNCH = new URL('../src/launch.js', import.meta.url).href;

test('launch: a bin started on a supported Node with its flags loads no node:child_process', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A bin with no Node flags declared (its package.json declares none), so no re-execution is needed.
  writeFileSync(join(dir, 'package.json'), '{"name": "x", "type": "module"}');
  const bin = join(dir, 'bin.js');
  writeFileSync(bin, `import { runOnSupportedNode } from ${JSON.stringify(LAUNCH)};
await runOnSupportedNode(import.meta.url);
process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => /child_process/.test(m))));
`);
  const out = execFileSync(process.execPath, [bin], { encoding: 'utf8', timeout: 60_000 });
  assert.deepEqual(JSON.parse(out), []);
});
