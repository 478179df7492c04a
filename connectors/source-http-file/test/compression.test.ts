import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { decompress, isHiddenZipMember, resolveCompression } from '../src/compression.ts';
import type { ResolvedCompression } from '../src/compression.ts';
import { DecodeError } from '../src/errors.ts';
import { gzipSync, zipSync, zstdCompressSync } from './fixtures.ts';

async function run(bytes: Uint8Array, compression: ResolvedCompression, size = 1 << 20): Promise<{ members: (string | null)[]; data: Record<string, string> }> {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  const members: (string | null)[] = [];
  const data: Record<string, string> = {};
  let current = '';
  for await (const ev of decompress(Readable.from(chunks, { objectMode: true }), compression)) {
    if ('member' in ev) { members.push(ev.member); current = ev.member ?? ''; data[current] = ''; } else data[current] += Buffer.from(ev.data).toString();
  }
  return { members, data };
}

const text = 'a,b\n1,2\n'.repeat(1000);

/** Output bytes of decompress(), without keeping them. */
async function drain(bytes: Uint8Array, compression: ResolvedCompression, maxRatio?: number): Promise<number> {
  let total = 0;
  const chunks = Array.from({ length: Math.ceil(bytes.length / 65536) }, (_, i) => bytes.subarray(i * 65536, (i + 1) * 65536));
  for await (const ev of decompress(Readable.from(chunks, { objectMode: true }), compression, maxRatio)) if ('data' in ev) total += ev.data.length;
  return total;
}

