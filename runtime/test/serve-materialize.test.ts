import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serveMaterialize } from '../src/connector/materialize.ts';
import type { DecodedLoad, DecodedStore, MaterializeConnector, Transactor } from '../src/connector/types.ts';
import { packTupleBase64 } from '../src/protocol/tuple.ts';
import { createTestMaterialize } from '../src/testing/test-materialize.ts';
import { Collector, LogCollector, serve } from './helpers.ts';

const mat = createTestMaterialize();
const anyMat = mat as unknown as MaterializeConnector;
const collection = {
  name: 'acmeCo/users', key: ['/id'],
  projections: [{ field: 'flow_document' }, { ptr: '/id', field: 'id', isPrimaryKey: true }, { ptr: '/name', field: 'name' }],
};
const binding = (table: string) => ({
  resourceConfig: { table }, resourcePath: [table], collection,
  fieldSelection: { keys: ['id'], values: ['name'], document: 'flow_document' }, stateKey: table,
});
const open = (bindings = [binding('users')], config: object = {}) => ({
  open: { materialization: { name: 'acmeCo/mat', connectorType: 'IMAGE', config, bindings }, version: '9a1c', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} },
});
const key1 = packTupleBase64([1]);
const checkpoint = { runtimeCheckpoint: { sources: { 'acmeCo/users/pivot=00;materialize/acmeCo/mat/users': { readThrough: '4096' } }, ackIntents: {} } };
const txn1 = [
  { acknowledge: {} },
  { load: { keyPacked: key1 } },
  { flush: {} },
  { store: { keyPacked: key1, valuesPacked: packTupleBase64(['new']), doc: { id: 1, name: 'new' } } },
  { startCommit: checkpoint },
];
const txn2 = [
  { acknowledge: {} },
  { load: { keyPacked: key1 } },
  { load: { keyPacked: packTupleBase64([2]) } },
  { flush: {} },
  { store: { keyPacked: key1, valuesPacked: packTupleBase64(['newer']), doc: { id: 1, name: 'newer' }, exists: true } },
  { startCommit: checkpoint },
  { acknowledge: {} },
];

