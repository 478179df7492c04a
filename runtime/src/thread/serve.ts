// The worker side of a thread started by threadModule (host.ts): the typed port to the host.
import { parentPort } from 'node:worker_threads';
import type { Transferable } from 'node:worker_threads';

export interface ThreadPort<Out> {
  /** Sends `m` to the host; the buffers in `transfer` move (they are unusable here afterwards). */
  post(m: Out, transfer?: readonly Transferable[]): void;
}

/**
 * Serves the host's messages with `onMessage`, in order. `module` names the calling module in the error thrown
 * when it is run other than as a thread (e.g. imported by mistake).
 */
export function serveThread<In, Out>(module: string, onMessage: (m: In) => void): ThreadPort<Out> {
  const port = parentPort;
  if (port === null) throw new Error(`${module} runs only as a worker thread (started by threadModule)`);
  port.on('message', onMessage);
  return { post: (m, transfer) => port.postMessage(m, transfer) };
}
