// serveMaterialize: the materialize protocol, connector side (flow-protocol.md §3).
// Per transaction: acknowledge → acknowledged, load…, flush → loaded… flushed, store…,
// startCommit → startedCommit. EOF right after an acknowledge (before any load) is a clean stop.
import { ProtocolError } from '../errors.ts';
import { hasLongDigits, parseDocument } from '../protocol/documents.ts';
import { type Envelope, rawBodyMemberText } from '../protocol/envelope.ts';
import type { ScanOptions } from '../protocol/envelope-scan.ts';
import { isJsonObjectText } from '../protocol/json-check.ts';
import type { Line } from '../protocol/line-reader.ts';
import type { SpecResponse } from '../protocol/capture.ts';
import type {
  LoadRequest, MaterializeApplyRequest, MaterializeOpenRequest, MaterializeOpenedResponse, MaterializeValidateRequest,
  MaterializeValidatedBinding, StateResponse, StoreRequest,
} from '../protocol/materialize.ts';
import { PROTOCOL_VERSION } from '../protocol/specs.ts';
import type { ConnectorState, JsonObject, MaterializationSpec } from '../protocol/specs.ts';
import { type TupleValue, unpackTupleBase64 } from '../protocol/tuple.ts';
import { parseJsonTuple, scanJsonTuple, tupleOfJson } from '../protocol/json-values.ts';
import { AsyncQueue } from './async-queue.ts';
import { ConnectorSchemas } from './config.ts';
import {
  Tripwire, type ServeOptions, type SessionIO, checkBindingIndex, nextAfterUnary, unexpectedBetweenRpcs, isPlainObject, isStopped,
  openSessionIO, unexpectedEof, unexpectedRequest,
} from './session.ts';
import type { DecodedLoad, DecodedStore, MaterializeBinding, MaterializeConnector, Transactor } from './types.ts';

export const MATERIALIZE_REQUESTS = ['spec', 'validate', 'apply', 'open', 'acknowledge', 'load', 'flush', 'store', 'startCommit'] as const;
const FIRST_REQUESTS = ['spec', 'validate', 'apply', 'open'];

/** The `spec` response of a materialization connector (never resourcePathPointers). */
export function materializeSpecResponse(connector: MaterializeConnector<any, any>): SpecResponse {
  const out: SpecResponse = {
    protocol: PROTOCOL_VERSION,
    configSchema: connector.configSchema,
    resourceConfigSchema: connector.resourceConfigSchema,
    documentationUrl: connector.documentationUrl,
  };
  if (connector.oauth2) out.oauth2 = connector.oauth2;
  return out;
}

function encodeState(response: StateResponse | void): JsonObject {
  const state: ConnectorState | undefined = response ? response.state : undefined;
  if (state === undefined) return {};
  const out: JsonObject = {};
  if (state.updated !== undefined) out['updated'] = state.updated;
  if (state.mergePatch) out['mergePatch'] = true;
  return { state: out };
}

function encodeValidated(b: MaterializeValidatedBinding, i: number): JsonObject {
  if (!isPlainObject(b) || !Array.isArray(b.resourcePath) || b.resourcePath.length === 0 || b.resourcePath.some((c) => typeof c !== 'string' || c === '')) {
    throw new ProtocolError(`the connector's validate() returned an invalid binding ${i}: resourcePath must be a non-empty list of non-empty strings`);
  }
  const out: JsonObject = { resourcePath: b.resourcePath };
  if (b.constraints) {
    const constraints: JsonObject = {};
    for (const [field, c] of Object.entries(b.constraints)) {
      const enc: JsonObject = { type: c.type };
      if (c.reason) enc['reason'] = c.reason;
      if (c.foldedField) enc['foldedField'] = c.foldedField;
      constraints[field] = enc;
    }
    out['constraints'] = constraints;
  }
  if (b.deltaUpdates) out['deltaUpdates'] = true;
  if (b.serPolicy) {
    const p: JsonObject = {};
    for (const k of ['strTruncateAfter', 'nestedObjTruncateAfter', 'arrayTruncateAfter'] as const) {
      if (b.serPolicy[k] !== undefined) p[k] = b.serPolicy[k];
    }
    out['serPolicy'] = p;
  }
  if (b.caseInsensitiveFields) out['caseInsensitiveFields'] = true;
  return out;
}

