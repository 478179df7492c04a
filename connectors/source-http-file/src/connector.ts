// The source-http-file connector: spec, discover, validate and one capture sweep per session.
// State per binding, under bindingStateV1.<stateKey> (upstream-compatible field names):
//   { path, maxMod, etag, records, complete, minBound }
// path = the file (`_meta/file`), maxMod = Last-Modified of the version being/last captured (RFC 3339),
// etag = its ETag, records = documents emitted so far, complete = the version was captured in full,
// minBound = Last-Modified of the last complete capture (what upstream uses to skip).
import type {
  BaseContext, CaptureBinding, CaptureConnector, CaptureOpenContext, CaptureOutput, DiscoveredBinding, JsonObject, JsonSchema,
  JsonValue, Logger,
} from '@sluice/runtime';
import { ConfigError, DecodeError } from './errors.ts';
import { HttpClient, redactUrl } from './http.ts';
import type { FileInfo, HttpClientOptions } from './http.ts';
import { minorGcBudget } from './gc.ts';
import { framedBatches, LineSink } from './lines.ts';
import { parseInWorker, releasePrestartedThread, useWorker } from './parallel.ts';
import type { ParsedBatch } from './parallel.ts';
import { checkParserConfig, parseFile } from './pipeline.ts';
import { captureParquet, checkParquetCompression, discoverParquet, hasParquetMagic, parquetBy } from './parquet-capture.ts';
import type { ParquetPosition } from './parquet-capture.ts';
import { configSchema, resourceSchema } from './schema.ts';
import type { CsvResume } from './csv.ts';
import type { EndpointConfig, ResourceConfig } from './schema.ts';

export const DOCUMENTATION_URL = 'https://go.estuary.dev/source-http-file';
export const DEFAULT_CHECKPOINT_EVERY = 10_000;
const DISCOVER_SAMPLE_RECORDS = 1000;

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

interface BindingState {
  path?: string;
  maxMod?: string | null;
  etag?: string | null;
  records?: number;
  complete?: boolean;
  minBound?: string;
  /** Raw byte offset where record `records` starts (uncompressed UTF-8 CSV/JSON only), or null. */
  byteOffset?: number | null;
  /** CSV header names and dialect, needed to parse from byteOffset. */
  csv?: CsvResume | null;
  /** Parquet: the row group and row where record `records` is (mid-file only). */
  parquet?: ParquetPosition | null;
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
    } catch (err) {
      problems.push(`URL is invalid: '${config.url}' (${(err as Error).message}); give a complete URL such as https://example.com/data.csv`);
    }
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

/** The name used for format and compression detection: the last path segment of the URL. */
export function fileNameOf(url: string): string {
  const u = new URL(url);
  const segments = u.pathname.split('/');
  try {
    return decodeURIComponent(segments[segments.length - 1] ?? '');
  } catch {
    return segments[segments.length - 1] ?? '';
  }
}

function dispositionName(value: string | null): string | null {
  if (!value) return null;
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(value);
  return m ? decodeURIComponent(m[1] as string) : null;
}

function httpClient(config: EndpointConfig, options: ConnectorOptions, ctx: BaseContext<EndpointConfig>): HttpClient {
  const headers: [string, string][] = [];
  for (const item of config.headers?.items ?? []) {
    if (item && typeof item.key === 'string' && item.key !== '') headers.push([item.key, item.value ?? '']);
  }
  return new HttpClient({
    ...options.http,
    url: config.url,
    ...(config.credentials ? { user: config.credentials.user ?? '', password: config.credentials.password ?? '' } : {}),
    headers,
    signal: ctx.signal,
    log: ctx.log,
  });
}

function metaOf(config: EndpointConfig, info: FileInfo | null): { filename: string; altNames: string[]; contentType: string | null; contentEncoding: string | null } {
  const altNames: string[] = [];
  if (info) {
    const finalName = fileNameOf(info.finalUrl);
    if (finalName && finalName !== fileNameOf(config.url)) altNames.push(finalName);
    const disp = dispositionName(info.contentDisposition);
    if (disp) altNames.push(disp);
  }
  return { filename: fileNameOf(config.url), altNames, contentType: info?.contentType ?? null, contentEncoding: info?.contentEncoding ?? null };
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
// Discover: a document schema inferred from a sample.

const INTEGER = /^-?\d+$/;
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
const FORMATS: [string, (s: string) => boolean][] = [
  ['integer', (s) => INTEGER.test(s)],
  ['number', (s) => NUMBER.test(s)],
  ['boolean', (s) => s === 'true' || s === 'false'],
  ['date', (s) => DATE.test(s) && !Number.isNaN(Date.parse(s))],
  ['date-time', (s) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s))],
];