describe('compression', () => {
  test('a reader that falls behind still gets pieces of at most 128 KiB (the read-ahead is not handed over as one chunk)', async () => {
    // Every parse (and so every batch of framed lines) stays the usual size: a 512 KiB chunk grew the lines' buffer.
    const csv = Buffer.from('ride,city,fare\n' + Array.from({ length: 120_000 }, (_, i) => `r${i},Reykjavík,${i % 97}.5\n`).join(''));
    for (const [kind, bytes] of [['gzip', gzipSync(csv)], ['zstd', zstdCompressSync(csv)]] as [ResolvedCompression, Uint8Array][]) {
      const sizes: number[] = [];
      const parts: Buffer[] = [];
      for await (const ev of decompress(Readable.from([bytes], { objectMode: true }), kind)) {
        if (!('data' in ev)) continue;
        sizes.push(ev.data.length);
        parts.push(Buffer.from(ev.data));
        // Falls behind after the first piece: zlib fills its read-ahead meanwhile (the condition, not the verdict).
        if (sizes.length === 1) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(Buffer.concat(parts).equals(csv), `${kind}: the content, in order`);
      assert.ok(Math.max(...sizes) <= 128 * 1024, `${kind}: largest piece ${Math.max(...sizes)} bytes`);
    }
  });

  test('gzip and zstd decompressed inline give what Node\'s zlib streams give: the same bytes, the same errors', async () => {
    // Both ways over the same inputs and chunkings; the pieces may differ, the bytes and errors may not.
    const both = async (bytes: Uint8Array, kind: ResolvedCompression, size: number): Promise<[string, string]> => {
      const offsets: number[] = [];
      const once = async (viaStream: boolean): Promise<string> => {
        const chunks: Uint8Array[] = [];
        for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
        const parts: Buffer[] = [];
        try {
          for await (const ev of decompress(Readable.from(chunks, { objectMode: true }), kind, undefined, { viaStream })) {
            if ('data' in ev) {
              assert.ok(ev.data.length > 0 && ev.data.length <= 128 * 1024, `piece of ${ev.data.length} bytes`);
              parts.push(Buffer.from(ev.data));
            }
          }
        } catch (err) {
          assert.ok(err instanceof DecodeError, `${kind}: ${String(err)}`);
          // The stream path reads ahead of zlib, so its offset may be later; the inline one is never later.
          offsets.push(err.byteOffset ?? -1);
          return `error: ${err.message.replace(/after \d+ compressed bytes/, 'after N compressed bytes')}`;
        }
        return Buffer.concat(parts).toString('latin1');
      };
      const result: [string, string] = [await once(false), await once(true)];
      if (offsets.length === 2) assert.ok((offsets[0] as number) <= (offsets[1] as number), `error offsets ${offsets.join(' vs ')}`);
      return result;
    };
    const big = Buffer.from(Array.from({ length: 15_000 }, (_, i) => `r${i},"São, ""Paulo""",${(i * 7919) % 1000}\n`).join(''));
    const gzMembers = Buffer.concat([gzipSync('first\n'), gzipSync(big), gzipSync(''), gzipSync('last\n')]);
    const zFrames = Buffer.concat([zstdCompressSync(Buffer.from('first\n')), zstdCompressSync(big), zstdCompressSync(Buffer.from('last\n'))]);
    const cases: [string, Uint8Array, ResolvedCompression][] = [
      ['gzip members', gzMembers, 'gzip'],
      ['gzip, trailing zero bytes', Buffer.concat([gzipSync(big), Buffer.alloc(5)]), 'gzip'],
      ['gzip, trailing garbage', Buffer.concat([gzipSync('a\n'), Buffer.from('garbage')]), 'gzip'],
      ['gzip truncated', gzMembers.subarray(0, gzMembers.length - 30), 'gzip'],
      ['gzip corrupt', Buffer.concat([gzMembers.subarray(0, 200), Buffer.alloc(64, 0xff), gzMembers.subarray(264)]), 'gzip'],
      ['not gzip', Buffer.from('plain text, not gzip\n'), 'gzip'],
      ['empty gzip', new Uint8Array(0), 'gzip'],
      ['zstd frames', zFrames, 'zstd'],
      ['zstd corrupt', Buffer.concat([zFrames.subarray(0, 100), Buffer.alloc(40, 0x41), zFrames.subarray(140)]), 'zstd'],
    ];
    for (const [name, bytes, kind] of cases) {
      for (const size of [1, 7, 4096, 65536, 1 << 22]) {
        if (size < 8 && bytes.length > 20_000) continue;
        const [inline, stream] = await both(bytes, kind, size);
        assert.equal(inline, stream, `${name}, chunks of ${size}`);
      }
    }
    // The cases decompress or fail as expected (the comparison above is not between two empty results).
    assert.equal((await both(gzMembers, 'gzip', 4096))[0], `first\n${big.toString('latin1')}last\n`);
    assert.match((await both(gzMembers.subarray(0, gzMembers.length - 30), 'gzip', 4096))[0], /^error: failed to decompress content as gzip: the compressed data is truncated/);
  });

  test('bad input: a decompression bomb (gzip, zstd, zip) stops with a clear error; the limit can be raised or turned off', async () => {
    const zeros = Buffer.alloc(80 * 1024 * 1024, 0x30);
    const bombs: [ResolvedCompression, Uint8Array][] = [['gzip', gzipSync(zeros)], ['zstd', zstdCompressSync(zeros)], ['zip', zipSync({ 'a.csv': zeros })]];
    for (const [kind, bomb] of bombs) {
      await assert.rejects(drain(bomb, kind), (e: unknown) => e instanceof DecodeError
        && new RegExp(`^the ${kind} data expands more than 500× \\(\\d+ bytes from the first \\d+ compressed bytes\\): this looks like a decompression bomb; if the file is genuine, raise the limit with the environment variable HTTP_FILE_MAX_DECOMPRESSION_RATIO \\(0 = no limit\\)$`).test(e.message), kind);
      assert.equal(await drain(bomb, kind, 0), zeros.length, `${kind}: ratio 0 = no limit`);
    }
    // Below the first 64 MiB of output nothing is checked (small, very repetitive files are fine).
    assert.equal(await drain(gzipSync(Buffer.alloc(32 * 1024 * 1024, 0x30)), 'gzip', 2), 32 * 1024 * 1024);
  });

  test('bad input: truncated gzip', async () => {
    const gz = gzipSync(text);
    await assert.rejects(run(gz.subarray(0, gz.length - 20), 'gzip', 7), (e: unknown) => e instanceof DecodeError && /^failed to decompress content as gzip: the compressed data is truncated \(unexpected end of file\)/.test(e.message));
  });

  test('bad input: a file that claims gzip but is not', async () => {
    await assert.rejects(run(Buffer.from('plain text, not gzip\n'), 'gzip'), (e: unknown) => e instanceof DecodeError && e.message === 'failed to decompress content as gzip: incorrect header check (after 21 compressed bytes)');
  });

  test('bad input: truncated zstd', async () => {
    const z = zstdCompressSync(Buffer.from(text));
    await assert.rejects(run(z.subarray(0, z.length - 10), 'zstd', 5), (e: unknown) => e instanceof DecodeError && e.message === `failed to decompress content as zstd: the compressed data is truncated (the file ends inside a frame, after ${z.length - 10} compressed bytes)`);
  });

  test('bad input: truncated zip and not a zip', async () => {
    const noisy = Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 251));
    const zip = zipSync({ 'a.csv': noisy });
    await assert.rejects(run(zip.subarray(0, 200), 'zip', 3), (e: unknown) => e instanceof DecodeError && e.message === "failed to decompress content as zip: the archive is truncated inside member 'a.csv'");
    await assert.rejects(run(Buffer.from('hello'), 'zip'), (e: unknown) => e instanceof DecodeError && e.message === 'failed to decompress content as zip: no zip entries found (the file is not a zip archive)');
  });

  test('empty input: no data (one member for stream formats, none for zip)', async () => {
    assert.deepEqual(await run(new Uint8Array(0), 'none'), { members: [null], data: { '': '' } });
    assert.deepEqual(await run(new Uint8Array(0), 'zip'), { members: [], data: {} });
  });

  test('gzip: multi-member, any chunk size', async () => {
    const gz = Buffer.concat([gzipSync('first\n'), gzipSync('second\n')]);
    for (const size of [1, 3, 1 << 20]) assert.deepEqual(await run(gz, 'gzip', size), { members: [null], data: { '': 'first\nsecond\n' } });
  });

  test('zstd: several frames (and a skippable frame) at any chunk size', async () => {
    const skippable = Buffer.concat([Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0]), Buffer.from('abc')]);
    const z = Buffer.concat([zstdCompressSync(Buffer.from('first\n')), skippable, zstdCompressSync(Buffer.from(text)), zstdCompressSync(Buffer.from('last\n'))]);
    for (const size of [1, 3, 100, 1 << 20]) assert.equal((await run(z, 'zstd', size)).data[''], `first\n${text}last\n`, `chunk size ${size}`);
  });

  test('zstd: a file written by the zstd CLI (content checksum, multi-threaded frames)', async (t) => {
    const cli = spawnSync('zstd', ['-q', '-c', '--check', '-T2', '-B1000'], { input: Buffer.from(text) });
    if (cli.error || cli.status !== 0) { t.skip(`the zstd CLI is not available (${cli.error?.message ?? cli.stderr?.toString()}); install the Debian package zstd`); return; }
    assert.equal((await run(cli.stdout, 'zstd', 7)).data[''], text);
  });

  test('bad input: not zstd at all', async () => {
    await assert.rejects(run(Buffer.from('plain text'), 'zstd'), (e: unknown) => e instanceof DecodeError && e.message === 'failed to decompress content as zstd: no zstd frame at byte offset 0 (bad magic number)');
  });

  test('zstd round trip at any chunk size', async () => {
    const z = zstdCompressSync(Buffer.from(text));
    for (const size of [1, 100, 1 << 20]) assert.equal((await run(z, 'zstd', size)).data[''], text);
  });

  test('zip: members in order, hidden members skipped, deflate and stored', async () => {
    const zip = zipSync({
      'one.csv': [Buffer.from('a\n1\n'), { level: 6 }],
      '__MACOSX/._one.csv': Buffer.from('junk'),
      '.DS_Store': Buffer.from('junk'),
      'dir/two.csv': [Buffer.from('a\n2\n'), { level: 0 }],
    });
    for (const size of [1, 5, 1 << 20]) {
      assert.deepEqual(await run(zip, 'zip', size), { members: ['one.csv', 'dir/two.csv'], data: { 'one.csv': 'a\n1\n', 'dir/two.csv': 'a\n2\n' } });
    }
    assert.equal(isHiddenZipMember('x/'), true);
  });

  test('resolution order: explicit, extension, Content-Encoding/Type, magic bytes', () => {
    const gz = gzipSync('x');
    assert.deepEqual(resolveCompression({ explicit: 'none', filename: 'a.csv.gz', head: gz }), { compression: 'none', by: 'configuration' });
    assert.deepEqual(resolveCompression({ filename: 'a.csv.gz', contentEncoding: 'gzip', head: gz }), { compression: 'gzip', by: 'file extension' });
    assert.deepEqual(resolveCompression({ filename: 'a.zst', head: new Uint8Array(0) }), { compression: 'zstd', by: 'file extension' });
    assert.deepEqual(resolveCompression({ filename: 'a.csv', contentEncoding: ' gzip ', head: gz }), { compression: 'gzip', by: 'Content-Encoding' });
    assert.deepEqual(resolveCompression({ filename: 'a', contentType: 'application/zip', head: new Uint8Array(0) }), { compression: 'zip', by: 'Content-Type' });
    assert.deepEqual(resolveCompression({ filename: 'data', head: zstdCompressSync(Buffer.from('x')) }), { compression: 'zstd', by: 'magic bytes' });
    assert.deepEqual(resolveCompression({ filename: 'data', head: Buffer.from('PK\x03\x04') }), { compression: 'zip', by: 'magic bytes' });
    assert.deepEqual(resolveCompression({ filename: 'data', head: Buffer.from('a,b') }), { compression: 'none', by: 'default' });
  });
});
