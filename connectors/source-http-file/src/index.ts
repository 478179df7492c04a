export { createHttpFileConnector, checkConfig, inferSchema, recommendedName, fileNameOf, DOCUMENTATION_URL, DEFAULT_CHECKPOINT_EVERY } from './connector.ts';
export type { ConnectorOptions } from './connector.ts';
export { configSchema, resourceSchema } from './schema.ts';
export type { EndpointConfig, ResourceConfig, ParserConfig, CsvConfig, FormatConfig } from './schema.ts';
export * from './errors.ts';
export { HttpClient, HTTP_DEFAULTS } from './http.ts';
export { parseHttpDate } from './http-response.ts';
export { redactUrl } from './redact-url.ts';
export { parseFile } from './pipeline.ts';
