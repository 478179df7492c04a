// serveCapture: the capture protocol, connector side (flow-protocol.md §2).
// Dispatch, ordering in both directions, config validation and response encoding live here; the
// connector only implements the CaptureConnector methods.
import { ConfigError, ProtocolError } from '../errors.ts';
import type { Envelope } from '../protocol/envelope.ts';
import type {
  CaptureApplyRequest, CaptureOpenRequest, CaptureValidateRequest, CapturedResponse, DiscoveredBinding, SpecResponse,
} from '../protocol/capture.ts';
import { PROTOCOL_VERSION } from '../protocol/specs.ts';
import type { CaptureSpec, ConnectorState, JsonObject, JsonValue } from '../protocol/specs.ts';
import { AsyncQueue } from './async-queue.ts';
import { ConnectorSchemas } from './config.ts';
import { resolvePointer } from '../protocol/json-pointer.ts';
import {
  INTERRUPTED, Tripwire, type ServeOptions, type SessionIO, checkBindingIndex, nextAfterUnary, unexpectedBetweenRpcs, isPlainObject, isStopped, openSessionIO,
  unexpectedRequest,
} from './session.ts';
import type { CaptureBinding, CaptureConnector, CaptureOutput, CapturedLines } from './types.ts';

export const CAPTURE_REQUESTS = ['spec', 'discover', 'validate', 'apply', 'open', 'acknowledge'] as const;
const FIRST_REQUESTS = ['spec', 'discover', 'validate', 'apply', 'open'];

/** The `spec` response of a capture connector (resourcePathPointers included). */
export function captureSpecResponse(connector: CaptureConnector<any, any>): SpecResponse {
  const out: SpecResponse = {
    protocol: PROTOCOL_VERSION,
    configSchema: connector.configSchema,
    resourceConfigSchema: connector.resourceConfigSchema,
    documentationUrl: connector.documentationUrl,
  };
  if (connector.oauth2) out.oauth2 = connector.oauth2;
  out.resourcePathPointers = [...connector.resourcePathPointers];
  return out;
}

/** Derives a resource path from the resource config by the connector's resourcePathPointers. */
export function resourcePathOf(resource: JsonValue, pointers: readonly string[], binding: number): string[] {
  if (pointers.length === 0) {
    throw new ConfigError(`binding ${binding}: the connector declares no resourcePathPointers and its validate() returned no resource paths`);
  }
  return pointers.map((ptr) => {
    const value = resolvePointer(resource, ptr);
    if (value === undefined || value === null || value === '' || typeof value === 'object') {
      throw new ConfigError(`Invalid resource config of binding ${binding}: ${ptr} must be a non-empty string, number or boolean (it names the resource)`);
    }
    return String(value);
  });
}

function checkResourcePaths(paths: unknown, count: number): string[][] {
  if (!Array.isArray(paths) || paths.length !== count) {
    throw new ProtocolError(`the connector's validate() returned ${Array.isArray(paths) ? paths.length : 'no'} resource paths for ${count} bindings`);
  }
  return paths.map((path, i) => {
    if (!Array.isArray(path) || path.length === 0 || path.some((c) => typeof c !== 'string' || c === '')) {
      throw new ProtocolError(`the connector's validate() returned an invalid resource path for binding ${i}: it must be a non-empty list of non-empty strings`);
    }
    return path as string[];
  });
}

function encodeDiscovered(b: DiscoveredBinding, i: number): JsonObject {
  if (typeof b.recommendedName !== 'string' || b.recommendedName === '' || !isPlainObject(b.resourceConfig) || b.documentSchema === undefined) {
    throw new ProtocolError(`the connector's discover() returned an invalid binding ${i}: recommendedName, resourceConfig and documentSchema are required`);
  }
  const out: JsonObject = { recommendedName: b.recommendedName, resourceConfig: b.resourceConfig, documentSchema: b.documentSchema };
  if (b.key && b.key.length > 0) out['key'] = b.key;
  if (b.disable) out['disable'] = true;
  if (b.resourcePath && b.resourcePath.length > 0) out['resourcePath'] = b.resourcePath;
  return out;
}

