// What the bin and the tests tune in the connector (HTTP timeouts and retries, the checkpoint interval, the
// parser thread), and the HttpClient an endpoint config and these options make (URL, credentials, headers).
import type { BaseContext } from '@sluice/runtime';
import { HttpClient } from './http.ts';
import type { HttpClientOptions } from './http.ts';
import type { EndpointConfig } from './schema.ts';

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

/**
 * The HttpClient of an endpoint config and the options. `fresh`: nothing was captured yet (discover, validate,
 * a first capture): a refused connection fails at once.
 */
export function httpClient(config: EndpointConfig, options: ConnectorOptions, ctx: BaseContext<EndpointConfig>, fresh = false): HttpClient {
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
