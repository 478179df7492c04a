// The source-http-file connector: spec, discover, validate and one capture sweep per session.
// State per binding, under bindingStateV1.<stateKey>: upstream's fields and sweep rules (state.ts), plus
// Sluice's resume extras (etag, byteOffset, csv) while a file is mid-transfer. `_meta/file` and the
// state's `path` are the file's name as upstream derives it: the last segment of the configured URL's
// percent-decoded path (no query, no credentials).
import type {
  BaseContext, CaptureBinding, CaptureConnector, CaptureOpenContext, CaptureOutput, DiscoveredBinding, JsonObject, JsonSchema,
  JsonValue, Logger,
} from '@sluice/runtime';
import { ConfigError, DecodeError } from './errors.ts';
import { HttpClient } from './http.ts';
import type { HttpClientOptions } from './http.ts';
import type { FileInfo } from './http-response.ts';
import { redactUrl, urlWithoutQuery } from './redact-url.ts';
import { minorGcBudget } from './gc.ts';
import { framedBatches, LineSink } from './lines.ts';
import { parseInWorker, releasePrestartedThread, useWorker } from './parallel.ts';
import type { ParsedBatch } from './parallel.ts';
import { checkParserConfig, parseFile } from './pipeline.ts';
import { captureParquet, checkParquetCompression, discoverParquet, hasParquetMagic, parquetBy } from './parquet-capture.ts';
import { configSchema, hiddenParserOptionsSchema, resourceSchema } from './schema.ts';
import { DISCOVER_MAX_RECORDS, SchemaInference } from './discover-schema.ts';
export { inferSchema } from './discover-schema.ts';
import type { CsvResume } from './csv.ts';
import { Decorator, isCustomDecoration, META_OFFSET, pointerTokens } from './decorate.ts';
import { fileDonePatch, formatTime, horizonOf, midFilePatch, patchChanges, readState, skipReason, sweepDonePatch } from './state.ts';
import type { BindingState, ResumeExtras, SweepState } from './state.ts';
import type { EndpointConfig, ResourceConfig } from './schema.ts';

export const DOCUMENTATION_URL = 'https://go.estuary.dev/source-http-file';
export const DEFAULT_CHECKPOINT_EVERY = 10_000;

export interface ConnectorOptions {
  /** HTTP timeouts and retry policy (tests shorten them). */
  http?: Partial<Omit<HttpClientOptions, 'url' | 'user' | 'password' | 'headers' | 'signal' | 'log'>>;
  /** Emit a checkpoint after this many documents (and at the end of the file). */
  checkpointEvery?: number;
  /**
   * Parse in a worker thread (parallel.ts): true/false, or by default SLUICE_HTTP_FILE_WORKER (0 = never,
   * 1 = always) else for files of at least 4 MiB. Discover always samples on the main thread.
   */
  worker?: boolean;
}

const ENDPOINT_KEYS = ['url', 'credentials', 'parser', 'headers'];
const PARSER_KEYS = ['format', 'compression', 'defaultOffset', 'addRecordOffset', 'addValues', 'filename', 'contentType', 'contentEncoding'];

