import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { serveCapture } from '../src/connector/capture.ts';
import type { CaptureConnector, CaptureOutput } from '../src/connector/types.ts';
import { createTestCapture } from '../src/testing/test-capture.ts';
import { until } from '../src/testing/until.ts';
import { Collector, LogCollector, serve } from './helpers.ts';

const capture = createTestCapture();
const anyCapture = capture as unknown as CaptureConnector;
const binding = (name: string, extra: object = {}) => ({
  resourceConfig: { name }, resourcePath: [name], collection: { name: `acmeCo/${name}`, key: ['/id'] }, stateKey: `${name}.v1`, ...extra,
});
const open = (bindings: object[], config: object = { apiKey: 'k', count: 2 }, state?: object) => ({
  open: { capture: { name: 'acmeCo/src', connectorType: 'IMAGE', config, bindings }, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, ...(state ? { state } : {}) },
});

describe('serveCapture: malformed and out-of-order input', () => {
  const cases: [string, (string | object)[], string][] = [
    ['empty input', [], 'stdin ended before any request; expected one of "spec", "discover", "validate", "apply", "open"'],
    ['malformed JSON', ['{"spec":'], 'stdin line 1 is not valid JSON: Unexpected end of JSON input'],
    ['two variants', ['{"spec":{},"discover":{}}'], 'stdin line 1: a request must have exactly one of "spec", "discover", "validate", "apply", "open", "acknowledge"; found "spec", "discover"'],
    ['unknown variant', ['{"load":{}}'], 'stdin line 1: unknown request "load"; expected one of "spec", "discover", "validate", "apply", "open", "acknowledge"'],
    ['acknowledge first', ['{"acknowledge":{"checkpoints":1}}'], 'unexpected "acknowledge" request (line 1) while awaiting the first request; expected one of "spec", "discover", "validate", "apply", "open"'],
    ['acknowledge after a unary RPC', [{ spec: {} }, { acknowledge: { checkpoints: 1 } }], 'unexpected "acknowledge" request (line 2) while awaiting the next request; expected one of "spec", "discover", "validate", "apply", "open"'],
    ['acknowledge without explicit acknowledgements', [open([binding('users')]), { acknowledge: { checkpoints: 1 } }], 'unexpected "acknowledge" request (line 2) while the capture session is open; expected no further requests (explicit acknowledgements are off)'],
    ['a second open', [open([binding('users')]), open([binding('users')])], 'unexpected "open" request (line 2) while the capture session is open; expected no further requests (explicit acknowledgements are off)'],
    ['open without a capture', ['{"open":{}}'], '"open" request (line 1) has no capture spec'],
  ];
  for (const [name, requests, message] of cases) {
    it(name, async () => {
      const { error } = await serve(serveCapture, capture, requests);
      assert.equal(error?.name, 'ProtocolError');
      assert.equal(error?.message, message);
    });
  }
  it('a partial trailing line after a request', async () => {
    const { out, error } = await serveRaw(['{"spec":{}}\n{"spe']);
    assert.equal(error?.message, 'stdin ended with a partial message: line 2 (5 bytes) has no terminating newline');
    assert.equal(out.length, 1, 'the spec was answered before the partial line was seen');
  });
  it('invalid endpoint config names pointers, not values', async () => {
    const { out, error } = await serve(serveCapture, capture, [{ discover: { config: { apiKey: 42, count: -1, secretish: 'hunter2' } } }]);
    assert.deepEqual(out, []);
    assert.equal(error?.name, 'ConfigError');
    assert.equal(error?.message, 'Invalid endpoint config (3 problems): /secretish is not an allowed property; allowed: apiKey, greeting, count, failWith, delayMs; /apiKey must be of type string; /count must be >= 0');
  });
  it('invalid resource config names the binding', async () => {
    const { error } = await serve(serveCapture, capture, [{ validate: { name: 'a/b', config: { apiKey: 'k' }, bindings: [{ resourceConfig: { name: 'ok' }, collection: { name: 'a/ok' } }, { resourceConfig: { nam: 'x' }, collection: { name: 'a/bad' } }] } }]);
    assert.equal(error?.message, "Invalid resource config of binding 1 (a/bad) (1 problem): /nam is not an allowed property; did you mean 'name'?");
  });
});

