import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { parseEnvelope, rawBodyMemberText, readEnvelopes } from '../src/protocol/envelope.ts';
import { readLines } from '../src/protocol/line-reader.ts';
import { MessageWriter } from '../src/protocol/message-writer.ts';
import { Collector } from './helpers.ts';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const VARIANTS = ['spec', 'open'];

describe('readLines: bad input', () => {
  it('a partial trailing line is a ProtocolError', async () => {
    await assert.rejects(collect(readLines(['{"spec":{}}\n{"sp'], { name: 'stdin' })), {
      name: 'ProtocolError',
      message: 'stdin ended with a partial message: line 2 (4 bytes) has no terminating newline',
    });
  });
  it('a line over the limit is a ProtocolError, also when it spans chunks', async () => {
    await assert.rejects(collect(readLines(['12345678901\n'], { maxLineBytes: 10 })), {
      message: 'input line 1 is longer than the 10 bytes limit for one message',
    });
    await assert.rejects(collect(readLines(['ok\n12345', '678901'], { maxLineBytes: 10 })), {
      message: 'input line 2 is longer than the 10 bytes limit for one message',
    });
  });
  it('names the 128 MiB default limit', async () => {
    const big = Buffer.alloc(128 * 1024 * 1024 + 1, 0x20);
    await assert.rejects(collect(readLines([big], { name: 'stdin' })), {
      message: 'stdin line 1 is longer than the 128 MiB limit for one message',
    });
  });
});

describe('readLines', () => {
  it('empty input yields nothing', async () => {
    assert.deepEqual(await collect(readLines([])), []);
    assert.deepEqual(await collect(readLines([''])), []);
  });
  it('splits across 1-byte chunks, including multi-byte UTF-8', async () => {
    const text = '{"a":"é☃"}\n{"b":2}\n';
    const chunks = [...Buffer.from(text)].map((b) => Uint8Array.of(b));
    assert.deepEqual(await collect(readLines(chunks)), [{ text: '{"a":"é☃"}', line: 1 }, { text: '{"b":2}', line: 2 }]);
  });
  it('skips blank lines (counting them) and drops a trailing CR', async () => {
    assert.deepEqual(await collect(readLines(['\n{"a":1}\r\n  \n{"b":2}\n'])), [
      { text: '{"a":1}', line: 2 }, { text: '{"b":2}', line: 4 },
    ]);
  });
  it('accepts a line exactly at the limit', async () => {
    assert.deepEqual(await collect(readLines(['1234567890\n'], { maxLineBytes: 10 })), [{ text: '1234567890', line: 1 }]);
  });
  it('reads from a stream', async () => {
    const stream = new PassThrough();
    stream.end('{"x":1}\n{"y":2}\n');
    assert.equal((await collect(readLines(stream))).length, 2);
  });
});

describe('parseEnvelope: bad input', () => {
  const at = (text: string) => () => parseEnvelope({ text, line: 7 }, VARIANTS, 'request', 'stdin');
  it('malformed JSON (never echoes the line)', () => {
    assert.throws(at('{"spec":{"apiKey":"s3cret"'), (err: Error) => {
      assert.equal(err.name, 'ProtocolError');
      assert.match(err.message, /^stdin line 7 is not valid JSON: /);
      assert.doesNotMatch(err.message, /s3cret/);
      return true;
    });
  });
  it('not an object', () => {
    assert.throws(at('[1]'), { message: 'stdin line 7 must be a JSON object with exactly one of "spec", "open", got an array' });
    assert.throws(at('null'), { message: 'stdin line 7 must be a JSON object with exactly one of "spec", "open", got null' });
    assert.throws(at('3'), { message: 'stdin line 7 must be a JSON object with exactly one of "spec", "open", got a number' });
  });
  it('no variant, two variants, unknown variant', () => {
    assert.throws(at('{}'), { message: 'stdin line 7: a request must have exactly one of "spec", "open"; found none' });
    assert.throws(at('{"$internal":"eA=="}'), { message: 'stdin line 7: a request must have exactly one of "spec", "open"; found none' });
    assert.throws(at('{"spec":{},"open":{}}'), { message: 'stdin line 7: a request must have exactly one of "spec", "open"; found "spec", "open"' });
    assert.throws(at('{"spek":{}}'), { message: 'stdin line 7: unknown request "spek"; expected one of "spec", "open"' });
  });
  it('variant body not an object', () => {
    assert.throws(at('{"spec":1}'), { message: 'stdin line 7: "spec" must be a JSON object, got a number' });
  });
});

