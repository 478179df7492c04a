// Node's module compile cache, turned on by the launcher every bin runs first (launch.js): it lives in this
// user's private cache directory, never at Node's shared default (<tmpdir>/node-compile-cache), and is not used
// from a directory that others can write. Each case runs a fresh Node process, as a bin starts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const LAUNCH = new URL('../src/launch.js', import.meta.url).href;
const CHILD = `
import { enablePrivateCompileCache } from ${JSON.stringify(LAUNCH)};
import { getCompileCacheDir } from 'node:module';
const used = enablePrivateCompileCache();
await import(${JSON.stringify(new URL('../src/protocol/uuid.ts', import.meta.url).href)});
process.stdout.write(JSON.stringify({ used: used ?? null, dir: getCompileCacheDir() ?? null }));
`;

function run(env: Record<string, string>): { used: string | null; dir: string | null } {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('NODE_') && k !== 'SLUICE_COMPILE_CACHE') base[k] = v;
  // A deadline: a start that never returns (see the /proc case below) fails here, naming what was awaited.
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', CHILD], { env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 })) as { used: string | null; dir: string | null };
}

describe('the compile cache the launcher turns on', () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-compile-cache-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('is created 0700 under $XDG_CACHE_HOME/sluice and holds the compiled modules', () => {
    const xdg = join(root, 'xdg');
    const got = run({ XDG_CACHE_HOME: xdg });
    const want = join(xdg, 'sluice', 'node-compile-cache');
    // Node keeps its entries in a per-version subdirectory of the one given.
    assert.equal(got.used, want);
    assert.ok(got.dir?.startsWith(`${want}/`), `cache in ${got.dir}, expected under ${want}`);
    assert.equal(statSync(want).mode & 0o777, 0o700);
    assert.ok(readdirSync(got.dir!).length > 0, 'the cache directory holds entries after a start');
  });

  it('is not used from a directory others can write, nor from one under such a directory', () => {
    const open = join(root, 'open');
    mkdirSync(open, { recursive: true });
    chmodSync(open, 0o777);
    assert.deepEqual(run({ XDG_CACHE_HOME: open }), { used: null, dir: null });
    const planted = join(root, 'planted');
    mkdirSync(planted, { recursive: true });
    chmodSync(planted, 0o757);
    assert.deepEqual(run({ SLUICE_COMPILE_CACHE: planted }), { used: null, dir: null });
  });

  it('stays off with NODE_DISABLE_COMPILE_CACHE=1, and follows an explicit NODE_COMPILE_CACHE', () => {
    assert.deepEqual(run({ XDG_CACHE_HOME: join(root, 'off'), NODE_DISABLE_COMPILE_CACHE: '1' }), { used: null, dir: null });
    const explicit = join(root, 'explicit');
    const got = run({ NODE_COMPILE_CACHE: explicit });
    assert.ok(got.dir?.startsWith(`${explicit}/`), `cache in ${got.dir}, expected under ${explicit}`);
  });

  it('is off, and the start goes on, when its directory cannot be made (XDG_CACHE_HOME under /proc)', { skip: process.platform !== 'linux' && 'needs /proc (Linux)' }, () => {
    // mkdirSync(…, {recursive: true}) never returned there (ENOENT for a parent that exists): every bin hung.
    const got = run({ XDG_CACHE_HOME: '/proc/sluice-no-such-dir' });
    assert.equal(got.used, null);
    assert.equal(got.dir, null);
  });
});
