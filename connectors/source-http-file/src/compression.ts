// Decompression stage. Resolution order (issue 3): explicit setting, else file extension, else
// Content-Encoding / Content-Type, else magic bytes. gzip (multi-member) and zstd run through Node's
// zlib streams (backpressure preserved); zip runs through fflate's streaming Unzip as a pure
// incremental core that yields one member at a time (hidden members skipped).
import { Readable, pipeline } from 'node:stream';
import { createGunzip, createZstdDecompress } from 'node:zlib';
import { Unzip, UnzipInflate } from 'fflate';
import type { Compression } from './schema.ts';
import { DecodeError } from './errors.ts';

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

/** Zip bytes in → member events out, across any chunk boundary. */
export class ZipSplitter {
  readonly #unzip = new Unzip();
  #events: Decompressed[] = [];
  #error: Error | null = null;
  #open: string | null = null;
  #openFinished = true;
  #bytes = 0;

  constructor() {
    this.#unzip.register(UnzipInflate);
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

function zlibError(kind: string, err: Error, offset: number): DecodeError {
  const detail = /unexpected end of file/i.test(err.message) ? 'the compressed data is truncated (unexpected end of file)' : err.message;
  return new DecodeError(`failed to decompress content as ${kind}: ${detail} (after ${offset} compressed bytes)`, { byteOffset: offset }, { cause: err });
}

/** Runs a byte stream through a zlib transform with backpressure, mapping errors to DecodeError. */
async function* throughZlib(source: AsyncIterable<Uint8Array>, kind: string, make: () => NodeJS.ReadWriteStream): AsyncGenerator<Uint8Array> {
  let consumed = 0;
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
    for await (const chunk of z) yield chunk;
  } catch (err) {
    if (sourceError) throw sourceError;
    if (err instanceof DecodeError) throw err;
    const e = err as Error & { code?: string };
    if (e.code?.startsWith('Z_') || e.code?.startsWith('ERR_ZSTD') || /zlib|zstd|header|end of file|invalid|corrupt/i.test(e.message)) throw zlibError(kind, e, consumed);
    throw err;
  }
  if (sourceError) throw sourceError;
}

/** The decompressed content of a body, as member/data events. */
export async function* decompress(source: AsyncIterable<Uint8Array>, compression: ResolvedCompression): AsyncGenerator<Decompressed> {
  if (compression === 'zip') {
    const zip = new ZipSplitter();
    for await (const chunk of source) yield* zip.push(chunk);
    yield* zip.end();
    return;
  }
  yield { member: null };
  if (compression === 'none') {
    for await (const chunk of source) if (chunk.length) yield { data: chunk };
    return;
  }
  const make = compression === 'gzip' ? () => createGunzip() : () => createZstdDecompress();
  for await (const data of throughZlib(source, compression, make)) yield { data };
}
