// The materialize driver's combine and store lines, against a scripted connector in this process: what it
// sends must be what the parse path defines (createPacker over parseDocument; the document's own text; the
// last document of a key wins; reductions; loads and load optimization; deletions) whether documents come
// as bytes (the plane's journal chunks: pack-bytes.ts) or as text, and whether store lines go as bytes
// (sendLines) or as strings (sendLine). Also the combine table against a Map.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runMaterializeDriver, type DriverSession, type SourceDocument, type ReduceFn } from '../src/host/materialize-driver.ts';
import { CombineTable, Arena, base64Into, base64Length } from '../src/host/combine-table.ts';
import { createPacker } from '../src/protocol/pack.ts';
import { parseDocument, stringifyDocument } from '../src/protocol/documents.ts';
import type { MaterializeRequest, MaterializeResponse } from '../src/protocol/materialize.ts';
import type { CollectionSpec, JsonObject, JsonValue, MaterializationSpec } from '../src/protocol/specs.ts';
import { MATERIALIZE_REQUESTS, MATERIALIZE_SCAN, decodeLoad, decodeStore, fastRequest } from '../src/connector/materialize.ts';
import type { DecodedLoad, DecodedStore } from '../src/connector/types.ts';
import { parseEnvelope } from '../src/protocol/envelope.ts';
import { packTupleBase64 } from '../src/protocol/tuple.ts';
import { lineSession } from '../src/testing/line-session.ts';

const collection: CollectionSpec = {
  name: 'a/things',
  key: ['/id'],
  projections: [
    { field: 'id', ptr: '/id' },
    { field: 'v', ptr: '/v' },
    { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { string: { format: 'date-time' } } },
    { field: 'flow_document', ptr: '' },
  ],
};
const fieldSelection = { keys: ['id'], values: ['v', 'flow_published_at'], document: 'flow_document' };
const UUID = 'c0a8e6e0-9e1e-11ef-8000-0123456789ab';

function spec(bindings: { delta?: boolean }[]): MaterializationSpec {
  return {
    name: 'a/mat', connectorType: 'LOCAL', config: {},
    bindings: bindings.map((b, i) => ({
      resourceConfig: { table: `t${i}` }, resourcePath: [`t${i}`], collection, fieldSelection,
      journalReadSuffix: `materialize/a/mat/t${i}`, ...(b.delta ? { deltaUpdates: true } : {}),
    })),
  } as MaterializationSpec;
}

/** A connector that answers each request as the protocol orders, and "has" the keys of `existing`. */
function scripted(existing: Map<string, JsonValue>, byteLines: boolean): { session: DriverSession<MaterializeRequest, MaterializeResponse>; lines: string[] } {
  const lines: string[] = [];
  const queue: MaterializeResponse[] = [];
  let wake: (() => void) | undefined;
  let loads: { binding: number; keyPacked: string }[] = [];
  const push = (r: MaterializeResponse) => {
    queue.push(r);
    wake?.();
  };
  const onLine = (line: string) => {
    const req = JSON.parse(line) as Record<string, Record<string, unknown>>;
    const variant = Object.keys(req)[0]!;
    if (variant !== 'open') lines.push(line);
    if (variant === 'open') push({ opened: {} } as MaterializeResponse);
    else if (variant === 'acknowledge') push({ acknowledged: {} } as MaterializeResponse);
    else if (variant === 'load') loads.push({ binding: (req['load']!['binding'] as number | undefined) ?? 0, keyPacked: req['load']!['keyPacked'] as string });
    else if (variant === 'flush') {
      for (const l of loads) {
        const doc = existing.get(`${l.binding}:${l.keyPacked}`);
        if (doc !== undefined) push({ loaded: { binding: l.binding, doc } } as MaterializeResponse);
      }
      loads = [];
      push({ flushed: {} } as MaterializeResponse);
    } else if (variant === 'startCommit') push({ startedCommit: {} } as MaterializeResponse);
  };
  const text = (s: string) => {
    for (const l of s.split('\n')) if (l !== '') onLine(l);
  };
  const session: DriverSession<MaterializeRequest, MaterializeResponse> = {
    send: async (r) => text(`${stringifyDocument(r as unknown as JsonValue)}\n`),
    sendLine: async (line) => text(line),
    recv: async () => {
      while (queue.length === 0) await new Promise<void>((resolve) => { wake = resolve; });
      return queue.shift();
    },
    close: async () => undefined,
    kill: () => undefined,
  };
  if (byteLines) {
    session.sendLines = async (bytes, written) => {
      text(Buffer.from(bytes).toString('utf8'));
      written(null);
    };
  }
  return { session, lines };
}

