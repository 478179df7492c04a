// What the connector loads to answer an RPC that reads no file (spec here; validate and apply the same): each module
// is CPU of every such start, and a publication starts one process per RPC (issue 16). The capture's data path —
// capture-binding.ts and what only it needs (line framing, the parser thread, state) — loads for a session only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nodeFlagsOf } from '@sluice/runtime/launch';

const BIN = fileURLToPath(new URL('../bin/source-http-file.js', import.meta.url));

test('spec loads none of the capture\'s data path', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-http-start-up-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const preload = join(dir, 'preload.mjs');
  const out = join(dir, 'loaded.json');
  writeFileSync(preload, `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
process.on('exit', () => writeFileSync(${JSON.stringify(out)}, JSON.stringify(loaded)));
`);
  const response = execFileSync(process.execPath, [...nodeFlagsOf(BIN), '--import', pathToFileURL(preload).href, BIN], {
    input: '{"spec":{"connectorType":"IMAGE"}}\n', encoding: 'utf8', timeout: 60_000,
  });
  assert.match(response, /"spec":\{"protocol":3032023/);
  const loaded = JSON.parse(readFileSync(out, 'utf8')) as string[];
  assert.ok(loaded.some((u) => u.endsWith('/src/connector.ts')), 'the preload saw the connector\'s modules');
  assert.deepEqual(loaded.filter((u) => /\/source-http-file\/src\/(capture-binding|lines|parallel|thread-inbox|state)\.ts$/.test(u)), []);
});
