// The source-http-file connector: spec, discover, validate and open (one capture sweep per binding,
// capture-binding.ts). `_meta/file` and the state's `path` are the file's name as upstream derives it: the
// last segment of the configured URL's percent-decoded path, no query, no credentials (file-names.ts).
import type { CaptureConnector, CaptureOutput, DiscoveredBinding, JsonObject, JsonSchema } from '@sluice/runtime';
import { checkConfig, checkFormatConfig, PARSER_KEYS } from './config-check.ts';
import { httpClient } from './connector-options.ts';
import type { ConnectorOptions } from './connector-options.ts';
import { Decorator, isCustomDecoration, META_OFFSET, pointerTokens } from './decorate.ts';
import { DISCOVER_MAX_RECORDS, SchemaInference } from './discover-schema.ts';
import { ConfigError } from './errors.ts';
import { metaOf, recommendedName } from './file-names.ts';
import type { FileInfo } from './http-response.ts';
import { peekBody } from './http.ts';
import { checkParquetCompression, hasParquetMagic, parquetBy } from './parquet-detect.ts';
import { redactUrl } from './redact-url.ts';
import { configSchema, resourceSchema } from './schema.ts';
import type { EndpointConfig, ResourceConfig } from './schema.ts';

export const DOCUMENTATION_URL = 'https://go.estuary.dev/source-http-file';

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
        return binding(await (await import('./parquet-capture.ts')).discoverParquet({ client, head, body, log: ctx.log, shown: redactUrl(config.url) }));
      };
      const headMeta = metaOf(config, head);
      if (parquetBy(config, [headMeta.filename, ...headMeta.altNames], head.contentType) !== null) return parquetFile(null);
      let info: FileInfo | null = null;
      const inference = new SchemaInference();
      let csv = false;
      let complete = true;
      const body = client.get({ onResponse: (i) => { info = i; } });
      const { first, body: replay } = await peekBody(body);
      if ((config.parser?.format?.type ?? 'auto') === 'auto' && hasParquetMagic(first)) return parquetFile(replay);
      // The whole file when it has at most DISCOVER_MAX_RECORDS records, so the schema holds for all of them.
      // The text formats' parsers load when a file needs them (a Parquet capture never does).
      const { parseFile } = await import('./pipeline.ts');
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
        // The capture's data path (line framing, the parser thread, state, GC budget: ~20 modules) loads only for
        // a session: spec, discover, validate and apply never read a file's rows (issue 16, the pipeline's start-up).
        const { captureBinding } = await import('./capture-binding.ts');
        for (const binding of ctx.bindings) yield* captureBinding(ctx, binding, options);
      })());
    },
  };
}
