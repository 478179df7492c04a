// The one host-side driver of the capture protocol (flow-protocol.md §2), used by the plane's tasks,
// `sluice preview` and `sluice raw capture` alike: open → opened, then captured* / checkpoint until the
// connector exits; acknowledge each checkpoint once it is committed when the connector asked for
// explicit acknowledgements. Each captured document is handed on as the text the connector wrote
// (DOC_TEXT) with the value the framing parsed from it: nothing is parsed or serialised again here; or,
// when the session reads them so and the caller takes them (onDocumentBytes), as its bytes.
import { ProtocolError } from '../errors.ts';
import type { CaptureRequest, CaptureResponse } from '../protocol/capture.ts';
import { FULL_RANGE } from '../protocol/documents.ts';
import { applyStateUpdate } from '../protocol/merge-patch.ts';
import type { CaptureSpec, ConnectorState, JsonObject, JsonValue } from '../protocol/specs.ts';
import { CapturedBytes } from './captured-bytes.ts';
import { docTextOf } from './connector-process.ts';
import type { DriverSession } from './materialize-driver.ts';

export interface CaptureDriverOptions {
  /** Names the task in errors. */
  name: string;
  spec: CaptureSpec;
  version: string;
  session: DriverSession<CaptureRequest, CaptureResponse>;
  /** The state the connector opens with. */
  state: JsonObject;
  onOpened?: (opened: { explicitAcknowledgements: boolean }) => void;
  /** Every response as received (sluice raw prints them). */
  onResponse?: (response: CaptureResponse) => void;
  /**
   * One captured document: its binding, its JSON text as the connector wrote it, and that text parsed
   * (integers beyond ±2^53 rounded: parse `text` with parseDocument where they matter). Throw to fail.
   */
  onDocument?: (binding: number, text: string, doc: JsonValue) => void;
  /**
   * A captured document as bytes (a session with ConnectorProcessOptions.capturedBytes): when given, such
   * documents come here instead of onDocument. Nothing has checked them yet (captured-bytes.ts): reading
   * `doc` parses the line and throws for a malformed one, which the driver then reports as the framing does.
   */
  onDocumentBytes?: (binding: number, doc: CapturedBytes) => void;
  /**
   * A checkpoint: commit the documents since the previous one with the state update (`state` is the
   * connector state with it applied). Resolve once durable; the connector is acknowledged then.
   */
  onCheckpoint?: (update: ConnectorState | undefined, state: JsonValue) => void | Promise<void>;
}

/** Runs until the connector exits cleanly (resolves) or fails (rejects). Uncheckpointed documents are the caller's to drop. */
export async function runCaptureDriver(o: CaptureDriverOptions): Promise<void> {
  const { session, name } = o;
  const bindings = o.spec.bindings?.length ?? 0;
  await session.send({ open: { capture: o.spec, version: o.version, range: { ...FULL_RANGE }, state: o.state } });
  const first = await session.recv();
  if (first !== undefined) o.onResponse?.(first);
  if (first === undefined || !('opened' in first)) {
    throw new ProtocolError(`${name}: connector sent ${first === undefined ? 'nothing' : `"${Object.keys(first)[0]}"`} before "opened"`);
  }
  const explicitAcks = first.opened.explicitAcknowledgements === true;
  o.onOpened?.({ explicitAcknowledgements: explicitAcks });
  let state: JsonValue = o.state;
  while (true) {
    const res = session.recvBuffered?.() ?? await session.recv();
    if (res === undefined) return;
    o.onResponse?.(res);
    if ('captured' in res) {
      const index = res.captured.binding ?? 0;
      if (!Number.isInteger(index) || index < 0 || index >= bindings) {
        throw new ProtocolError(`${name}: connector captured a document for binding ${index}, but the capture has ${bindings} binding(s)`);
      }
      const body = res.captured;
      if (body instanceof CapturedBytes) {
        try {
          if (o.onDocumentBytes !== undefined) o.onDocumentBytes(index, body);
          else if (o.onDocument !== undefined) o.onDocument(index, docTextOf(body), body.doc);
          else body.parsed(); // nobody reads it: still a malformed line fails the session
        } catch (err) {
          if (err === body.parseError) await body.failed(err);
          throw err;
        }
        continue;
      }
      o.onDocument?.(index, docTextOf(body), body.doc);
      continue;
    }
    if ('checkpoint' in res) {
      const update = res.checkpoint.state;
      state = applyStateUpdate(state, update);
      await o.onCheckpoint?.(update, state);
      if (explicitAcks) await session.send({ acknowledge: { checkpoints: 1 } });
      continue;
    }
    if ('sourcedSchema' in res) continue; // schema inference is not part of the local plane
    throw new ProtocolError(`${name}: connector sent "${Object.keys(res)[0]}" during a capture session; expected "captured", "sourcedSchema" or "checkpoint"`);
  }
}