async function serveRaw(chunks: string[]) {
  const output = new Collector();
  let error: Error | undefined;
  try {
    await serveCapture(capture, { input: chunks, output, stderr: new LogCollector(), env: {} });
  } catch (err) {
    error = err as Error;
  }
  return { out: output.lines, error };
}

describe('serveCapture: several RPCs on one stream (as upstream\'s boilerplate serves them)', () => {
  it('validate, apply, then open: each answered in turn by one process', async () => {
    const b = binding('users');
    const { out, error } = await serve(serveCapture, capture, [
      { validate: { name: 'acmeCo/src', config: { apiKey: 'k', count: 2 }, bindings: [{ resourceConfig: { name: 'users' }, collection: { name: 'acmeCo/users' } }] } },
      { apply: { capture: { name: 'acmeCo/src', connectorType: 'IMAGE', config: { apiKey: 'k', count: 2 }, bindings: [b] }, version: 'v1' } },
      open([b]),
    ]);
    assert.equal(error, undefined);
    assert.equal(out[0], '{"validated":{"bindings":[{"resourcePath":["users"]}]}}');
    assert.equal(out[1], '{"applied":{}}');
    assert.ok(out[2]!.startsWith('{"opened":'), out[2]);
    assert.ok(out.slice(3).some((l) => l.startsWith('{"captured":')), 'the session captured documents');
  });
  it('two unary RPCs, then the end of input: both answered, a clean end', async () => {
    const { out, error } = await serve(serveCapture, capture, [{ spec: {} }, { discover: { config: { apiKey: 'k' } } }]);
    assert.equal(error, undefined);
    assert.equal(out.length, 2);
    assert.ok(out[0]!.startsWith('{"spec":'));
    assert.ok(out[1]!.startsWith('{"discovered":'));
  });
  it('a unary response is written before the next request arrives', async () => {
    const input = new PassThrough();
    const output = new Collector();
    const served = serveCapture(capture, { input, output, stderr: new LogCollector(), env: {} });
    input.write(`${JSON.stringify({ spec: {} })}\n`);
    await until('the spec response, with stdin still open', () => output.lines.length === 1);
    input.end();
    await served;
    assert.equal(output.lines.length, 1);
  });
});

