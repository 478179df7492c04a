// Transactor.deferTupleDecoding: stores keep their packed tuples raw and decode them on first access, with
// the values and the errors of eager decoding; a malformed tuple fails the session before its commit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PackedStore, serveMaterialize } from '../src/connector/materialize.ts';
import type { DecodedStore, MaterializeConnector, Transactor } from '../src/connector/types.ts';
import { packTupleBase64 } from '../src/protocol/tuple.ts';
import { createTestMaterialize } from '../src/testing/test-materialize.ts';
import { Collector, LogCollector } from './helpers.ts';

const anyMat = createTestMaterialize() as unknown as MaterializeConnector;
const collection = {
  name: 'acmeCo/users', key: ['/id'],
  projections: [{ field: 'id', ptr: '/id', isPrimaryKey: true, inference: { types: ['integer'], exists: 'MUST' } }],
};
const openLine = JSON.stringify({ open: { materialization: { name: 'acmeCo/mat', connectorType: 'LOCAL', config: {}, bindings: [{ resourceConfig: { table: 'users' }, resourcePath: ['users'], collection, fieldSelection: { keys: ['id'], values: ['v'], document: 'flow_document' } }] } } });

function recorder(defer: boolean, seen: DecodedStore[], commits: string[]): MaterializeConnector {
  return {
    ...anyMat,
    async open() {
      const transactor: Transactor = {
        deferTupleDecoding: defer,
        async acknowledge() {},
        async load(it) { for await (const _ of it); },
        async store(stores: AsyncIterable<DecodedStore>) {
          for await (const s of stores) {
            seen.push(s);
            void s.key;
            void s.values;
          }
        },
        async startCommit() { commits.push('commit'); },
      };
      return { opened: {}, transactor };
    },
  };
}

async function run(defer: boolean, lines: string[]): Promise<{ seen: DecodedStore[]; commits: string[]; error: unknown }> {
  const seen: DecodedStore[] = [];
  const commits: string[] = [];
  let error: unknown;
  try {
    await serveMaterialize(recorder(defer, seen, commits), { input: lines.map((l) => `${l}\n`), output: new Collector(), stderr: new LogCollector(), env: {} });
  } catch (err) {
    error = err;
  }
  return { seen, commits, error };
}

const plain = (s: DecodedStore) => ({ binding: s.binding, key: s.key, values: s.values, keyPacked: s.keyPacked, doc: s.doc, docJson: s.docJson, exists: s.exists, delete: s.delete });

describe('deferTupleDecoding', () => {
  const stores = [
    `{"store":{"keyPacked":"${packTupleBase64([1])}","valuesPacked":"${packTupleBase64(['a', 2.5, null])}","doc":{"id":1, "v":"a"}}}`,
    `{"store":{"keyPacked":"${packTupleBase64([2])}","exists":true,"delete":true}}`,
    '{"store":{"key":[3],"values":["json form"],"doc":{"id":3}}}',
  ];
  const txn = [openLine, '{"acknowledge":{}}', '{"flush":{}}', ...stores, '{"startCommit":{}}', '{"acknowledge":{}}'];

  it('stores decode on access to exactly what eager decoding gives', async () => {
    const eager = await run(false, txn);
    const deferred = await run(true, txn);
    assert.equal(eager.error, undefined);
    assert.equal(deferred.error, undefined);
    assert.ok(deferred.seen[0] instanceof PackedStore && deferred.seen[1] instanceof PackedStore);
    assert.ok(!(deferred.seen[2] instanceof PackedStore), 'the JSON key/values form is decoded at once');
    assert.equal((deferred.seen[0] as PackedStore).valuesPacked, packTupleBase64(['a', 2.5, null]));
    assert.deepStrictEqual(deferred.seen.map(plain), eager.seen.map(plain));
  });

  it('a malformed tuple is the same ProtocolError, and nothing commits', async () => {
    const bad = [openLine, '{"acknowledge":{}}', '{"flush":{}}', stores[0]!, '{"store":{"keyPacked":"FQE=","valuesPacked":"AmE="}}', '{"startCommit":{}}', '{"acknowledge":{}}'];
    const eager = await run(false, bad);
    const deferred = await run(true, bad);
    assert.equal(String(eager.error), 'ProtocolError: "store" request (line 5): invalid packed tuple: unterminated string at byte 1');
    assert.equal(String(deferred.error), String(eager.error));
    assert.deepEqual(deferred.commits, []);
  });

  it('a PackedStore without a parsed document parses its text on access', () => {
    const s = new PackedStore({ binding: 0, keyPacked: packTupleBase64([1]), valuesPacked: '', exists: false, delete: false, line: 9, docJson: '{"a":[1,2]}' });
    assert.deepEqual(s.doc, { a: [1, 2] });
    assert.deepEqual(s.values, []);
    assert.deepEqual(s.key, [1]);
  });
});
