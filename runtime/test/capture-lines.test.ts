// Captured lines in batches (`{ capturedLines: { documents, lines } }`, framed by the runtime's
// CapturedLinesWriter around documents the connector serialised, e.g. in source-http-file's parser thread):
// written as they are, between the other outputs in order, and counted as documents toward the next checkpoint.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkCapturedLines, serveCapture } from '../src/connector/capture.ts';
import type { CaptureConnector, CaptureOutput, CapturedLines } from '../src/connector/types.ts';
import { CapturedLinesWriter } from '../src/protocol/captured-lines.ts';
import { Collector, LogCollector, linesOf } from './helpers.ts';

const DOCS = [{ a: 1 }, { b: 'x "y" \u0000 😀' }, { c: null }, {}, { d: [1, { e: 2 }] }];

/** Yields the documents in batches of `size` (framed lines, or objects), with a checkpoint after each batch but the last. */
function connector(form: 'object' | 'writer' | 'bytes', size: number, trailing: number, written?: (err?: Error | null) => void): CaptureConnector {
  return {
    configSchema: { type: 'object' },
    resourceConfigSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    documentationUrl: 'https://example.com',
    resourcePathPointers: ['/name'],
    discover: () => Promise.resolve([]),
    async *open() {
      const all = [...DOCS, ...DOCS.slice(0, trailing)];
      for (let i = 0; i < all.length; i += size) {
        const batch = all.slice(i, i + size);
        const binding = i % 2;
        if (form === 'writer') {
          // Documents framed by the runtime's writer (the connector writes only the documents).
          const writer = new CapturedLinesWriter(binding);
          for (const doc of batch) writer.writeDocument(JSON.stringify(doc));
          yield { capturedLines: writer.take() as CapturedLines };
        } else if (form === 'bytes') {
          const text = batch.map((doc) => `${JSON.stringify({ captured: binding === 0 ? { doc } : { binding, doc } })}\n`).join('');
          // Bytes in a bigger buffer (as a reused buffer would be): only the view's range goes out.
          const padded = Buffer.from(`xx${text}yy`);
          yield { capturedLines: { documents: batch.length, lines: new Uint8Array(padded.buffer, padded.byteOffset + 2, padded.length - 4), ...(written ? { written } : {}) } };
        } else {
          for (const doc of batch) yield { captured: { binding, doc } };
        }
        if (i + size < DOCS.length) yield { checkpoint: { state: { updated: { i }, mergePatch: true } } };
      }
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

describe('capture outputs with framed lines (capturedLines)', () => {
  it('framed by CapturedLinesWriter, write exactly the bytes of the object form, in order with checkpoints', async () => {
    const objects = await run(connector('object', 2, 0));
    const lines = await run(connector('writer', 2, 0));
    assert.equal(objects.error, undefined);
    assert.equal(lines.error, undefined);
    assert.equal(lines.text, objects.text);
    assert.equal(lines.text.split('\n').filter((l) => l.startsWith('{"checkpoint"')).length, 2);
  });

  it('given as UTF-8 bytes, write exactly the same bytes, and report each batch written', async () => {
    const objects = await run(connector('object', 2, 0));
    const calls: (Error | null | undefined)[] = [];
    const bytes = await run(connector('bytes', 2, 0, (err) => calls.push(err)));
    assert.equal(bytes.error, undefined);
    assert.equal(bytes.text, objects.text);
    assert.equal(calls.length, 3);
    assert.ok(calls.every((e) => e === undefined || e === null));
  });

  it('count their documents toward the next checkpoint (the warning about discarded documents names them)', async () => {
    const objects = await run(connector('object', 2, 3));
    const lines = await run(connector('writer', 2, 3));
    const discarded = (l: LogCollector): unknown => l.entries.find((e) => /after its last checkpoint/.test(e.msg))?.fields['documents'];
    assert.equal(discarded(objects.logs), 4);
    assert.equal(discarded(lines.logs), 4);
  });

  it('are checked for framing: wrong types, missing newline, not a captured line', () => {
    assert.equal(checkCapturedLines({ captured: { doc: {} } }), null);
    const none = new Uint8Array(0);
    assert.deepEqual(checkCapturedLines({ capturedLines: { documents: 0, lines: none } }), { documents: 0, lines: none });
    const bad: [unknown, RegExp][] = [
      [{ documents: 1.5, lines: Buffer.from('{"captured":{"doc":{}}}\n') }, /documents: <integer ≥ 0>/],
      [{ documents: 1, lines: 12 }, /lines: <Uint8Array>/],
      [{ documents: 1, lines: '{"captured":{"doc":{}}}\n' }, /lines: <Uint8Array>/],
      [{ documents: 1, lines: new Uint8Array(3) }, /complete "captured" lines/],
      [{ documents: 1, lines: Buffer.from('{"captured":{"doc":{}}}') }, /complete "captured" lines/],
      [{ documents: 1, lines: Buffer.from('{"captured":{"doc":{}}}\n'), written: 'yes' }, /written\?: <function>/],
      [{ documents: 1, lines: Buffer.from('{"checkpoint":{}}\n') }, /complete "captured" lines/],
      [{ documents: 0, lines: Buffer.from('{"captured":{"doc":{}}}\n') }, /0 complete "captured" lines/],
    ];
    for (const [value, message] of bad) {
      assert.throws(() => checkCapturedLines({ capturedLines: value } as CaptureOutput), { name: 'ProtocolError', message });
    }
    assert.throws(() => checkCapturedLines({ capturedLines: { documents: 0, lines: none }, checkpoint: {} } as unknown as CaptureOutput), { name: 'ProtocolError' });
  });
});