describe('serveCapture: unary RPCs', () => {
  it('spec: protocol 3032023 and resourcePathPointers', async () => {
    const { out, error } = await serve(serveCapture, capture, [{ spec: { connectorType: 'IMAGE', config: {} } }]);
    assert.equal(error, undefined);
    assert.equal(out.length, 1);
    const spec = JSON.parse(out[0]!).spec;
    assert.equal(spec.protocol, 3032023);
    assert.deepEqual(spec.resourcePathPointers, ['/name']);
    assert.equal(spec.documentationUrl, 'https://sluice.dev/connectors/test-capture');
    assert.deepEqual(Object.keys(spec), ['protocol', 'configSchema', 'resourceConfigSchema', 'documentationUrl', 'resourcePathPointers']);
  });
  it('discover: defaults applied before the connector sees the config; defaults omitted on output', async () => {
    const { out } = await serve(serveCapture, capture, [{ discover: { connectorType: 'IMAGE', config: { apiKey: 'k' } } }]);
    assert.deepEqual(out, [
      '{"discovered":{"bindings":[' +
      '{"recommendedName":"alpha","resourceConfig":{"name":"alpha"},"documentSchema":{"type":"object","properties":{"id":{"type":"string"},"greeting":{"type":"string"},"n":{"type":"integer"}},"required":["id"]},"key":["/id"]},' +
      '{"recommendedName":"beta","resourceConfig":{"name":"beta"},"documentSchema":{"type":"object","properties":{"id":{"type":"string"},"greeting":{"type":"string"},"n":{"type":"integer"}},"required":["id"]},"key":["/id"]}]}}',
    ]);
  });
  it('validate: resource paths derived from resourcePathPointers', async () => {
    const { out } = await serve(serveCapture, capture, [{ validate: { name: 'a/b', config: { apiKey: 'k' }, bindings: [{ resourceConfig: { name: 'users' }, collection: { name: 'a/users' } }, { resourceConfig: { name: 'orders' }, collection: { name: 'a/orders' }, backfill: 2 }], futureField: 1 } }]);
    assert.deepEqual(out, ['{"validated":{"bindings":[{"resourcePath":["users"]},{"resourcePath":["orders"]}]}}']);
  });
  it('validate: a connector validate() that returns paths', async () => {
    const custom: CaptureConnector = { ...createTestCapture() as unknown as CaptureConnector, validate: async ({ bindings }) => bindings.map((b) => ['db', String(b.resource['name'])]) };
    const { out } = await serve(serveCapture, custom, [{ validate: { config: { apiKey: 'k' }, bindings: [{ resourceConfig: { name: 'users' }, collection: { name: 'a/users' } }] } }]);
    assert.deepEqual(out, ['{"validated":{"bindings":[{"resourcePath":["db","users"]}]}}']);
  });
  it('validate: a connector returning a bad path is a ProtocolError', async () => {
    const custom: CaptureConnector = { ...createTestCapture() as unknown as CaptureConnector, validate: async () => [['']] };
    const { error } = await serve(serveCapture, custom, [{ validate: { config: { apiKey: 'k' }, bindings: [{ resourceConfig: { name: 'users' }, collection: { name: 'a/users' } }] } }]);
    assert.equal(error?.message, "the connector's validate() returned an invalid resource path for binding 0: it must be a non-empty list of non-empty strings");
  });
  it('apply without an apply method: empty actionDescription omitted', async () => {
    const { out } = await serve(serveCapture, capture, [{ apply: { capture: { name: 'a/b', config: { apiKey: 'k' }, bindings: [] }, version: 'v1' } }]);
    assert.deepEqual(out, ['{"applied":{}}']);
  });
  it('apply passes dryRun and returns the description', async () => {
    let seen: boolean | undefined;
    const custom: CaptureConnector = { ...createTestCapture() as unknown as CaptureConnector, apply: async ({ dryRun }) => { seen = dryRun; return 'created things'; } };
    const { out } = await serve(serveCapture, custom, [{ apply: { capture: { name: 'a/b', config: { apiKey: 'k' } }, dryRun: true } }]);
    assert.deepEqual(out, ['{"applied":{"actionDescription":"created things"}}']);
    assert.equal(seen, true);
  });
});

