// Documents the connector serialised itself, framed by the runtime (CapturedLinesWriter, yielded as
// `{ capturedLines }`): the bytes written must be exactly those of the object form
// `{ captured: { binding, doc } }`, and MessageWriter.writeDocumentLine (the host's pre-serialised lines)
// coalesces like writeDocument.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { serveCapture } from '../src/connector/capture.ts';
import type { CaptureConnector, CapturedLines } from '../src/connector/types.ts';
import { CapturedLinesWriter } from '../src/protocol/captured-lines.ts';
import { MessageWriter } from '../src/protocol/message-writer.ts';
import type { JsonObject } from '../src/protocol/specs.ts';
import { Collector, LogCollector, linesOf } from './helpers.ts';
/** Documents whose serialisation has every case JSON.stringify treats specially. */
function trickyDocs(): JsonObject[] {
  return [
    { plain: 'abc', n: 1, s: '1', t: true, f: false, z: null },
    { quote: 'say "hi"', backslash: 'C:\\dir\\file', both: '\\"', slash: 'a/b' },
    { controls: '\u0000\u0001\u0007\b\t\n\u000b\f\r\u000e\u001b\u001f', del: '\u007f', ls: '\u2028\u2029' },
    { nonBmp: '😀 𝄞 𠜎', pair: '\ud83d\ude00', lone: '\ud800', loneLow: 'x\udfffy', reversed: '\udc00\ud800', end: 'a\ud83d' },
    JSON.parse('{"__proto__":{"polluted":true},"constructor":"c","toString":"t"}') as JsonObject,
    JSON.parse('{"__proto__":null,"a":1}') as JsonObject,
    { numbers: [0, -0, 1.5, -2.25e-7, 1e21, 123456789012345680000, 5e-324, 1.7976931348623157e308, 0.1 + 0.2] },
    { strings: ['0', '-0', '1e21', 'null', 'true', ''], empty: {}, emptyList: [] },
    { b: 1, 10: 'ten', 2: 'two', a: 2, '01': 'not an index' },
    { 'key "quoted"': 1, 'key\\back': 2, 'key\nnew': 3, 'ключ': 4, '🔑': 5, '': 6, '\ud800': 7 },
    { nested: { deep: [{ x: [null, { y: 'z\u0000' }] }], _meta: { file: 'f', offset: 3 } } },
    {},
  ];
}

/** A capture connector that yields `docs` on two bindings, as objects or through CapturedLinesWriter, with checkpoints. */
function connector(docs: JsonObject[], form: 'object' | 'writer'): CaptureConnector {
  return {
    configSchema: { type: 'object' },
    resourceConfigSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    documentationUrl: 'https://example.com',
    resourcePathPointers: ['/name'],
    discover: () => Promise.resolve([]),
    async *open() {
      let i = 0;
      for (const binding of [0, 1]) {
        // A small buffer, so that documents also make it grow.
        const writer = new CapturedLinesWriter(binding);
        for (const doc of docs) {
          i++;
          if (form === 'writer') writer.writeDocument(JSON.stringify(doc));
          else yield { captured: binding === 0 && i % 3 === 0 ? { doc } : { binding, doc } };
          if (i % 5 === 0) {
            if (writer.pending) yield { capturedLines: writer.take() as CapturedLines };
            yield { checkpoint: { state: { updated: { i }, mergePatch: true } } };
          }
        }
        if (writer.pending) yield { capturedLines: writer.take() as CapturedLines };
      }
      yield { checkpoint: { state: { updated: { done: true } } } };
    },
  };
}

const OPEN = {
  open: {
    capture: {
      name: 'acmeCo/src', connectorType: 'IMAGE', config: {},
      bindings: [0, 1].map((b) => ({ resourceConfig: { name: `b${b}` }, resourcePath: [`b${b}`], collection: { name: `acmeCo/b${b}`, key: ['/id'] } })),
    },
    version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 },
  },
};