interface FieldStats { types: Set<string>; formats: Set<string> | null; strings: number }

export function inferSchema(sample: JsonObject[]): JsonSchema {
  const fields = new Map<string, FieldStats>();
  for (const record of sample) {
    for (const [key, value] of Object.entries(record)) {
      if (key === '_meta') continue;
      let s = fields.get(key);
      if (!s) { s = { types: new Set(), formats: null, strings: 0 }; fields.set(key, s); }
      const t = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
      s.types.add(t);
      if (typeof value === 'string') {
        const fits = new Set(FORMATS.filter(([, test]) => test(value)).map(([f]) => f));
        s.formats = s.formats === null ? fits : new Set([...s.formats].filter((f) => fits.has(f)));
        s.strings++;
      }
    }
  }
  const properties: Record<string, JsonValue> = {
    _meta: {
      type: 'object',
      properties: {
        file: { type: 'string', description: 'The key of the source file, added automatically by Flow' },
        offset: { type: 'integer', minimum: 0, description: 'The offset of the record within the source file, added automatically by Flow' },
      },
      required: ['file', 'offset'],
    },
  };
  for (const [key, s] of fields) {
    const types = [...s.types];
    if (types.includes('integer') && types.includes('number')) types.splice(types.indexOf('integer'), 1);
    const prop: JsonObject = { type: types.length === 1 ? (types[0] as string) : types.sort() };
    const format = s.strings > 0 && s.formats ? FORMATS.map(([f]) => f).find((f) => s.formats?.has(f)) : undefined;
    if (format) prop['format'] = format;
    properties[key] = prop;
  }
  return { type: 'object', 'x-infer-schema': true, required: ['_meta'], properties };
}

// ------------------------------------------------------------------------------------------------

function stateOf(state: JsonObject, key: string): BindingState {
  const all = state['bindingStateV1'];
  if (!all || typeof all !== 'object' || Array.isArray(all)) return {};
  const s = (all as JsonObject)[key];
  return s && typeof s === 'object' && !Array.isArray(s) ? (s as BindingState) : {};
}

