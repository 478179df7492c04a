// The endpoint config's checks beyond its JSON Schema: the URL, the hidden parser options, and the format
// options that need code to check. Unknown keys are not checked here: the runtime's config validator refuses
// them at every level before a request reaches the connector (decoding is strict, as upstream), with
// PARSER_KEYS beyond the schema tolerated (connector.ts, configKeysBeyondSchema).
import { ConfigError } from './errors.ts';
import { DatetimeNormalizer } from './datetime.ts';
import { redactUrl } from './redact-url.ts';
import { hiddenParserOptionsSchema } from './schema.ts';
import type { EndpointConfig } from './schema.ts';

/** The parser's keys upstream decodes: the schema's and the hidden options (hiddenParserOptionsSchema). */
export const PARSER_KEYS = ['format', 'compression', 'defaultOffset', 'addRecordOffset', 'addValues', 'filename', 'contentType', 'contentEncoding'];

/** Checks what the schema cannot say: the URL, the hidden parser options' types, the record offset and added values' pointers, the default offset. */
export function checkConfig(config: EndpointConfig): void {
  const problems: string[] = [];
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
    if (config.parser?.defaultOffset !== undefined) new DatetimeNormalizer(config.parser.defaultOffset);
  } catch (err) {
    problems.push(`parser.defaultOffset: ${(err as Error).message}`);
  }
  if (problems.length) throw new ConfigError(`Invalid endpoint config: ${problems.join('; ')}`);
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
