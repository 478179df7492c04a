// Host tests: real child processes running the runtime's test connectors.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { type ConnectorLog, containerArgs, parseConnectorLog, runSession, startConnector, unaryRpc } from '../src/host/index.ts';
import type { CaptureRequest, CaptureResponse } from '../src/protocol/capture.ts';
import type { JsonObject } from '../src/protocol/specs.ts';
import type { MaterializeRequest } from '../src/protocol/materialize.ts';
import { packTupleBase64 } from '../src/protocol/tuple.ts';
import { exitSignal, oomKillCount, signalExitMessage } from '../src/host/exit-cause.ts';

const node = process.execPath;
const path = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const testCapture = { command: node, args: [path('../bin/sluice-test-capture.js')] };
const testMaterialize = { command: node, args: [path('../bin/sluice-test-materialize.js')] };
const openCapture = (config: JsonObject, names = ['users']): CaptureRequest => ({
  open: { capture: { name: 'a/src', config, bindings: names.map((name) => ({ resourceConfig: { name }, collection: { name: `a/${name}` }, stateKey: name })) } },
});

describe('host: failures', () => {
  it('a user-facing connector error becomes ConnectorExitError with that line', async () => {
    await assert.rejects(unaryRpc(testCapture, { discover: { config: { apiKey: 1 } } }, { protocol: 'capture' }), (err: Error & { exitCode?: number }) => {
      assert.equal(err.name, 'ConnectorExitError');
      assert.equal(err.message, 'Invalid endpoint config (1 problem): /apiKey must be of type string');
      assert.equal(err.exitCode, 1);
      return true;
    });
  });
  it('an internal error: full details first, then a one-line summary last', async () => {
    const logs: ConnectorLog[] = [];
    await assert.rejects(unaryRpc({ command: node, args: [path('fixtures/throwing-capture.ts')] }, { discover: { config: { apiKey: 'k' } } }, { protocol: 'capture', onLog: (l) => logs.push(l) }), (err: Error) => {
      assert.equal(err.message, "Cannot read properties of undefined (reading 'value') (internal error; see the previous log line for details)");
      return true;
    });
    assert.equal(logs.length, 2);
    assert.equal(logs[0]!.msg, 'internal error');
    assert.match(String(logs[0]!.fields['stack']), /throwing-capture\.ts/);
  });
  it('FLOW_RUNTIME_CODEC=proto is refused', async () => {
    await assert.rejects(unaryRpc({ ...testCapture, env: { FLOW_RUNTIME_CODEC: 'proto' } }, { spec: {} }, { protocol: 'capture' }), {
      name: 'ConnectorExitError',
      message: 'FLOW_RUNTIME_CODEC=proto is not supported: this connector speaks only the JSON codec; run it with FLOW_RUNTIME_CODEC=json (or unset it)',
    });
  });
  it('zero responses to a unary RPC is a ProtocolError', async () => {
    await assert.rejects(unaryRpc({ command: node, args: ['-e', 'process.stdin.resume()'] }, { spec: {} }, { protocol: 'capture', name: 'silent' }), {
      name: 'ProtocolError', message: 'silent: the "spec" rpc is expected to be unary, but the connector wrote 0 responses',
    });
  });
  it('a partial response line is a ProtocolError', async () => {
    await assert.rejects(unaryRpc({ command: node, args: ['-e', 'process.stdout.write(\'{"spec":{}\')'] }, { spec: {} }, { protocol: 'capture', name: 'partial' }), {
      name: 'ProtocolError', message: 'partial stdout ended with a partial message: line 1 (10 bytes) has no terminating newline',
    });
  });
  it('an unknown response variant is a ProtocolError', async () => {
    await assert.rejects(unaryRpc({ command: node, args: ['-e', 'console.log(\'{"loaded":{}}\')'] }, { spec: {} }, { protocol: 'capture', name: 'x' }), {
      message: 'x stdout line 1: unknown response "loaded"; expected one of "spec", "discovered", "validated", "applied", "opened", "captured", "sourcedSchema", "checkpoint"',
    });
  });
  it('plain-text stderr is the error for a non-JSON connector', async () => {
    await assert.rejects(unaryRpc({ command: node, args: ['-e', 'console.error("first"); console.error("fatal: unable to connect to db:5432"); process.exit(3)'] }, { spec: {} }, { protocol: 'capture' }), (err: Error & { exitCode?: number }) => {
      assert.equal(err.message, 'fatal: unable to connect to db:5432');
      assert.equal(err.exitCode, 3);
      return true;
    });
  });
  it('a silent failure names the exit code', async () => {
    await assert.rejects(unaryRpc({ command: node, args: ['-e', 'process.exit(4)'] }, { spec: {} }, { protocol: 'capture', name: 'quiet' }), {
      message: 'quiet exited with code 4 without an error message',
    });
  });
  it('a connector that dies of a signal says so, with the likely cause; its last log line is context only', async () => {
    const script = (signal: string) => `console.error(JSON.stringify({ level: 'info', msg: 'opened the file' })); setTimeout(() => process.kill(process.pid, '${signal}'), 10); setInterval(() => {}, 1000)`;
    await assert.rejects(unaryRpc({ command: node, args: ['-e', script('SIGKILL')] }, { spec: {} }, { protocol: 'capture', name: 'k' }), (err: Error & { signal?: string }) => {
      assert.equal(err.message, 'k: connector exited on SIGKILL (killed by a signal — out of memory or `kill -9`?); its last log line was "opened the file"');
      assert.equal(err.signal, 'SIGKILL');
      return true;
    });
    await assert.rejects(unaryRpc({ command: node, args: ['-e', script('SIGSEGV')] }, { spec: {} }, { protocol: 'capture', name: 's' }), {
      message: 's: connector exited on SIGSEGV (it crashed); its last log line was "opened the file"',
    });
  });
  it('a container engine\'s 128 + N exit code is read as signal N', () => {
    assert.equal(exitSignal(137, null, true), 'SIGKILL');
    assert.equal(exitSignal(137, null, false), null);
    assert.equal(exitSignal(1, null, true), null);
    assert.equal(exitSignal(null, 'SIGTERM', false), 'SIGTERM');
    assert.equal(signalExitMessage('img', 'SIGKILL', { container: true, oomKilled: true }),
      "img: connector exited with code 137 (SIGKILL in the container) (killed by the kernel's out-of-memory killer: the memory cgroup's oom_kill count rose while it ran; give it more memory or smaller inputs)");
    const count = oomKillCount();
    assert.ok(count === undefined || (Number.isInteger(count) && count >= 0));
  });
  it('a missing command cannot start', async () => {
    await assert.rejects(unaryRpc({ command: '/nonexistent/connector' }, { spec: {} }, { protocol: 'capture', name: 'ghost' }), (err: Error) => {
      assert.match(err.message, /^ghost: cannot start the connector: spawn \/nonexistent\/connector ENOENT$/);
      return true;
    });
  });
  it('a timeout kills the connector', async () => {
    // Long enough for a loaded machine to start Node and open (the capture itself would take 50 s).
    const proc = startConnector(testCapture, { protocol: 'capture', timeoutMs: 10_000, killGraceMs: 2000, name: 'slow' });
    await proc.send(openCapture({ apiKey: 'k', count: 1000, delayMs: 50 }));
    const seen: CaptureResponse[] = [];
    await assert.rejects((async () => { for await (const r of proc.responses()) seen.push(r); })(), {
      name: 'ConnectorExitError', message: 'slow: timed out after 10000 ms and was killed',
    });
    assert.deepEqual(seen[0], { opened: {} });
  });
});