/** Checks what the schema cannot say: unknown keys (decoding is strict, as upstream) and the URL. */
export function checkConfig(config: EndpointConfig): void {
  const problems: string[] = [];
  const unknown = Object.keys(config).filter((k) => !ENDPOINT_KEYS.includes(k));
  if (unknown.length) problems.push(`unknown endpoint config ${unknown.length === 1 ? 'property' : 'properties'} ${unknown.map((k) => `'${k}'`).join(', ')} (allowed: ${ENDPOINT_KEYS.join(', ')})`);
  const parserUnknown = Object.keys(config.parser ?? {}).filter((k) => !PARSER_KEYS.includes(k));
  if (parserUnknown.length) problems.push(`unknown parser ${parserUnknown.length === 1 ? 'property' : 'properties'} ${parserUnknown.map((k) => `'${k}'`).join(', ')}`);
  if (typeof config.url !== 'string' || config.url.trim() === '') problems.push('url is required');
  else {
    try {
      const u = new URL(config.url);
      if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) problems.push(`URL "${redactUrl(config.url)}" is not valid (it must be a complete URL with an HTTP scheme and domain)`);
      else if (/%(?![0-9a-f]{2})/i.test(u.pathname)) problems.push(`URL "${redactUrl(config.url)}" is invalid: its path has a '%' that does not start a percent-escape (write it as %25)`);
    } catch (err) {
      problems.push(`URL is invalid: '${redactUrl(config.url)}' (${(err as Error).message}); give a complete URL such as https://example.com/data.csv`);
    }
  }
  const headerKeys = Object.keys(config.headers ?? {}).filter((k) => k !== 'items' && k !== 'followRedirects');
  if (headerKeys.length) problems.push(`unknown headers ${headerKeys.length === 1 ? 'property' : 'properties'} ${headerKeys.map((k) => `'${k}'`).join(', ')} (allowed: items, followRedirects)`);
  const parser = (config.parser ?? {}) as Record<string, unknown>;
  for (const [k, spec] of Object.entries(hiddenParserOptionsSchema.properties)) {
    const v = parser[k];
    if (v === undefined || v === null) continue;
    const ok = spec.type === 'object' ? typeof v === 'object' && !Array.isArray(v) : typeof v === spec.type;
    if (!ok) problems.push(`parser.${k} must be ${spec.type === 'object' ? 'an object' : `a ${spec.type}`} (${spec.description.replace(/\.$/, '')}), got ${JSON.stringify(v)}`);
  }
  const offsetPointer = parser['addRecordOffset'];
  if (typeof offsetPointer === 'string' && offsetPointer !== '' && !offsetPointer.startsWith('/')) problems.push(`parser.addRecordOffset must be a JSON pointer such as '/_meta/offset', got '${offsetPointer}'`);
  for (const k of Object.keys((parser['addValues'] as Record<string, unknown> | undefined) ?? {})) {
    if (k !== '' && !k.startsWith('/')) problems.push(`parser.addValues keys must be JSON pointers such as '/source', got '${k}'`);
  }
  try {
    checkParserConfig(config.parser);
  } catch (err) {
    problems.push(`parser.defaultOffset: ${(err as Error).message}`);
  }
  if (problems.length) throw new ConfigError(`Invalid endpoint config: ${problems.join('; ')}`);
}

/** The binding name for a URL: its last non-empty path segment, else the host. */
export function recommendedName(url: string): string {
  const u = new URL(url);
  const segments = u.pathname.replace(/\/+$/, '').split('/');
  const last = decodeURIComponent(segments[segments.length - 1] ?? '');
  return (last || u.hostname).replace(/^\/+|\/+$/g, '');
}

/**
 * The file's name as upstream derives it (its listing path, hence `_meta/file` and the state's `path`):
 * the last "/"-segment of the URL's percent-decoded path, not trimmed ("" for a URL ending in "/").
 * No query, fragment or credentials. Percent-escapes decode to bytes read as UTF-8 (invalid ones
 * become U+FFFD, as Go's JSON encoding of the name would give).
 */
export function fileNameOf(url: string): string {
  const u = new URL(url);
  const bytes: number[] = [];
  const path = u.pathname;
  for (let i = 0; i < path.length; i++) {
    const m = path[i] === '%' ? /^[0-9a-f]{2}$/i.exec(path.slice(i + 1, i + 3)) : null;
    if (m) { bytes.push(parseInt(m[0], 16)); i += 2; continue; }
    for (const b of Buffer.from(path[i] as string)) bytes.push(b);
  }
  const decoded = Buffer.from(bytes).toString('utf8');
  return decoded.slice(decoded.lastIndexOf('/') + 1);
}

function dispositionName(value: string | null): string | null {
  if (!value) return null;
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(value);
  return m ? decodeURIComponent(m[1] as string) : null;
}

/** `fresh`: nothing was captured yet (discover, validate, a first capture): a refused connection fails at once. */
function httpClient(config: EndpointConfig, options: ConnectorOptions, ctx: BaseContext<EndpointConfig>, fresh = false): HttpClient {
  const headers: [string, string][] = [];
  for (const item of config.headers?.items ?? []) {
    if (item && typeof item.key === 'string' && item.key !== '') headers.push([item.key, item.value ?? '']);
  }
  return new HttpClient({
    ...options.http,
    url: config.url,
    ...(config.credentials ? { user: config.credentials.user ?? '', password: config.credentials.password ?? '' } : {}),
    headers,
    ...(config.headers?.followRedirects === true ? { forwardHeadersOnRedirect: true } : {}),
    signal: ctx.signal,
    log: ctx.log,
    ...(fresh ? { retryRefusedBeforeResponse: false } : {}),
  });
}

