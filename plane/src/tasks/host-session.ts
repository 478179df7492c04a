// A task's connector session over the runtime's host (`@sluice/runtime/host`): the connector runs as a
// process or container, requests go to its stdin, responses come back in order, and a failed exit
// rejects with the connector's last error line, prefixed with the task name.
import type { JsonObject } from '@sluice/runtime';
import { ConnectorExitError, ProtocolError } from '@sluice/runtime/errors';
import { startConnector, type ConnectorLog, type ConnectorProcess, type ConnectorProcessOptions, type ConnectorTarget, type Protocol } from '@sluice/runtime/host';
import type { ConnectorSession, SessionHooks } from './session.ts';

/**
 * Limits the plane leaves unset and `sluice raw` takes from its command line; and whether a capture's
 * documents come out as bytes (the plane's capture tasks read them so: tasks/capture.ts).
 */
export type SessionLimits = Pick<ConnectorProcessOptions, 'timeoutMs' | 'idleTimeoutMs' | 'capturedBytes'>;

/**
 * A connector process started ahead of its RPC (Launcher.prestart): spawned, its Node started and its modules
 * loaded while the plane does something else; it reads nothing until its session sends the first request.
 * Log lines it writes before a session takes it are kept and handed to that session's hooks.
 */
export class SpareConnector {
  readonly proc: ConnectorProcess;
  #early: ConnectorLog[] = [];
  /** Its output, read by the sessions that take it one after another (Launcher.unary keeps it for the next RPC). */
  #batches: AsyncIterator<unknown[]> | undefined;
  #onLog: ((log: ConnectorLog) => void) | undefined;

  constructor(target: ConnectorTarget, protocol: Protocol, task: string) {
    this.proc = startConnector(target, {
      protocol,
      name: task,
      onLog: (log) => {
        if (this.#onLog !== undefined) this.#onLog(log);
        else if (this.#early.length < 1000) this.#early.push(log);
      },
    });
  }

  /** The process's responses, a chunk of output at a time: one reader, whichever session has it now. */
  batches(): AsyncIterator<unknown[]> {
    return (this.#batches ??= this.proc.responseBatches()[Symbol.asyncIterator]());
  }

  /** Routes its logs to `onLog` from now on, the early ones first. */
  attach(onLog: (log: ConnectorLog) => void): ConnectorProcess {
    this.#onLog = onLog;
    for (const log of this.#early.splice(0)) onLog(log);
    return this.proc;
  }
}

export function hostSession<Req, Res>(target: ConnectorTarget, protocol: Protocol, task: string, hooks: SessionHooks = {}, limits: SessionLimits = {}, spare?: SpareConnector): ConnectorSession<Req, Res> {
  const onLog = (log: ConnectorLog) => hooks.onLog?.({
    level: log.level,
    message: log.msg,
    fields: (log.fields ?? {}) as JsonObject,
    ts: new Date(),
  });
  const proc = spare !== undefined ? spare.attach(onLog) : startConnector(target, { ...limits, protocol, name: task, onLog });
  // A prestarted process was started before the session's options were known.
  if (limits.capturedBytes !== undefined) proc.capturedBytes = limits.capturedBytes;
  // A chunk of the connector's output at a time: recvBuffered() hands out its responses without an await.
  const batches = (spare !== undefined ? spare.batches() : proc.responseBatches()[Symbol.asyncIterator]()) as AsyncIterator<Res[]>;
  let batch: Res[] = [];
  let at = 0;
  const named = (err: unknown): unknown => {
    if (err instanceof ConnectorExitError && !err.message.startsWith(`${task}:`)) {
      return new ConnectorExitError(`${task}: connector failed: ${err.message}`, err.exitCode, err.signal, { cause: err, fields: err.fields });
    }
    return err;
  };
  const take = (): Res => {
    const r = batch[at]!;
    batch[at++] = undefined as Res; // handed out: not kept alive by the batch
    return r;
  };
  return {
    send: (request) => proc.send(request as never),
    sendLine: (line) => proc.sendLine(line),
    sendLines: (bytes, written) => proc.sendLines(bytes, written),
    async recv() {
      if (at < batch.length) return take();
      try {
        const r = await batches.next();
        if (r.done) return undefined;
        batch = r.value as Res[];
        at = 0;
        return take();
      } catch (err) {
        throw named(err);
      }
    },
    recvBuffered: () => (at < batch.length ? take() : undefined),
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
    // What the driver waits for names the wait in an idle-timeout error.
    get awaiting() { return proc.awaiting; },
    set awaiting(what: string) { proc.awaiting = what; },
  };
}

/**
 * The `variant` member of a unary RPC's one response (`res`: undefined when the connector gave none); throws
 * ProtocolError naming what came instead. The one check of both unary paths: a fresh process (Launcher's
 * `unary`) and one started ahead (unaryOnSpare).
 */
export function unaryResponse(res: object | undefined, variant: string, task: string): JsonObject {
  if (res === undefined) throw new ProtocolError(`${task}: connector exited without a "${variant}" response`);
  const [got] = Object.keys(res);
  if (got !== variant) throw new ProtocolError(`${task}: connector sent "${String(got)}" where "${variant}" was expected`);
  return (res as Record<string, JsonObject>)[variant] ?? {};
}

/**
 * A unary RPC on a process started ahead (Launcher.unary, the materialization thread's `unary`): the
 * response's `variant` member. The process is left running for the task's next RPC (our connectors serve
 * requests one after another on one stream); one that failed or answered out of turn is killed.
 */
export async function unaryOnSpare<Req>(spare: SpareConnector, target: ConnectorTarget, protocol: Protocol, task: string, request: Req, variant: string): Promise<JsonObject> {
  const session = hostSession<Req, Record<string, JsonObject>>(target, protocol, task, {}, {}, spare);
  try {
    await session.send(request);
    return unaryResponse(await session.recv(), variant, task);
  } catch (err) {
    session.kill();
    throw err;
  }
}
