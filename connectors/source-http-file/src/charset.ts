// Charset stage: bytes of one file in any WHATWG encoding → text, as a pure incremental core.
// Decoding is strict (WHATWG TextDecoder with fatal errors; iconv-lite for labels this Node lacks). The encoding is the explicit label, else a BOM, else detected from a sample.
// Invalid bytes fail with the byte offset in the source stream.
import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import { ConfigError, DecodeError } from './errors.ts';

export const DEFAULT_SAMPLE_BYTES = 64 * 1024;

const EMPTY = new Uint8Array(0);

// iconv-lite is only the fallback for labels this Node's ICU lacks: load it on first use.
type Iconv = { encodingExists(name: string): boolean; getDecoder(name: string): { write(b: Buffer): string; end(): string | undefined } };
let iconvModule: Iconv | null = null;
function iconvLite(): Iconv {
  iconvModule ??= createRequire(import.meta.url)('iconv-lite') as Iconv;
  return iconvModule;
}

interface TextDecoderLike {
  /** Decodes a chunk (streaming); throws TypeError on invalid input. */
  decode(chunk: Uint8Array, final: boolean): string;
}

/**
 * Resolves a WHATWG label to its canonical name, e.g. `latin1` → `windows-1252`.
 * Throws ConfigError for unknown labels and for `replacement`.
 */
export function resolveEncodingLabel(label: string): string {
  const trimmed = label.trim().toLowerCase();
  if (trimmed === 'replacement') throw new ConfigError(`encoding '${label}' is not supported: name a WHATWG encoding such as UTF-8, windows-1252 or Shift_JIS`);
  try {
    return new TextDecoder(trimmed).encoding;
  } catch {
    const iconvName = ICONV_ALIASES[trimmed] ?? trimmed;
    if (iconvLite().encodingExists(iconvName)) return trimmed;
    throw new ConfigError(`unknown encoding '${label}': name a WHATWG encoding label such as UTF-8, windows-1252 or Shift_JIS`);
  }
}

const ICONV_ALIASES: Record<string, string> = {
  'x-mac-cyrillic': 'maccyrillic',
  'iso-8859-8-i': 'iso-8859-8',
  ibm866: 'cp866',
};

/** A strict streaming decoder: WHATWG TextDecoder when this Node has the encoding, else iconv-lite. */
function strictDecoder(encoding: string): TextDecoderLike {
  try {
    const td = new TextDecoder(encoding, { fatal: true, ignoreBOM: false });
    return { decode: (chunk, final) => td.decode(chunk, { stream: !final }) };
  } catch {
    const dec = iconvLite().getDecoder(ICONV_ALIASES[encoding] ?? encoding);
    return {
      decode: (chunk, final) => {
        const s = dec.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)) + (final ? (dec.end() ?? '') : '');
        if (s.includes('\uFFFD')) throw new TypeError('invalid input');
        return s;
      },
    };
  }
}

