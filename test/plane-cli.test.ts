// End to end through the local plane's commands: preview (capture and materialization), test, serve
// (ingest over HTTP, the control-plane API, republish on catalog change) and start (the quickstart:
// source-http-file → journals → materialize-sqlite).
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { DOC_UUID_PLACEHOLDER, previewCommand } from '../plane/src/cli/preview.ts';
import { startPlane } from '../plane/src/cli/serve.ts';
import { startCommand } from '../plane/src/cli/start.ts';
import { testCommand } from '../plane/src/cli/test.ts';
import { until } from '@sluice/runtime/testing';

const TEST_CAPTURE = fileURLToPath(new URL('../runtime/bin/sluice-test-capture.js', import.meta.url));

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function catalog(opts: { verifyN?: number; count?: number } = {}): string {
  return `
collections:
  acmeCo/greetings:
    schema:
      type: object
      properties:
        id: {type: string}
        greeting: {type: string}
        n: {type: integer}
      required: [id, greeting, n]
    key: [/id]
captures:
  acmeCo/source-test:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(TEST_CAPTURE)}]
        config: {apiKey: k, count: ${opts.count ?? 2}}
    bindings:
      - resource: {name: alpha}
        target: acmeCo/greetings
materializations:
  acmeCo/to-sqlite:
    endpoint:
      sqlite: {path: out.db}
    bindings:
      - source: acmeCo/greetings
        resource: {table: greetings}
        fields: {recommended: false, include: {n: {}}}
tests:
  acmeCo/test-greetings:
    - ingest: {collection: acmeCo/greetings, documents: [{id: a, greeting: hi, n: 1}, {id: a, greeting: yo, n: 2}]}
    - verify: {collection: acmeCo/greetings, documents: [{id: a, greeting: yo, n: ${opts.verifyN ?? 2}}]}
`;
}

function rows(file: string, sql: string): unknown[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try { return db.prepare(sql).all().map((r) => ({ ...r })); } finally { db.close(); }
}

test('preview: a capture prints ["collection", doc] per document and connectorState per commit; sessions resume', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'flow.yaml'), catalog());
  const lines: string[] = [];
  const code = await previewCommand(['--catalog', join(dir, 'flow.yaml'), '--name', 'acmeCo/source-test', '--output-state', '--sessions', '2'], (l) => lines.push(l));
  assert.equal(code, 0);
  assert.deepEqual(lines.map((l) => JSON.parse(l) as unknown), [
    ['acmeCo/greetings', { id: 'alpha-0', greeting: 'hello', n: 0, _meta: { uuid: DOC_UUID_PLACEHOLDER } }],
    ['acmeCo/greetings', { id: 'alpha-1', greeting: 'hello', n: 1, _meta: { uuid: DOC_UUID_PLACEHOLDER } }],
    ['connectorState', { updated: { bindingStateV1: { alpha: { next: 2 } } }, mergePatch: true }],
    ['acmeCo/greetings', { id: 'alpha-2', greeting: 'hello', n: 2, _meta: { uuid: DOC_UUID_PLACEHOLDER } }],
    ['acmeCo/greetings', { id: 'alpha-3', greeting: 'hello', n: 3, _meta: { uuid: DOC_UUID_PLACEHOLDER } }],
    ['connectorState', { updated: { bindingStateV1: { alpha: { next: 4 } } }, mergePatch: true }],
  ]);
});

test('preview: usage errors are one clear line', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'flow.yaml'), catalog());
  const errs: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => { errs.push(s); return true; }) as typeof process.stderr.write;
  try {
    assert.equal(await previewCommand(['--catalog', join(dir, 'flow.yaml')], () => undefined), 2);
    assert.equal(await previewCommand(['--catalog', join(dir, 'flow.yaml'), '--name', 'acmeCo/to-sqlite'], () => undefined), 2);
  } finally {
    process.stderr.write = write;
  }
  assert.match(errs[0] ?? '', /has 2 tasks; choose one with --name \(acmeCo\/source-test, acmeCo\/to-sqlite\)/);
  assert.match(errs[1] ?? '', /previewing materialization acmeCo\/to-sqlite needs --fixture/);
});