const packer = createPacker(collection, fieldSelection);

/** The store line the parse path defines for a document text. */
function expectedStore(binding: number, text: string, flags: { exists?: boolean; doc?: JsonValue } = {}): string {
  const doc = flags.doc ?? parseDocument(text);
  const docText = flags.doc === undefined ? text : stringifyDocument(flags.doc);
  let line = `{"store":{${binding === 0 ? '' : `"binding":${binding},`}"keyPacked":"${packer.key(doc)}","valuesPacked":"${packer.values(doc)}","doc":${docText}`;
  if (flags.exists) line += ',"exists":true';
  const meta = (doc as JsonObject)['_meta'] as JsonObject | undefined;
  if (meta?.['op'] === 'd') line += ',"delete":true';
  return `${line}}}`;
}

/** Journal-like chunks: the texts as lines of one buffer per binding run (SourceDocuments with bytes). */
function asBytes(docs: { binding: number; text: string }[]): SourceDocument[] {
  const out: SourceDocument[] = [];
  for (const d of docs) {
    const data = Buffer.from(`{"pad":1}\n${d.text}\n`);
    const start = data.indexOf(10) + 1;
    out.push({ binding: d.binding, data, start, end: data.length - 1 });
  }
  return out;
}

/** Journal chunks: runs of one binding's documents as whole lines of one buffer each (the plane's shape). */
function asChunks(docs: { binding: number; text: string }[]): { binding: number; data: Buffer }[] {
  const out: { binding: number; texts: string[] }[] = [];
  for (const d of docs) {
    const last = out.at(-1);
    if (last?.binding === d.binding) last.texts.push(d.text);
    else out.push({ binding: d.binding, texts: [d.text] });
  }
  return out.map((c) => ({ binding: c.binding, data: Buffer.from(`${c.texts.join('\n')}\n`) }));
}

async function run(opts: {
  bindings: { delta?: boolean }[]; txns: { binding: number; text: string }[][]; bytes: boolean | 'chunks'; byteLines: boolean;
  existing?: Map<string, JsonValue>; maxKeys?: (Buffer | undefined)[]; reduce?: ReduceFn; disableLoadOptimization?: boolean;
}): Promise<string[]> {
  const { session, lines } = scripted(opts.existing ?? new Map(), opts.byteLines);
  let next = 0;
  await runMaterializeDriver({
    name: 'a/mat', spec: spec(opts.bindings), version: 't', session, state: {}, checkpoint: {},
    maxKeys: opts.maxKeys ?? opts.bindings.map(() => undefined),
    ...(opts.reduce ? { bindingOptions: () => ({ reduce: opts.reduce! }) } : {}),
    nextTransaction: async () => {
      const t = opts.txns[next++];
      if (t === undefined) return undefined;
      const checkpoint = { sources: { j: { readThrough: String(next) } } };
      return opts.bytes === 'chunks' ? { chunks: asChunks(t), checkpoint } : { docs: opts.bytes ? asBytes(t) : t, checkpoint };
    },
  });
  return lines.filter((l) => l.startsWith('{"store"') || l.startsWith('{"load"'));
}

const doc = (id: JsonValue, v: JsonValue, extra = '') => `{"id":${JSON.stringify(id)},"v":${typeof v === 'string' ? JSON.stringify(v) : String(v)}${extra},"_meta":{"uuid":"${UUID}"}}`;

