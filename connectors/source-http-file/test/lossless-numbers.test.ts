// Integers beyond ±2^53 pass through source-http-file exactly (issue 14, lossless numbers): JSON files
// (Node 24 JSON.parse source text → JSON.rawJSON, only when a 16+ digit run is present) and Avro longs
// (read as BigInt when a double cannot hold them). Checked on the bin's output text, not a re-parse.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import avro from 'avsc';
import { openRequest, startServer } from './helpers.ts';
import type { FileServer } from './helpers.ts';

const BIN = new URL('../bin/source-http-file.js', import.meta.url).pathname;
const DEADLINE_MS = 60_000;

const BIG = ['9007199254740993', '-9007199254740993', '1234567890123456789', '-9223372036854775808', '9223372036854775807', '18446744073709551615'];

function captureLines(url: string): Promise<{ code: number | null; docs: string[]; stderr: string }> {
  const child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(`${JSON.stringify(openRequest({ url }))}\n`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the capture did not exit within ${DEADLINE_MS} ms; stderr:\n${stderr}`)); }, DEADLINE_MS);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, docs: out.split('\n').filter((l) => l.startsWith('{"captured"')), stderr }); });
  });
}

/** An Avro container of records {id: long, n: [null, long], o: {type: long}, at: timestamp-millis}, longs written as BigInt. */
function avroLongs(values: bigint[]): Buffer {
  const long = avro.types.LongType.__with({
    fromBuffer: (b: Buffer) => b.readBigInt64LE(),
    toBuffer: (n: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64LE(n); return b; },
    fromJSON: BigInt, toJSON: Number, isValid: (v: unknown) => typeof v === 'bigint', compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
  });
  const schema = { type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }, { name: 'n', type: ['null', 'long'] }, { name: 'o', type: { type: 'long' } }, { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } }] };
  const type = avro.Type.forSchema(schema as any, { registry: { long }, wrapUnions: true, typeHook: (s: any) => (s.type === 'long' && !s.logicalType ? long : undefined) });
  const zigzag = (n: number): Buffer => { const out: number[] = []; let v = n * 2; do { let b = v & 0x7f; v = Math.floor(v / 128); if (v) b |= 0x80; out.push(b); } while (v); return Buffer.from(out); };
  const str = (s: string): Buffer => Buffer.concat([zigzag(Buffer.byteLength(s)), Buffer.from(s)]);
  const sync = Buffer.from('0123456789abcdef');
  const data = Buffer.concat(values.map((v) => type.toBuffer({ id: v, n: { long: v }, o: v, at: 1_600_000_000_123 })));
  return Buffer.concat([Buffer.from('Obj\x01', 'latin1'), zigzag(1), str('avro.schema'), str(JSON.stringify(schema)), zigzag(0), sync, zigzag(values.length), zigzag(data.length), data, sync]);
}

describe('lossless integers through the bin', () => {
  let server: FileServer;
  before(async () => {
    server = await startServer({
      '/big.jsonl': { body: `${BIG.map((v) => `{"id": ${v}, "nested": {"list": [${v}, 1.5, 7]}, "s": "${v}"}`).join('\n')}\n{"small": 42, "f": 0.1}\n` },
      '/big.json': { body: `[${BIG.map((v) => `{"id":${v}}`).join(',')}]` },
      '/big.avro': { body: avroLongs([...BIG.slice(0, 5).map(BigInt), 7n]) },
    });
  });
  after(() => server.close());

  test('JSON lines and a top-level array: every integer keeps its digits', async () => {
    const lines = await captureLines(server.url('/big.jsonl'));
    assert.equal(lines.code, 0, lines.stderr);
    assert.deepEqual(lines.docs.map((l) => l.replace(/,"_meta":.*$/, '')), [
      ...BIG.map((v) => `{"captured":{"doc":{"id":${v},"nested":{"list":[${v},1.5,7]},"s":"${v}"`),
      '{"captured":{"doc":{"small":42,"f":0.1',
    ]);
    const array = await captureLines(server.url('/big.json'));
    assert.equal(array.code, 0, array.stderr);
    assert.deepEqual(array.docs.map((l) => l.replace(/,"_meta":.*$/, '')), BIG.map((v) => `{"captured":{"doc":{"id":${v}`));
  });

  test('Avro long: exact beyond ±2^53 (i64 min and max), in unions too; logical longs still converted', async () => {
    const r = await captureLines(server.url('/big.avro'));
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.docs.map((l) => l.replace(/,"_meta":.*$/, '')), [...BIG.slice(0, 5), '7'].map((v) => `{"captured":{"doc":{"id":${v},"n":${v},"o":${v},"at":"2020-09-13T12:26:40.123Z"`));
  });
});