describe('serveCapture: sessions', () => {
  it('opened first, documents, checkpoints (binding 0 omitted), EOF does not cut the session short', async () => {
    const { out, error, logs } = await serve(serveCapture, capture, [open([binding('users'), binding('orders', { resourceConfig: { name: 'orders', prefix: 'o' } })])]);
    assert.equal(error, undefined);
    assert.deepEqual(out, [
      '{"opened":{}}',
      '{"captured":{"doc":{"id":"users-0","greeting":"hello","n":0}}}',
      '{"captured":{"doc":{"id":"users-1","greeting":"hello","n":1}}}',
      '{"checkpoint":{"state":{"updated":{"bindingStateV1":{"users.v1":{"next":2}}},"mergePatch":true}}}',
      '{"captured":{"binding":1,"doc":{"id":"o-0","greeting":"hello","n":0}}}',
      '{"captured":{"binding":1,"doc":{"id":"o-1","greeting":"hello","n":1}}}',
      '{"checkpoint":{"state":{"updated":{"bindingStateV1":{"orders.v1":{"next":2}}},"mergePatch":true}}}',
    ]);
    assert.deepEqual(logs.entries, [{ level: 'info', msg: 'Capturing 2 bindings', fields: { eventType: 'connectorStatus' } }]);
  });
  it('resumes from open.state', async () => {
    const { out } = await serve(serveCapture, capture, [open([binding('users')], { apiKey: 'k', count: 1 }, { bindingStateV1: { 'users.v1': { next: 5 } } })]);
    assert.deepEqual(out.slice(1), [
      '{"captured":{"doc":{"id":"users-5","greeting":"hello","n":5}}}',
      '{"checkpoint":{"state":{"updated":{"bindingStateV1":{"users.v1":{"next":6}}},"mergePatch":true}}}',
    ]);
  });
  it('a zero-binding capture opens and ends', async () => {
    const { out, error } = await serve(serveCapture, capture, [open([])]);
    assert.equal(error, undefined);
    assert.deepEqual(out, ['{"opened":{}}']);
  });
  it('explicit acknowledgements: opened says so, acks are delivered in order', async () => {
    const acking = createTestCapture({ explicitAcks: true });
    const input = new PassThrough();
    const output = new Collector();
    const logs = new LogCollector();
    const done = serveCapture(acking, { input, output, stderr: logs, env: {} });
    input.write(JSON.stringify(open([binding('a'), binding('b')], { apiKey: 'k', count: 1 })) + '\n');
    await until('opened, a document and a checkpoint written', () => output.lines.length === 3);
    assert.deepEqual(output.lines, ['{"opened":{"explicitAcknowledgements":true}}', '{"captured":{"doc":{"id":"a-0","greeting":"hello","n":0}}}', '{"checkpoint":{"state":{"updated":{"bindingStateV1":{"a.v1":{"next":1}}},"mergePatch":true}}}']);
    input.write('{"acknowledge":{"checkpoints":1}}\n');
    await until('the next document and checkpoint written', () => output.lines.length === 5);
    input.write('{"acknowledge":{"checkpoints":1}}\n');
    await done;
    input.end();
    assert.deepEqual(logs.entries.filter((e) => e.msg === 'checkpoint acknowledged').map((e) => e.fields), [{ binding: 0, checkpoints: 1 }, { binding: 1, checkpoints: 1 }]);
  });
  it('explicit acknowledgements: acknowledging more than pending is an error', async () => {
    const { error } = await serve(serveCapture, createTestCapture({ explicitAcks: true }), [open([binding('a')], { apiKey: 'k', count: 1, delayMs: 50 }), { acknowledge: { checkpoints: 2 } }]);
    assert.equal(error?.message, '"acknowledge" request (line 2) acknowledges 2 checkpoints but only 0 are pending');
  });
  it('explicit acknowledgements: checkpoints must be at least 1', async () => {
    const { error } = await serve(serveCapture, createTestCapture({ explicitAcks: true }), [open([binding('a')], { apiKey: 'k', count: 1, delayMs: 50 }), { acknowledge: {} }]);
    assert.equal(error?.message, '"acknowledge" request (line 2): checkpoints must be an integer of at least 1, got 0');
  });
  it('connector output naming a binding out of range is a ProtocolError', async () => {
    const bad = { ...anyCapture, async *open() { yield { captured: { binding: 3, doc: {} } } as CaptureOutput; } };
    const { out, error } = await serve(serveCapture, bad, [open([binding('a')])]);
    assert.deepEqual(out, ['{"opened":{}}']);
    assert.equal(error?.message, 'captured document: binding 3 is out of range (the task has 1 binding)');
  });
  it('connector output that is not a document object is a ProtocolError', async () => {
    const bad = { ...anyCapture, async *open() { yield { captured: { doc: [1] } } as unknown as CaptureOutput; } };
    const { error } = await serve(serveCapture, bad, [open([binding('a')])]);
    assert.equal(error?.message, 'captured document for binding 0: doc must be a JSON object');
  });
  it('connector output with two variants is a ProtocolError', async () => {
    const bad = { ...anyCapture, async *open() { yield { captured: { doc: {} }, checkpoint: {} } as unknown as CaptureOutput; } };
    const { error } = await serve(serveCapture, bad, [open([binding('a')])]);
    assert.equal(error?.message, 'the connector yielded an output with variants captured, checkpoint; expected exactly one of "captured", "checkpoint", "sourcedSchema"');
  });
  it('sourcedSchema and an empty checkpoint are encoded exactly; unknown fields are not emitted', async () => {
    const c = { ...anyCapture, async *open() {
      yield { sourcedSchema: { binding: 0, documentSchema: { type: 'object' } } };
      yield { captured: { doc: { a: 1 }, extra: true } as never };
      yield { checkpoint: {} };
      yield { checkpoint: { state: { updated: { x: 1 }, mergePatch: false } } };
    } } as CaptureConnector;
    const { out } = await serve(serveCapture, c, [open([binding('a')])]);
    assert.deepEqual(out, ['{"opened":{}}', '{"sourcedSchema":{"documentSchema":{"type":"object"}}}', '{"captured":{"doc":{"a":1}}}', '{"checkpoint":{}}', '{"checkpoint":{"state":{"updated":{"x":1}}}}']);
  });
  it('documents after the last checkpoint are reported as discarded', async () => {
    const c = { ...anyCapture, async *open() { yield { captured: { doc: { a: 1 } } }; } } as CaptureConnector;
    const { logs } = await serve(serveCapture, c, [open([binding('a')])]);
    assert.deepEqual(logs.entries, [{ level: 'warn', msg: 'the capture ended with documents after its last checkpoint; they are discarded', fields: { documents: 1 } }]);
  });
  it('a connector error fails the session after the lines already written', async () => {
    const { out, error } = await serve(serveCapture, capture, [open([binding('a')], { apiKey: 'k', failWith: 'The source refused the API key: check apiKey.' })]);
    assert.deepEqual(out, ['{"opened":{}}']);
    assert.equal(error?.name, 'ConfigError');
    assert.equal(error?.message, 'The source refused the API key: check apiKey.');
  });
  it('aborting the signal (SIGTERM) ends the session cleanly', async () => {
    const controller = new AbortController();
    const input = new PassThrough();
    const output = new Collector();
    const done = serveCapture(capture, { input, output, stderr: new LogCollector(), env: {}, signal: controller.signal });
    input.write(JSON.stringify(open([binding('a')], { apiKey: 'k', count: 1000, delayMs: 5 })) + '\n');
    await until('two lines written', () => output.lines.length >= 2);
    controller.abort();
    await done;
    assert.ok(output.lines.length < 100);
  });
  it('backpressure: the connector is paused while the output is full', async () => {
    let produced = 0;
    const c = { ...anyCapture, async *open() { for (let i = 0; i < 10_000; i++) { produced++; yield { captured: { doc: { i, pad: 'x'.repeat(100) } } }; } yield { checkpoint: {} }; } } as CaptureConnector;
    const { Writable } = await import('node:stream');
    const held: (() => void)[] = [];
    let text = '';
    const output = new Writable({ highWaterMark: 1024, write(chunk, _e, cb) { text += chunk; held.push(cb); } });
    const done = serveCapture(c, { input: [JSON.stringify(open([binding('a')])) + '\n'], output, stderr: new LogCollector(), env: {} });
    // At most one 64 KiB batch of documents (~130 bytes each) is produced ahead of a full output: awaited as
    // the output full (a write held, no drain) with nothing more produced over ten polls; checked every poll.
    let last = -1;
    let still = 0;
    await until('the producer to be paused by a full output', () => {
      assert.ok(produced < 1000, `producer paused at ${produced}`);
      still = held.length > 0 && output.writableNeedDrain && produced === last ? still + 1 : 0;
      last = produced;
      return still >= 10;
    }, { intervalMs: 10 });
    let finished = false;
    void done.finally(() => { finished = true; });
    while (!finished) {
      while (held.length) held.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    await done;
    assert.equal(produced, 10_000);
    assert.equal(text.split('\n').length - 1, 10_002);
  });
});