describe('parseEnvelope', () => {
  it('ignores $internal and unknown fields inside the body', () => {
    assert.deepEqual(parseEnvelope({ text: '{"$internal":"eA==","open":{"x":1}}', line: 1 }, VARIANTS, 'request'), {
      variant: 'open', body: { x: 1 }, line: 1, text: '{"$internal":"eA==","open":{"x":1}}',
    });
  });
  it('readEnvelopes parses a stream of lines', async () => {
    const got = await collect(readEnvelopes(['{"spec":{}}\n{"open":{}}\n'], VARIANTS, 'request'));
    assert.deepEqual(got.map((e) => e.variant), ['spec', 'open']);
  });
});

class SlowSink extends Writable {
  text = '';
  release: (() => void)[] = [];
  constructor() {
    super({ highWaterMark: 16 });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    this.release.push(cb);
  }
  drainAll(): void {
    while (this.release.length) this.release.shift()!();
  }
}

describe('MessageWriter', () => {
  it('writes one line per message', async () => {
    const out = new Collector();
    const w = new MessageWriter(out);
    await w.write({ opened: {} });
    await w.write({ captured: { doc: { s: 'line\nbreak' } } });
    assert.deepEqual(out.lines, ['{"opened":{}}', '{"captured":{"doc":{"s":"line\\nbreak"}}}']);
  });
  it('honours backpressure: resolves on drain, keeps order across concurrent writers', async () => {
    const sink = new SlowSink();
    const w = new MessageWriter(sink);
    let firstDone = false;
    const first = w.write({ a: 'x'.repeat(32) }).then(() => { firstDone = true; });
    const second = w.write({ b: 2 });
    await new Promise((r) => setImmediate(r));
    assert.equal(firstDone, false, 'write waits while the stream is over its high-water mark');
    sink.drainAll();
    await new Promise((r) => setImmediate(r));
    sink.drainAll();
    await Promise.all([first, second]);
    assert.equal(firstDone, true);
    assert.equal(sink.text, `{"a":"${'x'.repeat(32)}"}\n{"b":2}\n`);
  });
  it('rejects writes after the stream failed', async () => {
    const broken = new Writable({ write(_c, _e, cb) { cb(new Error('EPIPE: broken pipe')); } });
    const w = new MessageWriter(broken);
    await w.write({ a: 1 }).catch(() => undefined);
    await new Promise((r) => setImmediate(r));
    await assert.rejects(w.write({ b: 2 }), { message: 'EPIPE: broken pipe' });
  });
  it('rejects writes after the stream ended', async () => {
    const out = new Collector();
    out.end();
    await assert.rejects(new MessageWriter(out).write({ a: 1 }), { message: 'output is closed: cannot write another message' });
  });
});

