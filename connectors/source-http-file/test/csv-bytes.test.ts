// The CSV JSON sink (src/csv-bytes.ts: the tokenizer's bytes → framed lines in a LineSink) against the
// object sink (src/csv.ts: fields → objects → JSON.stringify → lines), both over the one tokenizer, on
// generated files: every dialect the SPEC offers, quotes, escapes,
// CR/LF mixes, multi-byte UTF-8, control characters, timestamps (valid, invalid, with fractions and
// offsets), null tokens, short rows, BOMs and other encodings, gzip, resume by skipping and by Range, and
// the errors (ragged row, unclosed quote, invalid bytes), over random chunkings. Both must give the same
// bytes in the same batches, with the same offsets, positions and resume configs, and the same error after
// the same output. Seeds are fixed; a failure names its seed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { csvFastPath } from '../src/csv-bytes.ts';
import { LineSink } from '../src/lines.ts';
import { parseFile } from '../src/pipeline.ts';
import type { ParserConfig } from '../src/schema.ts';
import type { CsvResume } from '../src/csv.ts';
import { DatetimeNormalizer } from '../src/datetime.ts';

/** Mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Dialect { delimiter: string; quote: string; escape: string; lineEnding: string; terminators: string[] }

const DIALECTS: Dialect[] = [
  { delimiter: ',', quote: '"', escape: '', lineEnding: '\r\n', terminators: ['\n', '\r\n', '\r'] },
  { delimiter: '|', quote: "'", escape: '\\', lineEnding: '\n', terminators: ['\n'] },
  { delimiter: ';', quote: '"', escape: '\\', lineEnding: '\r\n', terminators: ['\r\n'] },
  { delimiter: '\t', quote: '', escape: '', lineEnding: '\n', terminators: ['\n'] },
  { delimiter: '\u001f', quote: '"', escape: '', lineEnding: '\u001e', terminators: ['\u001e'] },
  { delimiter: ' ', quote: '"', escape: '', lineEnding: '\r', terminators: ['\r'] },
  { delimiter: '\u000b', quote: '"', escape: '\\', lineEnding: '\r\n', terminators: ['\n', '\r\n'] },
  { delimiter: '\u0001', quote: "'", escape: '', lineEnding: '\n', terminators: ['\n'] },
];

const WORDS = ['a', 'plain', 'São Paulo', 'Zürich', '😀 emoji', '東京', 'x"y', "it's", 'back\\slash', 'tab\there', 'ctl\u0001\u001f\u007f', 'NULL', 'null', 'nil', 'Null', '', '', '0', '-1.5e3', 'true',
  '2024-01-01 10:00:00', '2024-01-01T10:00:00Z', '2024-02-29 23:59:60.5', '2023-02-29 10:00:00', '2024-01-01 10:00:00.000', '2024-01-01 10:00:00.120000+02:00', '2024-12-31T00:00:00.123456789123z',
  '2024-01-01 10:00:00+25:00', '2024-01-01 10:00', '2024-13-01 10:00:00', '1999-01-01T24:00:00Z', '2024-01-01 10:00:00.1234-05:30', '2024-01-01  10:00:00'];

/** A field value as CSV text in the dialect (quoted when it must be, and sometimes when it need not). */
function field(r: () => number, d: Dialect): string {
  let v = WORDS[Math.floor(r() * WORDS.length)] as string;
  if (r() < 0.05) v += d.terminators[Math.floor(r() * d.terminators.length)] + 'next line';
  if (r() < 0.05) v += d.delimiter + 'more';
  const special = v.includes(d.delimiter) || d.terminators.some((t) => v.includes(t)) || v.includes('\r') || v.includes('\n') || (d.quote !== '' && v.startsWith(d.quote));
  if (d.quote === '') {
    // Without quoting, values cannot hold the delimiter or a terminator.
    return v.split(d.delimiter).join('_').replaceAll('\r', '_').replaceAll('\n', '_').replaceAll('\u001e', '_');
  }
  if (!special && r() < 0.8) return v;
  let inner = v.split(d.quote).join(d.quote + d.quote);
  if (d.escape !== '' && r() < 0.3) inner = inner.split(d.quote + d.quote).join(d.escape + d.quote);
  const trailer = r() < 0.03 ? 'tail' : '';
  return `${d.quote}${inner}${d.quote}${trailer}`;
}

interface Case { text: string; parser: ParserConfig; dialect: Dialect; pinned: boolean; withRow: (at: number, row: string) => string }

/**
 * A generated file of at least `minChars` characters (the byte path takes over after the first 64 Ki
 * characters). Unless `pin`, some files leave the delimiter and quote to detection, which may read the
 * generated values another way (then both paths must still agree, error included).
 */