function encodeState(state: ConnectorState): JsonObject {
  const out: JsonObject = {};
  if (state.updated !== undefined) out['updated'] = state.updated;
  if (state.mergePatch) out['mergePatch'] = true;
  return out;
}

function checkOneVariant(output: object): void {
  const keys = Object.keys(output);
  if (keys.length !== 1) {
    throw new ProtocolError(`the connector yielded an output with ${keys.length === 0 ? 'no variant' : `variants ${keys.join(', ')}`}; expected exactly one of "captured", "checkpoint", "sourcedSchema"`);
  }
}

/**
 * For `{ capturedLines: { documents, lines } }` (lines the connector framed itself): the text and
 * document count, after checking the framing of the first and last line. Null for every other output.
 */
export function checkCapturedLines(output: CaptureOutput): CapturedLines | null {
  if (typeof output !== 'object' || output === null || !('capturedLines' in output)) return null;
  checkOneVariant(output);
  const c = output.capturedLines as Partial<CapturedLines> | null;
  const documents = c?.documents;
  const lines = c?.lines;
  const written = c?.written;
  if (!(lines instanceof Uint8Array) || typeof documents !== 'number' || !Number.isInteger(documents) || documents < 0 || (written !== undefined && typeof written !== 'function')) {
    throw new ProtocolError('capturedLines must be { documents: <integer ≥ 0>, lines: <Uint8Array>, written?: <function> } (CapturedLinesWriter.take)');
  }
  const framed = documents === 0 ? lines.length === 0 : startsWithCaptured(lines) && endsWithObjectLine(lines);
  if (!framed) {
    const head = Buffer.from(lines.buffer, lines.byteOffset, Math.min(lines.length, 60)).toString('utf8');
    throw new ProtocolError(`capturedLines must hold ${documents} complete "captured" lines (each {"captured":{…}} and a newline), got ${JSON.stringify(head)}`);
  }
  return written === undefined ? { documents, lines } : { documents, lines, written };
}

const CAPTURED_OPEN = '{"captured":{';

function startsWithCaptured(lines: Uint8Array): boolean {
  if (lines.length < CAPTURED_OPEN.length) return false;
  for (let i = 0; i < CAPTURED_OPEN.length; i++) if (lines[i] !== CAPTURED_OPEN.charCodeAt(i)) return false;
  return true;
}

function endsWithObjectLine(lines: Uint8Array): boolean {
  return lines.length >= 2 && lines[lines.length - 2] === 0x7d && lines[lines.length - 1] === 0x0a;
}

/** Validates one connector output and returns the exact line to write. */
export function encodeCaptureOutput(output: CaptureOutput, bindingCount: number): JsonObject {
  if (!isPlainObject(output)) throw new ProtocolError(`the connector yielded ${JSON.stringify(output)} instead of a capture output`);
  checkOneVariant(output);
  if ('captured' in output) {
    const c = output.captured as CapturedResponse;
    const binding = checkBindingIndex(c?.binding, bindingCount, 'captured document');
    if (!isPlainObject(c.doc)) throw new ProtocolError(`captured document for binding ${binding}: doc must be a JSON object`);
    return { captured: binding === 0 ? { doc: c.doc } : { binding, doc: c.doc } };
  }
  if ('checkpoint' in output) {
    const state = output.checkpoint?.state;
    return { checkpoint: state === undefined ? {} : { state: encodeState(state) } };
  }
  if ('sourcedSchema' in output) {
    const s = output.sourcedSchema;
    const binding = checkBindingIndex(s?.binding, bindingCount, 'sourcedSchema');
    if (s.documentSchema === undefined) throw new ProtocolError(`sourcedSchema for binding ${binding}: documentSchema is required`);
    return { sourcedSchema: binding === 0 ? { documentSchema: s.documentSchema } : { binding, documentSchema: s.documentSchema } };
  }
  throw new ProtocolError(`the connector yielded an unknown output "${Object.keys(output)[0]}"; expected one of "captured", "checkpoint", "sourcedSchema"`);
}

/**
 * Serves capture RPCs on stdin/stdout (or the given input/output): unary ones until the input ends, or an
 * `open` session. Resolves when they ended cleanly; rejects with the error to report (the caller exits 1).
 */
