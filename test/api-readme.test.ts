// The control-plane API README (plane/src/api/README.md) runs as written: every `sh` command in it is
// executed with sh and curl against the quickstart (`sluice start`, what `npm start` runs), with the
// README's `http://localhost:8675` pointed at the test's port and `npx sluice` at this checkout's bin.
// Expected outputs written as `# {"status":…}` comments must match exactly.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { startCommand } from '../plane/src/cli/start.ts';

const run = promisify(execFile);
const README = fileURLToPath(new URL('../plane/src/api/README.md', import.meta.url));
const SLUICE = fileURLToPath(new URL('../plane/bin/sluice.js', import.meta.url));
const HAVE_CURL = await run('curl', ['--version']).then(() => true, () => false);

interface Command { text: string; expected: string[] }

/** The README's sh commands (continuation lines joined), each with the `# …` comment lines after it. */
function commands(markdown: string): Command[] {
  const out: Command[] = [];
  for (const block of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block[1]!.split('\n');
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i]!;
      if (line.trim() === '' || line.startsWith('#')) continue;
      while (line.endsWith('\\')) line = `${line.slice(0, -1)} ${lines[++i]!.trim()}`;
      const expected: string[] = [];
      while (lines[i + 1]?.startsWith('# ')) expected.push(lines[++i]!.slice(2));
      out.push({ text: line.replace(/\s+#\s.*$/, ''), expected });
    }
  }
  return out;
}

test('api README: every command works against the quickstart', { skip: HAVE_CURL ? false : 'curl is not installed: the README is written for curl' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cmds = commands(readFileSync(README, 'utf8'));
  assert.ok(cmds.length >= 12, `found ${cmds.length} commands`);
  let printed = '';
  let failure: unknown;
  const code = await startCommand(['--data-dir', join(dir, 'data'), '--rows', '300', '--port', '0', '--ingest-port', '0', '--exit'], (s) => { printed += s; }, {
    onReady: (running) => readme(running).catch((err: unknown) => { failure = err; }),
  });
  if (failure) throw failure;
  assert.equal(code, 0, printed);

  async function readme(running: { apiUrl: string; ingestUrl: string }): Promise<void> {
    const base = running.apiUrl.replace(/\/api\/v1$/, '');
    const ingestBase = running.ingestUrl.replace(/\/ingest$/, '');
    const env: Record<string, string> = { ...process.env as Record<string, string> };
    let first: { id: string; secret: string } | undefined;
    const checked: string[] = [];
    for (const c of cmds) {
      if (c.text === 'npm start') continue; // the test is running it
      const text = c.text.replaceAll('http://localhost:8675', base).replaceAll('http://localhost:8081', ingestBase)
        .replaceAll('npx sluice ', `${JSON.stringify(process.execPath)} ${JSON.stringify(SLUICE)} `)
        .replaceAll('<id>', first?.id ?? '<id>').replaceAll('<secret>', first?.secret ?? '<secret>');
      // An assignment runs in a shell whose result is kept for the next commands.
      const assign = /^([A-Z_]+)=(.*)$/.exec(text);
      const script = assign ? `${assign[1]}=${assign[2]}; printf %s "$${assign[1]}"` : text;
      const { stdout } = await run('sh', ['-c', script], { cwd: dir, env, maxBuffer: 1 << 24 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
        throw new Error(`README command failed: ${c.text}\n${err.stderr ?? ''}${err.message}`);
      });
      if (assign) {
        env[assign[1]!] = stdout;
        assert.ok(stdout.length > 20, `${c.text} set ${assign[1]} to ${JSON.stringify(stdout)}`);
      }
      if (/token create/.test(c.text) && first === undefined) {
        const id = /id: +(\S+)/.exec(stdout)?.[1];
        const secret = /secret: +(\S+)/.exec(stdout)?.[1];
        assert.ok(id && secret, stdout);
        first = { id, secret };
      }
      // Expected JSON outputs match exactly; other routes answer with what they should.
      const json = c.expected.filter((e) => e.startsWith('{"status"'));
      if (json.length) assert.deepEqual(JSON.parse(stdout), JSON.parse(json[0]!), c.text);
      else if (c.expected[0] === '404 page not found') assert.equal(stdout, '404 page not found\n', c.text);
      else if (c.text.includes('/ingest')) assert.match(stdout, /^\{"Offsets":\{"quickstart\/rides\/rideable_type=electric_bike\/pivot=00":\d+\},"SQLite":\{"cluster_id":\d+,"member_id":\d+,"revision":\d+,"raft_term":\d+\}\}$/, c.text);
      else if (c.text.includes('/catalog/status')) {
        const items = JSON.parse(stdout) as { catalog_name: string; summary: { status: string } }[];
        assert.ok(Array.isArray(items) && items.length > 0 && items.every((i) => i.summary.status === 'ok'), `${c.text}\n${stdout}`);
      } else if (c.text.includes('/metrics/')) assert.match(stdout, /^written_by_me_docs_total\{task="quickstart\/source-rides"\} 300$/m, c.text);
      else if (c.text.includes('openapi.json')) assert.equal((JSON.parse(stdout) as { openapi: string }).openapi, '3.1.0');
      else if (c.text.startsWith('cat token.json')) assert.match(stdout, /^\{"access_token":"[\w-]+\.[\w-]+\.[\w-]+","refresh_token":\{"id":"[0-9a-f]{16}","secret":"[\w-]+"\}\}$/);
      else if (c.text.includes('token create')) assert.match(stdout, /^refresh token created in \.\/data\n {2}id: {5}[0-9a-f]{16}\n/);
      checked.push(c.text);
    }
    assert.ok(checked.some((c) => c.startsWith('TOKEN=')), 'the README sets $TOKEN');
  }
});
