// Node flags as data: a bin's package.json declares them (`sluice.nodeFlags`); the launcher re-executes a bin
// started without them, in the same process (same pid, same stdio), and leaves a host's own choice alone.
// Real child processes: a bin in a temporary package that prints what its Node was started with.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { missingNodeFlags, nodeFlagsOf } from '../src/launch.js';

const LAUNCH = pathToFileURL(new URL('../src/launch.js', import.meta.url).pathname).href;
const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** A package whose bin prints {pid, execArgv, marker} as JSON; `flags` is its sluice.nodeFlags. */
function pkg(flags: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-node-flags-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', type: 'module', sluice: { nodeFlags: flags } }));
  mkdirSync(join(dir, 'bin'));
  const bin = join(dir, 'bin', 'x.js');
  writeFileSync(bin, `import { runOnSupportedNode } from ${JSON.stringify(LAUNCH)};
await runOnSupportedNode(import.meta.url);
process.stdout.write(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, marker: process.env.SLUICE_NODE_FLAGS_APPLIED ?? null, args: process.argv.slice(2) }));
`);
  return bin;
}

function run(args: string[]): { pid: number; execArgv: string[]; marker: string | null; args: string[]; childPid: number } {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' };
  delete env['NODE_OPTIONS'];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env });
  assert.equal(r.status, 0, `the bin failed: ${r.stderr}`);
  return { ...JSON.parse(r.stdout), childPid: r.pid };
}

describe('connector Node flags as data', () => {
  it('a malformed sluice.nodeFlags is refused, naming the file', () => {
    const bin = pkg(['--ok=1', 'not-a-flag']);
    assert.throws(() => nodeFlagsOf(bin), { message: /package\.json: "sluice\.nodeFlags" must be a list of Node flags such as "--max-old-space-size=512"$/ });
    assert.throws(() => execFileSync(process.execPath, [bin], { stdio: 'pipe' }), /sluice\.nodeFlags/);
  });

  it('reads the nearest package.json above the bin; none declared is none', () => {
    assert.deepEqual(nodeFlagsOf(pkg(['--max-old-space-size=300'])), ['--max-old-space-size=300']);
    assert.deepEqual(nodeFlagsOf(new URL('../bin/sluice-test-capture.js', import.meta.url).href), []);
    assert.deepEqual(nodeFlagsOf(new URL('../../connectors/source-http-file/bin/source-http-file.js', import.meta.url).pathname), ['--max-semi-space-size=2', '--max-old-space-size=512']);
  });

  it('`node <bin>` without the flags runs with them, in the same process, arguments kept', () => {
    const out = run([pkg(['--max-semi-space-size=2', '--max-old-space-size=300']), 'a', '--b']);
    assert.deepEqual(out.execArgv, ['--max-semi-space-size=2', '--max-old-space-size=300']);
    assert.equal(out.pid, out.childPid, 'the launcher re-executes in place (execve), not as a child');
    assert.equal(out.marker, null, 'the re-execution marker does not reach programs the bin starts');
    assert.deepEqual(out.args, ['a', '--b']);
  });

  it('flags a host passes are not added again, and a host\'s own value wins', () => {
    const bin = pkg(['--max-semi-space-size=2', '--max-old-space-size=300']);
    assert.deepEqual(run(['--max-semi-space-size=2', '--max-old-space-size=300', bin]).execArgv, ['--max-semi-space-size=2', '--max-old-space-size=300']);
    assert.deepEqual(run(['--max-old-space-size=700', bin]).execArgv, ['--max-old-space-size=700', '--max-semi-space-size=2']);
  });

  it('missingNodeFlags compares by flag name', () => {
    assert.deepEqual(missingNodeFlags([]), []);
    assert.deepEqual(missingNodeFlags(['--definitely-not-given=1']), ['--definitely-not-given=1']);
  });
});