/** Index of the first byte of a UTF-8 buffer that makes it invalid (the buffer is known to be invalid). */
export function firstInvalidUtf8(buf: Uint8Array): number {
  let i = 0;
  const n = buf.length;
  while (i < n) {
    const b = buf[i] as number;
    if (b < 0x80) { i++; continue; }
    let len: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) { len = 2; min = 0x80; } else if (b >= 0xe0 && b <= 0xef) { len = 3; min = 0x800; } else if (b >= 0xf0 && b <= 0xf4) { len = 4; min = 0x10000; } else return i;
    if (i + len > n) return i;
    let cp = b & (0xff >> (len + 1));
    for (let j = 1; j < len; j++) {
      const c = buf[i + j] as number;
      if ((c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return n;
}

/** Length of the longest prefix that does not end inside a UTF-8 sequence (assumes valid lead bytes). */
function completeUtf8Prefix(buf: Uint8Array): number {
  const n = buf.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = buf[n - back] as number;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    if (b < 0x80) return n;
    const len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    return len > back ? n - back : n;
  }
  return n;
}

const BOMS: [string, number[]][] = [
  ['utf-8', [0xef, 0xbb, 0xbf]],
  ['utf-16le', [0xff, 0xfe]],
  ['utf-16be', [0xfe, 0xff]],
];

export function bomEncoding(sample: Uint8Array): string | null {
  for (const [name, bytes] of BOMS) {
    if (sample.length >= bytes.length && bytes.every((b, i) => sample[i] === b)) return name;
  }
  return null;
}

function decodesCleanly(encoding: string, sample: Uint8Array): string | null {
  try {
    return strictDecoder(encoding).decode(sample, false);
  } catch {
    return null;
  }
}

/**
 * Guesses the encoding of a sample without a BOM: UTF-8 when it is valid UTF-8; UTF-16 when every other
 * byte is mostly zero; else the CJK encoding whose decoding looks most like text in its script; else
 * windows-1252.
 */
export function detectEncoding(sample: Uint8Array, final: boolean): string {
  const pairs = Math.min(sample.length >> 1, 2048);
  if (pairs >= 4) {
    let evenZeros = 0;
    let oddZeros = 0;
    for (let i = 0; i < pairs; i++) {
      if (sample[2 * i] === 0) evenZeros++;
      if (sample[2 * i + 1] === 0) oddZeros++;
    }
    if (oddZeros > pairs * 0.3 && evenZeros < pairs * 0.05) return 'utf-16le';
    if (evenZeros > pairs * 0.3 && oddZeros < pairs * 0.05) return 'utf-16be';
  }
  const body = final ? sample : sample.subarray(0, completeUtf8Prefix(sample));
  if (isUtf8(body)) return 'utf-8';
  // windows-1252 scores accented letters next to ASCII letters (as in "Orléans"); CJK candidates
  // score characters of their scripts. The best positive score wins; windows-1252 is the fallback.
  let best = 'windows-1252';
  let bestScore = 0;
  const latin = decodesCleanly('windows-1252', sample) ?? '';
  for (let i = 0; i < latin.length; i++) {
    const c = latin.charCodeAt(i);
    if (c < 0x80) continue;
    const letter = c >= 0xc0 && c <= 0xff && c !== 0xd7 && c !== 0xf7;
    const nearAscii = /[A-Za-z]/.test(latin[i - 1] ?? '') || /[A-Za-z]/.test(latin[i + 1] ?? '');
    bestScore += letter && nearAscii ? 2 : -1;
  }
  for (const candidate of ['shift_jis', 'euc-jp', 'euc-kr', 'gbk', 'big5']) {
    const text = decodesCleanly(candidate, sample);
    if (text === null) continue;
    let score = 0;
    for (const ch of text) {
      const c = ch.codePointAt(0) as number;
      if (c < 0x80) continue;
      if ((c >= 0x3040 && c <= 0x30ff)) score += 2; // kana
      else if (c >= 0xac00 && c <= 0xd7a3) score += 2; // hangul syllables
      else if (c >= 0x4e00 && c <= 0x9fff) score += 1; // CJK ideographs
      else if (c >= 0x3000 && c <= 0x303f) score += 1; // CJK punctuation
      else if (c >= 0xff01 && c <= 0xff5e) score += 1; // full-width ASCII
      else if (c >= 0xff61 && c <= 0xff9f) continue; // half-width katakana: common in Japanese data, neutral
      else score -= 2;
    }
    if (score > bestScore) { best = candidate; bestScore = score; }
  }
  return best;
}

export interface CharsetOptions {
  /** Explicit WHATWG label; null/undefined = BOM, else detection. */
  encoding?: string | null | undefined;
  sampleBytes?: number;
}

/**
 * Bytes in → text out, across any chunk boundary. `push` returns the text decoded so far (possibly "");
 * `end` flushes and fails on a truncated character. A BOM is stripped.
 */
export class CharsetDecoder {
  #encoding: string | null;
  readonly #sampleBytes: number;
  #sample: Uint8Array[] = [];
  #sampleLength = 0;
  #decided = false;
  /** Bytes of the source consumed before the current chunk. */
  #offset = 0;
  #carry: Uint8Array = new Uint8Array(0);
  #decoder: TextDecoderLike | null = null;
  #utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  #tail: Uint8Array = new Uint8Array(0);
  #atStart = true;
  /** Length of the stripped BOM, in bytes. */
  bomLength = 0;

  constructor(options: CharsetOptions = {}) {
    this.#encoding = options.encoding ? resolveEncodingLabel(options.encoding) : null;
    this.#sampleBytes = options.sampleBytes ?? DEFAULT_SAMPLE_BYTES;
    if (this.#encoding !== null) this.#decided = true;
  }

  /** The encoding in use (null until decided). */
  get encoding(): string | null {
    return this.#encoding;
  }

  push(chunk: Uint8Array): string {
    return this.#push(chunk, false) as string;
  }

  end(): string {
    return this.#end(false) as string;
  }

  /**
   * As push, but the text comes as UTF-8 bytes: for UTF-8 sources the input itself once validated (a view
   * of `chunk` or of a copy; read it before the next call), for other encodings the decoded text re-encoded.
   * A decoder may switch from push to pushBytes between calls.
   */
  pushBytes(chunk: Uint8Array): Uint8Array {
    return this.#push(chunk, true) as Uint8Array;
  }

  endBytes(): Uint8Array {
    return this.#end(true) as Uint8Array;
  }

  #push(chunk: Uint8Array, bytes: boolean): string | Uint8Array {
    if (chunk.length === 0) return bytes ? EMPTY : '';
    if (!this.#decided) {
      this.#sample.push(chunk);
      this.#sampleLength += chunk.length;
      if (this.#sampleLength < this.#sampleBytes) return bytes ? EMPTY : '';
      return this.#decide(false, bytes);
    }
    return this.#decode(chunk, false, bytes);
  }

  #end(bytes: boolean): string | Uint8Array {
    if (!this.#decided) return this.#decide(true, bytes);
    return this.#decode(EMPTY, true, bytes);
  }

  #decide(final: boolean, bytes: boolean): string | Uint8Array {
    const sample = Buffer.concat(this.#sample);
    this.#sample = [];
    this.#decided = true;
    this.#encoding = bomEncoding(sample) ?? (sample.length === 0 ? 'utf-8' : detectEncoding(sample, final));
    return this.#decode(sample, final, bytes);
  }

  #decode(chunk: Uint8Array, final: boolean, bytes: boolean): string | Uint8Array {
    if (!bytes) return this.#decodeText(chunk, final);
    if (this.#encoding === 'utf-8') return this.#decodeText(chunk, final, true);
    const text = this.#decodeText(chunk, final) as string;
    return text.length === 0 ? EMPTY : Buffer.from(text, 'utf8');
  }

  #decodeText(chunk: Uint8Array, final: boolean, utf8Bytes = false): string | Uint8Array {
    const encoding = this.#encoding as string;
    if (this.#atStart) {
      let data = this.#carry.length ? Buffer.concat([this.#carry, chunk]) : chunk;
      // Wait for enough bytes to recognise a BOM.
      if (data.length < 3 && !final && (data.length === 0 || data[0] === 0xef || data[0] === 0xff || data[0] === 0xfe)) {
        this.#carry = Buffer.from(data);
        return utf8Bytes ? EMPTY : '';
      }
      this.#carry = new Uint8Array(0);
      this.#atStart = false;
      const bom = BOMS.find(([name]) => name === encoding)?.[1];
      if (bom && bom.every((b, i) => data[i] === b)) {
        this.bomLength = bom.length;
        data = data.subarray(bom.length);
        this.#offset += bom.length;
      }
      chunk = data;
    }
    if (encoding === 'utf-8') return this.#decodeUtf8(chunk, final, utf8Bytes);
    this.#decoder ??= strictDecoder(encoding);
    let text: string;
    try {
      text = this.#decoder.decode(chunk, final);
    } catch (err) {
      const at = this.#locate(encoding, chunk, final);
      throw new DecodeError(`input bytes were not valid for encoding '${encoding}' at byte offset ${at}: set parser.format.config.encoding to the file's real encoding`, { byteOffset: at }, { cause: err });
    }
    this.#tail = chunk.length >= 4 ? chunk.subarray(chunk.length - 4) : Buffer.concat([this.#tail, chunk]).subarray(-4);
    this.#offset += chunk.length;
    return text;
  }

  #decodeUtf8(chunk: Uint8Array, final: boolean, asBytes: boolean): string | Uint8Array {
    let data = chunk;
    if (this.#carry.length) {
      data = Buffer.concat([this.#carry, chunk]);
      this.#offset -= this.#carry.length;
      this.#carry = new Uint8Array(0);
    }
    const cut = final ? data.length : completeUtf8Prefix(data);
    const head = cut === data.length ? data : data.subarray(0, cut);
    let out: string | Uint8Array;
    if (asBytes) {
      if (!isUtf8(head)) throw this.#invalidUtf8(head);
      out = head;
    } else {
      try {
        out = this.#utf8.decode(head);
      } catch (err) {
        throw this.#invalidUtf8(head, err);
      }
    }
    if (cut < data.length) this.#carry = Buffer.from(data.subarray(cut));
    this.#offset += data.length;
    return out;
  }

  #invalidUtf8(head: Uint8Array, cause?: unknown): DecodeError {
    const at = this.#offset + firstInvalidUtf8(head);
    return new DecodeError(`input bytes were not valid for encoding 'utf-8' at byte offset ${at}: set parser.format.config.encoding to the file's real encoding`, { byteOffset: at }, cause === undefined ? undefined : { cause });
  }

  /** Best-effort source offset of the first invalid byte of `chunk`. */
  #locate(encoding: string, chunk: Uint8Array, final: boolean): number {
    // The failing decoder may hold a partial character from the previous chunk; try each possible
    // re-synchronisation point in the saved tail and report the latest failure position.
    // Only re-synchronisations that reproduce the failure count; the latest of them wins.
    let best = -1;
    for (let k = 0; k <= this.#tail.length; k++) {
      const dec = strictDecoder(encoding);
      try {
        dec.decode(this.#tail.subarray(k), false);
      } catch {
        continue;
      }
      let pos = chunk.length;
      for (let i = 0; i < chunk.length; i++) {
        try {
          dec.decode(chunk.subarray(i, i + 1), false);
        } catch {
          pos = i;
          break;
        }
      }
      if (final && pos === chunk.length) {
        try { dec.decode(new Uint8Array(0), true); } catch { pos = Math.max(0, chunk.length - 1); }
      }
      if (pos < chunk.length) best = Math.max(best, pos);
    }
    return this.#offset + Math.max(best, 0);
  }
}
