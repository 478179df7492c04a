// Decompression stage. Resolution order (issue 3): explicit setting, else file extension, else
// Content-Encoding / Content-Type, else magic bytes. gzip (multi-member) and zstd run through Node's
// native zlib/zstd contexts, called synchronously on this thread as each compressed chunk arrives (see
// inflateInline; Node's zlib streams are the fallback); zip runs through fflate's streaming Unzip as a pure
// incremental core that yields one member at a time (hidden members skipped).
import { Readable, pipeline } from 'node:stream';
import { createGunzip, createZstdDecompress } from 'node:zlib';
import { createRequire } from 'node:module';
import type * as Fflate from 'fflate';
import type { Unzip } from 'fflate';
import type { Compression } from './schema.ts';
import { ConfigError, DecodeError } from './errors.ts';
import { nativeContext } from './native-zlib.ts';
import type { ZlibObject } from './native-zlib.ts';

export type ResolvedCompression = Exclude<Compression, null>;

export interface CompressionHints {
  explicit?: Compression | null | undefined;
  filename: string;
  contentEncoding?: string | null | undefined;
  contentType?: string | null | undefined;
  /** The first bytes of the body (up to 32). */
  head: Uint8Array;
}

export function compressionFromExtension(filename: string): ResolvedCompression | null {
  const segments = filename.slice(1).split('.').slice(1);
  for (let i = segments.length - 1; i >= 0; i--) {
    const ext = (segments[i] as string).toLowerCase();
    if (ext === 'gz' || ext === 'gzip') return 'gzip';
    if (ext === 'zip') return 'zip';
    if (ext === 'zst' || ext === 'zstd') return 'zstd';
  }
  return null;
}

export function compressionFromMagic(head: Uint8Array): ResolvedCompression | null {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) return 'zip';
  if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd';
  return null;
}