describe('serveMaterialize: malformed and out-of-order input', () => {
  const cases: [string, (string | object)[], string][] = [
    ['empty input', [], 'stdin ended before any request; expected one of "spec", "validate", "apply", "open"'],
    ['not JSON', ['nope'], /^stdin line 1 is not valid JSON: /.source],
    ['unknown variant', [{ discover: {} }], 'stdin line 1: unknown request "discover"; expected one of "spec", "validate", "apply", "open", "acknowledge", "load", "flush", "store", "startCommit"'],
    ['acknowledge first', [{ acknowledge: {} }], 'unexpected "acknowledge" request (line 1) while awaiting the first request; expected one of "spec", "validate", "apply", "open"'],
    ['load first', [{ load: { keyPacked: key1 } }], 'unexpected "load" request (line 1) while awaiting the first request; expected one of "spec", "validate", "apply", "open"'],
    ['open without a materialization after spec', [{ spec: {} }, { open: {} }], '"open" request (line 2) has no materialization spec'],
    ['load after a unary RPC', [{ spec: {} }, { load: { keyPacked: key1 } }], 'unexpected "load" request (line 2) while awaiting the next request; expected one of "spec", "validate", "apply", "open"'],
    ['open without a materialization', [{ open: {} }], '"open" request (line 1) has no materialization spec'],
    ['load before acknowledge', [open(), { load: { keyPacked: key1 } }], 'unexpected "load" request (line 2) while awaiting acknowledge; expected "acknowledge"'],
    ['flush before acknowledge', [open(), { flush: {} }], 'unexpected "flush" request (line 2) while awaiting acknowledge; expected "acknowledge"'],
    ['a second open', [open(), open()], 'unexpected "open" request (line 2) while awaiting acknowledge; expected "acknowledge"'],
    ['duplicate acknowledge', [open(), { acknowledge: {} }, { acknowledge: {} }], 'unexpected "acknowledge" request (line 3) while acknowledged (awaiting the next transaction); expected one of "load", "flush"'],
    ['store before flush', [open(), { acknowledge: {} }, { load: { keyPacked: key1 } }, { store: { keyPacked: key1 } }], 'unexpected "store" request (line 4) while loading; expected one of "load", "flush"'],
    ['startCommit while loading', [open(), { acknowledge: {} }, { load: { keyPacked: key1 } }, { startCommit: {} }], 'unexpected "startCommit" request (line 4) while loading; expected one of "load", "flush"'],
    ['load after flush', [open(), { acknowledge: {} }, { flush: {} }, { load: { keyPacked: key1 } }], 'unexpected "load" request (line 4) while storing; expected one of "store", "startCommit"'],
    ['acknowledge while storing', [open(), { acknowledge: {} }, { flush: {} }, { acknowledge: {} }], 'unexpected "acknowledge" request (line 4) while storing; expected one of "store", "startCommit"'],
    ['load after startCommit', [open(), ...txn1, { load: { keyPacked: key1 } }], 'unexpected "load" request (line 7) while awaiting acknowledge; expected "acknowledge"'],
    ['EOF right after open', [open()], 'stdin ended while awaiting acknowledge; expected "acknowledge"'],
    ['EOF while loading', [open(), { acknowledge: {} }, { load: { keyPacked: key1 } }], 'stdin ended while loading; expected one of "load", "flush"'],
    ['EOF while storing', [open(), { acknowledge: {} }, { flush: {} }, { store: { keyPacked: key1 } }], 'stdin ended while storing; expected one of "store", "startCommit"'],
    ['EOF after startedCommit, before acknowledge', [open(), ...txn1], 'stdin ended while awaiting acknowledge; expected "acknowledge"'],
    ['load binding out of range', [open(), { acknowledge: {} }, { load: { binding: 1, keyPacked: key1 } }], '"load" request (line 3): binding 1 is out of range (the task has 1 binding)'],
    ['load binding not an integer', [open(), { acknowledge: {} }, { load: { binding: -1, keyPacked: key1 } }], '"load" request (line 3): binding must be a non-negative integer, got -1'],
    ['load without a key', [open(), { acknowledge: {} }, { load: {} }], '"load" request (line 3) has neither keyPacked nor key'],
    ['load with a bad keyPacked', [open(), { acknowledge: {} }, { load: { keyPacked: 'Fg==' } }], '"load" request (line 3): invalid packed tuple: truncated integer (needs 2 bytes, 0 left) at byte 1'],
    ['store with bad valuesPacked', [open(), { acknowledge: {} }, { flush: {} }, { store: { keyPacked: key1, valuesPacked: '%%%%' } }], '"store" request (line 4): invalid packed tuple: not valid base64 (4 characters)'],
    ['store with a non-object doc', [open(), { acknowledge: {} }, { flush: {} }, { store: { keyPacked: key1, doc: [1] } }], '"store" request (line 4): doc must be a JSON object'],
  ];
  for (const [name, requests, message] of cases) {
    it(name, async () => {
      const { error } = await serve(serveMaterialize, mat, requests);
      assert.equal(error?.name, 'ProtocolError', `${error?.stack}`);
      if (message.startsWith('^')) assert.match(error.message, new RegExp(message));
      else assert.equal(error.message, message);
    });
  }
  it('invalid resource config names the binding and pointer', async () => {
    const { error } = await serve(serveMaterialize, mat, [open([{ ...binding('users'), resourceConfig: { table: '', delta: 'yes' } as { table: string } }])]);
    assert.equal(error?.name, 'ConfigError');
    assert.equal(error?.message, 'Invalid resource config of binding 0 (acmeCo/users) (2 problems): /table must NOT have fewer than 1 characters; /delta must be of type boolean');
  });
  it('invalid endpoint config never echoes secrets', async () => {
    const { error } = await serve(serveMaterialize, mat, [{ validate: { config: { password: 12345678, failOn: 'never' }, bindings: [] } }]);
    assert.equal(error?.message, 'Invalid endpoint config (2 problems): /password must be of type string; /failOn must be one of "open", "load", "store", "commit"');
  });
});

