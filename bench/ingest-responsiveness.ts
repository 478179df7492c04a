// Ingest responsiveness (#17.6): while one large /ingest request is being processed by `sluice serve`
// (the real bin, its own process), a small ingest and an API call (openapi.json) are sent every 50 ms;
// their latencies are compared with the same calls on the idle plane in the same run, and the serve
// process's peak RSS (VmHWM) is read from /proc. Three large requests:
//   flood   58 MB, 3.5M tiny documents — over the 100,000-document cap, so it ends in a 413, but the
//           body is still scanned as it arrives and then read to its end
//   wide    58 MB, 100,000 documents of ~580 bytes — accepted, validated, staged and committed
//   few     58 MB, 10 documents of 5.8 MB — accepted (each document is parsed in one step)
// Targets: small ingest and API < 500 ms while either runs; peak RSS < 400 MB.
//   npx node bench/ingest-responsiveness.ts
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SLUICE = fileURLToPath(new URL('../plane/bin/sluice.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-ingest-resp-'));
writeFileSync(join(dir, 'flow.yaml'), `
collections:
  bench/events:
    schema: {type: object, properties: {id: {type: integer}, pad: {type: string}}, required: [id]}
    key: [/id]
`);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const [apiPort, ingestPort] = [await freePort(), await freePort()];
const child = spawn(process.execPath, [SLUICE, 'serve', '--catalog', join(dir, 'flow.yaml'), '--port', String(apiPort), '--ingest-port', String(ingestPort), '--data-dir', join(dir, 'data'), '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
let stderr = '';
child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
const cleanup = () => { if (child.exitCode === null) child.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); };
process.on('exit', cleanup);
for (let i = 0; !stderr.includes('sluice: ready'); i++) {
  if (i > 1200 || child.exitCode !== null) throw new Error(`serve did not become ready:\n${stderr}`);
  await new Promise((r) => setTimeout(r, 50));
}

const peakRssMb = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function send(port: number, method: string, path: string, body?: Buffer | string): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { if (text.length < 300) text += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let next = 1_000_000_000;
const small = () => send(ingestPort, 'POST', '/ingest', `{"bench/events": [{"id": ${next++}}]}`);
const api = () => send(apiPort, 'GET', '/api/v1/openapi.json');

async function probe(during: Promise<unknown>): Promise<{ ingest: number[]; api: number[] }> {
  const out = { ingest: [] as number[], api: [] as number[] };
  let done = false;
  void during.finally(() => { done = true; });
  while (!done) {
    const [i, a] = await Promise.all([small(), api()]);
    if (i.status !== 200) throw new Error(`small ingest failed: ${i.status} ${i.text}`);
    out.ingest.push(i.ms);
    out.api.push(a.ms);
    await new Promise((r) => setTimeout(r, 50));
  }
  return out;
}

const max = (xs: number[]) => Math.max(...xs);
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const idle = await probe(new Promise((r) => setTimeout(r, 2000)));
console.log(`ingest responsiveness (sluice serve, loopback; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')})`);
console.log(`  idle            small ingest p50 ${p50(idle.ingest).toFixed(1)} ms max ${max(idle.ingest).toFixed(1)} ms · API p50 ${p50(idle.api).toFixed(1)} ms max ${max(idle.api).toFixed(1)} ms · RSS peak ${peakRssMb().toFixed(0)} MB`);

let verdict = true;
for (const [name, build] of [
  ['flood', () => Buffer.from(`{"bench/events": [${Array.from({ length: 3_500_000 }, (_, i) => `{"id":${i}}`).join(',')}]}`)],
  ['wide', () => Buffer.from(`{"bench/events": [${Array.from({ length: 100_000 }, (_, i) => JSON.stringify({ id: 10_000_000 + i, pad: 'x'.repeat(560) })).join(',')}]}`)],
  ['few', () => Buffer.from(`{"bench/events": [${Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: 20_000_000 + i, pad: 'y'.repeat(5_800_000) })).join(',')}]}`)],
] as const) {
  const body = build();
  const big = send(ingestPort, 'POST', '/ingest', body);
  const during = await probe(big);
  const r = await big;
  const rss = peakRssMb();
  const ok = max(during.ingest) < 500 && max(during.api) < 500 && rss < 400;
  verdict &&= ok;
  console.log(`  ${name.padEnd(6)} ${(body.length / 1e6).toFixed(1)} MB → ${r.status} in ${(r.ms / 1000).toFixed(2)} s (${r.text.slice(0, 90)}…)`);
  console.log(`         during: small ingest p50 ${p50(during.ingest).toFixed(1)} ms max ${max(during.ingest).toFixed(1)} ms (${during.ingest.length} sent) · API p50 ${p50(during.api).toFixed(1)} ms max ${max(during.api).toFixed(1)} ms · max/idle-p50 ${(max(during.ingest) / p50(idle.ingest)).toFixed(1)}× · serve RSS peak ${rss.toFixed(0)} MB · ${ok ? 'ok' : 'MISSED'} (targets < 500 ms, < 400 MB)`);
}
console.log(`  verdict: ${verdict ? 'targets met' : 'targets missed'}`);
child.kill('SIGINT');
await new Promise((r) => child.once('exit', r));