async function run(c: CaptureConnector): Promise<{ text: string; logs: LogCollector; error?: Error }> {
  const output = new Collector();
  const logs = new LogCollector();
  try {
    await serveCapture(c, { input: linesOf([OPEN]), output, stderr: logs, env: {} });
  } catch (err) {
    return { text: output.text, logs, error: err as Error };
  }
  return { text: output.text, logs };
}

describe('documents framed by CapturedLinesWriter', () => {
  it('write exactly the bytes of the object form, for tricky values, on binding 0 and 1', async () => {
    const docs = trickyDocs();
    const objects = await run(connector(docs, 'object'));
    const framed = await run(connector(docs, 'writer'));
    assert.equal(objects.error, undefined);
    assert.equal(framed.error, undefined);
    assert.equal(framed.text, objects.text);
    // And the bytes are what the protocol says: each line parses back to the document.
    const captured = objects.text.split('\n').filter((l) => l.startsWith('{"captured"'));
    assert.equal(captured.length, docs.length * 2);
    captured.forEach((line, i) => {
      const parsed = JSON.parse(line) as { captured: { binding?: number; doc: JsonObject } };
      assert.deepEqual(parsed.captured.doc, JSON.parse(JSON.stringify(docs[i % docs.length])));
      assert.equal(parsed.captured.binding, i < docs.length ? undefined : 1);
    });
    assert.ok(framed.text.includes('{"captured":{"doc":{"__proto__":{"polluted":true},"constructor":"c","toString":"t"}'), 'an own __proto__ key is kept');
    assert.ok(framed.text.includes('"lone":"\\ud800"'), 'lone surrogates are escaped as JSON.stringify does');
  });

  it('grows its buffer for a big document, and reuses a recycled one', () => {
    const w = new CapturedLinesWriter(3);
    const big = JSON.stringify({ s: 'é'.repeat(400_000) });
    w.writeDocument(big);
    w.writeDocument('{}');
    const batch = w.take() as CapturedLines;
    assert.equal(batch.documents, 2);
    assert.equal(Buffer.from(batch.lines).toString('utf8'), `{"captured":{"binding":3,"doc":${big}}}\n{"captured":{"binding":3,"doc":{}}}\n`);
    assert.equal(w.take(), null);
    const before = w.allocated;
    w.recycle(batch.lines.buffer as ArrayBuffer);
    w.writeDocument('{"a":1}');
    w.take();
    assert.equal(w.allocated, before, 'the recycled buffer was filled again');
  });
});

describe('MessageWriter.writeDocumentLine', () => {
  it('coalesces like writeDocument, keeps call order, and honours backpressure', async () => {
    const chunks: string[] = [];
    let pending: (() => void) | null = null;
    const slow = new Writable({
      highWaterMark: 1024,
      decodeStrings: false,
      write(chunk: string, _enc, cb) {
        chunks.push(chunk);
        pending = () => cb();
      },
    });
    const w = new MessageWriter(slow);
    const expected: string[] = [];
    let blockedSeen = false;
    // The stream completes one write per timer tick.
    const release = setInterval(() => { const p = pending; pending = null; p?.(); }, 0);
    try {
      for (let i = 0; i < 3000; i++) {
        const written = i % 2 === 0 ? w.writeDocumentLine(`{"captured":{"doc":{"i":${i}}}}\n`) : w.writeDocument({ captured: { doc: { i } } });
        expected.push(`{"captured":{"doc":{"i":${i}}}}\n`);
        if (w.isBlocked) blockedSeen = true;
        await written;
      }
      await w.write({ checkpoint: {} });
      expected.push('{"checkpoint":{}}\n');
      await w.flush();
    } finally {
      clearInterval(release);
    }
    assert.ok(blockedSeen, 'the slow stream pushed back');
    assert.equal(chunks.join(''), expected.join(''));
    assert.ok(chunks.length < 100, `documents were coalesced (${chunks.length} writes for 3001 lines)`);
  });
});
