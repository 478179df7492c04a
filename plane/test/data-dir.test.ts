// The data dir is private (issue 17.11): the plane creates it 0700 with files 0600 (control.db, journals,
// the JWT key, SQLite's -wal/-shm), and a looser one from before is fixed at start with a warning.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startPlane } from '../src/cli/serve.ts';
import { secureDataDir } from '../src/data-dir.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-data-dir-'));
after(() => rmSync(root, { recursive: true, force: true }));

const CATALOG = `
collections:
  acme/things:
    schema: {type: object, properties: {id: {type: string}}, required: [id]}
    key: [/id]
`;

function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      out[`${rel}${name}`] = (st.mode & 0o777).toString(8);
      if (st.isDirectory()) walk(p, `${rel}${name}/`);
    }
  };
  out['.'] = (statSync(dir).mode & 0o777).toString(8);
  walk(dir, '');
  return out;
}

describe('data dir permissions', () => {
  it('a new data dir is 0700 and every file the plane writes is 0600', async () => {
    const file = join(root, 'flow.yaml');
    writeFileSync(file, CATALOG);
    const dataDir = join(root, 'fresh');
    const warnings: string[] = [];
    // A permissive umask, as on many machines: the modes must not depend on it.
    const umask = process.umask(0o022);
    try {
      const running = await startPlane({ catalogFile: file, dataDir, host: '127.0.0.1', port: 0, ingestPort: 0, watch: false, log: (m) => { if (m.startsWith('warning')) warnings.push(m); } });
      assert.equal(running.first.result, 'success', running.first.errors.join('\n'));
      await running.close();
    } finally {
      process.umask(umask);
    }
    const got = modes(dataDir);
    for (const name of ['control.db', 'journals.db', 'jwt-signing-key']) assert.ok(name in got, `${name} in ${JSON.stringify(got)}`);
    for (const [name, mode] of Object.entries(got)) {
      const want = name === '.' || statSync(join(dataDir, name)).isDirectory() ? '700' : '600';
      assert.equal(mode, want, `${name}: ${JSON.stringify(got)}`);
    }
    assert.deepEqual(warnings, []);
  });

  it('a data dir left readable by others is fixed at start, with one warning', async () => {
    const file = join(root, 'flow2.yaml');
    writeFileSync(file, CATALOG);
    const dataDir = join(root, 'old');
    mkdirSync(join(dataDir, 'quickstart'), { recursive: true });
    writeFileSync(join(dataDir, 'quickstart', 'flow.yaml'), '');
    writeFileSync(join(dataDir, 'readonly'), '');
    chmodSync(join(dataDir, 'readonly'), 0o444);
    chmodSync(join(dataDir, 'quickstart', 'flow.yaml'), 0o666);
    chmodSync(join(dataDir, 'quickstart'), 0o755);
    chmodSync(dataDir, 0o755);
    const warnings: string[] = [];
    const running = await startPlane({ catalogFile: file, dataDir, host: '127.0.0.1', port: 0, ingestPort: 0, watch: false, log: (m) => { if (m.startsWith('warning')) warnings.push(m); } });
    await running.close();
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /^warning: data dir .* was readable by other users; made it 0700 and its files 0600 \(4 changes: /);
    const got = modes(dataDir);
    assert.equal(got['.'], '700');
    assert.equal(got['quickstart'], '700');
    assert.equal(got['quickstart/flow.yaml'], '600');
    assert.equal(got['readonly'], '400', 'permissions are only taken away');
    assert.equal(got['control.db'], '600');
    // Nothing left to fix: no warning the next time.
    assert.deepEqual(secureDataDir(dataDir), []);
  });
});

describe('a data dir that cannot be made', () => {
  // In a child process: Node's mkdirSync(dir, {recursive: true}) never returns for a path under /proc, and a
  // spinning synchronous call would stop this test's own deadline from firing.
  const SLUICE = new URL('../bin/sluice.js', import.meta.url).pathname;
  function serveWith(dataDir: string): { status: number | null; stderr: string } {
    const file = join(root, 'flow-bad-dir.yaml');
    writeFileSync(file, CATALOG);
    const r = spawnSync(process.execPath, [SLUICE, 'serve', '--catalog', file, '--data-dir', dataDir, '--port', '0', '--ingest-port', '0'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.error, undefined, `sluice serve --data-dir ${dataDir} did not exit within 60 s (signal ${r.signal})`);
    return { status: r.status, stderr: r.stderr };
  }

  it('under /proc: one clear line naming the dir and the option, promptly, no stack', () => {
    const r = serveWith('/proc/sluice-no-such-dir/data');
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim(), 'sluice: cannot create the data dir /proc/sluice-no-such-dir/data: a directory on its path cannot be created there (ENOENT). Choose another with --data-dir DIR or SLUICE_DATA_DIR.');
  });

  it('a file in its place, or on its path', () => {
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    const r1 = serveWith(file);
    assert.equal(r1.status, 1);
    assert.equal(r1.stderr.trim(), `sluice: the data dir ${file} exists and is not a directory. Choose another with --data-dir DIR or SLUICE_DATA_DIR, or remove that file.`);
    const r2 = serveWith(join(file, 'sub'));
    assert.equal(r2.status, 1);
    assert.match(r2.stderr, /^sluice: cannot create the data dir .*a-file\/sub: a part of its path is a file, not a directory \(ENOTDIR\)\./);
    assert.doesNotMatch(r1.stderr + r2.stderr, /\n\s+at /, 'no stack trace');
  });
});
