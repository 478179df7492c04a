// Issue 14.2 / 17.9: whatever ends a capture, the last error line names the cause. Each format's parse
// failure runs through the real bin with stdin left open (as Flow's runtime keeps it) and closed. The
// session's abort used to reach a response the connector had not read to its end, and its AbortError
// replaced the parse error: "The operation was aborted (internal error…)".
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';
import { PROTO, gzipSync } from './fixtures.ts';

const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;
const DEADLINE_MS = 180_000; // a safety net against a hang, not a speed check (the 64 MiB cases took 40–60 s at load 30)

function zigzag(n: number): Buffer {
  const out: number[] = [];
  let v = n >= 0 ? n * 2 : -n * 2 - 1;
  do { let b = v & 0x7f; v = Math.floor(v / 128); if (v) b |= 0x80; out.push(b); } while (v);
  return Buffer.from(out);
}
const avroString = (s: string): Buffer => Buffer.concat([zigzag(Buffer.byteLength(s)), Buffer.from(s)]);
/** An Avro container whose top-level schema is `long`. */
const AVRO_NOT_RECORD = Buffer.concat([Buffer.from('Obj\x01', 'latin1'), zigzag(1), avroString('avro.schema'), avroString('"long"'), zigzag(0), Buffer.from('0123456789abcdef'), zigzag(1), zigzag(1), Buffer.from([2]), Buffer.from('0123456789abcdef')]);

// The failure comes in the last chunks of a body of several chunks: the response has arrived whole but
// the connector has not read it to its end when it fails (the case that was masked).
const CSV_ROWS = '4,5\n'.repeat(300_000);
const CASES: { name: string; path: string; body: Buffer | string; parser?: object; expect: RegExp }[] = [
  { name: 'CSV ragged row', path: '/ragged.csv', body: `a,b\n${CSV_ROWS}1,2,3\n`, expect: /^CSV row at line 300002 \(byte offset 1200004\) has 3 columns, but the headers only define 2 columns/ },
  { name: 'CSV unclosed quote', path: '/quote.csv', body: `a,b\n${CSV_ROWS}1,"2\n`, expect: /^CSV quoted field starting at line 300002 \(byte offset 1200004\) has no closing quote before the end of the file/ },
  { name: 'JSON syntax error', path: '/bad.jsonl', body: `${'{"a":1}\n'.repeat(200_000)}{"a":}\n`, expect: /^failed to parse JSON at line 200001 \(byte offset 1600000\): / },
  { name: 'Avro top-level schema not a record', path: '/bad.avro', body: AVRO_NOT_RECORD, expect: /^Avro file is corrupt at byte offset 0: the top-level schema must be a record, found 'long'$/ },
  { name: 'protobuf bytes that are not the message', path: '/bad.pb', body: Buffer.from([0x0a, 0x05, 0x01]), parser: { format: { type: 'protobuf', config: { protoFile: PROTO, message: 'FeedMessage' } } }, expect: /^failed to decode the file as protobuf message 'FeedMessage': / },
  { name: 'W3C row wider than #Fields', path: '/bad.log', body: `#Fields: a b\n${'4\t5\n'.repeat(300_000)}1\t2\t3\n`, parser: { format: { type: 'w3cExtendedLog' } }, expect: /^W3C log row at line 300002 has 3 fields, but #Fields defines 2$/ },
  // 17.9: the sample (64 KiB) is ASCII, so UTF-8 is detected; the bad byte arrives in a later chunk.
  { name: 'invalid UTF-8 after the detection sample', path: '/latin.csv', body: Buffer.concat([Buffer.from(`a,b\n${CSV_ROWS}`), Buffer.from([0x31, 0x2c, 0xe9, 0x0a])]), expect: /^input bytes were not valid for encoding 'utf-8' at byte offset 1200006: set parser.format.config.encoding to the file's real encoding$/ },
  // 17.7: a row over the limit is rejected (in time linear in its length: bench/http-file-long-rows.ts),
  // and a decompression bomb stops at the ratio limit.
  { name: 'CSV row longer than 64 MiB', path: '/long-row.csv', body: `a,b\n1,2\n${'x'.repeat(64 * 1024 * 1024 + 16)},1\n`, expect: /^CSV row starting at line 3 is longer than 67108864 bytes: check the quote and line ending settings$/ },
  { name: 'gzip bomb', path: '/bomb.csv.gz', body: gzipSync(Buffer.concat([Buffer.from('a\n'), Buffer.alloc(80 * 1024 * 1024, 0x0a)])), expect: /^the gzip data expands more than 500× \(\d+ bytes from the first \d+ compressed bytes\): this looks like a decompression bomb/ },
];

interface Exit { code: number | null; signal: string | null; errors: string[] }

function capture(url: string, parser: object | undefined, keepStdinOpen: boolean): Promise<Exit> {
  const child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SLUICE_HTTP_FILE_WORKER: '0' } });
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.write(`${JSON.stringify(openRequest({ url, ...(parser ? { parser } : {}) }))}\n`);
  if (!keepStdinOpen) child.stdin.end();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the connector did not exit within ${DEADLINE_MS} ms after a parse error; stderr:\n${stderr}`)); }, DEADLINE_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const errors = stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'error').map((l) => l.msg);
      resolve({ code, signal, errors });
    });
  });
}

describe('parse errors are never masked (real bin)', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer(Object.fromEntries(CASES.map((c) => [c.path, { body: c.body }])));
  });
  after(() => server.close());

  for (const c of CASES) {
    for (const open of [true, false]) {
      test(`${c.name}, stdin ${open ? 'left open' : 'closed'}`, async () => {
        const exit = await capture(server.url(c.path), c.parser, open);
        assert.equal(exit.code, 1, JSON.stringify(exit));
        const last = exit.errors.at(-1) ?? '';
        assert.match(last, c.expect, `every error line: ${JSON.stringify(exit.errors)}`);
        assert.ok(!exit.errors.some((e) => /abort|internal error/i.test(e)), `no masking error line: ${JSON.stringify(exit.errors)}`);
      });
    }
  }
});
