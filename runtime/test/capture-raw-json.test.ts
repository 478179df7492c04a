// Captured documents the connector serialised itself (`{ captured: { binding, docJson } }`): the runtime
// splices the text into the `captured` line without parsing it, and the bytes written must be exactly
// those of the object form `{ captured: { binding, doc } }`.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { encodeCaptureOutput, encodeCapturedJson, serveCapture } from '../src/connector/capture.ts';
import type { CaptureConnector, CaptureOutput } from '../src/connector/types.ts';
import { MessageWriter } from '../src/protocol/framing.ts';
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

/** A capture connector that yields `docs` on two bindings, as objects or as docJson, with checkpoints. */
function connector(docs: JsonObject[], form: 'object' | 'json' | 'mixed'): CaptureConnector {
  return {
    configSchema: { type: 'object' },
    resourceConfigSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    documentationUrl: 'https://example.com',
    resourcePathPointers: ['/name'],
    discover: () => Promise.resolve([]),
    async *open() {
      let i = 0;
      for (const binding of [0, 1]) {
        for (const doc of docs) {
          const asJson = form === 'json' || (form === 'mixed' && i % 2 === 0);
          i++;
          const out: CaptureOutput = asJson
            ? { captured: binding === 0 && i % 3 === 0 ? { docJson: JSON.stringify(doc) } : { binding, docJson: JSON.stringify(doc) } }
            : { captured: binding === 0 && i % 3 === 0 ? { doc } : { binding, doc } };
          yield out;
          if (i % 5 === 0) yield { checkpoint: { state: { updated: { i }, mergePatch: true } } };
        }
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

describe('capture outputs with pre-serialised documents (docJson)', () => {
  it('write exactly the bytes of the object form, for tricky values, on binding 0 and 1', async () => {
    const docs = trickyDocs();
    const objects = await run(connector(docs, 'object'));
    const json = await run(connector(docs, 'json'));
    const mixed = await run(connector(docs, 'mixed'));
    assert.equal(objects.error, undefined);
    assert.equal(json.error, undefined);
    assert.equal(mixed.error, undefined);
    assert.equal(json.text, objects.text);
    assert.equal(mixed.text, objects.text);
    // And the bytes are what the protocol says: each line parses back to the document.
    const captured = objects.text.split('\n').filter((l) => l.startsWith('{"captured"'));
    assert.equal(captured.length, docs.length * 2);
    captured.forEach((line, i) => {
      const parsed = JSON.parse(line) as { captured: { binding?: number; doc: JsonObject } };
      assert.deepEqual(parsed.captured.doc, JSON.parse(JSON.stringify(docs[i % docs.length])));
      assert.equal(parsed.captured.binding, i < docs.length ? undefined : 1);
    });
    assert.ok(json.text.includes('{"captured":{"doc":{"__proto__":{"polluted":true},"constructor":"c","toString":"t"}'), 'an own __proto__ key is kept');
    assert.ok(json.text.includes('"lone":"\\ud800"'), 'lone surrogates are escaped as JSON.stringify does');
    assert.ok(json.text.includes('{"2":"two","10":"ten","b":1,"a":2,"01":"not an index"}'), 'index-like keys in JSON.stringify order');
  });

  it('encodeCapturedJson gives the line of the object form; encodeCaptureOutput the same object', () => {
    for (const doc of trickyDocs()) {
      for (const binding of [undefined, 0, 1]) {
        const withBinding = binding === undefined ? {} : { binding };
        const line = encodeCapturedJson({ captured: { ...withBinding, docJson: JSON.stringify(doc) } }, 2);
        const expected = JSON.stringify(encodeCaptureOutput({ captured: { ...withBinding, doc } }, 2)) + '\n';
        assert.equal(line, expected);
        assert.deepEqual(encodeCaptureOutput({ captured: { ...withBinding, docJson: JSON.stringify(doc) } }, 2), JSON.parse(expected));
      }
    }
    assert.equal(encodeCapturedJson({ captured: { doc: { a: 1 } } }, 1), null);
    assert.equal(encodeCapturedJson({ checkpoint: {} }, 1), null);
  });

  it('bad input: malformed docJson, doc and docJson together, bad binding, extra variants', () => {
    const bad: [unknown, string][] = [
      [{ captured: { docJson: '[1,2]' } }, 'captured document for binding 0: docJson must be the compact JSON text of an object (JSON.stringify of it), got "[1,2]"'],
      [{ captured: { docJson: '' } }, 'captured document for binding 0: docJson must be the compact JSON text of an object (JSON.stringify of it), got ""'],
      [{ captured: { binding: 1, docJson: '{"a":\n1}' } }, 'captured document for binding 1: docJson must be the compact JSON text of an object (JSON.stringify of it), got "{\\"a\\":\\n1}"'],
      [{ captured: { docJson: { a: 1 } } }, 'captured document for binding 0: docJson must be the compact JSON text of an object (JSON.stringify of it), got object'],
      [{ captured: { doc: { a: 1 }, docJson: '{"a":1}' } }, 'captured document for binding 0: give either doc or docJson, not both'],
      [{ captured: { binding: 2, docJson: '{}' } }, 'captured document: binding 2 is out of range (the task has 2 bindings)'],
      [{ captured: { binding: -1, docJson: '{}' } }, 'captured document: binding must be a non-negative integer, got -1'],
      [{ captured: { docJson: '{}' }, checkpoint: {} }, 'the connector yielded an output with variants captured, checkpoint; expected exactly one of "captured", "checkpoint", "sourcedSchema"'],
    ];
    for (const [output, message] of bad) {
      assert.throws(() => encodeCapturedJson(output as CaptureOutput, 2), { name: 'ProtocolError', message }, message);
      assert.throws(() => encodeCaptureOutput(output as CaptureOutput, 2), { name: 'ProtocolError', message }, message);
    }
  });

  it('bad input through the protocol: the session fails and nothing after the last checkpoint is claimed', async () => {
    const c = connector([], 'json');
    c.open = async function* () {
      yield { captured: { docJson: '{"a":1}' } };
      yield { checkpoint: {} };
      yield { captured: { docJson: '{"a":2}\n{"b":3}' } };
    };
    const { text, error } = await run(c);
    assert.equal(error?.name, 'ProtocolError');
    assert.match(error?.message ?? '', /docJson must be the compact JSON text of an object/);
    assert.equal(text, '{"opened":{}}\n{"captured":{"doc":{"a":1}}}\n{"checkpoint":{}}\n', 'the malformed line is never written');
  });

  it('documents after the last checkpoint are counted the same way', async () => {
    const c = connector([], 'json');
    c.open = async function* () {
      yield { captured: { docJson: '{"a":1}' } };
      yield { checkpoint: {} };
      yield { captured: { docJson: '{"a":2}' } };
      yield { captured: { doc: { a: 3 } } };
    };
    const { logs, error } = await run(c);
    assert.equal(error, undefined);
    const warning = logs.entries.find((e) => /after its last checkpoint/.test(JSON.stringify(e)));
    assert.ok(warning, 'a warning about discarded documents');
    assert.match(JSON.stringify(warning), /"documents":2/);
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
