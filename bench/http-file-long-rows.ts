// Benchmark (issue 17.7): source-http-file on one very long CSV row, through the real bin over loopback
// HTTP. The row is given in the body in 64 KiB chunks (as a socket delivers it); the time must grow
// linearly with its length (a 64 MiB row in < 2 s; 4/8/16/32 MB rows took 1.7/3.7/12.8/32.2 s when
// every chunk re-scanned the row). Baseline in the same run: a file of the same size in ordinary rows.
// Also a gzip bomb (zeros, ~1000:1) stopped by the decompression ratio limit.
//   npx node bench/http-file-long-rows.ts [--max-mb 64]
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { nodeFlagsOf } from '@sluice/runtime/launch';

const BIN = new URL('../connectors/source-http-file/bin/source-http-file.js', import.meta.url).pathname;
const arg = process.argv.indexOf('--max-mb');
const MAX_MB = arg > 0 ? Number(process.argv[arg + 1]) : 64;
const MiB = 1024 * 1024;

const bodies = new Map<string, Buffer>();
const server = http.createServer((req, res) => {
  const body = bodies.get(req.url ?? '');
  if (!body) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-length': body.length, 'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT' });
  if (req.method === 'HEAD') { res.end(); return; }
  let i = 0;
  const step = (): void => {
    while (i < body.length) {
      const ok = res.write(body.subarray(i, i + 64 * 1024));
      i += 64 * 1024;
      if (!ok) { res.once('drain', step); return; }
    }
    res.end();
  };
  step();
});
server.listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** Runs one capture; returns wall seconds, documents and the last error line. */
async function capture(path: string): Promise<{ seconds: number; docs: number; error: string }> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [...nodeFlagsOf(BIN), BIN], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SLUICE_HTTP_FILE_WORKER: '0' } });
  // Counts `captured` lines by their first bytes only (a long line must not be re-joined per chunk).
  let docs = 0;
  let head = '';
  let atStart = true;
  child.stdout.on('data', (d: Buffer) => {
    let i = 0;
    while (i < d.length) {
      if (atStart) {
        const take = Math.min(12 - head.length, d.length - i);
        head += d.toString('latin1', i, i + take);
        i += take;
        if (head.length < 12) continue;
        if (head.startsWith('{"captured"')) docs++;
        atStart = false;
        head = '';
      }
      const nl = d.indexOf(10, i);
      if (nl === -1) break;
      i = nl + 1;
      atStart = true;
    }
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(`${JSON.stringify({ open: { capture: { name: 'b/x', config: { url: base + path }, bindings: [{ resourceConfig: { stream: 'x' }, resourcePath: ['x'], collection: { name: 'b/x', key: ['/_meta/file', '/_meta/offset'] }, stateKey: 'x' }] }, state: {} } })}\n`);
  await new Promise((r) => child.on('close', r));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const error = stderr.split('\n').filter((l) => l.includes('"level":"error"')).map((l) => (JSON.parse(l) as { msg: string }).msg).at(-1) ?? '';
  return { seconds, docs, error };
}

console.log(`one long CSV row through the bin (64 KiB body chunks); load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const target: string[] = [];
console.log('row MiB | quoted | seconds | s per MiB | same size in 100-byte rows | ratio | result');
for (let mb = 4; mb <= MAX_MB; mb *= 2) {
  for (const quoted of [false, true]) {
    const size = mb * MiB - 64;
    const row = quoted ? `"${'y'.repeat(size - 2)}"` : 'x'.repeat(size);
    bodies.set('/long.csv', Buffer.from(`a,b\n${row},1\nz,2\n`));
    const r = await capture('/long.csv');
    bodies.set('/rows.csv', Buffer.from(`a,b\n${`${'x'.repeat(96)},1\n`.repeat(Math.floor(size / 100))}`));
    const b = await capture('/rows.csv');
    console.log(`${mb} | ${quoted} | ${r.seconds.toFixed(2)} | ${(r.seconds / mb).toFixed(3)} | ${b.seconds.toFixed(2)} | ${(r.seconds / b.seconds).toFixed(2)}× | ${r.error || `${r.docs} documents`}`);
    if (mb === 64) target.push(`64 MiB row (${quoted ? 'quoted' : 'unquoted'}), accepted: ${r.seconds.toFixed(2)} s, whole process (${(r.seconds / b.seconds).toFixed(2)}× the same bytes in ordinary rows)`);
  }
}
for (const t of target) console.log(t);
// Over the limit: rejected, in time linear in what was read.
bodies.set('/over.csv', Buffer.from(`a,b\n${'x'.repeat(MAX_MB * MiB + 1024)},1\n`));
const over = await capture('/over.csv');
console.log(`row of ${MAX_MB} MiB + 1 KiB: rejected in ${over.seconds.toFixed(2)} s, whole process${MAX_MB === 64 ? ` (#17.7 target < 2 s: ${over.seconds < 2 ? 'met' : 'NOT met'})` : ''} → ${over.error}`);
// A gzip bomb: 1 GiB of zeros in ~1 MB of gzip.
const zeros = Buffer.alloc(64 * MiB, 0x30);
const member = gzipSync(Buffer.concat([Buffer.from('a\n'), zeros]));
bodies.set('/bomb.csv.gz', Buffer.concat([member, ...Array.from({ length: 15 }, () => gzipSync(zeros))]));
const bomb = await capture('/bomb.csv.gz');
console.log(`gzip bomb (${(bodies.get('/bomb.csv.gz') as Buffer).length} bytes → 1 GiB): ${bomb.seconds.toFixed(2)} s → ${bomb.error}`);
server.close();
