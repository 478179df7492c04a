// Issue 14.5: discover's schema validates every record of the file it came from — generated sparse and
// mixed files (values that change kind after the first thousand rows), discovered and captured through
// the bin, every captured document validated against the discovered schema with ajv (Flow's string
// formats given their meaning independently of the connector's code). No `format: boolean`, no
// `type: null`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createRequire } from 'node:module';
import type { JsonObject } from '@sluice/runtime';
import { openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

// ajv 8, as the runtime validates with it (the root node_modules holds eslint's ajv 6).
interface AjvLike {
  addFormat(name: string, test: (s: string) => boolean): unknown;
  compile(schema: object): ((doc: unknown) => boolean) & { errors?: unknown };
}
const { Ajv } = createRequire(new URL('../../../runtime/package.json', import.meta.url))('ajv') as { Ajv: new (options: object) => AjvLike };

const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;
const DEADLINE_MS = 60_000;

function runBin(request: object): Promise<{ code: number | null; lines: JsonObject[]; stderr: string }> {
  const child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(`${JSON.stringify(request)}\n`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the bin did not exit within ${DEADLINE_MS} ms; stderr:\n${stderr}`)); }, DEADLINE_MS);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, lines: out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonObject), stderr }); });
  });
}

/** Flow's string formats, checked without the connector's own patterns. */
function flowAjv(): AjvLike {
  const ajv = new Ajv({ strict: false, allErrors: false });
  ajv.addFormat('integer', (s: string) => { try { BigInt(s); return s.trim() === s && s !== ''; } catch { return false; } });
  ajv.addFormat('number', (s: string) => s.trim() === s && s !== '' && !Number.isNaN(Number(s)));
  ajv.addFormat('date', (s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s) && new Date(`${s}T00:00:00Z`).toISOString().slice(0, 10) === s);
  ajv.addFormat('date-time', (s: string) => {
    const m = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(s);
    return m !== null && !Number.isNaN(Date.parse(s)) && new Date(`${m[1]}T00:00:00Z`).toISOString().slice(0, 10) === m[1];
  });
  return ajv;
}

function walk(schema: unknown, visit: (node: JsonObject) => void): void {
  if (schema === null || typeof schema !== 'object') return;
  if (!Array.isArray(schema)) visit(schema as JsonObject);
  for (const v of Object.values(schema)) walk(v, visit);
}

const ROWS = 3000;
function csvSparse(): string {
  // `late` is empty for the first 2000 rows, `flip` integer-looking then text, `day` dates then a bad
  // date, `flag` true/false, `ts` timestamps then empty, `short` rows omit the last columns.
  const rows = Array.from({ length: ROWS }, (_, i) => [
    String(i), i < 2000 ? '' : `v${i}`, i < 1500 ? String(i * 7) : `x${i}`, i === 2500 ? '2023-02-29' : '2024-01-02',
    i % 2 ? 'true' : 'false', i > 2900 ? '' : `2024-01-01 10:00:0${i % 10}`, ...(i % 5 === 0 ? [] : [String(i / 4)]),
  ].join(','));
  return `id,late,flip,day,flag,ts,ratio\n${rows.join('\n')}\n`;
}
function jsonMixed(): string {
  return `${Array.from({ length: ROWS }, (_, i) => JSON.stringify({
    id: i, ...(i > 2500 ? { late: `s${i}` } : {}), nul: null, kind: i < 2000 ? i : i < 2500 ? i + 0.5 : `t${i}`,
    nested: i % 2 ? { a: i } : [i], flag: i % 3 === 0, when: i === 2999 ? 'not a date' : '2024-01-02T03:04:05Z',
  })).join('\n')}\n{"id": 9223372036854775807, "kind": 1}\n`;
}

describe('discover: the schema holds for every record of the file', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({ '/sparse.csv': { body: csvSparse() }, '/mixed.jsonl': { body: jsonMixed() } });
  });
  after(() => server.close());

  for (const path of ['/sparse.csv', '/mixed.jsonl']) {
    test(path, async () => {
      const config = { url: server.url(path) };
      const d = await runBin({ discover: { connectorType: 'IMAGE', config } });
      assert.equal(d.code, 0, d.stderr);
      const schema = ((d.lines[0]?.['discovered'] as JsonObject)['bindings'] as JsonObject[])[0]?.['documentSchema'] as JsonObject;
      walk(schema, (node) => {
        assert.ok(node['type'] !== 'null', `no type: null (${JSON.stringify(node)})`);
        if (typeof node['format'] === 'string') assert.ok(['integer', 'number', 'date', 'date-time'].includes(node['format']), `Flow format: ${JSON.stringify(node)}`);
      });
      const c = await runBin(openRequest(config));
      assert.equal(c.code, 0, c.stderr);
      const docs = c.lines.filter((l) => 'captured' in l).map((l) => (l['captured'] as JsonObject)['doc'] as JsonObject);
      assert.equal(docs.length, path.endsWith('.csv') ? ROWS : ROWS + 1);
      const validate = flowAjv().compile(schema);
      const failing = docs.filter((doc) => !validate(doc));
      assert.deepEqual(failing.slice(0, 3), [], `${failing.length} documents fail the discovered schema: ${JSON.stringify(validate.errors)}`);
      const props = schema['properties'] as Record<string, JsonObject>;
      if (path.endsWith('.csv')) {
        assert.deepEqual(props['id'], { type: 'string', format: 'integer' });
        assert.deepEqual(props['late'], { type: ['null', 'string'] });
        assert.deepEqual(props['flip'], { type: 'string' });
        assert.deepEqual(props['flag'], { type: 'string' });
        assert.deepEqual(props['ts'], { type: ['null', 'string'], format: 'date-time' });
      } else {
        assert.deepEqual(props['id'], { type: 'integer' });
        assert.deepEqual(props['nul'], {});
        assert.deepEqual(props['kind'], { type: ['number', 'string'] });
        assert.deepEqual(props['nested'], { type: ['array', 'object'] });
        assert.deepEqual(props['when'], { type: 'string' });
      }
    });
  }
});