function checkpoint(key: string, patch: BindingState): CaptureOutput {
  return { checkpoint: { state: { updated: { bindingStateV1: { [key]: patch as JsonValue } }, mergePatch: true } } };
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
  const client = httpClient(config, options, ctx);
  const head = await client.head();
  const file = redactUrl(config.url);
  const maxMod = head.lastModifiedDate.toISOString().replace('.000Z', 'Z');
  const etag = head.etag;
  const prev = stateOf(ctx.state, binding.stateKey);
  const sameVersion = prev.path === file && prev.maxMod === maxMod && (prev.etag ?? null) === (etag ?? null);
  if ((sameVersion && prev.complete === true) || (prev.maxMod == null && typeof prev.minBound === 'string' && Date.parse(prev.minBound) >= head.lastModifiedDate.getTime())) {
    log.info('the file is unchanged since the last capture (same Last-Modified and ETag); skipping it', { lastModified: head.lastModified, etag });
    return;
  }
  const resumeFrom = sameVersion && !prev.complete && typeof prev.records === 'number' && prev.records > 0 ? prev.records : 0;
  // Resume by Range when the state says where record `records` starts; otherwise re-read and skip.
  const byteResume = resumeFrom > 0 && typeof prev.byteOffset === 'number' && prev.byteOffset > 0
    ? { byteOffset: prev.byteOffset, csv: prev.csv ?? undefined } : undefined;
  if (resumeFrom > 0) {
    log.info(`resuming the capture of this version of the file after ${resumeFrom} documents${byteResume ? ` from byte ${byteResume.byteOffset} (Range request)` : ' (re-reading and skipping them)'}`, { lastModified: head.lastModified });
  } else yield [checkpoint(binding.stateKey, { path: file, maxMod, etag, records: 0, complete: false, byteOffset: null, csv: null })];

  const every = options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY;
  const done = (records: number): CaptureOutput[] => [checkpoint(binding.stateKey, { path: file, maxMod, etag, records, complete: true, minBound: maxMod, byteOffset: null, csv: null, parquet: null })];
  // Parquet is read by position (parquet-capture.ts): known from the config, name or Content-Type, or from the body's magic below.
  const parquet = async function* (by: string, body: AsyncIterable<Uint8Array> | null): AsyncGenerator<CaptureOutput[]> {
    log.debug(`format: parquet (by ${by})`);
    const m = metaOf(config, head);
    checkParquetCompression(config, [m.filename, ...m.altNames], head.contentEncoding);
    const total = yield* captureParquet({
      client, head, body, log, config, file, binding: binding.index, every, resumeFrom, resumeAt: prev.parquet ?? null,
      progress: (records, at) => checkpoint(binding.stateKey, { records, byteOffset: null, csv: null, parquet: at }),
    });
    log.info(`captured ${total - resumeFrom} documents (file has ${total})`, { lastModified: head.lastModified, etag });
    yield done(total);
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
  const body = client.get({ validator: { etag, lastModified: head.lastModified }, onResponse: (i) => { info = i; }, ...(byteResume ? { from: byteResume.byteOffset } : {}) });
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
  if (!byteResume && (config.parser?.format?.type ?? 'auto') === 'auto' && hasParquetMagic(firstChunk.value)) {
    yield* parquet('its first bytes, PAR1', replay);
    return;
  }
  let offset = byteResume ? resumeFrom : 0;
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
  if (useWorker(options.worker, head.contentLength)) {
    batches = parseInWorker(replay, { meta, parser: config.parser, resume: byteResume, binding: bindingIndex, file, startOffset: offset, resumeFrom }, {
      log: (message) => log.debug(message),
      onSkippedRow,
    }, ctx.signal);
  } else {
    // A thread started in advance for a big file is not needed for this one.
    releasePrestartedThread();
    const sink = new LineSink(bindingIndex, file, offset, resumeFrom);
    lines = sink;
    const parsed = parseFile(replay, meta, config.parser, {
      jsonText: true,
      lines: sink,
      tracker,
      onCompression: (c, by) => log.debug(`compression: ${c} (by ${by})`),
      onFormat: (f, member) => log.debug(`format: ${f.type}${member ? ` (zip member ${member})` : ''}`),
      onSkippedRow,
    }, byteResume);
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
        out.push(checkpoint(binding.stateKey, { records: offset, byteOffset: b.position, csv: b.position === null ? null : b.csv }));
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
  yield done(offset);
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
      const client = httpClient(config, options, ctx);
      const head = await client.head();
      const name = recommendedName(config.url);
      const binding = (documentSchema: JsonSchema): DiscoveredBinding[] => [{
        recommendedName: name,
        resourceConfig: { stream: name },
        documentSchema,
        key: ['/_meta/file', '/_meta/offset'],
      }];
      const parquetFile = async (body: AsyncIterable<Uint8Array> | null): Promise<DiscoveredBinding[]> => {
        const m = metaOf(config, head);
        checkParquetCompression(config, [m.filename, ...m.altNames], head.contentEncoding);
        return binding(await discoverParquet({ client, head, body, log: ctx.log, file: redactUrl(config.url) }));
      };
      const headMeta = metaOf(config, head);
      if (parquetBy(config, [headMeta.filename, ...headMeta.altNames], head.contentType) !== null) return parquetFile(null);
      let info: FileInfo | null = null;
      const sample: JsonObject[] = [];
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
      const parsed = parseFile(replay, metaOf(config, info ?? head), config.parser);
      try {
        for await (const batch of parsed) {
          for (const r of batch) if (sample.length < DISCOVER_SAMPLE_RECORDS) sample.push(r);
          if (sample.length >= DISCOVER_SAMPLE_RECORDS) break;
        }
      } finally {
        await parsed.return(undefined);
      }
      return binding(inferSchema(sample));
    },

    async validate(ctx) {
      checkConfig(ctx.config);
      await checkFormatConfig(ctx.config);
      await httpClient(ctx.config, options, ctx).head();
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
