// A task's connector session over the runtime's host (`@sluice/runtime/host`): the connector runs as a
// process or container, requests go to its stdin, responses come back in order, and a failed exit
// rejects with the connector's last error line, prefixed with the task name.
import { ConnectorExitError, type JsonObject } from '@sluice/runtime';
import { startConnector, type ConnectorTarget, type Protocol } from '@sluice/runtime/host';
import type { ConnectorSession, SessionHooks } from './session.ts';

export function hostSession<Req, Res>(target: ConnectorTarget, protocol: Protocol, task: string, hooks: SessionHooks = {}): ConnectorSession<Req, Res> {
  const proc = startConnector(target, {
    protocol,
    name: task,
    onLog: (log) => hooks.onLog?.({
      level: log.level,
      message: log.msg,
      fields: (log.fields ?? {}) as JsonObject,
      ts: new Date(),
    }),
  });
  const responses = proc.responses()[Symbol.asyncIterator]();
  const named = (err: unknown): unknown => {
    if (err instanceof ConnectorExitError && !err.message.startsWith(`${task}:`)) {
      return new ConnectorExitError(`${task}: connector failed: ${err.message}`, err.exitCode, err.signal, { cause: err, fields: err.fields });
    }
    return err;
  };
  return {
    send: (request) => proc.send(request as never),
    sendLine: (line) => proc.sendLine(line),
    async recv() {
      try {
        const r = await responses.next();
        return r.done ? undefined : (r.value as Res);
      } catch (err) {
        throw named(err);
      }
    },
    async close() {
      proc.endInput();
      try {
        await proc.wait();
      } catch (err) {
        throw named(err);
      }
    },
    kill() {
      void proc.kill(0);
    },
  };
}
