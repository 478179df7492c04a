// What tasks need from a running connector: send requests, receive responses in order, close stdin,
// and learn how the process ended. The launcher (launcher.ts) provides sessions over runtime/host.
import type { JsonObject } from '@sluice/runtime';
import type { DriverSession } from '@sluice/runtime/host';

/** A running connector as the runtime's drivers use it (send, sendLine, recv, close, kill). */
export type ConnectorSession<Req, Res> = DriverSession<Req, Res>;

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