/**
 * What format and compression detection see: `parser.filename` if set, else the file's name (then the
 * final URL's name and Content-Disposition); the response's Content-Type / Content-Encoding, else
 * `parser.contentType` / `parser.contentEncoding` (upstream: the response's headers win when present).
 */
function metaOf(config: EndpointConfig, info: FileInfo | null): { filename: string; altNames: string[]; contentType: string | null; contentEncoding: string | null } {
  const altNames: string[] = [];
  const name = fileNameOf(config.url);
  const filename = config.parser?.filename ? config.parser.filename : name;
  if (info) {
    const finalName = fileNameOf(info.finalUrl);
    if (finalName && finalName !== filename) altNames.push(finalName);
    const disp = dispositionName(info.contentDisposition);
    if (disp) altNames.push(disp);
  }
  return {
    filename,
    altNames,
    contentType: info?.contentType || config.parser?.contentType || null,
    contentEncoding: info?.contentEncoding || config.parser?.contentEncoding || null,
  };
}

/**
 * Discover's key and schema when `parser.addRecordOffset` moves the offset: the key names that location,
 * `_meta` no longer requires `offset`, and the location is an integer property (objects created along it).
 */
function placeOffset(binding: DiscoveredBinding, pointer: string): void {
  if (pointer === META_OFFSET) return;
  binding.key = ['/_meta/file', pointer];
  const schema = binding.documentSchema as JsonObject;
  const meta = (schema['properties'] as Record<string, JsonObject>)['_meta'] as JsonObject;
  delete (meta['properties'] as JsonObject)['offset'];
  meta['required'] = ['file'];
  let node = schema;
  const tokens = pointerTokens(pointer);
  tokens.forEach((t, i) => {
    const name = 'index' in t ? String(t.index) : t.prop;
    const props = (node['properties'] ??= {}) as Record<string, JsonObject>;
    node['required'] = [...new Set([...((node['required'] as string[] | undefined) ?? []), name])];
    const last = i === tokens.length - 1;
    const existing = props[name]?.['properties'];
    props[name] = last ? { type: 'integer', minimum: 0, description: 'The offset of the record within the source file (parser.addRecordOffset)' } : { type: 'object', ...(existing ? { properties: existing } : {}) };
    node = props[name] as JsonObject;
  });
}

/** Checks the format options that need code to check (encoding label, .proto source and message). */
export async function checkFormatConfig(config: EndpointConfig): Promise<void> {
  const format = config.parser?.format;
  if (format?.type === 'csv' && format.config?.encoding) {
    const { resolveEncodingLabel } = await import('./charset.ts');
    resolveEncodingLabel(format.config.encoding);
  }
  if (format?.type === 'protobuf') {
    if (!format.config?.message || !format.config.protoFile) throw new ConfigError('the protobuf format needs parser.format.config.message and parser.format.config.protoFile');
    const { compileMessageType } = await import('./protobuf.ts');
    compileMessageType(format.config.protoFile, format.config.message);
  }
}

// ------------------------------------------------------------------------------------------------

function rawStateOf(state: JsonObject, key: string): unknown {
  const all = state['bindingStateV1'];
  if (!all || typeof all !== 'object' || Array.isArray(all)) return undefined;
  return (all as JsonObject)[key];
}

function checkpoint(key: string, patch: BindingState): CaptureOutput {
  return { checkpoint: { state: { updated: { bindingStateV1: { [key]: patch as unknown as JsonValue } }, mergePatch: true } } };
}

/**
 * The outputs of batches, one at a time. An async generator costs several promise hops per yield;
 * here an output of a batch already produced costs one resolved promise.
 */
export function flattenBatches(batches: AsyncGenerator<CaptureOutput[]>): AsyncIterable<CaptureOutput> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<CaptureOutput> {
      let batch: CaptureOutput[] = [];
      let i = 0;
      const pull = async (): Promise<IteratorResult<CaptureOutput>> => {
        while (i >= batch.length) {
          const r = await batches.next();
          if (r.done) return { value: undefined, done: true };
          batch = r.value;
          i = 0;
        }
        return { value: batch[i++] as CaptureOutput, done: false };
      };
      return {
        next: () => (i < batch.length ? Promise.resolve({ value: batch[i++] as CaptureOutput, done: false }) : pull()),
        return: async () => {
          batch = [];
          i = 0;
          await batches.return(undefined);
          return { value: undefined, done: true };
        },
      };
    },
  };
}