describe('host: sessions', () => {
  it('unary spec', async () => {
    const response = await unaryRpc(testCapture, { spec: {} }, { protocol: 'capture' });
    assert.ok('spec' in response);
    assert.equal(response.spec.protocol, 3032023);
    assert.deepEqual(response.spec.resourcePathPointers, ['/name']);
  });
  it('a capture session with status events and logs', async () => {
    const statuses: string[] = [];
    const responses = await runSession(testCapture, [openCapture({ apiKey: 'k', count: 2 })], { protocol: 'capture', onStatus: (m) => statuses.push(m) });
    assert.deepEqual(responses, [
      { opened: {} },
      { captured: { doc: { id: 'users-0', greeting: 'hello', n: 0 } } },
      { captured: { doc: { id: 'users-1', greeting: 'hello', n: 1 } } },
      { checkpoint: { state: { updated: { bindingStateV1: { users: { next: 2 } } }, mergePatch: true } } },
    ]);
    assert.deepEqual(statuses, ['Capturing 1 binding']);
  });
  it('a materialize session, transaction by transaction', async () => {
    const binding = { resourceConfig: { table: 't' }, collection: { name: 'a/t', key: ['/id'] }, fieldSelection: { keys: ['id'], document: 'flow_document' } };
    const key = packTupleBase64([7]);
    const requests: MaterializeRequest[] = [
      { open: { materialization: { name: 'a/mat', config: {}, bindings: [binding] } } },
      { acknowledge: {} }, { flush: {} }, { store: { keyPacked: key, doc: { id: 7 } } }, { startCommit: { runtimeCheckpoint: {} } },
      { acknowledge: {} }, { load: { keyPacked: key } }, { flush: {} }, { startCommit: { runtimeCheckpoint: {} } },
      { acknowledge: {} },
    ];
    const responses = await runSession(testMaterialize, requests, { protocol: 'materialize' });
    assert.deepEqual(responses.map((r) => Object.keys(r)[0]), ['opened', 'acknowledged', 'flushed', 'startedCommit', 'acknowledged', 'loaded', 'flushed', 'startedCommit', 'acknowledged']);
    assert.deepEqual(responses[5], { loaded: { doc: { id: 7 } } });
  });
  it('SIGTERM ends a capture session cleanly (exit 0)', async () => {
    const logs: ConnectorLog[] = [];
    const proc = startConnector(testCapture, { protocol: 'capture', onLog: (l) => logs.push(l) });
    await proc.send(openCapture({ apiKey: 'k', count: 100000, delayMs: 20 }));
    const iterator = proc.responses()[Symbol.asyncIterator]();
    assert.deepEqual((await iterator.next()).value, { opened: {} });
    await iterator.next();
    proc.child.kill('SIGTERM');
    while (!(await iterator.next()).done);
    const status = await proc.wait();
    assert.deepEqual(status, { code: 0, signal: null });
    assert.ok(logs.some((l) => l.msg === 'received SIGTERM; stopping'));
  });
  it('kill() stops a connector that ignores SIGTERM', async () => {
    const proc = startConnector({ command: node, args: ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000); console.error("ready")'] }, { protocol: 'capture', name: 'stubborn' });
    await new Promise((r) => proc.child.stderr!.once('data', r));
    const status = await proc.kill(200);
    assert.deepEqual(status, { code: null, signal: 'SIGKILL' });
    await assert.rejects(proc.wait(), { message: 'stubborn: killed with SIGKILL' });
  });
  it('a container target runs `<engine> run --rm -i` with env passed by name', async () => {
    const logs: ConnectorLog[] = [];
    const response = await unaryRpc({ engine: path('fixtures/fake-engine.sh'), image: 'ghcr.io/sluice-dev/test:dev', env: { API_SECRET: 's3cret' }, mounts: [{ source: '/tmp', target: '/data', readonly: true }] }, { spec: {} }, { protocol: 'capture', onLog: (l) => logs.push(l) });
    assert.ok('spec' in response);
    const fields = logs[0]!.fields as { argv: string[] };
    // The engine writes the container's id into a private file (removed once the engine exits).
    const cidfile = fields.argv[6]!;
    assert.match(cidfile, /\/sluice-cid-[^/]+\/cid$/);
    assert.equal(existsSync(dirname(cidfile)), false, 'the cidfile\'s directory is removed');
    assert.deepEqual(fields, {
      argv: ['run', '--rm', '-i', '--network', 'host', '--cidfile', cidfile, '-e', 'API_SECRET', '-e', 'FLOW_RUNTIME_CODEC', '-v', '/tmp:/data:ro', 'ghcr.io/sluice-dev/test:dev'],
      secret: 's3cret', codec: 'json',
    });
  });
});

describe('host: helpers', () => {
  it('containerArgs', () => {
    assert.deepEqual(containerArgs({ engine: 'podman', image: 'img:v1', network: 'bridge', env: { B: '1', A: '2' }, args: ['--x'], engineArgs: ['--pull=never'] }),
      ['run', '--rm', '-i', '--network', 'bridge', '-e', 'A', '-e', 'B', '-e', 'FLOW_RUNTIME_CODEC', '--pull=never', 'img:v1', '--x']);
  });
  it('parseConnectorLog: JSON, logrus style, python style, plain text', () => {
    assert.deepEqual(parseConnectorLog('{"level":"info","msg":"x","fields":{"a":1}}'), { level: 'info', msg: 'x', fields: { a: 1 }, json: true });
    assert.deepEqual(parseConnectorLog('{"lvl":"WARNING","message":"y","k":2,"ts":"2024-01-01T00:00:00Z"}'), { level: 'warn', msg: 'y', fields: { k: 2 }, json: true });
    assert.deepEqual(parseConnectorLog('{"level":"INFO","msg":"z","fields":{"source":"flow.x"}}'), { level: 'info', msg: 'z', fields: { source: 'flow.x' }, json: true });
    assert.deepEqual(parseConnectorLog('Traceback: failed to connect'), { level: 'error', msg: 'Traceback: failed to connect', fields: {}, json: false });
    assert.deepEqual(parseConnectorLog('starting up'), { level: 'warn', msg: 'starting up', fields: {}, json: false });
  });
});

describe('host: nothing waits forever', () => {
  const script = (code: string) => ({ command: node, args: ['-e', code] });
  it('a connector that says nothing is killed after the idle timeout, naming what was awaited', async () => {
    const proc = startConnector(script('setInterval(() => {}, 1000)'), { protocol: 'materialize', idleTimeoutMs: 300 });
    proc.awaiting = '"opened"';
    const started = performance.now();
    await assert.rejects(async () => {
      for await (const r of proc.responses()) assert.fail(`unexpected ${JSON.stringify(r)}`);
    }, { name: 'ConnectorExitError', message: /: no response for 0\.3 s while awaiting "opened"; the connector was killed$/ });
    assert.ok(performance.now() - started < 20_000);
  });
  it('a connector that closes its output but keeps running is killed, saying so', async () => {
    const proc = startConnector(script('process.stdout.write(\'{"opened":{}}\\n\'); process.stdout.end(); setInterval(() => {}, 1000)'), { protocol: 'materialize', exitTimeoutMs: 300 });
    const got: unknown[] = [];
    await assert.rejects(async () => {
      for await (const r of proc.responses()) got.push(r);
    }, { name: 'ConnectorExitError', message: /: closed its output but had not exited 0\.3 s later; it was killed$/ });
    assert.deepEqual(got, [{ opened: {} }]);
  });
  it('a connector whose pipes outlive it (a grandchild inherited them) still ends the session', async () => {
    // The grandchild sleeps 3 s holding stdout and stderr; the connector exits at once.
    const proc = startConnector(script(`require('node:child_process').spawn('sleep', ['3'], { stdio: 'inherit', detached: true }).unref(); process.stdout.write('{"opened":{}}\\n');`), { protocol: 'materialize', exitTimeoutMs: 200 });
    const started = performance.now();
    const got: unknown[] = [];
    for await (const r of proc.responses()) got.push(r);
    assert.deepEqual(got, [{ opened: {} }]);
    assert.ok(performance.now() - started < 2_500, `ended after ${Math.round(performance.now() - started)} ms, before the grandchild`);
  });
});

describe('host: a connector that breaks the protocol and keeps running', () => {
  it('is killed after the grace period and the protocol error is reported', async () => {
    const proc = startConnector({ command: node, args: ['-e', 'process.stdout.write(\'{"opened":{}}\\nnot json\\n\'); setInterval(() => {}, 1000)'] }, { protocol: 'materialize', exitTimeoutMs: 300 });
    const started = performance.now();
    await assert.rejects(async () => {
      for await (const r of proc.responses()) assert.deepEqual(r, { opened: {} });
    }, { name: 'ProtocolError', message: /stdout line 2 is not valid JSON/ });
    assert.ok(performance.now() - started < 20_000);
    assert.equal(proc.child.signalCode, 'SIGTERM');
  });
});

describe('host: a connector that stops reading its input', () => {
  it('is killed after the idle timeout while a request waits for room, naming the request', async () => {
    const proc = startConnector({ command: node, args: ['-e', 'process.stdin.pause(); setInterval(() => {}, 1000)'] }, { protocol: 'materialize', idleTimeoutMs: 300 });
    const big = 'x'.repeat(256 * 1024);
    await assert.rejects(async () => {
      for (let i = 0; i < 64; i++) await proc.send({ store: { keyPacked: packTupleBase64([i]), doc: { big } } } as unknown as MaterializeRequest);
    }, { name: 'ConnectorExitError', message: /: read none of its input for 0\.3 s while sluice sent "store"; the connector was killed$/ });
  });
});

describe('host: connector output is decoded strictly, as Flow\'s runtime does', () => {
  // A connector printing the given lines after reading one request.
  const printing = (lines: string[]) => ({
    command: node,
    args: ['-e', `process.stdin.once('data', () => { process.stdout.write(${JSON.stringify(lines.join('\n') + '\n')}); process.exit(0); });`],
  });
  const cases: [string, string[], RegExp][] = [
    ['an unknown field of a response', ['{"opened":{}}', '{"captured":{"binding":0,"doc":{},"docId":7}}'],
      /^strict stdout line 2: "captured" has an unknown field "docId" \(known: binding, doc\); Flow's runtime rejects it$/],
    ['an unknown field of a state update', ['{"opened":{}}', '{"checkpoint":{"state":{"updated":{},"merge":true}}}'],
      /^strict stdout line 2: "checkpoint.state" has an unknown field "merge" \(known: updated, mergePatch\); Flow's runtime rejects it$/],
    ['an unknown field of a discovered binding', ['{"discovered":{"bindings":[{"recommendedName":"a","resourceConfig":{},"documentSchema":{},"primaryKey":["/id"]}]}}'],
      /^strict stdout line 1: "discovered.bindings\[0\]" has an unknown field "primaryKey"/],
    ['an unknown variant', ['{"opened":{}}', '{"captures":{"doc":{}}}'], /unknown response "captures"/],
  ];
  for (const [name, lines, message] of cases) {
    it(name, async () => {
      await assert.rejects(runSession(printing(lines), [{ spec: {} }], { protocol: 'capture', name: 'strict' }), (err: Error) => {
        assert.match(err.message, message);
        return true;
      });
    });
  }
  it('documents themselves may hold any field', async () => {
    const out = await runSession(printing(['{"opened":{}}', '{"captured":{"binding":0,"doc":{"anything":{"docId":1}}}}']), [{ spec: {} }], { protocol: 'capture', name: 'strict' });
    assert.deepEqual(out, [{ opened: {} }, { captured: { binding: 0, doc: { anything: { docId: 1 } } } }]);
  });
});
