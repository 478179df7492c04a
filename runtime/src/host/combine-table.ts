// A transaction's documents of one binding, combined by packed key (the materialize driver's combiner).
// Keys are looked up by their bytes in an open-addressing hash table, and an entry is a row of typed
// arrays (where its key and packed values lie in the transaction's arena, where its document's bytes lie
// in a journal chunk, its flags), not an object: a transaction holds 20k entries across the connector's
// round trips, and objects and strings held that long were promoted and collected again (the
// materialization thread's GC, issue 16), and keying a Map by each key's base64 string cost an
// encoding and a string per document. A reducing binding keeps its combined documents beside the rows.
import type { JsonValue } from '../protocol/specs.ts';
import { ByteSink } from '../protocol/tuple.ts';

/**
 * Bytes of a transaction, back to back in one buffer outside the JS heap (reused across transactions): the
 * byte packer appends a document's values here directly (BytePacker.packInto), keys are copied in.
 */
export class Arena extends ByteSink {
  constructor(size: number) {
    super();
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  /** Appends src[start, end); returns where the bytes start. */
  add(src: Uint8Array, start: number, end: number): number {
    const n = end - start;
    this.ensure(n);
    const at = this.len;
    const b = this.buf;
    for (let i = 0; i < n; i++) b[at + i] = src[start + i]!;
    this.len += n;
    return at;
  }
}

/** Entry flags. */
export const DELETION = 1;
export const LOADED = 2;
/** A reducing entry whose document a reduction changed (its source text is not it any more). */
export const REDUCED = 4;

function grow<T extends Int32Array | Uint8Array>(a: T, size: number): T {
  const next = new (a.constructor as new (n: number) => T)(size);
  next.set(a);
  return next;
}

export class CombineTable {
  /** Entries, in the order their keys were first seen. */
  count = 0;
  readonly arena: Arena;
  #slots = new Int32Array(2048);
  #mask = 2047;
  #hash = new Int32Array(1024);
  keyAt = new Int32Array(1024);
  keyLen = new Int32Array(1024);
  /** Last-write-wins: the packed values in the arena [valuesAt, valuesEnd). */
  valuesAt = new Int32Array(1024);
  valuesEnd = new Int32Array(1024);
  /**
   * The JSON form (MaterializeDriverOptions.jsonKeys): [valuesAt, valuesEnd) holds the key's JSON array, then the
   * values' (a reducing binding's: the key's alone); the first ends here.
   */
  keyJsonEnd = new Int32Array(1024);
  /** The document's bytes: chunk `src` (an index into the transaction's chunks, -1 for none), [start, end). */
  src = new Int32Array(1024);
  start = new Int32Array(1024);
  end = new Int32Array(1024);
  flags = new Uint8Array(1024);
  /** Per entry: a reducing binding's combined document. */
  docs: (JsonValue | undefined)[] = [];
  /** Per entry: the document's text when it came as a string (no bytes), until a reduction changed it. */
  texts: (string | undefined)[] = [];
  // The probe of the last find() that missed, for the insert() that follows it.
  #lastHash = 0;
  #lastSlot = 0;

  constructor(arena: Arena) {
    this.arena = arena;
  }

  /**
   * Empties the table for another transaction (its arena is reset by the caller). The per-entry arrays keep
   * their length (emptied, not truncated): truncating dropped their backing stores, and insert() then grew them
   * again element by element every transaction — a reallocation and copy at each step, and old-space garbage
   * (5% of the materialization thread's driver time, bench/materialize-driver.ts, issue 16).
   */
  reset(): void {
    this.#slots.fill(0);
    this.count = 0;
    this.docs.fill(undefined);
    this.texts.fill(undefined);
  }

  /** The entry whose key is k[0, len), or -1 (then insert() may follow at once). */
  find(k: Uint8Array, len: number): number {
    // FNV-1a.
    let h = 0x811c9dc5 | 0;
    for (let i = 0; i < len; i++) h = Math.imul(h ^ k[i]!, 0x01000193);
    const slots = this.#slots;
    const mask = this.#mask;
    const a = this.arena.buf;
    let s = h & mask;
    while (true) {
      const e = slots[s]! - 1;
      if (e < 0) break;
      if (this.#hash[e] === h && this.keyLen[e] === len) {
        const at = this.keyAt[e]!;
        let i = 0;
        while (i < len && a[at + i] === k[i]) i++;
        if (i === len) return e;
      }
      s = (s + 1) & mask;
    }
    this.#lastHash = h;
    this.#lastSlot = s;
    return -1;
  }

