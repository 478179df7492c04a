import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import iconv from 'iconv-lite';
import { CharsetDecoder, detectEncoding, resolveEncodingLabel } from '../src/charset.ts';
import { ConfigError, DecodeError } from '../src/errors.ts';
import { CHUNK_SIZES } from './helpers.ts';
import { JAPANESE_CSV } from './fixtures.ts';

function decodeAll(bytes: Uint8Array, size: number, encoding?: string | null): { text: string; encoding: string | null } {
  const d = new CharsetDecoder({ encoding: encoding ?? null });
  let text = '';
  for (let i = 0; i < bytes.length; i += size) text += d.push(bytes.subarray(i, i + size));
  text += d.end();
  return { text, encoding: d.encoding };
}

describe('charset', () => {
  test('bad input: invalid UTF-8 names the byte offset, at every chunk size', () => {
    const bytes = Buffer.concat([Buffer.from('a,b\nhé,x\n'), Buffer.from([0xff]), Buffer.from('tail\n')]);
    for (const size of CHUNK_SIZES) {
      assert.throws(() => decodeAll(bytes, size, 'utf-8'), (err: unknown) => {
        assert.ok(err instanceof DecodeError);
        assert.equal(err.message, "input bytes were not valid for encoding 'utf-8' at byte offset 10: set parser.format.config.encoding to the file's real encoding");
        assert.equal(err.byteOffset, 10);
        return true;
      }, `chunk size ${size}`);
    }
  });

  test('bad input: invalid Shift_JIS byte names the byte offset', () => {
    const good = iconv.encode('名前,値\n', 'shift_jis');
    const bytes = Buffer.concat([good, Buffer.from([0x82, 0x20]), Buffer.from('x\n')]);
    for (const size of [1, 3, 1024]) {
      assert.throws(() => decodeAll(bytes, size, 'Shift_JIS'), (err: unknown) => err instanceof DecodeError && err.message.startsWith(`input bytes were not valid for encoding 'shift_jis' at byte offset ${good.length + 1}`), `chunk size ${size}`);
    }
  });

  test('bad input: a truncated UTF-8 character at the end of the file', () => {
    const bytes = Buffer.from([0x61, 0x0a, 0xe6, 0x97]);
    assert.throws(() => decodeAll(bytes, 1, 'utf-8'), /not valid for encoding 'utf-8' at byte offset 2/);
  });

  test('bad input: unknown and replacement labels are config errors', () => {
    assert.throws(() => resolveEncodingLabel('klingon'), (e: unknown) => e instanceof ConfigError && e.message === "unknown encoding 'klingon': name a WHATWG encoding label such as UTF-8, windows-1252 or Shift_JIS");
    assert.throws(() => resolveEncodingLabel('replacement'), ConfigError);
  });

  test('empty input decodes to nothing', () => {
    assert.deepEqual(decodeAll(new Uint8Array(0), 1), { text: '', encoding: 'utf-8' });
  });

  test('WHATWG labels resolve to canonical names', () => {
    assert.equal(resolveEncodingLabel('latin1'), 'windows-1252');
    assert.equal(resolveEncodingLabel('SJIS'), 'shift_jis');
    assert.equal(resolveEncodingLabel('UTF-16LE'), 'utf-16le');
  });

  test('BOMs decide and are stripped (UTF-8, UTF-16LE, UTF-16BE) at every chunk size', () => {
    const text = 'a,b\nä,€\n';
    const cases: [string, Buffer][] = [
      ['utf-8', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])],
      ['utf-16le', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])],
      ['utf-16be', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()])],
    ];
    for (const [encoding, bytes] of cases) {
      for (const size of CHUNK_SIZES) assert.deepEqual(decodeAll(bytes, size), { text, encoding }, `${encoding} size ${size}`);
    }
  });

  test('detection: Japanese text in Shift_JIS decodes to its UTF-8 text', () => {
    const bytes = iconv.encode(JAPANESE_CSV, 'Shift_JIS');
    for (const size of [1, 100, 1 << 20]) {
      const got = decodeAll(bytes, size);
      assert.equal(got.encoding, 'shift_jis');
      assert.equal(got.text, JAPANESE_CSV);
    }
  });

  test('detection: UTF-16 without a BOM, windows-1252, EUC-KR, plain ASCII', () => {
    assert.equal(detectEncoding(Buffer.from('id,name\n1,alpha\n2,beta\n', 'utf16le'), true), 'utf-16le');
    assert.equal(detectEncoding(Buffer.from('id,name\n1,alpha\n2,beta\n', 'utf16le').swap16(), true), 'utf-16be');
    assert.equal(detectEncoding(iconv.encode('nom,ville\nFrançois,Orléans\n', 'windows-1252'), true), 'windows-1252');
    assert.equal(detectEncoding(iconv.encode('이름,도시\n김철수,서울특별시\n', 'euc-kr'), true), 'euc-kr');
    assert.equal(detectEncoding(Buffer.from('plain ascii'), true), 'utf-8');
  });

  test('explicit encodings: windows-1252, ISO-8859-2, KOI8-R, GBK, Big5, EUC-JP, UTF-16BE', () => {
    const samples: [string, string][] = [
      ['windows-1252', 'café,€'], ['ISO-8859-2', 'Łódź,żółw'], ['KOI8-R', 'привет,мир'], ['GBK', '你好,世界'],
      ['Big5', '臺灣,資料'], ['EUC-JP', 'こんにちは,世界'], ['UTF-16BE', 'x,ÿ'],
    ];
    for (const [label, text] of samples) {
      const bytes = iconv.encode(`${text}\n`, label);
      for (const size of [1, 5, 1 << 16]) assert.equal(decodeAll(bytes, size, label).text, `${text}\n`, `${label} size ${size}`);
    }
  });
});
