// What tasks need from a running connector: send requests, receive responses in order, close stdin,
// and learn how the process ended. The launcher (launcher.ts) provides sessions over runtime/host.
import type { JsonObject } from '@sluice/runtime';

export interface ConnectorSession<Req, Res> {
  /** Writes one request line (awaits backpressure). */
  send(request: Req): Promise<void>;
  /**
   * The next response; undefined once the connector has exited cleanly after its last response.
   * Rejects with the connector's failure (its last stderr line) if it exits non-zero.
   */
  recv(): Promise<Res | undefined>;
  /** Closes the connector's stdin (end of session) and waits for it to exit; rejects if it fails. */
  close(): Promise<void>;
  /** Kills the connector at once. */
  kill(): void;
}

/** A `connectorStatus` (or other) event logged by the connector. */
export interface ConnectorLogEvent {
  level: string;
  message: string;
  fields: JsonObject;
  ts: Date;
}

export interface SessionHooks {
  /** Every parsed stderr log line. */
  onLog?: (event: ConnectorLogEvent) => void;
}