test('preview: a materialization applies and stores each fixture transaction, reduced by key', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'flow.yaml'), catalog());
  writeFileSync(join(dir, 'fixture.jsonl'), [
    '["acmeCo/greetings", {"id": "a", "greeting": "hi", "n": 1}]',
    '["acmeCo/greetings", {"id": "b", "greeting": "hi", "n": 2}]',
    '{"commit": true}',
    '["acmeCo/greetings", {"id": "a", "greeting": "yo", "n": 3}]',
    '{"commit": true}',
  ].join('\n'));
  const lines: string[] = [];
  const code = await previewCommand(['--catalog', join(dir, 'flow.yaml'), '--name', 'acmeCo/to-sqlite', '--fixture', join(dir, 'fixture.jsonl'), '--output-apply', '--sessions', '2'], (l) => lines.push(l));
  assert.equal(code, 0);
  assert.match(lines[0] ?? '', /^\["applied.actionDescription","CREATE TABLE IF NOT EXISTS flow_checkpoints_v1/);
  assert.deepEqual(rows(join(dir, 'out.db'), 'SELECT id, n FROM greetings ORDER BY id'), [{ id: 'a', n: 3 }, { id: 'b', n: 2 }]);
});

test('sluice test: passing and failing catalog tests', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'ok.yaml'), catalog());
  writeFileSync(join(dir, 'bad.yaml'), catalog({ verifyN: 9 }));
  const ok: string[] = [];
  assert.equal(await testCommand(['--catalog', join(dir, 'ok.yaml')], (l) => ok.push(l)), 0);
  assert.match(ok[0] ?? '', /^✔ acmeCo\/test-greetings \(\d+ ms\)$/);
  const bad: string[] = [];
  assert.equal(await testCommand(['--catalog', join(dir, 'bad.yaml')], (l) => bad.push(l)), 1);
  assert.deepEqual(bad, ['✖ acmeCo/test-greetings: step 1 (verify acmeCo/greetings): document 0 (key ["a"]) differs at /n: expected 9, found 2', '0 passed, 1 failed']);
});