describe('materialize driver: combine and store lines', () => {
  const docs = [
    { binding: 0, text: doc('a', 1) },
    { binding: 0, text: doc('b', 'São Paulo \\"q\\"') },
    { binding: 1, text: `{"id":"a","v":9007199254740993,"_meta":{"uuid":"${UUID}"}}` },
    { binding: 0, text: doc('a', 2) },
    { binding: 0, text: `{"id":"c","v":[1,{"x":1.50}],"_meta":{"uuid":"${UUID}","op":"d"}}` },
    { binding: 0, text: ' {"id" : "d", "v" : "spaced"} ' },
    { binding: 0, text: doc('b', 'last', ',"extra":true') },
    { binding: 0, text: '{"id":"\\u0065","v":"escaped key value"}' },
    { binding: 0, text: '{"id":"f","_meta":{"op":"d"}}' },
    { binding: 0, text: doc('f', 'back again') },
    // An escaped member name: the byte packer leaves it to the parse, between documents it packs.
    { binding: 0, text: '{"i\\u0064":"g","v":"parsed"}' },
    { binding: 0, text: doc('h', 'after') },
  ];
  for (const bytes of [true, false, 'chunks'] as const) {
    for (const byteLines of [true, false]) {
      it(`last write wins by key, first-seen order, deletions (documents as ${bytes === 'chunks' ? 'chunks' : bytes ? 'bytes' : 'text'}, lines as ${byteLines ? 'bytes' : 'strings'})`, async () => {
        const got = await run({ bindings: [{}, {}], txns: [docs], bytes, byteLines });
        // New bindings: every key is above the (empty) max, so nothing is loaded.
        assert.deepEqual(got, [
          expectedStore(0, docs[3]!.text), expectedStore(0, docs[6]!.text), expectedStore(0, docs[4]!.text),
          expectedStore(0, docs[5]!.text), expectedStore(0, docs[7]!.text), expectedStore(0, docs[9]!.text),
          expectedStore(0, docs[10]!.text), expectedStore(0, docs[11]!.text), expectedStore(1, docs[2]!.text),
        ]);
      });
    }
  }
  it('loads keys not above the max, marks the loaded ones as existing; delta bindings never load', async () => {
    const key = (id: string) => packer.key(parseDocument(`{"id":"${id}"}`));
    const existing = new Map<string, JsonValue>([[`0:${key('a')}`, { id: 'a', v: 0 }]]);
    const maxKeys = [Buffer.from(key('m'), 'base64'), Buffer.from(key('m'), 'base64')];
    const txn = [{ binding: 0, text: doc('a', 1) }, { binding: 0, text: doc('b', 2) }, { binding: 0, text: doc('z', 3) }, { binding: 1, text: doc('a', 4) }];
    for (const bytes of [true, false, 'chunks'] as const) {
      const got = await run({ bindings: [{}, { delta: true }], txns: [txn, [{ binding: 0, text: doc('y', 5) }]], bytes, byteLines: true, existing, maxKeys });
      assert.deepEqual(got, [
        `{"load":{"keyPacked":"${key('a')}"}}`, `{"load":{"keyPacked":"${key('b')}"}}`,
        expectedStore(0, txn[0]!.text, { exists: true }), expectedStore(0, txn[1]!.text), expectedStore(0, txn[2]!.text), expectedStore(1, txn[3]!.text),
        // The max moved to "z" with the first transaction: "y" is below it now.
        `{"load":{"keyPacked":"${key('y')}"}}`, expectedStore(0, doc('y', 5)),
      ]);
    }
  });
  it('a delta binding persists its largest key as unknown once, then nothing per transaction; a standard one its largest key', async () => {
    const key = (id: string) => Buffer.from(packer.key(parseDocument(`{"id":"${id}"}`)), 'base64');
    const { session } = scripted(new Map(), true);
    const txns = [
      [{ binding: 0, text: doc('b', 1) }, { binding: 1, text: doc('b', 1) }],
      [{ binding: 0, text: doc('c', 2) }, { binding: 1, text: doc('c', 2) }],
      [{ binding: 1, text: doc('d', 3) }],
    ];
    const flushed: ((string | undefined)[] | undefined)[] = [];
    let next = 0;
    await runMaterializeDriver({
      name: 'a/mat', spec: spec([{}, { delta: true }]), version: 't', session, state: {}, checkpoint: {},
      // The delta binding's persisted key is a real one (as an earlier version tracked it).
      maxKeys: [undefined, key('a')],
      nextTransaction: async () => {
        const t = txns[next++];
        return t === undefined ? undefined : { chunks: asChunks(t), checkpoint: { sources: { j: { readThrough: String(next) } } } };
      },
      onFlushed: (_state, keys) => { flushed.push(keys?.map((k) => k.toString('hex'))); },
    });
    assert.deepEqual(flushed, [
      [key('b').toString('hex'), 'ff'],
      [key('c').toString('hex'), 'ff'],
      // Only the delta binding stored: nothing moved, nothing to persist.
      undefined,
    ]);
  });
  it('a reducing binding combines in order, with the loaded document first, and stores the unchanged text as it came', async () => {
    const key = (id: string) => packer.key(parseDocument(`{"id":"${id}"}`));
    const existing = new Map<string, JsonValue>([[`0:${key('a')}`, { id: 'a', v: 100 }]]);
    const sum: ReduceFn = (l, r) => ({ ...(r as JsonObject), v: Number((l as JsonObject)['v']) + Number((r as JsonObject)['v']) });
    const txn = [{ binding: 0, text: doc('a', 1) }, { binding: 0, text: doc('b', 2) }, { binding: 0, text: doc('a', 3) }, { binding: 0, text: doc('c', 4, ' ') }];
    for (const bytes of [true, false, 'chunks'] as const) {
      const got = await run({ bindings: [{}], txns: [txn], bytes, byteLines: true, existing, maxKeys: [Buffer.from([0xff])], reduce: sum });
      const a = { ...(parseDocument(txn[2]!.text) as JsonObject), v: 104 };
      assert.deepEqual(got, [
        `{"load":{"keyPacked":"${key('a')}"}}`, `{"load":{"keyPacked":"${key('b')}"}}`, `{"load":{"keyPacked":"${key('c')}"}}`,
        expectedStore(0, '', { doc: a, exists: true }), expectedStore(0, txn[1]!.text), expectedStore(0, txn[3]!.text),
      ]);
    }
  });
});