export async function serveCapture<Config = JsonObject, Resource = JsonObject>(
  connector: CaptureConnector<Config, Resource>,
  options: ServeOptions = {},
): Promise<void> {
  const io = openSessionIO(options, CAPTURE_REQUESTS);
  const schemas = new ConnectorSchemas(connector);
  try {
    let request = await io.requests.next();
    if (isStopped(request)) return;
    if (request === null) {
      throw new ProtocolError(`stdin ended before any request; expected one of ${FIRST_REQUESTS.map((v) => `"${v}"`).join(', ')}`);
    }
    // As upstream's boilerplates: after a unary RPC the same process serves the next request, until its
    // stdin ends or an `open` starts a session. Flow's runtime closes stdin after one unary request (the
    // process then exits as before); the local plane sends a task's validate, apply (and a capture's open)
    // to one process, instead of starting Node for each (Launcher.unary).
    while (true) {
      io.log.debug('capture request', { request: request.variant });
      const body = request.body;
      switch (request.variant) {
        case 'spec': {
          schemas.check();
          await io.writer.write({ spec: captureSpecResponse(connector) });
          break;
        }
        case 'discover': {
          const config = schemas.configValidator.validate<Config>(body['config'], 'endpoint config');
          const bindings = await connector.discover({ config, log: io.log, signal: io.controller.signal });
          if (!Array.isArray(bindings)) throw new ProtocolError(`the connector's discover() must return an array of bindings`);
          await io.writer.write({ discovered: { bindings: bindings.map(encodeDiscovered) } });
          break;
        }
        case 'validate': {
          const req = body as CaptureValidateRequest;
          const config = schemas.configValidator.validate<Config>(req.config, 'endpoint config');
          const reqBindings = req.bindings ?? [];
          const resources = reqBindings.map((b, i) => schemas.resourceValidator.validate<Resource>(b.resourceConfig, `resource config of binding ${i}${b.collection?.name ? ` (${b.collection.name})` : ''}`));
          const returned = connector.validate
            ? await connector.validate({
              config, log: io.log, signal: io.controller.signal, name: req.name ?? '',
              bindings: reqBindings.map((b, i) => ({ resource: resources[i]!, collection: b.collection, backfill: b.backfill ?? 0 })),
            })
            : undefined;
          const paths = returned
            ? checkResourcePaths(returned, reqBindings.length)
            : resources.map((r, i) => resourcePathOf(r as JsonValue, connector.resourcePathPointers, i));
          await io.writer.write({ validated: { bindings: paths.map((resourcePath) => ({ resourcePath })) } });
          break;
        }
        case 'apply': {
          const req = body as unknown as CaptureApplyRequest;
          const config = schemas.configValidator.validate<Config>(req.capture?.config, 'endpoint config');
          const description = connector.apply
            ? await connector.apply({
              config, log: io.log, signal: io.controller.signal, capture: req.capture, version: req.version ?? '',
              dryRun: req.dryRun === true, ...(req.lastCapture ? { lastCapture: req.lastCapture } : {}),
            })
            : '';
          await io.writer.write({ applied: description ? { actionDescription: description } : {} });
          break;
        }
        case 'open':
          await runSession(connector, io, schemas, request);
          return;
        default:
          throw unexpectedBetweenRpcs(request, FIRST_REQUESTS);
      }
      const next = await nextAfterUnary(io);
      if (next === null) return;
      request = next;
    }
  } finally {
    io.requests.close();
    io.controller.abort();
    await io.writer.flush().catch(() => undefined);
  }
}