test('serve: ingest over HTTP reaches SQLite, the API reports the specs, a catalog edit republishes', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog());
  const published: string[] = [];
  const running = await startPlane({ catalogFile: file, dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, ingestPort: 0, log: () => undefined, onPublish: (r) => published.push(r.result) });
  t.after(() => running.close());
  assert.equal(running.first.result, 'success');
  const res = await fetch(running.ingestUrl, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'acmeCo/greetings': [{ id: 'z', greeting: 'hey', n: 42 }] }) });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /^\{"Offsets":\{"acmeCo\/greetings\/pivot=00":\d+\},"SQLite":\{"cluster_id":\d+,"member_id":\d+,"revision":\d+,"raft_term":\d+\}\}$/);
  const wrong = await fetch(running.ingestUrl, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
  assert.equal(wrong.status, 404);
  const out = join(dir, 'out.db');
  await until('the ingested row z in the SQLite table', () => {
    try { return rows(out, "SELECT n FROM greetings WHERE id = 'z'").length > 0; } catch { return false; /* table not yet there */ }
  });
  assert.deepEqual(rows(out, "SELECT n FROM greetings WHERE id = 'z'"), [{ n: 42 }]);

  // The API, with a token from the same control plane.
  assert.equal((await fetch(`${running.apiUrl}/catalog/status?name=acmeCo/to-sqlite`)).status, 401);
  const token = await running.control.tokens.create({ multiUse: true });
  const exchanged = await fetch(`${running.apiUrl}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: token.id, secret: token.secret }) });
  const { access_token } = await exchanged.json() as { access_token: string };
  const status = await fetch(`${running.apiUrl}/catalog/status?name=acmeCo/to-sqlite&name=acmeCo/test-greetings`, { headers: { authorization: `Bearer ${access_token}` } });
  assert.equal(status.status, 200);
  const items = await status.json() as { catalog_name: string; last_build_id: string; spec_type: string }[];
  assert.deepEqual(items.map((i) => [i.catalog_name, i.spec_type]).sort(), [['acmeCo/test-greetings', 'test'], ['acmeCo/to-sqlite', 'materialization']]);
  assert.equal(items.find((i) => i.catalog_name === 'acmeCo/to-sqlite')?.last_build_id, running.first.pubId);

  // Saving the catalog republishes, also when an editor saves by renaming a new file over it.
  writeFileSync(file, catalog({ count: 3 }));
  await until('the republication after saving the catalog', () => published.length >= 2);
  assert.deepEqual(published, ['success', 'success']);
  writeFileSync(`${file}.swp`, catalog({ count: 4 }));
  renameSync(`${file}.swp`, file);
  await until('the republication after renaming a file over the catalog', () => published.length >= 3);
  assert.deepEqual(published, ['success', 'success', 'success']);
});

test('start: the quickstart captures a gzipped CSV over HTTP into journals and materializes it into SQLite', async (t) => {
  const dir = tmp(t);
  const out: string[] = [];
  const code = await startCommand(['--data-dir', join(dir, 'data'), '--rows', '3000', '--port', '0', '--ingest-port', '0', '--exit'], (s) => out.push(s));
  const text = out.join('');
  assert.equal(code, 0, text);
  assert.match(text, /done {5}3,000 rows captured into 3 journals/);
  assert.match(text, /curl -s -X POST http:\/\/127\.0\.0\.1:\d+\/ingest -H 'Content-Type: application\/json'/);
  const db = join(dir, 'data', 'quickstart.db');
  assert.deepEqual(rows(db, 'SELECT count(*) AS n, count(DISTINCT ride_id) AS d FROM rides'), [{ n: 3000, d: 3000 }]);
  const [first] = rows(db, "SELECT ride_id, rideable_type, duration_s FROM rides WHERE ride_id = 'R0000001'") as { ride_id: string; rideable_type: string; duration_s: number }[];
  assert.equal(first?.ride_id, 'R0000001');
  const electric = rows(db, "SELECT count(*) AS n FROM rides WHERE rideable_type = 'electric_bike'") as { n: number }[];
  assert.deepEqual(rows(db, 'SELECT count(*) AS n FROM electric_rides'), electric);
});

test('sluice serve (the process): republishes on SIGHUP, stops cleanly on SIGTERM', async (t) => {
  const dir = tmp(t);
  writeFileSync(join(dir, 'flow.yaml'), catalog());
  const { spawn } = await import('node:child_process');
  const bin = fileURLToPath(new URL('../plane/bin/sluice.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--catalog', join(dir, 'flow.yaml'), '--port', '0', '--ingest-port', '0', '--data-dir', join(dir, 'data')], { stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const waitFor = (what: string, test: () => boolean) => until(what, test, { detail: () => `stderr:\n${err}` });
  await waitFor('serving', () => err.includes('ingester: http://'));
  const ingestUrl = /ingester: (http:\/\/\S+)/.exec(err)![1]!;
  const res = await fetch(ingestUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'acmeCo/greetings': [{ id: 'q', greeting: 'x', n: 1 }] }) });
  assert.equal(res.status, 200);
  const publications = () => (err.match(/ publication [0-9a-f]{16}: /g) ?? []).length;
  assert.equal(publications(), 1);
  child.kill('SIGHUP');
  await waitFor('a second publication', () => publications() === 2);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
});

test('sluice start (the process): SIGTERM right after its ready line stops it cleanly — the plane closed, the data dir unlocked', async (t) => {
  const dir = tmp(t);
  const { spawn } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const bin = fileURLToPath(new URL('../plane/bin/sluice.js', import.meta.url));
  // Enough rows that the quickstart is still running when the signal arrives.
  const child = spawn(process.execPath, [bin, 'start', '--data-dir', join(dir, 'data'), '--rows', '2000000', '--port', '0', '--ingest-port', '0', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    // Signal as soon as the line is read, as a supervisor would.
    if (out.includes('  ready    ') && !child.killed) child.kill('SIGTERM');
  });
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const [code, signal] = await new Promise<[number | null, string | null]>((r) => child.once('exit', (c, s) => r([c, s])));
  assert.equal(signal, null, `killed by Node's default action, not stopped; stdout:\n${out}\nstderr:\n${err}`);
  assert.equal(code, 0, `stdout:\n${out}\nstderr:\n${err}`);
  assert.match(out, / {2}stopped {2}on SIGTERM, before the quickstart finished\n/);
  assert.equal(existsSync(join(dir, 'data', 'plane.lock')), false, 'the data dir lock was released');
});

test('sluice test: a catalog error is one precise report (file, line, pointer), exit 1', async (t) => {
  const dir = tmp(t);
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog().replace('key: [/id]', 'key: [id]'));
  const errs: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => { errs.push(s); return true; }) as typeof process.stderr.write;
  let code: number;
  try {
    code = await testCommand(['--catalog', file], () => undefined);
  } finally {
    process.stderr.write = write;
  }
  assert.equal(code, 1);
  const text = errs.join('');
  assert.ok(text.startsWith('sluice: '), text);
  assert.ok(text.includes(`${file}:`), text);
  assert.match(text, /\/collections\/acmeCo~1greetings\/key/);
});
