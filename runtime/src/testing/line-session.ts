// A materialize driver's session in memory, for tests and benches of the driver: every request the driver
// sends reaches `onLine` as its JSON line (single requests and batched lines alike), and `respond` queues what
// the driver's next recv() returns.
import type { DriverSession } from '../host/materialize-driver.ts';
import { stringifyDocument } from '../protocol/documents.ts';
import type { MaterializeRequest, MaterializeResponse } from '../protocol/materialize.ts';
import type { JsonValue } from '../protocol/specs.ts';

export interface LineSession {
  session: DriverSession<MaterializeRequest, MaterializeResponse>;
  /** Queues a response for the driver's recv(). */
  respond(response: MaterializeResponse): void;
}

export function lineSession(onLine: (line: string) => void): LineSession {
  const queue: MaterializeResponse[] = [];
  let wake: (() => void) | undefined;
  const text = (s: string) => {
    for (const l of s.split('\n')) if (l !== '') onLine(l);
  };
  const session: DriverSession<MaterializeRequest, MaterializeResponse> = {
    send: async (r) => text(`${stringifyDocument(r as unknown as JsonValue)}\n`),
    sendLine: async (line) => text(line),
    sendLines: async (bytes, written) => {
      text(Buffer.from(bytes).toString('utf8'));
      written(null);
    },
    recv: async () => {
      while (queue.length === 0) await new Promise<void>((resolve) => { wake = resolve; });
      return queue.shift();
    },
    close: async () => undefined,
    kill: () => undefined,
  };
  return {
    session,
    respond(response) {
      queue.push(response);
      const w = wake;
      wake = undefined;
      w?.();
    },
  };
}