/**
 * A connector that decodes each load and store line as serveMaterialize does (fastRequest, else the envelope
 * parse and decodeStore/decodeLoad; both, when both answer, must agree) and records what its transactor would get.
 */
function decoding(existing: Map<string, JsonValue>, bindings: number): { session: DriverSession<MaterializeRequest, MaterializeResponse>; got: unknown[] } {
  const got: unknown[] = [];
  let loads: DecodedLoad[] = [];
  let n = 0;
  const push = (r: MaterializeResponse) => mem.respond(r);
  const onLine = (text: string) => {
    const line = { text, line: ++n };
    const fast = fastRequest(line, bindings);
    const env = parseEnvelope(line, MATERIALIZE_REQUESTS, 'request', 'stdin', MATERIALIZE_SCAN);
    if (env.variant === 'open') push({ opened: {} } as MaterializeResponse);
    else if (env.variant === 'acknowledge') push({ acknowledged: {} } as MaterializeResponse);
    else if (env.variant === 'load') {
      const load = decodeLoad(env, bindings);
      if (fast !== undefined) assert.deepStrictEqual(fast.load, load, text);
      loads.push(load);
      got.push({ load: { binding: load.binding, key: load.key } });
    } else if (env.variant === 'store') {
      const s = decodeStore(env, bindings);
      const plain = (x: DecodedStore) => ({ binding: x.binding, key: x.key, values: x.values, exists: x.exists, delete: x.delete, docJson: x.docJson, doc: x.doc });
      if (fast !== undefined) assert.deepStrictEqual(plain(fast.store!), plain(s), text);
      got.push({ store: plain(s) });
    } else if (env.variant === 'flush') {
      for (const l of loads) {
        const doc = existing.get(`${l.binding}:${packTupleBase64(l.key)}`);
        if (doc !== undefined) push({ loaded: { binding: l.binding, doc } } as MaterializeResponse);
      }
      loads = [];
      push({ flushed: {} } as MaterializeResponse);
    } else if (env.variant === 'startCommit') push({ startedCommit: {} } as MaterializeResponse);
  };
  const mem = lineSession(onLine);
  return { session: mem.session, got };
}