/** One binding's capture, as batches of outputs (the documents of one parsed chunk, then any checkpoint). */
async function* captureBinding(ctx: CaptureOpenContext<EndpointConfig, ResourceConfig>, binding: CaptureBinding<ResourceConfig>, options: ConnectorOptions): AsyncGenerator<CaptureOutput[]> {
  const config = ctx.config;
  const log: Logger = ctx.log.child({ binding: binding.index, stream: binding.resource.stream });
  const raw = rawStateOf(ctx.state, binding.stateKey);
  // Fresh: nothing captured yet for this binding, so a refused connection is a wrong URL, not a restart.
  const fresh = raw === undefined || raw === null || (typeof raw === 'object' && Object.keys(raw).length === 0);
  const client = httpClient(config, options, ctx, fresh);
  const head = await client.head();
  const name = fileNameOf(config.url);
  const prev = readState(raw, binding.stateKey, { name, url: urlWithoutQuery(config.url) });
  const modMs = head.lastModifiedDate.getTime();
  const etag = head.etag;
  // Upstream's sweep: keep the bound of an interrupted sweep, else the horizon.
  const sweep: SweepState = { minBound: prev.minBound, maxBound: prev.maxBound ?? formatTime(horizonOf(Date.now())), maxMod: prev.maxMod, path: prev.path, records: prev.records, complete: prev.complete };
  const finish = function* (): Generator<CaptureOutput[]> {
    const done = sweepDonePatch(sweep);
    if (patchChanges(raw, done)) yield [checkpoint(binding.stateKey, done)];
  };
  const skip = skipReason(prev, name, modMs, head.contentLength);
  if (skip !== null) {
    log.info(`skipping the file: ${skip}`, { lastModified: head.lastModified, etag });
    yield* finish();
    return;
  }
  // The same version as an interrupted capture of this file: resume after its records.
  const sameVersion = prev.path === name && prev.maxMod !== null && Date.parse(prev.maxMod) === modMs && (prev.etag === null || prev.etag === etag);
  const resumeFrom = sameVersion && prev.records > 0 ? prev.records : 0;
  if (!sameVersion && prev.path === name && prev.records > 0) log.info(`the file changed since the interrupted capture of ${prev.records} documents; capturing this version from the start`, { lastModified: head.lastModified, etag });
  sweep.maxMod = prev.maxMod !== null && Date.parse(prev.maxMod) >= modMs ? prev.maxMod : formatTime(modMs);
  sweep.path = name;
  sweep.complete = false;
  // Resume by Range when the state says where record `records` starts; otherwise re-read and skip.
  const byteResume = resumeFrom > 0 && prev.byteOffset !== null ? { byteOffset: prev.byteOffset, csv: prev.csv ?? undefined } : undefined;
  const parserOptions = config.parser;
  const decorator = isCustomDecoration(parserOptions) ? new Decorator(parserOptions ?? {}, name) : null;
  const midFile = (records: number, extras: Partial<ResumeExtras> = {}): CaptureOutput => checkpoint(binding.stateKey, midFilePatch({ ...sweep, records }, { etag, byteOffset: null, csv: null, parquet: null, ...extras }));
  if (resumeFrom > 0) {
    log.info(`resuming the capture of this version of the file after ${resumeFrom} documents${byteResume && !decorator ? ` from byte ${byteResume.byteOffset} (Range request)` : ' (re-reading and skipping them)'}`, { lastModified: head.lastModified });
  } else yield [midFile(0)];

  const every = options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY;
  const done = function* (): Generator<CaptureOutput[]> {
    yield [checkpoint(binding.stateKey, fileDonePatch(sweep))];
    sweep.complete = true;
    yield* finish();
  };
  // Parquet is read by position (parquet-capture.ts): known from the config, name or Content-Type, or from the body's magic below.
  const parquet = async function* (by: string, body: AsyncIterable<Uint8Array> | null): AsyncGenerator<CaptureOutput[]> {
    log.debug(`format: parquet (by ${by})`);
    if (decorator) throw new ConfigError('parser.addRecordOffset and parser.addValues are not supported for Parquet files: remove them (documents get _meta.file and _meta.offset)');
    const m = metaOf(config, head);
    checkParquetCompression(config, [m.filename, ...m.altNames], head.contentEncoding);
    const total = yield* captureParquet({
      client, head, body, log, config, file: name, shown: redactUrl(config.url), binding: binding.index, every, resumeFrom, resumeAt: resumeFrom > 0 ? prev.parquet : null,
      progress: (records, at) => midFile(records, { parquet: at }),
    });
    log.info(`captured ${total - resumeFrom} documents (file has ${total})`, { lastModified: head.lastModified, etag });
    yield* done();
  };
  const headMeta = metaOf(config, head);
  const parquetReason = parquetBy(config, [headMeta.filename, ...headMeta.altNames], head.contentType);
  if (parquetReason !== null) {
    yield* parquet(parquetReason, null);
    return;
  }
  let info: FileInfo | null = null;
  let skipped = 0;
  let firstSkipped: DecodeError | null = null;
  // Custom decoration parses objects on this thread, from the start of the file.
  const resume = decorator ? undefined : byteResume;
  const body = client.get({ validator: { etag, lastModified: head.lastModified }, size: head.contentEncoding ? null : head.contentLength, onResponse: (i) => { info = i; }, ...(resume ? { from: resume.byteOffset } : {}) });
  // The GET's headers decide detection; they arrive before the first chunk.
  const lazyMeta = { get value() { return metaOf(config, info ?? head); } };
  const bodyIt = body[Symbol.asyncIterator]();
  const firstChunk = await bodyIt.next();
  // Returning the replay returns the body (which destroys the response): a parse error mid-body must
  // not leave the request to the session's abort, whose AbortError would then mask the parse error.
  const replay = (async function* () {
    try {
      if (!firstChunk.done) yield firstChunk.value;
      else return;
      while (true) {
        const r = await bodyIt.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      await bodyIt.return?.(undefined);
    }
  })();
  const meta = lazyMeta.value;
  if (!resume && (config.parser?.format?.type ?? 'auto') === 'auto' && hasParquetMagic(firstChunk.value)) {
    yield* parquet('its first bytes, PAR1', replay);
    return;
  }
  let offset = resume ? resumeFrom : 0;
  let sinceCheckpoint = 0;
  const bindingIndex = binding.index;
  const tracker: { position: number | null; csv: CsvResume | null } = { position: null, csv: null };
  const onSkippedRow = (err: DecodeError): void => {
    skipped++;
    firstSkipped ??= err;
    log.warn(`malformed CSV row excluded (within errorThreshold): ${err.message}`);
  };
  // Framed lines in batches: from a parser thread (big files), or parsed here by the same loop (lines.ts).
  let batches: AsyncGenerator<ParsedBatch, number | void>;
  let lines: LineSink | null = null;
  if (!decorator && useWorker(options.worker, head.contentLength)) {
    batches = parseInWorker(replay, { meta, parser: config.parser, resume, binding: bindingIndex, file: name, startOffset: offset, resumeFrom }, {
      log: (message) => log.debug(message),
      onSkippedRow,
    }, ctx.signal);
  } else {
    // A thread started in advance for a big file is not needed for this one.
    releasePrestartedThread();
    const sink = new LineSink(bindingIndex, name, offset, resumeFrom, decorator ? (record, at) => decorator.apply(record, at) : null);
    lines = sink;
    const parsed = parseFile(replay, meta, config.parser, {
      // Upstream's decoration works on objects: no CSV rows written as JSON from their bytes then.
      ...(decorator === null ? { lines: sink } : {}),
      tracker,
      onCompression: (c, by) => log.debug(`compression: ${c} (by ${by})`),
      onFormat: (f, member) => log.debug(`format: ${f.type}${member ? ` (zip member ${member})` : ''}`),
      onSkippedRow,
    }, resume);
    batches = (async function* () {
      for await (const b of framedBatches(parsed, sink, tracker, { handled: minorGcBudget() })) {
        // Once written, the buffer is filled again.
        yield { ...b, written: (err?: Error | null) => { if (!err) sink.recycle(b.lines.buffer as ArrayBuffer); } };
      }
    })();
  }
  try {
    while (true) {
      const r = await batches.next();
      if (r.done) {
        offset = lines?.offset ?? (r.value as number);
        break;
      }
      const b = r.value;
      offset = b.offset;
      sinceCheckpoint += b.documents;
      const out: CaptureOutput[] = [{ capturedLines: { documents: b.documents, lines: b.lines, written: b.written } }];
      // Checkpoints fall at batch ends, where the byte position of the next record is known.
      if (!b.failed && sinceCheckpoint >= every) {
        sinceCheckpoint = 0;
        out.push(midFile(offset, b.position === null || decorator ? {} : { byteOffset: b.position, csv: b.csv }));
      }
      yield out;
    }
  } finally {
    await batches.return(offset);
  }
  if (offset < resumeFrom) {
    throw new DecodeError(`the file now yields ${offset} documents but ${resumeFrom} were already captured from this version; the parse is not deterministic`);
  }
  if (skipped) log.warn(`${skipped} malformed CSV rows were excluded (within errorThreshold)`, { first: (firstSkipped as DecodeError | null)?.message });
  log.info(`captured ${offset - resumeFrom} documents (file has ${offset})`, { lastModified: head.lastModified, etag });
  yield* done();
}

export function createHttpFileConnector(options: ConnectorOptions = {}): CaptureConnector<EndpointConfig, ResourceConfig> {
  return {
    configSchema: configSchema as unknown as JsonSchema,
    resourceConfigSchema: resourceSchema as unknown as JsonSchema,
    // Upstream's parser struct decodes these too (its schema does not list them): the runtime refuses every
    // other key the schema does not name.
    configKeysBeyondSchema: { '/parser': PARSER_KEYS.filter((k) => !['format', 'compression', 'defaultOffset'].includes(k)) },
    documentationUrl: DOCUMENTATION_URL,
    resourcePathPointers: ['/stream'],

    async discover(ctx) {
      checkConfig(ctx.config);
      await checkFormatConfig(ctx.config);
      const config = ctx.config;
      const client = httpClient(config, options, ctx, true);
      const head = await client.head();
      const name = recommendedName(config.url);
      const binding = (documentSchema: JsonSchema): DiscoveredBinding[] => {
        const b: DiscoveredBinding = { recommendedName: name, resourceConfig: { stream: name }, documentSchema, key: ['/_meta/file', '/_meta/offset'] };
        if (isCustomDecoration(config.parser)) placeOffset(b, new Decorator(config.parser ?? {}, '').offsetPointer);
        return [b];
      };
      const parquetFile = async (body: AsyncIterable<Uint8Array> | null): Promise<DiscoveredBinding[]> => {
        if (isCustomDecoration(config.parser)) throw new ConfigError('parser.addRecordOffset and parser.addValues are not supported for Parquet files: remove them (documents get _meta.file and _meta.offset)');
        const m = metaOf(config, head);
        checkParquetCompression(config, [m.filename, ...m.altNames], head.contentEncoding);
        return binding(await discoverParquet({ client, head, body, log: ctx.log, shown: redactUrl(config.url) }));
      };
      const headMeta = metaOf(config, head);
      if (parquetBy(config, [headMeta.filename, ...headMeta.altNames], head.contentType) !== null) return parquetFile(null);
      let info: FileInfo | null = null;
      const inference = new SchemaInference();
      let csv = false;
      let complete = true;
      const body = client.get({ onResponse: (i) => { info = i; } });
      const it = body[Symbol.asyncIterator]();
      const first = await it.next();
      const replay = (async function* () {
        try {
          if (first.done) return;
          yield first.value;
          while (true) {
            const r = await it.next();
            if (r.done) return;
            yield r.value;
          }
        } finally {
          await it.return?.(undefined);
        }
      })();
      if ((config.parser?.format?.type ?? 'auto') === 'auto' && hasParquetMagic(first.value)) return parquetFile(replay);
      // The whole file when it has at most DISCOVER_MAX_RECORDS records, so the schema holds for all of them.
      const parsed = parseFile(replay, metaOf(config, info ?? head), config.parser, { onFormat: (f) => { csv = f.type === 'csv'; } });
      try {
        for await (const batch of parsed) {
          for (const r of batch) inference.add(r);
          if (inference.records > DISCOVER_MAX_RECORDS) { complete = false; break; }
        }
      } finally {
        await parsed.return(undefined);
      }
      return binding(inference.schema({ complete, csv }));
    },

    async validate(ctx) {
      checkConfig(ctx.config);
      await checkFormatConfig(ctx.config);
      await httpClient(ctx.config, options, ctx, true).head();
      return ctx.bindings.map((b) => {
        if (!b.resource.stream) throw new ConfigError('Invalid resource config: stream is required');
        return [b.resource.stream];
      });
    },

    open(ctx) {
      return flattenBatches((async function* () {
        checkConfig(ctx.config);
        await checkFormatConfig(ctx.config);
        for (const binding of ctx.bindings) yield* captureBinding(ctx, binding, options);
      })());
    },
  };
}