describe('MessageWriter: document coalescing', () => {
  it('buffers documents and writes them before the next message, in order', async () => {
    const out = new Collector();
    let writes = 0;
    const origWrite = out.write.bind(out);
    out.write = ((chunk: unknown, ...rest: unknown[]) => { writes++; return (origWrite as (...a: unknown[]) => boolean)(chunk, ...rest); }) as typeof out.write;
    const w = new MessageWriter(out);
    await w.writeDocument({ captured: { doc: { i: 1 } } });
    await w.writeDocument({ captured: { doc: { i: 2 } } });
    assert.equal(out.text, '', 'documents wait in the buffer');
    await w.write({ checkpoint: {} });
    assert.deepEqual(out.lines, ['{"captured":{"doc":{"i":1}}}', '{"captured":{"doc":{"i":2}}}', '{"checkpoint":{}}']);
    assert.equal(writes, 1, 'one stream write for the batch and the checkpoint');
  });
  it('flushes buffered documents on the next turn of the event loop', async () => {
    const out = new Collector();
    const w = new MessageWriter(out);
    await w.writeDocument({ loaded: { doc: { a: 1 } } });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(out.lines, ['{"loaded":{"doc":{"a":1}}}']);
  });
  it('writes once the buffer reaches 64 KiB', () => {
    const out = new Collector();
    const w = new MessageWriter(out);
    const doc = { pad: 'x'.repeat(1000) };
    let n = 0;
    while (out.text === '') {
      void w.writeDocument({ captured: { doc } });
      n++;
    }
    const lineLength = JSON.stringify({ captured: { doc } }).length + 1;
    assert.equal(n, Math.ceil(64 * 1024 / lineLength));
    assert.equal(out.lines.length, n);
  });
});

describe('rawBodyMemberText: the raw JSON text of a body member', () => {
  const raw = (text: string, member = 'doc'): string | undefined => {
    JSON.parse(text); // only text JSON.parse accepts is ever scanned
    return rawBodyMemberText(text, 'store', member);
  };
  it('slices the member exactly as sent, whatever its position, spacing and escapes', () => {
    assert.equal(raw('{"store":{"keyPacked":"FQE=","doc":{"a":1,"b":"x"},"exists":true}}'), '{"a":1,"b":"x"}');
    // b is `}]\` (an escaped backslash right before the closing quote), c is `\"{`.
    assert.equal(raw('{"store":{"doc":{"a":[1,{"b":"}]\\\\"}],"c":"\\\\\\"{"}}}'), '{"a":[1,{"b":"}]\\\\"}],"c":"\\\\\\"{"}');
    assert.equal(raw('{"store":{"doc":{"q":"say \\"hi\\" {"},"binding":1}}'), '{"q":"say \\"hi\\" {"}');
    assert.equal(raw(' { "store" : { "binding" : 1 , "doc" : { "n" : 1.50e3 , "t" : true } } } '), '{ "n" : 1.50e3 , "t" : true }');
    assert.equal(raw('{"store":{"doc":{"big":12345678901234567890}}}'), '{"big":12345678901234567890}');
    assert.equal(raw('{"store":{"keyPacked":"FQE=","exists":true}}', 'exists'), 'true');
  });
  it('finds only members of the body, not keys nested in values or other top-level members', () => {
    assert.equal(raw('{"store":{"keyPacked":"FQE=","values":[{"doc":1}]}}'), undefined);
    assert.equal(raw('{"$internal":{"doc":{"x":1}},"store":{"keyPacked":"FQE="}}'), undefined);
    assert.equal(raw('{"store":{"note":"\\"doc\\":{}","doc":{"y":2}}}'), '{"y":2}');
    assert.equal(raw('{"store":{}}'), undefined);
  });
  it('resolves duplicate keys as JSON.parse does: the last one wins', () => {
    const text = '{"store":{"doc":{"first":1},"doc":{"second":2}}}';
    assert.deepEqual(JSON.parse(raw(text)!), (JSON.parse(text) as { store: { doc: unknown } }).store.doc);
    const twice = '{"store":{"doc":{"first":1}},"store":{"keyPacked":"FQE="}}';
    assert.equal(raw(twice), undefined);
  });
  it('keys with escapes are compared decoded', () => {
    assert.equal(raw('{"st\\u006fre":{"d\\u006fc":{"z":0}}}'), '{"z":0}');
  });
});
