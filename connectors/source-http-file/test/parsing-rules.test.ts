// Issue 14.3/14.4 through the real bin: the CSV escape character, timestamp fractions and encoding
// labels, on files small enough for the string path and big enough for the byte path (> 64 KiB).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { JsonObject } from '@sluice/runtime';
import { openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;
const DEADLINE_MS = 60_000;

interface Result { code: number | null; docs: JsonObject[]; errors: string[] }

/** Runs one capture through the bin; resolves once it exits (fails after DEADLINE_MS naming it). */
function captureWithBin(config: object, env: Record<string, string> = {}): Promise<Result> {
  const child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  child.stdin.end(`${JSON.stringify(openRequest(config))}\n`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the capture did not exit within ${DEADLINE_MS} ms; stderr:\n${err}`)); }, DEADLINE_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      const docs = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonObject).filter((m) => 'captured' in m).map((m) => (m['captured'] as JsonObject)['doc'] as JsonObject);
      const errors = err.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'error').map((l) => l.msg);
      resolve({ code, docs, errors });
    });
  });
}

const strip = (d: JsonObject): JsonObject => { const { _meta: _, ...rest } = d; return rest; };
/** Enough filler rows that the rows after them are parsed by the byte path. */
const FILLER = 3000;

describe('CSV parsing rules through the bin', () => {
  let server: FileServer;
  const ESCAPED = '"a\\\\b","\\"q\\"","\\n\\,x","plain\\\\"\n';
  const ESCAPED_DOC = { w: 'a\\b', x: '"q"', y: 'n,x', z: 'plain\\' };
  const TIMES = '2020-01-01 12:30:00.250,2020-01-01T12:30:00.000,2020-01-01T12:30:00.123456780+02:00,2020-01-01T12:30:00.5000000001\n';
  const TIMES_DOC = { w: '2020-01-01T12:30:00.25Z', x: '2020-01-01T12:30:00Z', y: '2020-01-01T12:30:00.12345678+02:00', z: '2020-01-01T12:30:00.5Z' };
  before(async () => {
    const filler = 'filler-value,filler-value,filler-value,filler-value\n'.repeat(FILLER);
    server = await startServer({
      '/esc-small.csv': { body: `w,x,y,z\n${ESCAPED}` },
      '/esc-big.csv': { body: `w,x,y,z\n${ESCAPED}${filler}${ESCAPED}` },
      '/ts-small.csv': { body: `w,x,y,z\n${TIMES}` },
      '/ts-big.csv': { body: `w,x,y,z\n${TIMES}${filler}${TIMES}` },
      '/latin.csv': { body: Buffer.from('name,city\nJosé,Orléans\n', 'latin1') },
      '/utf8.csv': { body: 'name,city\nJosé,Orléans\n' },
    });
  });
  after(() => server.close());

  test('escape: the next character is literal inside quotes, the escape character included (string and byte path)', async () => {
    for (const path of ['/esc-small.csv', '/esc-big.csv']) {
      const r = await captureWithBin({ url: server.url(path), parser: { format: { type: 'csv', config: { escape: '\\', quote: '"', delimiter: ',' } } } });
      assert.equal(r.code, 0, r.errors.join('\n'));
      assert.deepEqual(strip(r.docs[0] as JsonObject), ESCAPED_DOC, path);
      assert.deepEqual(strip(r.docs.at(-1) as JsonObject), ESCAPED_DOC, path);
      if (path === '/esc-big.csv') assert.equal(r.docs.length, FILLER + 2);
    }
  });

  test('timestamps: significant fraction digits, trailing zeros dropped, up to nanoseconds (string and byte path)', async () => {
    for (const path of ['/ts-small.csv', '/ts-big.csv']) {
      const r = await captureWithBin({ url: server.url(path) });
      assert.equal(r.code, 0, r.errors.join('\n'));
      assert.deepEqual(strip(r.docs[0] as JsonObject), TIMES_DOC, path);
      assert.deepEqual(strip(r.docs.at(-1) as JsonObject), TIMES_DOC, path);
    }
  });

  test('encodings: any WHATWG label in any case; an unknown label is a config error naming it', async () => {
    for (const [path, encoding] of [['/latin.csv', 'latin1'], ['/latin.csv', 'ISO-8859-1'], ['/latin.csv', 'Windows-1252'], ['/utf8.csv', 'utf8'], ['/utf8.csv', 'UTF-8'], ['/utf8.csv', ' Unicode-1-1-UTF-8 ']]) {
      const r = await captureWithBin({ url: server.url(path as string), parser: { format: { type: 'csv', config: { encoding } } } });
      assert.equal(r.code, 0, `${encoding}: ${r.errors.join('\n')}`);
      assert.deepEqual(r.docs.map(strip), [{ name: 'José', city: 'Orléans' }], encoding);
    }
    const bad = await captureWithBin({ url: server.url('/utf8.csv'), parser: { format: { type: 'csv', config: { encoding: 'klingon' } } } });
    assert.equal(bad.code, 1);
    assert.match(bad.errors.at(-1) ?? '', /unknown encoding 'klingon': name a WHATWG encoding label/);
  });
});
