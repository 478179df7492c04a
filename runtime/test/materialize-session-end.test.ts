// A transaction cut short (stop, protocol error): the transactor's store iterator ends with an error at
// once, so a store loop still draining the queue never writes after the session closed the transactor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serveMaterialize } from '../src/connector/materialize.ts';
import type { DecodedStore, MaterializeConnector, Transactor } from '../src/connector/types.ts';
import { packTupleBase64 } from '../src/protocol/tuple.ts';
import { createTestMaterialize } from '../src/testing/test-materialize.ts';
import { Collector, LogCollector } from './helpers.ts';

const anyMat = createTestMaterialize() as unknown as MaterializeConnector;
const collection = {
  name: 'acmeCo/users', key: ['/id'],
  projections: [{ field: 'id', ptr: '/id', isPrimaryKey: true, inference: { types: ['integer'], exists: 'MUST' } }],
};
const openLine = JSON.stringify({ open: { materialization: { name: 'acmeCo/mat', connectorType: 'LOCAL', config: {}, bindings: [{ resourceConfig: { table: 'users' }, resourcePath: ['users'], collection, fieldSelection: { keys: ['id'] } }] } } });

/** A transactor whose store loop takes one store per macrotask (slower than the runtime reads them). */
function slowStorer(log: string[]): MaterializeConnector {
  return {
    ...anyMat,
    async open() {
      const transactor: Transactor = {
        async acknowledge() {},
        async load(it) { for await (const _ of it); },
        async store(stores: AsyncIterable<DecodedStore>) {
          try {
            for await (const s of stores) {
              log.push(`store ${String(s.key[0])}`);
              await new Promise((resolve) => setImmediate(resolve));
            }
            log.push('stores ended');
          } catch (err) {
            log.push(`stores failed: ${(err as Error).message}`);
            throw err;
          }
        },
        async startCommit() {},
        async close() { log.push('close'); },
      };
      return { opened: {}, transactor };
    },
  };
}

describe('serveMaterialize: a session ending mid-transaction', () => {
  const stores = Array.from({ length: 200 }, (_, i) => `{"store":{"keyPacked":"${packTupleBase64([i])}"}}\n`).join('');

  it('on stop: queued stores are dropped and the store iterator fails at once', async () => {
    const log: string[] = [];
    const controller = new AbortController();
    let reached!: () => void;
    const paused = new Promise<void>((resolve) => { reached = resolve; });
    async function* input(): AsyncGenerator<string> {
      yield `${openLine}\n{"acknowledge":{}}\n{"flush":{}}\n${stores}`;
      reached();
      await new Promise(() => undefined);
    }
    const served = serveMaterialize(slowStorer(log), { input: input(), output: new Collector(), stderr: new LogCollector(), env: {}, signal: controller.signal });
    await paused;
    controller.abort();
    await served;
    await new Promise((resolve) => setImmediate(resolve));
    const stored = log.filter((l) => l.startsWith('store ')).length;
    assert.ok(stored < 200, `the loop stopped early (${stored} stores taken)`);
    // No store is taken after the one in hand when the session ended; close() does not wait for the loop.
    assert.deepEqual(log.slice(stored).sort(), ['close', 'stores failed: the session ended before this transaction was committed']);
    assert.ok(!log.slice(log.indexOf('close')).some((l) => l.startsWith('store ')), log.slice(-5).join(', '));
  });

  it('on a protocol error: the same', async () => {
    const log: string[] = [];
    let error: unknown;
    try {
      await serveMaterialize(slowStorer(log), { input: [`${openLine}\n{"acknowledge":{}}\n{"flush":{}}\n${stores}{"store":\n`], output: new Collector(), stderr: new LogCollector(), env: {} });
    } catch (err) {
      error = err;
    }
    assert.match(String(error), /stdin line 204 is not valid JSON/);
    await new Promise((resolve) => setImmediate(resolve));
    const stored = log.filter((l) => l.startsWith('store ')).length;
    assert.ok(stored < 200, `the loop stopped early (${stored} stores taken)`);
    // No store is taken after the one in hand when the session ended; close() does not wait for the loop.
    assert.deepEqual(log.slice(stored).sort(), ['close', 'stores failed: the session ended before this transaction was committed']);
    assert.ok(!log.slice(log.indexOf('close')).some((l) => l.startsWith('store ')), log.slice(-5).join(', '));
  });
});