describe('serveMaterialize: unary RPCs', () => {
  it('spec: protocol 3032023, never resourcePathPointers', async () => {
    const { out } = await serve(serveMaterialize, mat, [{ spec: {} }]);
    assert.equal(out.length, 1);
    const spec = JSON.parse(out[0]!).spec;
    assert.equal(spec.protocol, 3032023);
    assert.deepEqual(Object.keys(spec), ['protocol', 'configSchema', 'resourceConfigSchema', 'documentationUrl']);
  });
  it('validate: exact constraints line, defaults omitted', async () => {
    const { out } = await serve(serveMaterialize, mat, [{ validate: { name: 'acmeCo/mat', config: {}, bindings: [{ resourceConfig: { table: 'users' }, collection }, { resourceConfig: { table: 'log', delta: true }, collection, fieldConfig: {} }] } }]);
    assert.deepEqual(out, [
      '{"validated":{"bindings":[' +
      '{"resourcePath":["users"],"constraints":{"flow_document":{"type":"LOCATION_REQUIRED","reason":"The document is stored"},"id":{"type":"LOCATION_REQUIRED","reason":"Keys are required"},"name":{"type":"FIELD_OPTIONAL"}}},' +
      '{"resourcePath":["log"],"constraints":{"flow_document":{"type":"LOCATION_REQUIRED","reason":"The document is stored"},"id":{"type":"LOCATION_REQUIRED","reason":"Keys are required"},"name":{"type":"FIELD_OPTIONAL"}},"deltaUpdates":true}]}}',
    ]);
  });
  it('validate: a wrong number of bindings from the connector is a ProtocolError', async () => {
    const bad = { ...anyMat, validate: async () => [] };
    const { error } = await serve(serveMaterialize, bad, [{ validate: { config: {}, bindings: [{ resourceConfig: { table: 'users' }, collection }] } }]);
    assert.equal(error?.message, "the connector's validate() returned 0 bindings for 1 requested");
  });
  it('apply: dryRun passed through', async () => {
    const { out } = await serve(serveMaterialize, mat, [{ apply: { materialization: { name: 'acmeCo/mat', config: { prefix: 'p_' }, bindings: [binding('users')] }, version: '1', dryRun: true } }]);
    assert.deepEqual(out, ['{"applied":{"actionDescription":"would create p_users"}}']);
  });
});

