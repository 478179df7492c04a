// A unary RPC answers the same on both paths: a fresh connector process (Launcher's `unary`, stdin closed after
// the request) and one started ahead (unaryOnSpare, the process kept for the task's next RPC). One check serves
// both (host-session.ts unaryResponse); a process that answered out of turn is killed, not kept.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { ProtocolError } from '@sluice/runtime';
import { until } from '@sluice/runtime/testing';
import type { ConnectorTarget } from '@sluice/runtime/host';
import { hostSession, SpareConnector, unaryOnSpare } from '../../src/tasks/host-session.ts';
import { unary } from '../../src/tasks/launcher.ts';

const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));
const target: ConnectorTarget = { command: process.execPath, args: [TEST_CAPTURE] };
const SPEC = { spec: { connectorType: 'IMAGE' } };

test('unary RPCs: a fresh process and one started ahead give the same answer and the same errors', async () => {
  const fresh = await unary(hostSession(target, 'capture', 'acmeCo/fresh'), SPEC, 'spec', 'acmeCo/fresh');
  const spare = new SpareConnector(target, 'capture', 'acmeCo/ahead');
  const ahead = await unaryOnSpare(spare, target, 'capture', 'acmeCo/ahead', SPEC, 'spec');
  assert.deepEqual(ahead, fresh);
  assert.equal(typeof fresh['protocol'], 'number');
  assert.equal(spare.proc.child.exitCode, null, 'the process started ahead is kept for the next RPC');

  // The connector answers `spec` where the caller expects `validated`: out of turn.
  const expected = (task: string) => ({ name: 'ProtocolError', message: `${task}: connector sent "spec" where "validated" was expected` });
  await assert.rejects(unary(hostSession(target, 'capture', 'acmeCo/fresh'), SPEC, 'validated', 'acmeCo/fresh'), expected('acmeCo/fresh'));
  const err = await unaryOnSpare(spare, target, 'capture', 'acmeCo/ahead', SPEC, 'validated').then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ProtocolError);
  assert.deepEqual({ name: err.name, message: err.message }, expected('acmeCo/ahead'));
  // Stopped (SIGTERM, then SIGKILL at once: it may exit 0 on the SIGTERM first); left alone, it would wait on its
  // open stdin for the next request.
  const child = spare.proc.child;
  await until('the process that answered out of turn to be stopped', () => child.exitCode !== null || child.signalCode !== null, { ms: 30_000 });
});
