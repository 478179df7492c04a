// A connector's stdin read into one reused buffer (fd-chunks.ts): every byte arrives, in order, across chunk
// boundaries and lines longer than the buffer, while the consumer is slower than the writer; a file on stdin
// takes process.stdin instead. Real child processes, real pipes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FD_CHUNK_BYTES } from '../src/protocol/fd-chunks.ts';

const READER = new URL('./fixtures/fd-chunks-reader.ts', import.meta.url).pathname;

/** Lines of varied lengths, some longer than the reader's buffer, with multi-byte characters. */
function makeLines(): string[] {
  const lines: string[] = [];
  let seed = 7;
  const rand = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let i = 0; i < 20_000; i++) lines.push(`{"n":${i},"s":"${'é€x'.repeat(rand(200))}"}`);
  lines.splice(5_000, 0, `{"big":"${'y'.repeat(FD_CHUNK_BYTES * 3 + 17)}"}`);
  lines.splice(12_000, 0, `{"big":"${'ü'.repeat(FD_CHUNK_BYTES)}"}`);
  return lines;
}

function expected(lines: string[]): { lines: number; sha256: string } {
  const hash = createHash('sha256');
  for (const l of lines) { hash.update(l); hash.update('\n'); }
  return { lines: lines.length, sha256: hash.digest('hex') };
}

async function runReader(stdin: 'pipe' | number, feed?: Buffer): Promise<{ kind: string; lines: number; sha256: string }> {
  const child = spawn(process.execPath, [READER], { stdio: [stdin, 'pipe', 'inherit'] });
  let out = '';
  if (child.stdout === null) throw new Error('the reader was spawned without its stdout pipe');
  child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s; });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  if (feed !== undefined && child.stdin !== null) {
    // Odd-sized writes, so lines and multi-byte characters straddle the chunks the reader sees.
    let seed = 3;
    for (let at = 0; at < feed.length;) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const n = 1 + (seed % 300_000);
      if (!child.stdin.write(feed.subarray(at, at + n))) await new Promise((resolve) => child.stdin!.once('drain', resolve));
      at += n;
    }
    child.stdin.end();
  }
  assert.equal(await exited, 0, 'the reader exits 0');
  await new Promise((resolve) => setImmediate(resolve));
  return JSON.parse(out.trim()) as { kind: string; lines: number; sha256: string };
}

describe('stdin read into one reused buffer (fdChunks)', () => {
  const lines = makeLines();
  const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');

  it('a pipe: every line arrives intact and in order, lines longer than the buffer included, with a slow consumer', async () => {
    const got = await runReader('pipe', bytes);
    assert.equal(got.kind, 'fdChunks');
    assert.deepEqual({ lines: got.lines, sha256: got.sha256 }, expected(lines));
  });

  it('a file on stdin is read through process.stdin, with the same lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-fd-chunks-'));
    try {
      const file = join(dir, 'in.jsonl');
      writeFileSync(file, bytes);
      const fd = openSync(file, 'r');
      try {
        const got = await runReader(fd);
        assert.equal(got.kind, 'process.stdin');
        assert.deepEqual({ lines: got.lines, sha256: got.sha256 }, expected(lines));
      } finally {
        closeSync(fd);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an empty pipe ends at once with no lines', async () => {
    const got = await runReader('pipe', Buffer.alloc(0));
    assert.deepEqual(got, { kind: 'fdChunks', lines: 0, sha256: createHash('sha256').digest('hex') });
  });
});