  /** Adds an entry for the key k[0, len) that find() just missed; returns its index. */
  insert(k: Uint8Array, len: number): number {
    const e = this.count++;
    if (e === this.keyAt.length) {
      const size = 2 * e;
      this.#hash = grow(this.#hash, size);
      this.keyAt = grow(this.keyAt, size);
      this.keyLen = grow(this.keyLen, size);
      this.valuesAt = grow(this.valuesAt, size);
      this.valuesEnd = grow(this.valuesEnd, size);
      this.keyJsonEnd = grow(this.keyJsonEnd, size);
      this.src = grow(this.src, size);
      this.start = grow(this.start, size);
      this.end = grow(this.end, size);
      this.flags = grow(this.flags, size);
    }
    this.#hash[e] = this.#lastHash;
    this.keyAt[e] = this.arena.add(k, 0, len);
    this.keyLen[e] = len;
    this.flags[e] = 0;
    this.docs[e] = undefined;
    this.texts[e] = undefined;
    this.#slots[this.#lastSlot] = e + 1;
    // At most half full: probes stay short.
    if (2 * this.count > this.#mask) this.#rehash();
    return e;
  }

  #rehash(): void {
    const size = 2 * (this.#mask + 1);
    const slots = new Int32Array(size);
    const mask = size - 1;
    for (let e = 0; e < this.count; e++) {
      let s = this.#hash[e]! & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = e + 1;
    }
    this.#slots = slots;
    this.#mask = mask;
  }

  /** Compares entry e's key with b as Buffer.compare does (bytes, then length). */
  compareKey(e: number, b: Uint8Array): number {
    const a = this.arena.buf;
    const at = this.keyAt[e]!;
    const len = this.keyLen[e]!;
    const n = Math.min(len, b.length);
    for (let i = 0; i < n; i++) {
      const d = a[at + i]! - b[i]!;
      if (d !== 0) return d < 0 ? -1 : 1;
    }
    return len === b.length ? 0 : len < b.length ? -1 : 1;
  }

  /** Compares the keys of entries e and f. */
  compareKeys(e: number, f: number): number {
    const a = this.arena.buf;
    return this.compareKey(e, a.subarray(this.keyAt[f]!, this.keyAt[f]! + this.keyLen[f]!));
  }

  /** A copy of entry e's key. */
  keyBytes(e: number): Buffer {
    return Buffer.from(this.arena.buf.subarray(this.keyAt[e]!, this.keyAt[e]! + this.keyLen[e]!));
  }
}

const B64 = new Uint8Array(Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', 'latin1'));

/** The two base64 characters of each 12-bit value, as a little-endian 16-bit pair (first character low). */
const B64_PAIRS = new Uint16Array(4096);
for (let n = 0; n < 4096; n++) B64_PAIRS[n] = B64[n >>> 6]! | (B64[n & 63]! << 8);

/** A view of the last output buffer, for 4-byte stores (store lines are written into a few reused buffers). */
let wordsOut: Uint8Array | undefined;
let words: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));

/**
 * Writes src[start, end) as base64 (with padding) into out at `at`; returns the index after it. out must have room.
 * Three bytes become four characters in one 32-bit store, from two lookups of 12 bits each (not four of 6 bits and
 * four byte stores): the store lines' keys and values are most of the materialization thread's output.
 */
export function base64Into(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  if (out !== wordsOut) {
    wordsOut = out;
    words = new DataView(out.buffer, out.byteOffset, out.byteLength);
  }
  const w = words;
  let i = start;
  for (; i + 3 <= end; i += 3) {
    const n = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    w.setUint32(at, B64_PAIRS[n >>> 12]! | (B64_PAIRS[n & 4095]! << 16), true);
    at += 4;
  }
  const rest = end - i;
  if (rest === 1) {
    const n = src[i]! << 16;
    out[at++] = B64[n >>> 18]!;
    out[at++] = B64[(n >>> 12) & 63]!;
    out[at++] = 0x3d;
    out[at++] = 0x3d;
  } else if (rest === 2) {
    const n = (src[i]! << 16) | (src[i + 1]! << 8);
    out[at++] = B64[n >>> 18]!;
    out[at++] = B64[(n >>> 12) & 63]!;
    out[at++] = B64[(n >>> 6) & 63]!;
    out[at++] = 0x3d;
  }
  return at;
}

/** The length of base64 of n bytes. */
export function base64Length(n: number): number {
  return 4 * Math.ceil(n / 3);
}