function encodeOpened(opened: MaterializeOpenedResponse | undefined): JsonObject {
  const out: JsonObject = {};
  if (opened?.runtimeCheckpoint !== undefined) out['runtimeCheckpoint'] = opened.runtimeCheckpoint;
  if (opened?.disableLoadOptimization) out['disableLoadOptimization'] = true;
  return out;
}

/**
 * A request's key or values: `keyPacked`/`valuesPacked` (a packed tuple, what Flow's runtime sends) when present,
 * else `key`/`values` (JSON arrays, Flow's key_json/values_json: what the local plane sends its built-in
 * connectors), decoded to exactly the tuple values packing gives (json-values.ts). The JSON member is read from
 * the line's text when it has it, so integers beyond ±2^53 keep their digits (the envelope's JSON.parse rounds them).
 */
function decodeTuple(request: Envelope, packedName: string, jsonName: string, what: string, required: boolean): TupleValue[] {
  const packed = request.body[packedName];
  if (typeof packed === 'string' && packed !== '') {
    try {
      return unpackTupleBase64(packed);
    } catch (err) {
      throw new ProtocolError(`${what}: ${(err as Error).message}`, { cause: err });
    }
  }
  const json = request.body[jsonName];
  if (Array.isArray(json) && (json.length > 0 || !required)) {
    const raw = request.text !== undefined ? rawBodyMemberText(request.text, request.variant, jsonName) : undefined;
    if (raw === undefined) return json.map((v) => tupleOfJson(v));
    try {
      return parseJsonTuple(raw);
    } catch (err) {
      throw new ProtocolError(`${what}: ${jsonName}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (json !== undefined && !Array.isArray(json)) throw new ProtocolError(`${what}: ${jsonName} must be a JSON array`);
  if (required) throw new ProtocolError(`${what} has neither ${packedName} nor ${jsonName}`);
  return [];
}

export function decodeLoad(request: Envelope, bindingCount: number): DecodedLoad {
  const body = request.body as LoadRequest;
  const what = `"load" request (line ${request.line})`;
  const binding = checkBindingIndex(body.binding, bindingCount, what);
  return { binding, key: decodeTuple(request, 'keyPacked', 'key', what, true), keyPacked: body.keyPacked ?? '' };
}

/**
 * A store whose document came as checked JSON text (ScanOptions.unparsed): `docJson` is that text and `doc`
 * parses it on first use — a transactor that writes the text (SQLite's document column) never parses it.
 */
class StoreWithDocText implements DecodedStore {
  readonly binding: number;
  readonly key: TupleValue[];
  readonly values: TupleValue[];
  readonly keyPacked: string;
  readonly exists: boolean;
  readonly delete: boolean;
  readonly docJson: string;
  #doc: JsonObject | undefined;

  constructor(binding: number, key: TupleValue[], values: TupleValue[], keyPacked: string, exists: boolean, del: boolean, docJson: string) {
    this.binding = binding;
    this.key = key;
    this.values = values;
    this.keyPacked = keyPacked;
    this.exists = exists;
    this.delete = del;
    this.docJson = docJson;
  }

  /** The text was checked to be one JSON object (json-check.ts), so this parse cannot fail. */
  get doc(): JsonObject {
    return (this.#doc ??= parseDocument(this.docJson) as JsonObject);
  }
}

/** A request line the session decoded itself (see fastRequest): its store or load, ready for the transactor. */
interface DecodedRequest extends Envelope {
  store?: DecodedStore;
  load?: DecodedLoad;
}

const EMPTY_BODY: JsonObject = Object.freeze({}) as JsonObject;

/**
 * The value of `"binding":N,` at `at` (N as JSON writes it: 0, or up to 9 digits without a leading zero) and the
 * position after its comma; undefined when the text there is anything else.
 */
function bindingAt(text: string, at: number): { binding: number; next: number } | undefined {
  if (!text.startsWith('"binding":', at)) return undefined;
  let pos = at + 10;
  const first = text.charCodeAt(pos);
  if (first === 0x30 /* 0 */) {
    pos++;
  } else {
    if (first < 0x31 || first > 0x39) return undefined;
    const start = pos;
    while (pos < start + 9 && text.charCodeAt(pos) >= 0x30 && text.charCodeAt(pos) <= 0x39) pos++;
  }
  if (text.charCodeAt(pos) !== 0x2c /* , */) return undefined;
  return { binding: Number(text.slice(at + 10, pos)), next: pos + 1 };
}

/** bindingAt when the members at `at` begin with `"binding"`, else binding 0 with its members starting at `at`. */
function bindingPrefix(text: string, at: number): { binding: number; next: number } | undefined {
  return text.charCodeAt(at + 1) === 0x62 /* b */ ? bindingAt(text, at) : { binding: 0, next: at };
}

/**
 * A packed member's string value at `at` (just after its opening quote): the text up to the next `"`, and the
 * position of that quote; undefined when none. The text is taken as the value without checking its characters:
 * unpackTupleBase64 rejects any string with a character outside the base64 alphabet (a skipped character changes
 * the decoded length; tested in materialize-fast-request.test.ts), so an escape (`\/`) or a control character
 * declines the fast path, as the expression `[A-Za-z0-9+/=_-]*` did before (the same answer for ~0.2 µs less a
 * line: issue 16).
 */
function packedAt(text: string, at: number): { packed: string; end: number } | undefined {
  const end = text.indexOf('"', at);
  return end === -1 ? undefined : { packed: text.slice(at, end), end };
}

/**
 * A store or load line's members from `at` (just inside its variant's object): `"binding":N,` when present (0
 * otherwise; below `bindingCount`), then `"keyPacked":"…` with a non-empty value; `end` is at its closing quote.
 */
function keyAt(text: string, at: number, bindingCount: number): { binding: number; packed: string; end: number } | undefined {
  const b = bindingPrefix(text, at);
  if (b === undefined) return undefined;
  const { binding, next: pos } = b;
  if (binding >= bindingCount || !text.startsWith('"keyPacked":"', pos)) return undefined;
  const k = packedAt(text, pos + 13);
  if (k === undefined || k.packed === '') return undefined;
  return { binding, packed: k.packed, end: k.end };
}

/**
 * The JSON form's head from `at` (just inside its variant's object): `"binding":N,` when present, then
 * `"key":[…]` with at least one element read by scanJsonTuple; `end` is after its `]`.
 */
function jsonKeyAt(text: string, at: number, bindingCount: number): { binding: number; key: TupleValue[]; end: number } | undefined {
  const b = bindingPrefix(text, at);
  if (b === undefined) return undefined;
  const { binding, next: pos } = b;
  if (binding >= bindingCount || !text.startsWith('"key":', pos)) return undefined;
  const key: TupleValue[] = [];
  const end = scanJsonTuple(text, pos + 6, key);
  if (end < 0 || key.length === 0) return undefined;
  return { binding, key, end };
}

/** A packed tuple that decodes cleanly, or undefined: the usual parse then reports what is wrong with it. */
function tupleOrUndefined(packed: string): TupleValue[] | undefined {
  if (packed === '') return [];
  try {
    return unpackTupleBase64(packed);
  } catch {
    return undefined;
  }
}

/**
 * The session's fast path for store and load lines (RequestReader.fast), as the plane (and Flow's runtime) writes
 * them: `{"store":{["binding":N,]"keyPacked":"…","valuesPacked":"…"[,"doc":{…}][,"exists":B][,"delete":B]}}` and
 * `{"load":{["binding":N,]"keyPacked":"…"}}`, members in that order, no whitespace — or, as the plane writes them
 * for its built-in connectors, `"key":[…],"values":[…]` in place of the packed members, arrays of scalars without
 * whitespace read by scanJsonTuple (each element checked by its grammar, decoded as packing it would). The request is decoded
 * straight from the line: no envelope body, no JSON.parse, one grammar check of `doc` (json-check.ts). Why the
 * answer is the envelope parse's: the base64 strings decode cleanly only when every character is in the base64
 * alphabet (unpackTupleBase64 checks the decoded length), so they hold no `"`, `\` or control character and the
 * JSON string's value is its text; `doc` is checked to be exactly one JSON object; the literals around it are
 * matched exactly. Anything else (another order, whitespace, an object or array in `key`/`values`, a deeper `doc`,
 * a tuple that does not decode, a binding out of range) returns undefined: the usual parse runs and reports its errors.
 */
export function fastRequest(line: Line, bindingCount: number): DecodedRequest | undefined {
  const text = line.text;
  const c = text.charCodeAt(2);
  if (c === 0x73 /* s */) {
    // `{"store":{` [`"binding":N,`] `"keyPacked":"…","valuesPacked":"…"` [`,"doc":`], or the JSON form
    // `"key":[…],"values":[…]` in their place.
    if (!text.startsWith('{"store":{', 0)) return undefined;
    let binding: number;
    let keyPacked = '';
    let valuesPacked = '';
    let decoded: { key: TupleValue[]; values: TupleValue[] } | undefined;
    let afterValues: number;
    const jk = jsonKeyAt(text, 10, bindingCount);
    if (jk !== undefined) {
      if (!text.startsWith(',"values":', jk.end)) return undefined;
      const values: TupleValue[] = [];
      afterValues = scanJsonTuple(text, jk.end + 10, values);
      if (afterValues < 0) return undefined;
      binding = jk.binding;
      decoded = { key: jk.key, values };
    } else {
      const k = keyAt(text, 10, bindingCount);
      if (k === undefined || !text.startsWith('","valuesPacked":"', k.end)) return undefined;
      const v = packedAt(text, k.end + 18);
      if (v === undefined) return undefined;
      binding = k.binding;
      keyPacked = k.packed;
      valuesPacked = v.packed;
      afterValues = v.end + 1;
    }
    const withDoc = text.startsWith(',"doc":', afterValues);
    const head = afterValues + (withDoc ? 7 : 0);
    // The members after `doc`, from the end: `}}`, then at most `,"delete":B` and before it `,"exists":B`.
    let end = text.length - 2;
    if (!text.startsWith('}}', end)) return undefined;
    let del = false;
    let exists = false;
    if (text.endsWith(',"delete":true', end)) {
      del = true;
      end -= 14;
    } else if (text.endsWith(',"delete":false', end)) end -= 15;
    if (text.endsWith(',"exists":true', end)) {
      exists = true;
      end -= 14;
    } else if (text.endsWith(',"exists":false', end)) end -= 15;
    if (!withDoc) {
      // No document (none selected): nothing may be left between the values and the tail.
      if (end !== head) return undefined;
      const key = decoded?.key ?? tupleOrUndefined(keyPacked);
      const values = decoded?.values ?? tupleOrUndefined(valuesPacked);
      if (key === undefined || values === undefined) return undefined;
      return { variant: 'store', body: EMPTY_BODY, line: line.line, store: { binding, key, values, keyPacked, exists, delete: del } };
    }
    // `{` first and `}` last (the check allows whitespace around the object; the usual path's raw text has none).
    if (text.charCodeAt(head) !== 0x7b || text.charCodeAt(end - 1) !== 0x7d) return undefined;
    const docJson = text.slice(head, end);
    if (!isJsonObjectText(docJson)) return undefined;
    const key = decoded?.key ?? tupleOrUndefined(keyPacked);
    const values = decoded?.values ?? tupleOrUndefined(valuesPacked);
    if (key === undefined || values === undefined) return undefined;
    return { variant: 'store', body: EMPTY_BODY, line: line.line, store: new StoreWithDocText(binding, key, values, keyPacked, exists, del, docJson) };
  }
  if (c === 0x6c /* l */) {
    // `{"load":{` [`"binding":N,`] `"keyPacked":"…"}}` (or `"key":[…]}}`) and nothing else.
    if (!text.startsWith('{"load":{', 0)) return undefined;
    if (text.endsWith(']}}')) {
      const k = jsonKeyAt(text, 9, bindingCount);
      if (k === undefined || k.end + 2 !== text.length) return undefined;
      return { variant: 'load', body: EMPTY_BODY, line: line.line, load: { binding: k.binding, key: k.key, keyPacked: '' } };
    }
    const k = keyAt(text, 9, bindingCount);
    if (k === undefined || k.end + 3 !== text.length || !text.endsWith('}}')) return undefined;
    const keyPacked = k.packed;
    const key = tupleOrUndefined(keyPacked);
    if (key === undefined) return undefined;
    return { variant: 'load', body: EMPTY_BODY, line: line.line, load: { binding: k.binding, key, keyPacked } };
  }
  return undefined;
}

/** The request scan of a materialize session: a store's `doc` is checked, not parsed (see StoreWithDocText). */
export const MATERIALIZE_SCAN: ScanOptions = { unparsed: { variant: 'store', member: 'doc' } };

export function decodeStore(request: Envelope, bindingCount: number): DecodedStore {
  const body = request.body as StoreRequest;
  const what = `"store" request (line ${request.line})`;
  const binding = checkBindingIndex(body.binding, bindingCount, what);
  const key = decodeTuple(request, 'keyPacked', 'key', what, true);
  const values = decodeTuple(request, 'valuesPacked', 'values', what, false);
  if (request.raw?.unparsed === true && request.raw.member === 'doc') {
    return new StoreWithDocText(binding, key, values, body.keyPacked ?? '', body.exists === true, body.delete === true, request.raw.text);
  }
  const out: DecodedStore = {
    binding,
    key,
    values,
    keyPacked: body.keyPacked ?? '',
    exists: body.exists === true,
    delete: body.delete === true,
  };
  if (body.doc !== undefined) {
    if (!isPlainObject(body.doc)) throw new ProtocolError(`${what}: doc must be a JSON object`);
    out.doc = body.doc;
    // The fast path (scanEnvelope) already sliced the document's text out; otherwise find it in the line.
    const raw = request.raw?.member === 'doc' ? request.raw.text : request.text !== undefined ? rawBodyMemberText(request.text, 'store', 'doc') : undefined;
    if (raw !== undefined) {
      // JSON.parse rounded any integer beyond ±2^53 in `doc`: then it is parsed again from its text, exactly, on first use.
      if (hasLongDigits(raw)) return new StoreWithDocText(binding, key, values, out.keyPacked, out.exists, out.delete, raw);
      out.docJson = raw;
    }
  }
  return out;
}

class Schemas extends ConnectorSchemas {
  bindings<Resource>(spec: MaterializationSpec): MaterializeBinding<Resource>[] {
    return (spec.bindings ?? []).map((b, index) => ({
      index,
      resource: this.resourceValidator.validate<Resource>(b.resourceConfig, `resource config of binding ${index}${b.collection?.name ? ` (${b.collection.name})` : ''}`),
      spec: b,
    }));
  }
}

/**
 * Serves materialize RPCs on stdin/stdout (or the given input/output): unary ones until the input ends, or
 * an `open` session. Resolves when they ended cleanly; rejects with the error to report (the caller exits 1).
 */
export async function serveMaterialize<Config = JsonObject, Resource = JsonObject>(
  connector: MaterializeConnector<Config, Resource>,
  options: ServeOptions = {},
): Promise<void> {
  const io = openSessionIO(options, MATERIALIZE_REQUESTS, MATERIALIZE_SCAN);
  const schemas = new Schemas(connector);
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
      io.log.debug('materialize request', { request: request.variant });
      const base = { log: io.log, signal: io.controller.signal };
      switch (request.variant) {
        case 'spec':
          schemas.check();
          await io.writer.write({ spec: materializeSpecResponse(connector) });
          break;
        case 'validate': {
          const req = request.body as MaterializeValidateRequest;
          const config = schemas.configValidator.validate<Config>(req.config, 'endpoint config');
          const bindings = (req.bindings ?? []).map((b, i) => ({
            resource: schemas.resourceValidator.validate<Resource>(b.resourceConfig, `resource config of binding ${i}${b.collection?.name ? ` (${b.collection.name})` : ''}`),
            collection: b.collection,
            fieldConfig: b.fieldConfig ?? {},
            backfill: b.backfill ?? 0,
            ...(b.groupBy ? { groupBy: b.groupBy } : {}),
          }));
          const validated = await connector.validate({
            ...base, config, name: req.name ?? '', bindings,
            ...(req.lastMaterialization ? { lastMaterialization: req.lastMaterialization } : {}),
          });
          if (!Array.isArray(validated) || validated.length !== bindings.length) {
            throw new ProtocolError(`the connector's validate() returned ${Array.isArray(validated) ? validated.length : 'no'} bindings for ${bindings.length} requested`);
          }
          await io.writer.write({ validated: { bindings: validated.map(encodeValidated) } });
          break;
        }
        case 'apply': {
          const req = request.body as unknown as MaterializeApplyRequest;
          if (!isPlainObject(req.materialization)) throw new ProtocolError(`"apply" request (line ${request.line}) has no materialization spec`);
          const config = schemas.configValidator.validate<Config>(req.materialization.config, 'endpoint config');
          const applied = await connector.apply({
            ...base, config, materialization: req.materialization, bindings: schemas.bindings<Resource>(req.materialization),
            version: req.version ?? '', state: isPlainObject(req.state) ? req.state : {}, dryRun: req.dryRun === true,
            ...(req.lastMaterialization ? { lastMaterialization: req.lastMaterialization } : {}),
          });
          const out: JsonObject = {};
          if (applied?.actionDescription) out['actionDescription'] = applied.actionDescription;
          if (applied?.state) out['state'] = encodeState(applied).state!;
          await io.writer.write({ applied: out });
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

type Phase = 'awaitingAcknowledge' | 'acknowledged' | 'loading' | 'storing';

const PHASE_TEXT: Record<Phase, string> = {
  awaitingAcknowledge: 'awaiting acknowledge',
  acknowledged: 'acknowledged (awaiting the next transaction)',
  loading: 'loading',
  storing: 'storing',
};
const EXPECTED: Record<Phase, string[]> = {
  awaitingAcknowledge: ['acknowledge'],
  acknowledged: ['load', 'flush'],
  loading: ['load', 'flush'],
  storing: ['store', 'startCommit'],
};

async function runSession<Config, Resource>(
  connector: MaterializeConnector<Config, Resource>,
  io: SessionIO,
  schemas: Schemas,
  openRequest: Envelope,
): Promise<void> {
  const req = openRequest.body as unknown as MaterializeOpenRequest;
  if (!isPlainObject(req.materialization)) throw new ProtocolError(`"open" request (line ${openRequest.line}) has no materialization spec`);
  const materialization = req.materialization;
  const config = schemas.configValidator.validate<Config>(materialization.config, 'endpoint config');
  const bindings = schemas.bindings<Resource>(materialization);
  const count = bindings.length;
  const { transactor, opened } = await connector.open({
    config, log: io.log, signal: io.controller.signal, materialization, bindings,
    range: req.range ?? {}, version: req.version ?? '', state: isPlainObject(req.state) ? req.state : {},
  });
  io.requests.fast = (line) => fastRequest(line, count);
  const failure = new Tripwire();
  let loads: AsyncQueue<DecodedLoad> | null = null;
  let stores: AsyncQueue<DecodedStore> | null = null;
  try {
    await io.writer.write({ opened: encodeOpened(opened) });
    let phase: Phase = 'awaitingAcknowledge';
    let loading: Promise<void> | null = null;
    let loadsOpen = false;
    let storing: Promise<void> | null = null;
    let transactions = 0;

    const loaded = async (binding: number, doc: JsonObject): Promise<void> => {
      if (!loadsOpen) throw new ProtocolError('the transactor called loaded() outside of its load() call (after flushed)');
      const index = checkBindingIndex(binding, count, 'loaded document');
      if (!isPlainObject(doc)) throw new ProtocolError(`loaded document for binding ${index}: doc must be a JSON object`);
      await io.writer.writeDocument({ loaded: index === 0 ? { doc } : { binding: index, doc } });
    };
    const startLoads = (): void => {
      loads = new AsyncQueue<DecodedLoad>();
      loadsOpen = true;
      const queue = loads;
      loading = failure.watch(transactor.load(queue, loaded));
      // A load() that returns early must not leave the reader blocked on a full queue.
      loading.then(() => queue.abandon(), () => undefined);
    };
    const startStores = (): void => {
      stores = new AsyncQueue<DecodedStore>();
      const queue = stores;
      storing = failure.watch(transactor.store(queue));
      storing.then(() => queue.abandon(), () => undefined);
    };

    while (true) {
      // Requests already read are taken synchronously; only an empty buffer waits (racing failures).
      let request = io.requests.tryNext();
      if (request === undefined) request = await failure.must(io.requests.next());
      else failure.throwIfFailed();
      if (isStopped(request)) {
        io.log.info('materialize session stopped', { phase: PHASE_TEXT[phase] });
        return;
      }
      if (request === null) {
        if (phase === 'acknowledged') {
          io.log.debug('stdin ended after acknowledge: stopping', { transactions });
          return;
        }
        throw unexpectedEof(PHASE_TEXT[phase], EXPECTED[phase]);
      }
      const v = request.variant;
      if (phase === 'awaitingAcknowledge' && v === 'acknowledge') {
        const result = await failure.must(transactor.acknowledge());
        await io.writer.write({ acknowledged: encodeState(result) });
        phase = 'acknowledged';
      } else if ((phase === 'acknowledged' || phase === 'loading') && v === 'load') {
        if (phase === 'acknowledged') startLoads();
        phase = 'loading';
        const pushed = loads!.push((request as DecodedRequest).load ?? decodeLoad(request, count));
        if (loads!.isFull) await failure.must(pushed);
      } else if ((phase === 'acknowledged' || phase === 'loading') && v === 'flush') {
        if (phase === 'acknowledged') startLoads();
        loads!.end();
        await failure.must(loading!);
        loadsOpen = false;
        if (loads!.unread > 0) throw new ProtocolError(`the transactor's load() returned without reading every load (${loads!.unread} left)`);
        await io.writer.write({ flushed: {} });
        phase = 'storing';
      } else if (phase === 'storing' && v === 'store') {
        if (stores === null) startStores();
        const pushed = stores!.push((request as DecodedRequest).store ?? decodeStore(request, count));
        if (stores!.isFull) await failure.must(pushed);
      } else if (phase === 'storing' && v === 'startCommit') {
        if (stores === null) startStores();
        stores!.end();
        await failure.must(storing!);
        if (stores!.unread > 0) throw new ProtocolError(`the transactor's store() returned without reading every store (${stores!.unread} left)`);
        const checkpoint = request.body['runtimeCheckpoint'];
        const result = await failure.must(transactor.startCommit(isPlainObject(checkpoint) ? checkpoint : {}));
        await io.writer.write({ startedCommit: encodeState(result) });
        stores = null;
        storing = null;
        loads = null;
        loading = null;
        transactions++;
        phase = 'awaitingAcknowledge';
      } else {
        throw unexpectedRequest(request, PHASE_TEXT[phase], EXPECTED[phase]);
      }
    }
  } finally {
    // A transaction cut short (stop, error): what is still queued must never reach the destination, and
    // the transactor's iterators end now (with an error) rather than keep yielding while it is closed.
    const ended = new ProtocolError('the session ended before this transaction was committed');
    for (const queue of [loads as AsyncQueue<unknown> | null, stores as AsyncQueue<unknown> | null]) {
      if (queue !== null && !queue.isEnded) {
        queue.abandon();
        queue.fail(ended);
      }
    }
    await closeTransactor(transactor, io);
  }
}

async function closeTransactor(transactor: Transactor, io: SessionIO): Promise<void> {
  if (!transactor.close) return;
  try {
    await transactor.close();
  } catch (err) {
    io.log.warn('closing the transactor failed', { error: err });
  }
}