function makeCase(seed: number, minChars: number, pin = false): Case {
  const r = rng(seed);
  const d = DIALECTS[seed % DIALECTS.length] as Dialect;
  const width = 2 + Math.floor(r() * 10);
  const configured = r() < 0.3;
  // Configured names may hold anything; a header row's names are plain fields (unique in every dialect).
  const headers = Array.from({ length: width }, (_, i) => (r() < 0.1 ? (configured ? `col "${i}", é` : `col_${i}_é`) : `c${i}`));
  const term = (): string => d.terminators[Math.floor(r() * d.terminators.length)] as string;
  const head = configured ? '' : headers.join(d.delimiter) + term();
  const rows: string[] = [];
  let length = head.length;
  while (length < minChars) {
    let row = '';
    if (r() < 0.02) row += term(); // blank line
    const n = r() < 0.05 ? 1 + Math.floor(r() * width) : width; // short rows omit keys
    row += Array.from({ length: n }, () => field(r, d)).join(d.delimiter) + term();
    rows.push(row);
    length += row.length;
  }
  const trimEnd = r() < 0.3; // no final terminator
  const assemble = (list: string[]): string => {
    const text = head + list.join('');
    if (!trimEnd) return text;
    const last = d.terminators.find((t) => text.endsWith(t)) ?? '';
    return text.slice(0, text.length - last.length);
  };
  const pinned = r() < 0.7 || pin;
  const config: Record<string, unknown> = { lineEnding: d.lineEnding, ...(d.escape ? { escape: d.escape } : {}) };
  if (pinned) Object.assign(config, { delimiter: d.delimiter, quote: d.quote });
  if (configured) config['headers'] = headers;
  return {
    text: assemble(rows), parser: { format: { type: 'csv', config } } as ParserConfig, dialect: d, pinned,
    withRow: (at, row) => assemble([...rows.slice(0, at), row + (d.terminators[0] as string), ...rows.slice(at)]),
  };
}

interface Batch { text: string; documents: number; offset: number; position: number | null; csv: CsvResume | null }
interface Run { batches: Batch[]; error: string | null; byteBatches: number }

/** Runs parseFile as the parser thread does (records and sink lines → batches), with or without the byte path. */
async function run(chunks: Uint8Array[], parser: ParserConfig, bytePath: boolean, resume?: { byteOffset: number; csv: CsvResume }, resumeFrom = 0, startOffset = 0): Promise<Run> {
  const sink = new LineSink(0, 'http://h/f.csv', startOffset, resumeFrom);
  const tracker: { position: number | null; csv: CsvResume | null } = { position: null, csv: null };
  const out: Run = { batches: [], error: null, byteBatches: 0 };
  const body = (async function* () { yield* chunks; })();
  try {
    for await (const records of parseFile(body, { filename: 'f.csv' }, parser, { tracker, ...(bytePath ? { lines: sink } : {}) }, resume)) {
      const fromSink = sink.pending;
      for (const record of records) sink.appendRecord(record);
      const taken = sink.take();
      if (taken === null) continue;
      if (fromSink) out.byteBatches++;
      out.batches.push({ text: Buffer.from(taken.lines).toString('utf8'), documents: taken.documents, offset: sink.offset, position: tracker.position, csv: tracker.position === null ? null : tracker.csv });
    }
  } catch (err) {
    out.error = `${(err as Error).name}: ${(err as Error).message}`;
    // The lines written before the error (and not yet taken) would go out as a failed batch.
    const taken = sink.take();
    if (taken) out.batches.push({ text: Buffer.from(taken.lines).toString('utf8'), documents: taken.documents, offset: sink.offset, position: null, csv: null });
  }
  return out;
}

function chunk(bytes: Uint8Array, r: () => number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < bytes.length) {
    const size = r() < 0.2 ? 1 + Math.floor(r() * 8) : 1 + Math.floor(r() * 70_000);
    out.push(bytes.subarray(i, i + size));
    i += size;
  }
  return out;
}

async function same(seed: number, bytes: Uint8Array, parser: ParserConfig, options: { expectBytePath?: boolean; resume?: { byteOffset: number; csv: CsvResume }; resumeFrom?: number; startOffset?: number } = {}): Promise<Run> {
  const chunks = chunk(bytes, rng(seed * 7 + 1));
  const a = await run(chunks, parser, false, options.resume, options.resumeFrom, options.startOffset);
  const b = await run(chunks, parser, true, options.resume, options.resumeFrom, options.startOffset);
  assert.equal(b.error, a.error, `seed ${seed}: the same error`);
  assert.equal(b.batches.length, a.batches.length, `seed ${seed}: the same number of batches`);
  for (let i = 0; i < a.batches.length; i++) assert.deepEqual(b.batches[i], a.batches[i], `seed ${seed}: batch ${i}`);
  if (options.expectBytePath !== false) assert.ok(b.byteBatches > 0, `seed ${seed}: the byte path took over`);
  return b;
}