export function resolveCompression(h: CompressionHints): { compression: ResolvedCompression; by: string } {
  if (h.explicit) return { compression: h.explicit, by: 'configuration' };
  const ext = compressionFromExtension(h.filename);
  if (ext) return { compression: ext, by: 'file extension' };
  if ((h.contentEncoding ?? '').trim().toLowerCase() === 'gzip') return { compression: 'gzip', by: 'Content-Encoding' };
  const essence = (h.contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (essence === 'application/gzip' || essence === 'application/x-gzip') return { compression: 'gzip', by: 'Content-Type' };
  if (essence === 'application/zip') return { compression: 'zip', by: 'Content-Type' };
  if (essence === 'application/zstd') return { compression: 'zstd', by: 'Content-Type' };
  const magic = compressionFromMagic(h.head);
  if (magic) return { compression: magic, by: 'magic bytes' };
  return { compression: 'none', by: 'default' };
}

/** A decompressed event: the start of a member (zip: its name; otherwise one null member), or data. */
export type Decompressed = { member: string | null } | { data: Uint8Array };

/** Whether a zip member is hidden metadata to skip (`__MACOSX/…`, `.DS_Store`, any dot-file) or a directory. */
export function isHiddenZipMember(name: string): boolean {
  if (name.endsWith('/')) return true;
  const parts = name.split('/');
  if (parts.includes('__MACOSX')) return true;
  return (parts[parts.length - 1] ?? '').startsWith('.');
}

// fflate loads with the first zip file (a few ms of every start otherwise).
const requireCjs = createRequire(import.meta.url);
let fflate: typeof Fflate | undefined;

/** Zip bytes in → member events out, across any chunk boundary. */
export class ZipSplitter {
  readonly #unzip: Unzip;
  #events: Decompressed[] = [];
  #error: Error | null = null;
  #open: string | null = null;
  #openFinished = true;
  #bytes = 0;

  constructor() {
    fflate ??= requireCjs('fflate') as typeof Fflate;
    this.#unzip = new fflate.Unzip();
    this.#unzip.register(fflate.UnzipInflate);
    this.#unzip.onfile = (file) => {
      if (isHiddenZipMember(file.name)) return; // not started: its data is skipped
      this.#events.push({ member: file.name });
      this.#open = file.name;
      this.#openFinished = false;
      file.ondata = (err, data, final) => {
        if (err) { this.#error ??= err; return; }
        if (data.length) this.#events.push({ data });
        if (final) this.#openFinished = true;
      };
      file.start();
    };
  }

  #head: number[] = [];

  push(chunk: Uint8Array): Decompressed[] {
    for (let i = 0; i < chunk.length && this.#head.length < 4; i++) this.#head.push(chunk[i] as number);
    this.#bytes += chunk.length;
    this.#run(() => this.#unzip.push(chunk, false));
    return this.#take();
  }

  end(): Decompressed[] {
    let failure: unknown = null;
    try {
      this.#run(() => this.#unzip.push(new Uint8Array(0), true));
    } catch (err) {
      failure = err;
    }
    const out = this.#take();
    const h = this.#head;
    const pk = h[0] === 0x50 && h[1] === 0x4b && (h[2] === 0x03 || h[2] === 0x05);
    if (this.#bytes > 0 && !pk) {
      throw new DecodeError('failed to decompress content as zip: no zip entries found (the file is not a zip archive)', { byteOffset: 0 });
    }
    if (this.#open !== null && !this.#openFinished) {
      throw new DecodeError(`failed to decompress content as zip: the archive is truncated inside member '${this.#open}'`, { byteOffset: this.#bytes });
    }
    if (failure) throw failure;
    return out;
  }

  #run(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      throw new DecodeError(`failed to decompress content as zip: ${(err as Error).message}`, {}, { cause: err });
    }
    if (this.#error) throw new DecodeError(`failed to decompress content as zip: member '${this.#open ?? '?'}': ${this.#error.message}`, {}, { cause: this.#error });
  }

  #take(): Decompressed[] {
    const out = this.#events;
    this.#events = [];
    return out;
  }
}

/** A zstd frame boundary event, or compressed bytes of the current frame. */
export type ZstdFrameEvent = { frame: 'start' | 'end' } | { bytes: Uint8Array };

/**
 * Splits a zstd stream into frames (RFC 8878 §3.1), as a pure incremental core: Node's zstd
 * decompressor stops at the end of the first frame, so each frame gets its own. Skippable frames
 * are dropped. Only frame and block headers are buffered (at most 18 bytes).
 */
export class ZstdFrameSplitter {
  #state: 'magic' | 'header' | 'block' | 'body' | 'checksum' | 'skipHeader' | 'skip' = 'magic';
  #hold: number[] = [];
  #need = 4;
  #remaining = 0;
  #checksum = false;
  #lastBlock = false;
  #inFrame = false;
  #offset = 0;

  push(chunk: Uint8Array): ZstdFrameEvent[] {
    const out: ZstdFrameEvent[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#state === 'body' || this.#state === 'skip') {
        const take = Math.min(this.#remaining, chunk.length - i);
        if (this.#state === 'body') out.push({ bytes: chunk.subarray(i, i + take) });
        i += take;
        this.#offset += take;
        this.#remaining -= take;
        if (this.#remaining === 0) this.#afterBody(out);
        continue;
      }
      // Header states: collect #need bytes.
      while (i < chunk.length && this.#hold.length < this.#need) { this.#hold.push(chunk[i++] as number); this.#offset++; }
      if (this.#hold.length < this.#need) break;
      this.#header(out);
    }
    return coalesceBytes(out);
  }

  end(): ZstdFrameEvent[] {
    if (this.#inFrame || this.#hold.length > 0 || this.#state === 'skip' || this.#state === 'skipHeader') {
      throw new DecodeError(`failed to decompress content as zstd: the compressed data is truncated (the file ends inside a frame, after ${this.#offset} compressed bytes)`, { byteOffset: this.#offset });
    }
    return [];
  }

  #emitHeld(out: ZstdFrameEvent[]): void {
    out.push({ bytes: Uint8Array.from(this.#hold) });
    this.#hold = [];
  }

  #header(out: ZstdFrameEvent[]): void {
    const h = this.#hold;
    switch (this.#state) {
      case 'magic': {
        const magic = ((h[0] as number) | ((h[1] as number) << 8) | ((h[2] as number) << 16) | ((h[3] as number) << 24)) >>> 0;
        if (magic === 0xfd2fb528) {
          out.push({ frame: 'start' });
          this.#inFrame = true;
          this.#state = 'header';
          this.#need = 5; // magic + descriptor
          return;
        }
        if ((magic & 0xfffffff0) === 0x184d2a50) {
          this.#state = 'skipHeader';
          this.#need = 8;
          return;
        }
        throw new DecodeError(`failed to decompress content as zstd: no zstd frame at byte offset ${this.#offset - 4} (bad magic number)`, { byteOffset: this.#offset - 4 });
      }
      case 'skipHeader': {
        this.#remaining = ((h[4] as number) | ((h[5] as number) << 8) | ((h[6] as number) << 16) | ((h[7] as number) << 24)) >>> 0;
        this.#hold = [];
        this.#need = 4;
        this.#state = this.#remaining === 0 ? 'magic' : 'skip';
        return;
      }
      case 'header': {
        const d = h[4] as number;
        const fcsFlag = d >> 6;
        const single = (d >> 5) & 1;
        const didFlag = d & 3;
        this.#checksum = ((d >> 2) & 1) === 1;
        const fcsSize = fcsFlag === 0 ? single : fcsFlag === 1 ? 2 : fcsFlag === 2 ? 4 : 8;
        const total = 5 + (single ? 0 : 1) + [0, 1, 2, 4][didFlag]! + fcsSize;
        if (h.length < total) { this.#need = total; return; }
        this.#emitHeld(out);
        this.#state = 'block';
        this.#need = 3;
        return;
      }
      case 'block': {
        const v = (h[0] as number) | ((h[1] as number) << 8) | ((h[2] as number) << 16);
        this.#emitHeld(out);
        this.#lastBlock = (v & 1) === 1;
        const type = (v >> 1) & 3;
        const size = v >>> 3;
        if (type === 3) throw new DecodeError(`failed to decompress content as zstd: reserved block type at byte offset ${this.#offset - 3}`, { byteOffset: this.#offset - 3 });
        this.#remaining = type === 1 ? 1 : size;
        this.#state = 'body';
        if (this.#remaining === 0) this.#afterBody(out);
        return;
      }
      case 'checksum': {
        this.#emitHeld(out);
        this.#endFrame(out);
        return;
      }
      default:
        return;
    }
  }

  #afterBody(out: ZstdFrameEvent[]): void {
    if (this.#state === 'skip') {
      this.#state = 'magic';
      this.#need = 4;
      return;
    }
    if (!this.#lastBlock) { this.#state = 'block'; this.#need = 3; return; }
    if (this.#checksum) { this.#state = 'checksum'; this.#need = 4; return; }
    this.#endFrame(out);
  }

  #endFrame(out: ZstdFrameEvent[]): void {
    out.push({ frame: 'end' });
    this.#inFrame = false;
    this.#state = 'magic';
    this.#need = 4;
  }
}

/**
 * Merges each run of `bytes` events into one: a chunk holds block headers (3 bytes each) between block
 * bodies, and every event is a write to the decompressor, i.e. a round trip to the threadpool (measured:
 * 1,435 writes for 254 chunks, half of them under 4 KiB; merged, 77 MB decompressed in ~0.26 s, not ~0.41).
 */
function coalesceBytes(events: ZstdFrameEvent[]): ZstdFrameEvent[] {
  const out: ZstdFrameEvent[] = [];
  let run: Uint8Array[] = [];
  const flush = (): void => {
    if (run.length === 1) out.push({ bytes: run[0] as Uint8Array });
    else if (run.length > 1) out.push({ bytes: Buffer.concat(run) });
    run = [];
  };
  for (const e of events) {
    if ('bytes' in e) run.push(e.bytes);
    else {
      flush();
      out.push(e);
    }
  }
  flush();
  return out;
}

/** Decompresses every frame of a zstd stream, one Node decompressor per frame, with backpressure. */
async function* zstdFrames(source: AsyncIterable<Uint8Array>, viaStream: boolean): AsyncGenerator<Uint8Array> {
  const splitter = new ZstdFrameSplitter();
  const it = source[Symbol.asyncIterator]();
  let queue: ZstdFrameEvent[] = [];
  let done = false;
  const nextEvent = async (): Promise<ZstdFrameEvent | null> => {
    while (queue.length === 0) {
      if (done) return null;
      const r = await it.next();
      if (r.done) { done = true; queue = splitter.end(); continue; }
      queue = splitter.push(r.value);
    }
    return queue.shift() as ZstdFrameEvent;
  };
  let compressedOffset = 0;
  while (true) {
    const ev = await nextEvent();
    if (ev === null) return;
    if (!('frame' in ev) || ev.frame !== 'start') continue;
    const frameBytes = (async function* () {
      while (true) {
        const e = await nextEvent();
        if (e === null || ('frame' in e && e.frame === 'end')) return;
        if ('bytes' in e) { compressedOffset += e.bytes.length; yield e.bytes; }
      }
    })();
    yield* decompressStream(frameBytes, 'zstd', () => createZstdDecompress(zlibOptions()), compressedOffset, viaStream);
  }
}

function zlibError(kind: string, err: Error, offset: number): DecodeError {
  const detail = /unexpected end of file/i.test(err.message) ? 'the compressed data is truncated (unexpected end of file)' : err.message;
  return new DecodeError(`failed to decompress content as ${kind}: ${detail} (after ${offset} compressed bytes)`, { byteOffset: offset }, { cause: err });
}

/**
 * Output chunk of the decompressors: 64 KiB instead of zlib's 16 KiB, so a file takes a quarter of the
 * chunks (each chunk costs a callback, a parser push and, on the parser thread, a batch message).
 */
const ZLIB_CHUNK_BYTES = 64 * 1024;
/** Decompressed bytes zlib may produce ahead of the parser, so the two overlap (zlib runs on the threadpool). */
const ZLIB_READ_AHEAD_BYTES = 512 * 1024;

/** zlib streams take Transform options too (not in @types/node's ZlibOptions). */
function zlibOptions(): { chunkSize: number } {
  return { chunkSize: ZLIB_CHUNK_BYTES, readableHighWaterMark: ZLIB_READ_AHEAD_BYTES } as { chunkSize: number };
}

const NO_INPUT = new Uint8Array(0);

/**
 * The bytes of a gzip or zstd stream decompressed on this thread by Node's native context (the handle of a
 * zlib stream object, written synchronously as node:zlib's own gunzipSync does), a compressed chunk at a time
 * as it arrives, in pieces of at most ZLIB_CHUNK_BYTES. The same native code as the stream path (multi-member
 * gzip, errors and their messages), without its machinery: per 500k-row CSV.gz the stream path cost ~250 ms
 * of CPU (a threadpool round trip per 64 KiB of output, Transform/pipeline/async-iterator hops, a wake-up of
 * the event loop each), this ~100 ms. Nothing is read ahead: the consumer's pace reaches the socket as before.
 * Each piece is fresh memory (consumers may keep it, as they kept the stream's chunks). Returns false
 * (having yielded nothing) when this Node's zlib object lacks what it uses: the caller takes the stream path.
 */
async function* inflateInline(source: AsyncIterable<Uint8Array>, kind: string, make: () => NodeJS.ReadWriteStream, baseOffset: number): AsyncGenerator<Uint8Array, boolean> {
  const z = make() as ZlibObject;
  const native = nativeContext(z);
  if (native === null) return false;
  const { handle, state, flush, finish } = native;
  let consumed = baseOffset;
  let out = Buffer.allocUnsafe(ZLIB_CHUNK_BYTES);
  let outOff = 0;
  // One compressed chunk (or the end: no input, the finish flag) through the context; yields each piece of output.
  const run = function* (input: Uint8Array, flag: number): Generator<Uint8Array> {
    let inOff = 0;
    let availIn = input.length;
    while (true) {
      const availOut = out.length - outOff;
      handle.writeSync(flag, input, inOff, availIn, out, outOff, availOut);
      if (z.errored) throw zlibError(kind, z.errored, consumed);
      const leftOut = state[0] as number;
      const leftIn = state[1] as number;
      inOff += availIn - leftIn;
      availIn = leftIn;
      const have = availOut - leftOut;
      if (have > 0) {
        const piece = out.subarray(outOff, outOff + have);
        outOff += have;
        yield piece;
      }
      // The output buffer is full: later pieces go to a new one (the pieces handed out stay as they are).
      if (leftOut === 0) {
        out = Buffer.allocUnsafe(ZLIB_CHUNK_BYTES);
        outOff = 0;
        continue;
      }
      return;
    }
  };
  try {
    for await (const chunk of source) {
      consumed += chunk.length;
      if (chunk.length) yield* run(chunk, flush);
    }
    yield* run(NO_INPUT, finish);
  } finally {
    // Frees the native context now, not when the object is collected.
    z.close?.();
  }
  return true;
}

/** A stream's bytes decompressed: inline (inflateInline), or through Node's zlib stream when that is not possible here (or `viaStream`: tests compare both). */
async function* decompressStream(source: AsyncIterable<Uint8Array>, kind: string, make: () => NodeJS.ReadWriteStream, baseOffset: number, viaStream: boolean): AsyncGenerator<Uint8Array> {
  if (!viaStream && (yield* inflateInline(source, kind, make, baseOffset))) return;
  yield* throughZlib(source, kind, make, baseOffset);
}

/** Runs a byte stream through a zlib transform with backpressure, mapping errors to DecodeError. */
async function* throughZlib(source: AsyncIterable<Uint8Array>, kind: string, make: () => NodeJS.ReadWriteStream, baseOffset = 0): AsyncGenerator<Uint8Array> {
  let consumed = baseOffset;
  const counted = (async function* () {
    for await (const chunk of source) {
      consumed += chunk.length;
      yield chunk;
    }
  })();
  const input = Readable.from(counted, { objectMode: false });
  const z = make() as unknown as NodeJS.ReadWriteStream & AsyncIterable<Uint8Array>;
  let sourceError: unknown = null;
  input.on('error', (err) => { sourceError = err; });
  pipeline(input, z, () => {});
  try {
    for await (const chunk of z) {
      // A stream's async iterator hands over everything buffered since the last read as ONE chunk: while the
      // parser waits for its output to drain, zlib's read-ahead (ZLIB_READ_AHEAD_BYTES) comes back concatenated.
      // Pieces of ZLIB_CHUNK_BYTES keep each parse, and so each batch of framed lines, the usual size: a 512 KiB
      // chunk made ~1.2 MB of lines at once, so the lines' buffer grew (copied at each doubling, too big to be
      // reused afterwards) — in a pipeline (stdout to the plane) ~200 such grows per 500k-row file, ~0.6 s of CPU.
      if (chunk.length <= 2 * ZLIB_CHUNK_BYTES) {
        yield chunk;
        continue;
      }
      for (let at = 0; at < chunk.length; at += ZLIB_CHUNK_BYTES) yield chunk.subarray(at, Math.min(at + ZLIB_CHUNK_BYTES, chunk.length));
    }
  } catch (err) {
    if (sourceError) throw sourceError;
    if (err instanceof DecodeError) throw err;
    const e = err as Error & { code?: string };
    if (e.code?.startsWith('Z_') || e.code?.startsWith('ERR_ZSTD') || /zlib|zstd|header|end of file|invalid|corrupt/i.test(e.message)) throw zlibError(kind, e, consumed);
    throw err;
  }
  if (sourceError) throw sourceError;
}

/**
 * Decompression bombs (issue 17.7): once the output passes RATIO_CHECK_AFTER_BYTES, it may not exceed
 * this many times the compressed bytes read so far (read-ahead included, so the ratio is underestimated,
 * never over). Real CSV/JSON compresses ~5–50×; gzip cannot exceed ~1032×, zstd can go far beyond.
 * `HTTP_FILE_MAX_DECOMPRESSION_RATIO` changes it (0 turns the check off).
 */
export const DEFAULT_MAX_DECOMPRESSION_RATIO = 500;
export const RATIO_CHECK_AFTER_BYTES = 64 * 1024 * 1024;

/** The ratio limit from the environment (read per file, so the parser thread sees the same value). */
export function maxDecompressionRatio(): number {
  const v = process.env['HTTP_FILE_MAX_DECOMPRESSION_RATIO'];
  if (v === undefined || v.trim() === '') return DEFAULT_MAX_DECOMPRESSION_RATIO;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(`HTTP_FILE_MAX_DECOMPRESSION_RATIO must be a non-negative number (0 = no limit), got '${v}'`);
  return n;
}

/** How decompress runs gzip and zstd (tests). */
export interface DecompressOptions {
  /** Through Node's zlib streams (the fallback) instead of inline: tests compare both. */
  viaStream?: boolean;
}

/** The decompressed content of a body, as member/data events. */
export async function* decompress(source: AsyncIterable<Uint8Array>, compression: ResolvedCompression, maxRatio = maxDecompressionRatio(), options: DecompressOptions = {}): AsyncGenerator<Decompressed> {
  if (compression === 'none') {
    yield { member: null };
    for await (const chunk of source) if (chunk.length) yield { data: chunk };
    return;
  }
  let compressed = 0;
  let output = 0;
  const counted = (async function* () {
    for await (const chunk of source) {
      compressed += chunk.length;
      yield chunk;
    }
  })();
  const check = (length: number): void => {
    output += length;
    if (maxRatio > 0 && output > RATIO_CHECK_AFTER_BYTES && output > maxRatio * compressed) {
      throw new DecodeError(`the ${compression} data expands more than ${maxRatio}× (${output} bytes from the first ${compressed} compressed bytes): this looks like a decompression bomb; if the file is genuine, raise the limit with the environment variable HTTP_FILE_MAX_DECOMPRESSION_RATIO (0 = no limit)`, { byteOffset: compressed });
    }
  };
  if (compression === 'zip') {
    const zip = new ZipSplitter();
    for await (const chunk of counted) {
      for (const ev of zip.push(chunk)) {
        if ('data' in ev) check(ev.data.length);
        yield ev;
      }
    }
    for (const ev of zip.end()) {
      if ('data' in ev) check(ev.data.length);
      yield ev;
    }
    return;
  }
  yield { member: null };
  const viaStream = options.viaStream === true;
  const data = compression === 'gzip' ? decompressStream(counted, 'gzip', () => createGunzip(zlibOptions()), 0, viaStream) : zstdFrames(counted, viaStream);
  for await (const chunk of data) {
    check(chunk.length);
    yield { data: chunk };
  }
}