async function runSession<Config, Resource>(
  connector: CaptureConnector<Config, Resource>,
  io: SessionIO,
  schemas: ConnectorSchemas,
  openRequest: Envelope,
): Promise<void> {
  const req = openRequest.body as unknown as CaptureOpenRequest;
  if (!isPlainObject(req.capture)) throw new ProtocolError(`"open" request (line ${openRequest.line}) has no capture spec`);
  const capture: CaptureSpec = req.capture;
  const config = schemas.configValidator.validate<Config>(capture.config, 'endpoint config');
  const specs = capture.bindings ?? [];
  const bindings: CaptureBinding<Resource>[] = specs.map((spec, index) => {
    const resource = schemas.resourceValidator.validate<Resource>(spec.resourceConfig, `resource config of binding ${index}${spec.collection?.name ? ` (${spec.collection.name})` : ''}`);
    const stateKey = spec.stateKey ?? (spec.resourcePath ?? resourcePathOf(resource as JsonValue, connector.resourcePathPointers, index)).join('/');
    return { index, resource, spec, stateKey };
  });
  const explicit = connector.explicitAcknowledgements === true;
  const acks = new AsyncQueue<number>(Number.MAX_SAFE_INTEGER);
  let pendingCheckpoints = 0;
  let readerError: unknown = undefined;
  let readerFailed = false;

  await io.writer.write({ opened: explicit ? { explicitAcknowledgements: true } : {} });

  // Requests after open: only acknowledgements, and only when they were asked for. EOF ends them;
  // the session itself runs until the connector returns (or SIGTERM).
  const reader = (async () => {
    try {
      while (true) {
        const request = await io.requests.next();
        if (request === null || isStopped(request)) break;
        if (request.variant !== 'acknowledge' || !explicit) {
          throw unexpectedRequest(request, 'the capture session is open', explicit ? ['acknowledge'] : 'no further requests (explicit acknowledgements are off)');
        }
        const n = request.body['checkpoints'] ?? 0;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
          throw new ProtocolError(`"acknowledge" request (line ${request.line}): checkpoints must be an integer of at least 1, got ${JSON.stringify(n)}`);
        }
        if (n > pendingCheckpoints) {
          throw new ProtocolError(`"acknowledge" request (line ${request.line}) acknowledges ${n} checkpoint${n === 1 ? '' : 's'} but only ${pendingCheckpoints} ${pendingCheckpoints === 1 ? 'is' : 'are'} pending`);
        }
        pendingCheckpoints -= n;
        await acks.push(n);
      }
      acks.end();
    } catch (err) {
      readerFailed = true;
      readerError = err;
      acks.fail(err);
      io.controller.abort(err);
    }
  })();

  // "Stop now": SIGTERM, or a request the session cannot accept (the reader aborts).
  const interrupt = new Tripwire();
  if (io.controller.signal.aborted) interrupt.trip();
  else io.controller.signal.addEventListener('abort', () => interrupt.trip(), { once: true });

  const iterator = connector.open({
    config, log: io.log, signal: io.controller.signal, capture, bindings,
    state: isPlainObject(req.state) ? req.state : {},
    range: req.range ?? {}, version: req.version ?? '',
    acknowledgements: acks,
  })[Symbol.asyncIterator]();

  let documentsSinceCheckpoint = 0;
  const count = bindings.length;
  try {
    while (true) {
      const result = await interrupt.race(iterator.next());
      if (result === INTERRUPTED) {
        if (readerFailed) throw readerError;
        io.log.info('capture session stopped', { documentsDiscarded: documentsSinceCheckpoint });
        void Promise.resolve(iterator.return?.()).catch(() => undefined);
        return;
      }
      if (result.done) break;
      let written: Promise<void>;
      let line: JsonObject;
      // Lines the connector framed itself (a batch of documents) go out as they are, counted as documents.
      const framed = checkCapturedLines(result.value);
      if (framed !== null) {
        documentsSinceCheckpoint += framed.documents;
        written = io.writer.writeDocumentBytes(framed.lines, framed.written);
      } else if ('captured' in (line = encodeCaptureOutput(result.value, count))) {
        documentsSinceCheckpoint++;
        written = io.writer.writeDocument(line);
      } else {
        if ('checkpoint' in line) {
          pendingCheckpoints += explicit ? 1 : 0;
          documentsSinceCheckpoint = 0;
        }
        written = io.writer.write(line);
      }
      // Wait only while the output is full (backpressure), and stop waiting if interrupted.
      if (io.writer.isBlocked) {
        if (await interrupt.race(written) === INTERRUPTED) continue;
      } else {
        await written;
      }
    }
    if (readerFailed) throw readerError;
    if (documentsSinceCheckpoint > 0) {
      io.log.warn('the capture ended with documents after its last checkpoint; they are discarded', { documents: documentsSinceCheckpoint });
    }
  } catch (err) {
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
    throw err;
  } finally {
    io.requests.close();
    void reader;
  }
}