describe('materialize driver: keys and values as JSON (jsonKeys) reach the transactor as the packed form does', () => {
  // Every value shape a field may hold, as values and as keys: integers beyond 2^53 and 2^64 (both signs), -0,
  // decimals and exponents, integral doubles, strings with escapes, \u escapes, lone surrogates, NUL and non-ASCII,
  // true/false/null, absent, objects and arrays (their text with spacing, duplicates, integer-like member names),
  // numeric strings (`format: integer/number` fields are strings on the wire).
  const values = [
    '0', '-0', '-0.0', '1', '-1', '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993',
    '18446744073709551615', '18446744073709551616', '-18446744073709551617', '123456789012345678901234567890',
    '1.5', '-2.25e-7', '1e2', '1E+2', '1.0', '1e20', '1e300', '1e400', '-1e400', '12345678901234567890.5', '0.1',
    '"plain"', '""', '"São Paulo ☃ 🎉"', '"say \\"hi\\"\\n\\t\\\\ \\/"', '"\\u00e9\\u0041\\u20ac"', '"\\u0000nul"',
    '"\\ud83c\\udf89"', '"\\ud83c alone"', '"x\\udf89"', '"12345678901234567890"', '"-1.5e3"',
    'true', 'false', 'null', '{"b":1, "a":[1.0,9007199254740993,-0],"2":"x","1":{}}', '{"k":1,"k":2}', '[ ]', '[1,"a",[null]]', '{}',
  ];
  const txns: { binding: number; text: string }[][] = [[], []];
  values.forEach((v, i) => {
    txns[0]!.push({ binding: i % 2, text: `{"id":${v},"v":${values[(i * 7) % values.length]},"_meta":{"uuid":"${UUID}"}}` });
    txns[0]!.push({ binding: 0, text: `{"id":"k${i}","v":${v}${i % 5 === 0 ? ',"_meta":{"op":"d"}' : ''}}` });
    // The same keys again in the next transaction (loads below the max), one with an absent value.
    txns[1]!.push({ binding: 0, text: i % 3 === 0 ? `{"id":"k${i}"}` : `{"id":"k${i}","v":${v},"_meta":{"uuid":"${UUID}"}}` });
  });
  const runBoth = async (o: { bindings: { delta?: boolean }[]; bytes: boolean | 'chunks'; reduce?: ReduceFn; existing?: Map<string, JsonValue> }) => {
    const out: unknown[][] = [];
    for (const jsonKeys of [false, true]) {
      const { session, got } = decoding(o.existing ?? new Map(), o.bindings.length);
      const lines: string[] = [];
      const recorded: DriverSession<MaterializeRequest, MaterializeResponse> = {
        ...session,
        sendLines: async (bytes, written) => {
          lines.push(...Buffer.from(bytes).toString('utf8').split('\n').filter((l) => l !== ''));
          await session.sendLines!(bytes, written);
        },
      };
      let next = 0;
      await runMaterializeDriver({
        name: 'a/mat', spec: spec(o.bindings), version: 't', session: recorded, state: {}, checkpoint: {}, jsonKeys,
        maxKeys: o.bindings.map(() => Buffer.from([0xff])),
        ...(o.reduce ? { bindingOptions: () => ({ reduce: o.reduce! }) } : {}),
        nextTransaction: async () => {
          const t = txns[next++];
          if (t === undefined) return undefined;
          const checkpoint = { sources: { j: { readThrough: String(next) } } };
          return o.bytes === 'chunks' ? { chunks: asChunks(t), checkpoint } : { docs: o.bytes ? asBytes(t) : t, checkpoint };
        },
      });
      // The form asked for is the form sent.
      const form = lines.filter((l) => l.startsWith('{"store"') || l.startsWith('{"load"'));
      assert.ok(form.length > 0);
      for (const l of form) assert.equal(/^\{"(store|load)":\{("binding":\d+,)?"key":\[/.test(l), jsonKeys, l.slice(0, 80));
      out.push(got);
    }
    assert.deepStrictEqual(out[1], out[0]);
    return out[0]!;
  };
  for (const bytes of [true, false, 'chunks'] as const) {
    it(`last write wins, loads and deletions (documents as ${bytes === 'chunks' ? 'chunks' : bytes ? 'bytes' : 'text'})`, async () => {
      const existing = new Map<string, JsonValue>([[`0:${packTupleBase64(['k3'])}`, { id: 'k3', v: 1 }], [`0:${packTupleBase64([9007199254740993n])}`, { id: 1 }]]);
      const got = await runBoth({ bindings: [{}, {}], bytes, existing });
      assert.ok(got.length > 3 * values.length, `${got.length} requests`);
      assert.ok(got.some((r) => (r as { store?: DecodedStore }).store?.exists === true), 'a loaded key is stored as existing');
    });
  }
  it('a delta-updates binding, and a reducing one', async () => {
    await runBoth({ bindings: [{}, { delta: true }], bytes: 'chunks' });
    const merge: ReduceFn = (l, r) => ({ ...(l as JsonObject), ...(r as JsonObject) });
    await runBoth({ bindings: [{}, {}], bytes: 'chunks', reduce: merge, existing: new Map<string, JsonValue>([[`0:${packTupleBase64(['k4'])}`, { id: 'k4', w: 9007199254740993n as unknown as JsonValue }]]) });
  });
});

describe('combine table', () => {
  it('finds what a Map finds, across growth and many keys of one hash bucket length', () => {
    const table = new CombineTable(new Arena(16));
    const map = new Map<string, number>();
    let seed = 3;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let i = 0; i < 50_000; i++) {
      const key = Buffer.from(Array.from({ length: rand(6) }, () => rand(4)));
      const e = table.find(key, key.length);
      const want = map.get(key.toString('hex'));
      assert.equal(e, want ?? -1, `key ${key.toString('hex')}`);
      if (e < 0) map.set(key.toString('hex'), table.insert(key, key.length));
    }
    assert.equal(table.count, map.size);
    for (const [hex, e] of map) assert.equal(table.keyBytes(e).toString('hex'), hex);
    table.reset();
    assert.equal(table.find(Buffer.alloc(0), 0), -1);
  });
  it('compares keys as Buffer.compare does', () => {
    const table = new CombineTable(new Arena(16));
    const keys = [[], [0], [0, 0], [1], [0, 255], [255], [1, 2, 3]].map((k) => Buffer.from(k));
    const idx = keys.map((k) => {
      table.find(k, k.length);
      return table.insert(k, k.length);
    });
    for (let i = 0; i < keys.length; i++) {
      for (let j = 0; j < keys.length; j++) {
        assert.equal(table.compareKey(idx[i]!, keys[j]!), Buffer.compare(keys[i]!, keys[j]!));
        assert.equal(table.compareKeys(idx[i]!, idx[j]!), Buffer.compare(keys[i]!, keys[j]!));
      }
    }
  });
  it('base64Into writes what Buffer writes', () => {
    for (let n = 0; n < 40; n++) {
      const src = Buffer.from(Array.from({ length: n }, (_, i) => (i * 97 + n) & 0xff));
      const out = Buffer.alloc(base64Length(n) + 2);
      const end = base64Into(src, 0, n, out, 1);
      assert.equal(out.toString('latin1', 1, end), src.toString('base64'));
    }
    // Every 12-bit half of a triple (each of the 4096 values in both halves), from any start, into outputs that
    // alternate (the writer keeps a view of the last one) and lie inside larger buffers; nothing outside is touched.
    const src = Buffer.alloc(3 * 4096 + 7);
    for (let t = 0; t < 4096; t++) src.writeUIntBE(((t << 12) | (4095 - t)) >>> 0, 3 * t, 3);
    src.fill(0xa5, 3 * 4096);
    const outer = [Buffer.alloc(20_000, 0x2e), Buffer.alloc(20_000, 0x2e)];
    for (let k = 0; k < 24; k++) {
      const start = k % 4;
      const end = src.length - (k % 3);
      const o = outer[k % 2]!;
      const out = o.subarray(5 + k, 5 + k + base64Length(end - start) + 9);
      out.fill(0x2e);
      const at = k % 5;
      const stop = base64Into(src, start, end, out, at);
      assert.equal(stop, at + base64Length(end - start));
      assert.equal(out.toString('latin1', at, stop), src.toString('base64', start, end), `start ${start}, end ${end}`);
      assert.ok(out.subarray(0, at).every((c) => c === 0x2e) && out.subarray(stop).every((c) => c === 0x2e), 'bytes around it untouched');
    }
  });
});