describe('serveMaterialize: transactions', () => {
  it('the reference session, exactly; EOF after acknowledge is a clean stop', async () => {
    const { out, error, logs } = await serve(serveMaterialize, mat, [open(), ...txn1, ...txn2]);
    assert.equal(error, undefined, error?.stack);
    assert.deepEqual(out, [
      '{"opened":{}}',
      '{"acknowledged":{}}',
      '{"flushed":{}}',
      '{"startedCommit":{"state":{"updated":{"lastCommit":1},"mergePatch":true}}}',
      '{"acknowledged":{"state":{"updated":{"committed":1},"mergePatch":true}}}',
      '{"loaded":{"doc":{"id":1,"name":"new"}}}',
      '{"flushed":{}}',
      '{"startedCommit":{"state":{"updated":{"lastCommit":2},"mergePatch":true}}}',
      '{"acknowledged":{"state":{"updated":{"committed":2},"mergePatch":true}}}',
    ]);
    assert.deepEqual(logs.entries.map((e) => e.fields), [{ stores: 1, checkpointSources: 1 }, { stores: 1, checkpointSources: 1 }]);
  });
  it('decodes keys and values for the transactor; falls back to key/values; binding 1', async () => {
    const loads: DecodedLoad[] = [];
    const stores: DecodedStore[] = [];
    const closed: string[] = [];
    const recording = {
      ...anyMat,
      async open() {
        const transactor: Transactor = {
          async acknowledge() {},
          async load(it) { for await (const l of it) loads.push(l); },
          async store(it) { for await (const s of it) stores.push(s); },
          async startCommit() {},
          async close() { closed.push('closed'); },
        };
        return { transactor, opened: { runtimeCheckpoint: { sources: {} }, disableLoadOptimization: true } };
      },
    };
    const { out, error } = await serve(serveMaterialize, recording, [
      open([binding('a'), binding('b')]),
      { acknowledge: {} },
      { load: { binding: 1, keyPacked: packTupleBase64(['k', 2n ** 64n]) } },
      { load: { key: ['j', { nested: true }] } },
      { flush: {} },
      { store: { binding: 1, keyPacked: packTupleBase64(['k']), valuesPacked: packTupleBase64([1.5, null]), exists: true, delete: true } },
      { store: { key: ['j'], values: [[1, 2]] } },
      { startCommit: {} },
      { acknowledge: {} },
    ]);
    assert.equal(error, undefined, error?.stack);
    assert.deepEqual(out, ['{"opened":{"runtimeCheckpoint":{"sources":{}},"disableLoadOptimization":true}}', '{"acknowledged":{}}', '{"flushed":{}}', '{"startedCommit":{}}', '{"acknowledged":{}}']);
    assert.deepEqual(loads, [
      { binding: 1, key: ['k', 2n ** 64n], keyPacked: packTupleBase64(['k', 2n ** 64n]) },
      { binding: 0, key: ['j', new TextEncoder().encode('{"nested":true}')], keyPacked: '' },
    ]);
    assert.deepEqual(stores, [
      { binding: 1, key: ['k'], values: [1.5, null], keyPacked: packTupleBase64(['k']), exists: true, delete: true },
      { binding: 0, key: ['j'], values: [new TextEncoder().encode('[1,2]')], keyPacked: '', exists: false, delete: false },
    ]);
    assert.deepEqual(closed, ['closed']);
  });
  it('a transactor error fails the session and the transactor is closed', async () => {
    const { out, error } = await serve(serveMaterialize, mat, [open([binding('users')], { failOn: 'store' }), { acknowledge: {} }, { flush: {} }, { store: { keyPacked: key1 } }, { startCommit: {} }, { acknowledge: {} }]);
    assert.equal(error?.message, 'the test materialization was asked to fail on store');
    assert.deepEqual(out, ['{"opened":{}}', '{"acknowledged":{}}', '{"flushed":{}}']);
  });
  it('an open failure is reported as is', async () => {
    const { out, error } = await serve(serveMaterialize, mat, [open([binding('users')], { failOn: 'open' })]);
    assert.deepEqual(out, []);
    assert.equal(error?.name, 'ConfigError');
    assert.equal(error?.message, 'the test materialization was asked to fail on open');
  });
  it('a transactor that stops reading loads early is caught', async () => {
    const lazy = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() {}, async load() {}, async store(it: AsyncIterable<DecodedStore>) { for await (const _ of it); }, async startCommit() {} } }; } };
    const { error } = await serve(serveMaterialize, lazy, [open(), { acknowledge: {} }, { load: { keyPacked: key1 } }, { flush: {} }]);
    assert.equal(error?.message, "the transactor's load() returned without reading every load (1 left)");
  });
  it('a transactor whose load() returns early does not block the reader, even past the queue capacity', async () => {
    const lazy = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() {}, async load() {}, async store() {}, async startCommit() {} } as Transactor }; } };
    const loads = Array.from({ length: 2000 }, (_, i) => ({ load: { keyPacked: packTupleBase64([i]) } }));
    const { error } = await serve(serveMaterialize, lazy, [open(), { acknowledge: {} }, ...loads, { flush: {} }]);
    assert.equal(error?.message, "the transactor's load() returned without reading every load (2000 left)");
  });
  it('a transactor that breaks out of its store loop is caught', async () => {
    const breaking = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() {}, async load(it: AsyncIterable<DecodedLoad>) { for await (const _ of it); }, async store(it: AsyncIterable<DecodedStore>) { for await (const _ of it) break; }, async startCommit() {} } as Transactor }; } };
    const stores = Array.from({ length: 3 }, (_, i) => ({ store: { keyPacked: packTupleBase64([i]) } }));
    const { error } = await serve(serveMaterialize, breaking, [open(), { acknowledge: {} }, { flush: {} }, ...stores, { startCommit: {} }]);
    assert.equal(error?.message, "the transactor's store() returned without reading every store (2 left)");
  });
  it('loaded() for an out-of-range binding is a ProtocolError', async () => {
    const bad = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() {}, async load(it: AsyncIterable<DecodedLoad>, loaded: (b: number, d: object) => Promise<void>) { for await (const _ of it) await loaded(5, {}); }, async store() {}, async startCommit() {} } as Transactor }; } };
    const { error } = await serve(serveMaterialize, bad, [open(), { acknowledge: {} }, { load: { keyPacked: key1 } }, { flush: {} }]);
    assert.equal(error?.message, 'loaded document: binding 5 is out of range (the task has 1 binding)');
  });
  it('flush with no loads still calls load() once and answers flushed', async () => {
    let calls = 0;
    const counting = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() {}, async load(it: AsyncIterable<DecodedLoad>) { calls++; for await (const _ of it); }, async store() {}, async startCommit() {} } as Transactor }; } };
    const { out } = await serve(serveMaterialize, counting, [open(), { acknowledge: {} }, { flush: {} }, { startCommit: {} }, { acknowledge: {} }]);
    assert.equal(calls, 1);
    assert.deepEqual(out, ['{"opened":{}}', '{"acknowledged":{}}', '{"flushed":{}}', '{"startedCommit":{}}', '{"acknowledged":{}}']);
  });
  it('aborting the signal stops the session cleanly and closes the transactor', async () => {
    let closed = false;
    const { PassThrough } = await import('node:stream');
    const { Collector, LogCollector } = await import('./helpers.ts');
    const output = new Collector();
    const controller2 = new AbortController();
    const c2 = { ...anyMat, async open() { return { opened: {}, transactor: { async acknowledge() { setTimeout(() => controller2.abort(), 10); }, async load() {}, async store() {}, async startCommit() {}, async close() { closed = true; } } as Transactor }; } };
    const input2 = new PassThrough();
    input2.write(JSON.stringify(open()) + '\n{"acknowledge":{}}\n');
    await serveMaterialize(c2, { input: input2, output, stderr: new LogCollector(), env: {}, signal: controller2.signal });
    assert.deepEqual(output.lines, ['{"opened":{}}', '{"acknowledged":{}}']);
    assert.equal(closed, true);
  });
});

