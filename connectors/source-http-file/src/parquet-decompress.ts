// Data pages of the byte writer (parquet-flat.ts) decompressed into a buffer kept per column and reused
// from page to page and row group to row group. zlib's one-shot calls (zstdDecompressSync …) make a new
// decompression context and a new output buffer of the page's size for every page: several MB of fresh
// memory each time, which malloc takes from and gives back to the kernel (mmap/munmap), so every page
// page-faults its output and the context's window again. On the 500k rides file (50 MB of pages) that was
// 10,000 page faults and ~250 ms of CPU for zstd; into reused buffers with one context per codec, ~40 ms.
// The context is Node's own (the native zlib/brotli/zstd handle of a stream object, its writeSync into an
// output buffer we give, then reset()): no other library. Anything unexpected (no such handle in this
// Node, a page that does not decompress to its declared size) falls back to hyparquet's decompressPage
// with the file's compressors, or is an error naming the page.
import { createBrotliDecompress, createGunzip, createZstdDecompress } from 'node:zlib';
import type { Transform } from 'node:stream';
import { nativeContext } from './native-zlib.ts';
import type { NativeContext, ZlibObject } from './native-zlib.ts';
import { snappyUncompress } from 'hyparquet/src/snappy.js';
import type { CompressionCodec, Compressors } from 'hyparquet';
import { decompressPage } from 'hyparquet/src/datapage.js';

type ZlibStream = Transform & ZlibObject;

/** One reusable native decompressor: a stream object used only through its handle, synchronously. */
class NativeDecompressor {
  readonly #make: () => ZlibStream;
  #stream: ZlibStream | null = null;
  #native: NativeContext | null = null;
  constructor(make: () => ZlibStream) {
    this.#make = make;
  }

  /** The stream object, or null when this Node's zlib lacks what we use (the caller falls back). */
  #get(): ZlibStream | null {
    if (this.#stream !== null && !this.#stream.destroyed) return this.#stream;
    const s = this.#make();
    const native = typeof s.reset === 'function' ? nativeContext(s) : null;
    if (native === null) return null;
    this.#stream = s;
    this.#native = native;
    return s;
  }

  /**
   * Decompresses `input` into out[0, size) (out has room for size + 1: a page that decompresses to more
   * than its header says fills it); false when the native handle is not usable here.
   */
  into(input: Uint8Array, size: number, out: Buffer): boolean {
    const s = this.#get();
    if (s === null) return false;
    const { handle, state, finish } = this.#native as NativeContext;
    let inOff = 0;
    let outOff = 0;
    // More than one call only for several frames (or gzip members) in one page.
    for (let i = 0; i < 64 && inOff < input.length; i++) {
      const inLen = input.length - inOff;
      const outLen = out.length - outOff;
      handle.writeSync(finish, input, inOff, inLen, out, outOff, outLen);
      if (s.errored) {
        this.#stream = null;
        throw s.errored;
      }
      const read = inLen - (state[1] as number);
      const wrote = outLen - (state[0] as number);
      inOff += read;
      outOff += wrote;
      (s.reset as () => void)();
      if (outOff > size) throw new Error(`a page decompresses to more than the ${size} bytes its header says`);
      if (read === 0 && wrote === 0) break;
    }
    if (outOff !== size) throw new Error(`a page decompresses to ${outOff} bytes, not the ${size} its header says`);
    return true;
  }
}

/** A column's reusable page buffer. */
export interface PageBuffer { buf: Buffer }

/** The decompressors of one thread, one per codec, made on first use. */
export class PageDecompressor {
  readonly #compressors: Compressors;
  readonly #native = new Map<CompressionCodec, NativeDecompressor>();
  constructor(compressors: Compressors) {
    this.#compressors = compressors;
  }

  /**
   * The page's bytes: `compressed` itself when uncompressed, else decompressed into `into.buf` (grown when
   * too small). The result is valid until the next call with the same buffer.
   */
  decompress(compressed: Uint8Array, size: number, codec: CompressionCodec, into: PageBuffer): Uint8Array {
    if (codec === 'UNCOMPRESSED') {
      if (compressed.length !== size) throw new Error(`an uncompressed page has ${compressed.length} bytes, not the ${size} its header says`);
      return compressed;
    }
    // An eighth more than the first page needs: the same column's page in the next row group is often a little
    // bigger, and a new buffer is fresh memory again (a page fault per 4 KiB on first touch).
    if (into.buf.length < size + 1) into.buf = Buffer.allocUnsafe(Math.max(size + 1 + (size >> 3), Math.floor(into.buf.length * 1.25)));
    const out = into.buf;
    if (codec === 'SNAPPY') {
      const page = out.subarray(0, size);
      snappyUncompress(compressed, page);
      return page;
    }
    const native = this.#nativeFor(codec);
    if (native !== null && native.into(compressed, size, out)) return out.subarray(0, size);
    return decompressPage(compressed, size, codec, this.#compressors);
  }

  #nativeFor(codec: CompressionCodec): NativeDecompressor | null {
    let d = this.#native.get(codec);
    if (d === undefined) {
      const make = codec === 'ZSTD' ? createZstdDecompress : codec === 'GZIP' ? createGunzip : codec === 'BROTLI' ? createBrotliDecompress : null;
      if (make === null) return null;
      d = new NativeDecompressor(() => make() as unknown as ZlibStream);
      this.#native.set(codec, d);
    }
    return d;
  }
}
