// A materialization's own thread: it runs the connector process and the runtime's materialize driver
// (parse, combine, pack, load/store lines — the per-document work), while the plane's main thread keeps
// the journal store and serves the driver's callbacks (the next transaction's journal bytes, the flushed
// state and largest keys, the committed checkpoint), each awaited here as on one thread. Why: the main
// thread also runs the captures, and with one event loop for both a capture starved the materialization
// beside it (issue 16: 10–22k docs/s beside a capture, 34k after it). Started by tasks/materialize.ts.
import { rebuildError, serializeError, serveThread } from '@sluice/runtime/thread';
import { runMaterializeDriver, type ConnectorTarget, type DriverBindingOptions } from '@sluice/runtime/host';
import type { JsonValue } from '@sluice/runtime';
import { createReducer } from '../catalog/reduce.ts';
import { hostSession, SpareConnector, unaryOnSpare } from './host-session.ts';
import { driverChunks, type ChunkedTransaction, type FromThread, type ThreadCalls, type ThreadStart, type ToThread } from './materialize-thread-messages.ts';
import type { ConnectorSession } from './session.ts';
import type { MaterializeRequest, MaterializeResponse } from '@sluice/runtime';

let session: ConnectorSession<MaterializeRequest, MaterializeResponse> | undefined;
/** The session's connector, started ahead of `start` (a `prespawn`), with what it was started for. */
let spare: { key: string; name: string; target: ConnectorTarget; connector: SpareConnector } | undefined;
const spareKey = (target: ConnectorTarget, name: string) => JSON.stringify([name, target]);
const killSpare = () => {
  void spare?.connector.proc.kill(2000).catch(() => undefined);
  spare = undefined;
};
let nextId = 0;
const waiting = new Map<number, { resolve: (v: ChunkedTransaction | undefined) => void; reject: (err: Error) => void }>();

const port = serveThread<ToThread, FromThread>('plane/src/tasks/materialize-thread.ts', (m) => {
  if (m.t === 'start') {
    void run(m.start).then(
      () => port.post({ t: 'end' }),
      (err: unknown) => {
        session?.kill();
        port.post({ t: 'end', error: serializeError(err) });
      },
    );
  } else if (m.t === 'prespawn') {
    killSpare();
    spare = { key: spareKey(m.target, m.name), name: m.name, target: m.target, connector: new SpareConnector(m.target, 'materialize', m.name) };
  } else if (m.t === 'unary') {
    // The publication's validate and apply, on the connector that then serves the session (Launcher.route).
    const s = spare;
    const answer = s === undefined
      ? Promise.reject(new Error(`${m.variant}: the materialization thread has no connector started ahead`))
      : unaryOnSpare(s.connector, s.target, 'materialize', s.name, m.request, m.variant).catch((err: unknown) => {
        if (spare === s) spare = undefined; // killed: the session starts its own
        throw err;
      });
    answer.then(
      (value) => port.post({ t: 'unaryReply', id: m.id, value }),
      (err: unknown) => port.post({ t: 'unaryReply', id: m.id, error: serializeError(err) }),
    );
  } else if (m.t === 'release') {
    killSpare();
    port.post({ t: 'end' });
  } else if (m.t === 'reply') {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error !== undefined) w?.reject(rebuildError(m.error));
    else w?.resolve(m.value);
  } else {
    killSpare();
    session?.kill();
  }
});

/** Runs `fn` on the main thread and waits for its answer. */
function call<F extends keyof ThreadCalls>(fn: F, arg: ThreadCalls[F]): Promise<ChunkedTransaction | undefined> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    port.post({ t: 'call', id, fn, arg } as FromThread);
  });
}

/**
 * The journal buffers of the transactions read and not yet committed, oldest first. Once a transaction's
 * `startedCommit` is handled, its stores have been written (the driver awaits them first), so nothing reads
 * its bytes any more: they go back to the main thread's store (JournalStore.recycle).
 */
const inFlight: ArrayBuffer[][] = [];

async function run(s: ThreadStart): Promise<void> {
  // The connector prespawned for this session, if it was started for this very target; any other is stopped.
  const pre = spare?.key === spareKey(s.target, s.name) ? spare.connector : undefined;
  if (pre === undefined) killSpare();
  spare = undefined;
  session = hostSession<MaterializeRequest, MaterializeResponse>(s.target, 'materialize', s.name, {
    onLog: (event) => port.post({ t: 'log', event }),
  }, {}, pre);
  const options: DriverBindingOptions[] = s.bindings.map((b) => {
    const o: DriverBindingOptions = {};
    if (b.reduceSchema !== undefined) {
      const reducer = createReducer(b.reduceSchema);
      o.reduce = (l: JsonValue, r: JsonValue) => reducer.reduce(l, r);
    }
    if (b.window !== undefined) o.window = b.window;
    return o;
  });
  await runMaterializeDriver({
    name: s.name, spec: s.spec, version: s.version, session, state: s.state, checkpoint: s.checkpoint,
    ...(s.jsonKeys === true ? { jsonKeys: true } : {}),
    maxKeys: s.maxKeys.map((k) => (k === undefined ? undefined : Buffer.from(k.buffer, k.byteOffset, k.byteLength))),
    bindingOptions: (i) => options[i] ?? {},
    onOpened: async (opened) => { await call('opened', opened); },
    nextTransaction: async (from) => {
      const txn = await call('next', from);
      if (txn !== undefined) inFlight.push(txn.chunks.map((c) => c.data.buffer as ArrayBuffer));
      return txn === undefined ? undefined : { chunks: driverChunks(txn.chunks), checkpoint: txn.checkpoint };
    },
    onAcknowledged: async (state) => { await call('acknowledged', state); },
    onFlushed: async (state, maxKeys) => { await call('flushed', { state, maxKeys }); },
    onStartedCommit: async (checkpoint, state, stats) => {
      const done = inFlight.shift() ?? [];
      if (done.length > 0) port.post({ t: 'recycle', buffers: done }, done);
      await call('startedCommit', { checkpoint, state, stats });
    },
  });
}