/** The test connector, with every store it is given shown to `see` on its way to its transactor. */
function recordingStores(see: DecodedStore[] | ((s: DecodedStore) => void)): ReturnType<typeof createTestMaterialize> {
  const record = typeof see === 'function' ? see : (s: DecodedStore) => { see.push(s); };
  const connector = createTestMaterialize();
  const base = connector.open.bind(connector);
  connector.open = async (ctx) => {
    const opened = await base(ctx);
    const store = opened.transactor.store.bind(opened.transactor);
    opened.transactor.store = async (stores) => store((async function* () {
      for await (const s of stores) { record(s); yield s; }
    })());
    return opened;
  };
  return connector;
}

describe('serveMaterialize: store documents', () => {
  it('a store carries its document parsed (integers exact) and as the exact JSON text it was sent with', async () => {
    const seen: DecodedStore[] = [];
    const connector = recordingStores(seen);
    const line = `{"store":{"keyPacked":"${packTupleBase64([1])}","doc":{ "id" : 1, "big": 12345678901234567890, "s": "\\u00e9" }}}`;
    const { error } = await serve(serveMaterialize, connector, [open(), { acknowledge: {} }, { flush: {} }, line, { startCommit: {} }, { acknowledge: {} }]);
    assert.equal(error, undefined);
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0]!.doc, { id: 1, big: 12345678901234567890n, s: 'é' }, 'integers beyond 2^53 exact');
    assert.equal(seen[0]!.docJson, '{ "id" : 1, "big": 12345678901234567890, "s": "\\u00e9" }');
  });

  it('documents checked but not parsed, nested deeper (parsed), and malformed (the line\'s error) alike', async () => {
    const seen: DecodedStore[] = [];
    const connector = recordingStores(seen);
    const key = (n: number) => packTupleBase64([n]);
    const shallow = '{"id":1,"_meta":{"uuid":"x","tags":["a","b"]},"exists":false}';
    const deep = '{"id":2,"a":{"b":{"c":{"d":[1]}}}}';
    const lines = [
      `{"store":{"keyPacked":"${key(1)}","doc":${shallow},"exists":true}}`,
      `{"store":{"keyPacked":"${key(2)}","doc":${deep},"delete":true}}`,
    ];
    const ok = await serve(serveMaterialize, connector, [open(), { acknowledge: {} }, { flush: {} }, ...lines, { startCommit: {} }, { acknowledge: {} }]);
    assert.equal(ok.error, undefined);
    assert.deepEqual(seen.map((s) => [s.key, s.exists, s.delete, s.docJson, s.doc]), [
      [[1], true, false, shallow, JSON.parse(shallow)],
      [[2], false, true, deep, JSON.parse(deep)],
    ]);
    const bad = `{"store":{"keyPacked":"${key(3)}","doc":{"id":3,"a":tru}}}`;
    const failed = await serve(serveMaterialize, connector, [open(), { acknowledge: {} }, { flush: {} }, bad, { startCommit: {} }]);
    assert.match(String(failed.error?.message), /^stdin line 4 is not valid JSON: /);
  });
});

describe('serveMaterialize: long runs of requests already read', () => {
  it('every request of a chunk is taken, in order, across the event-loop turns between them', async () => {
    const seen: number[] = [];
    const connector = recordingStores((s) => { seen.push(s.key[0] as number); });
    const line = (r: object) => `${JSON.stringify(r)}\n`;
    const storeOf = (id: number) => line({ store: { keyPacked: packTupleBase64([id]), valuesPacked: packTupleBase64([`n${id}`]), doc: { id, name: `n${id}` } } });
    // 1000 stores in one chunk (several turns' worth), then 1000 split over small chunks.
    const first = [open(), { acknowledge: {} }, { flush: {} }].map(line).join('') + Array.from({ length: 1000 }, (_, i) => storeOf(i)).join('');
    const rest = Array.from({ length: 1000 }, (_, i) => storeOf(1000 + i));
    const output = new Collector();
    await serveMaterialize(connector, { input: [first, ...rest, line({ startCommit: checkpoint }) + line({ acknowledge: {} })], output, stderr: new LogCollector(), env: {} });
    assert.deepEqual(seen, Array.from({ length: 2000 }, (_, i) => i));
    assert.deepEqual(output.lines.map((l) => Object.keys(JSON.parse(l) as object)[0]), ['opened', 'acknowledged', 'flushed', 'startedCommit', 'acknowledged']);
  });
});