describe('CSV byte path = string path', () => {
  test('every dialect, generated files, random chunkings (UTF-8)', async () => {
    for (let seed = 1; seed <= 48; seed++) {
      const c = makeCase(seed, 100_000 + (seed % 5) * 40_000);
      const b = await same(seed, Buffer.from(c.text, 'utf8'), c.parser, { expectBytePath: c.pinned });
      if (c.pinned) assert.equal(b.error, null, `seed ${seed}: ${b.error}`);
    }
  });

  test('BOM, windows-1252 and UTF-16 sources, gzip', async () => {
    for (let seed = 100; seed < 112; seed++) {
      const c = makeCase(seed, 150_000, true);
      const ascii = Array.from(c.text, (ch) => (ch.charCodeAt(0) > 0xff ? '?' : ch)).join('');
      const variants: [Uint8Array, ParserConfig][] = [
        [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(c.text)]), c.parser],
        [Buffer.from(ascii, 'latin1'), { ...c.parser, format: { type: 'csv', config: { ...(c.parser.format as { config: object }).config, encoding: 'windows-1252' } } } as ParserConfig],
        [Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(c.text, 'utf16le')]), c.parser],
        [gzipSync(Buffer.from(c.text)), { ...c.parser, compression: 'gzip' }],
      ];
      for (const [bytes, parser] of variants) await same(seed, bytes, parser);
    }
  });

  test('resume: by skipping emitted records, and by Range from a position', async () => {
    let resumedByBytes = 0;
    for (let seed = 200; seed < 212; seed++) {
      const c = makeCase(seed, 240_000, true);
      const bytes = Buffer.from(c.text);
      const full = await run(chunk(bytes, rng(seed)), c.parser, true);
      const total = full.batches.reduce((n, b) => n + b.documents, 0);
      // Skipping: the first 60% of the records are counted, not written.
      await same(seed, bytes, c.parser, { resumeFrom: Math.floor(total * 0.6) });
      // By Range: a later session starts at a batch's position with its resume config.
      const mid = full.batches.find((b) => b.position !== null);
      assert.ok(mid, `seed ${seed}: a batch with a position`);
      const tail = bytes.subarray(mid.position as number);
      // The tail is parsed by the byte path when it is longer than the string path's first 64 Ki characters.
      await same(seed, tail, c.parser, { resume: { byteOffset: mid.position as number, csv: mid.csv as CsvResume }, startOffset: mid.offset, resumeFrom: mid.offset, expectBytePath: tail.length > 140_000 });
      resumedByBytes += tail.length > 140_000 ? 1 : 0;
    }
    assert.ok(resumedByBytes >= 6, `most Range resumes exercise the byte path (${resumedByBytes})`);
  });

  test('errors: a ragged row, an unclosed quote, invalid UTF-8 — after the same output', async () => {
    for (let seed = 300; seed < 330; seed++) {
      const c = makeCase(seed, 250_000, true);
      const d = c.dialect;
      const r = rng(seed);
      const at = 1500 + Math.floor(r() * 1500);
      let bad: Buffer;
      const kind = seed % 3;
      if (kind === 0) {
        bad = Buffer.from(c.withRow(at, Array.from({ length: 14 }, (_, i) => `x${i}`).join(d.delimiter)));
      } else if (kind === 1 && d.quote !== '') {
        bad = Buffer.from(`${c.text}${d.terminators[0]}${d.quote}never closed`);
      } else {
        bad = Buffer.from(c.text);
        // After the encoding sample (64 KiB and the chunk that completes it, < 140 KB).
        bad[150_000 + Math.floor((bad.length - 160_000) * r())] = 0xff;
      }
      const b = await same(seed, bad, c.parser, { expectBytePath: false });
      if (kind === 0) assert.match(b.error ?? '', /has 14 columns, but the headers only define/, `seed ${seed}`);
      if (kind === 1 && d.quote !== '') assert.match(b.error ?? '', /no closing quote/, `seed ${seed}`);
      if (kind === 2) assert.match(b.error ?? '', /not valid for encoding 'utf-8' at byte offset/, `seed ${seed}`);
    }
  });

  test('the fast path (whole plain rows in one loop) writes what the field-by-field path writes', async () => {
    // The same files and chunkings with the fast path on and off: the same batches, positions and errors.
    const both = async (label: string, parser: ParserConfig, chunks: Uint8Array[], resumeFrom = 0): Promise<number> => {
      const before = csvFastPath.rows;
      const fast = await run(chunks, parser, true, undefined, resumeFrom);
      const taken = csvFastPath.rows - before;
      csvFastPath.enabled = false;
      let slow: Run;
      try {
        slow = await run(chunks, parser, true, undefined, resumeFrom);
      } finally {
        csvFastPath.enabled = true;
      }
      assert.equal(fast.error, slow.error, `${label}: the same error`);
      assert.deepEqual(fast.batches, slow.batches, `${label}: the same batches`);
      return taken;
    };
    let taken = 0;
    for (let seed = 400; seed < 424; seed++) {
      const c = makeCase(seed, 120_000, true);
      const bytes = Buffer.from(c.text, 'utf8');
      taken += await both(`seed ${seed}`, c.parser, chunk(bytes, rng(seed)));
      await both(`seed ${seed}, resuming`, c.parser, chunk(bytes, rng(seed + 1)), 700);
      // A ragged row and an unclosed quote among fast rows.
      const d = c.dialect;
      const ragged = Buffer.from(c.withRow(900, Array.from({ length: 14 }, (_, i) => `x${i}`).join(d.delimiter)));
      await both(`seed ${seed}, ragged`, c.parser, chunk(ragged, rng(seed + 2)));
      if (d.quote !== '') {
        const open = Buffer.from(`${c.text}${d.terminators[0]}a${d.delimiter}${d.quote}never closed`);
        await both(`seed ${seed}, unclosed`, c.parser, chunk(open, rng(seed + 3)));
      }
    }
    // Hand-made edges: empty and null fields, trailing delimiters, quotes and CR at every chunk edge, no final
    // line end (every chunk size up to 5, then larger), and rows of 300 KB (chunks of 4 KiB and more: a row the
    // input does not complete yet is re-read at every push, by both paths).
    const config = { format: { type: 'csv', config: { delimiter: ',', quote: '"', lineEnding: '\r\n' } } } as ParserConfig;
    const long = 'v'.repeat(300_000);
    const edges: [string, number[]][] = [
      [`a,b,c\r\n${'1,"x""y",\r\n'.repeat(300)},,\r\n"",NULL,nil\r\n"2024-01-01 10:00:00","2024-01-01 10:00:00""",2024-01-01T10:00:00Z\r\n\r\n\r\n${'"p","q"\n'.repeat(300)}x,"y"z\n"é",😀\r1,2\r\nlast,"q"`, [1, 2, 3, 4, 5, 64, 65536]],
      [`a,b,c\r\n${'1,"x""y",\r\n'.repeat(3000)}${long},"${long}",z\r\n${long}\r\n1,2,3`, [4096, 65536, 1 << 20]],
    ];
    for (const [i, [text, sizes]] of edges.entries()) {
      const bytes = Buffer.from(text);
      for (const size of sizes) {
        const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, k) => bytes.subarray(k * size, (k + 1) * size));
        taken += await both(`edges ${i}, chunks of ${size}`, config, chunks);
      }
    }
    // The comparison is between the two paths, not the same one twice.
    assert.ok(taken > 30_000, `the fast path took ${taken} rows`);
  });

  test('headers the JSON text path cannot take (duplicates, _meta) stay on the string path', async () => {
    const text = `a,a,__proto__\n${Array.from({ length: 20_000 }, (_, i) => `${i},x,y`).join('\n')}\n`;
    const b = await same(1, Buffer.from(text), { format: { type: 'csv' } } as ParserConfig, { expectBytePath: false });
    assert.equal(b.byteBatches, 0);
    assert.equal(b.error, null);
  });
});

describe('DatetimeNormalizer.bytesInto = string()', () => {
  test('on every test word and mutations of timestamps', () => {
    const dt = new DatetimeNormalizer('-03:30');
    const r = rng(9);
    const base = WORDS.filter((w) => /^\d{4}-/.test(w));
    const samples = [...WORDS];
    for (let i = 0; i < 20_000; i++) {
      const w = base[Math.floor(r() * base.length)] as string;
      const p = Math.floor(r() * w.length);
      const chars = '0123456789-:T .Zz+é';
      samples.push(r() < 0.5 ? w.slice(0, p) + chars[Math.floor(r() * chars.length)] + w.slice(p + 1) : w.slice(0, p) + w.slice(p + 1));
    }
    const out = Buffer.alloc(256);
    for (const s of samples) {
      const src = Buffer.from(`..${s}..`);
      const len = Buffer.byteLength(s);
      const end = dt.bytesInto(src, 2, 2 + len, out, 5);
      const expected = dt.string(s);
      // A string left as it is either was not a timestamp (-1) or is one already normalised (written the same).
      if (end === -1) assert.equal(expected, s, JSON.stringify(s));
      else assert.equal(out.toString('utf8', 5, end), JSON.stringify(expected), JSON.stringify(s));
    }
  });
});
