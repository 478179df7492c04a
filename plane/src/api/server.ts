// Routes under /api/v1: catalog/status, auth/token, metrics/{*prefix}, openapi.json. Every error is
// answered with JSON `{"status": <code>, "error": "<message>"}`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { ApiError } from '../control/errors.ts';
import { connectedNames, statusResponse } from '../control/status.ts';
import type { ControlStore } from '../control/store.ts';
import { mayRead } from '../control/tokens.ts';
import type { AccessClaims, TokenService } from '../control/tokens.ts';
import { renderMetrics } from './metrics.ts';
import { buildOpenApi } from './openapi.ts';
import { ApiSchemas } from './schemas.ts';

export const API_PREFIX = '/api/v1';
const MAX_BODY_BYTES = 64 * 1024;

export interface ApiHandler {
  /** Serves requests whose path is under /api/v1 and returns true; returns false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  readonly openapi: JsonObject;
  readonly schemas: ApiSchemas;
}

export function createApiHandler(store: ControlStore, tokens: TokenService): ApiHandler {
  const schemas = new ApiSchemas();
  const openapi = buildOpenApi();
  const openapiText = JSON.stringify(openapi);

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.slice(API_PREFIX.length);
    const method = req.method ?? 'GET';
    const only = (allowed: string) => {
      if (method !== allowed && !(allowed === 'GET' && method === 'HEAD')) {
        res.setHeader('Allow', allowed === 'GET' ? 'GET, HEAD' : allowed);
        throw new ApiError(405, `method ${method} is not allowed on ${url.pathname}; use ${allowed}`);
      }
    };
    if (path === '/openapi.json') {
      only('GET');
      return send(res, 200, 'application/json', openapiText);
    }
    if (path === '/auth/token') {
      only('POST');
      return token(req, res);
    }
    if (path === '/catalog/status') {
      only('GET');
      return status(req, res, url);
    }
    if (path.startsWith('/metrics/') || path === '/metrics') {
      only('GET');
      return metrics(req, res, path.slice('/metrics/'.length));
    }
    throw new ApiError(404, `no route for ${url.pathname}; routes are ${API_PREFIX}/catalog/status, ${API_PREFIX}/auth/token, ${API_PREFIX}/metrics/{prefix}/ and ${API_PREFIX}/openapi.json`);
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      throw new ApiError(415, `Content-Type must be application/json (got ${req.headers['content-type'] === undefined ? 'none' : JSON.stringify(req.headers['content-type'])})`);
    }
    const text = await readBody(req);
    let body: JsonValue;
    try {
      body = JSON.parse(text) as JsonValue;
    } catch (err) {
      throw new ApiError(400, `request body is not JSON: ${(err as Error).message}`);
    }
    const problems = schemas.problems('TokenRequest', body);
    if (problems.length > 0) {
      throw new ApiError(422, `request body is not a TokenRequest ({"grant_type": "refresh_token", "refresh_token_id": <Id>, "secret": <string>}): ${problems.join('; ')}`);
    }
    const b = body as { refresh_token_id: string; secret: string };
    const out = await tokens.exchange(b.refresh_token_id, b.secret);
    send(res, 200, 'application/json', JSON.stringify(out));
  }

  async function status(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const accept = req.headers.accept;
    if (accept !== undefined) {
      if (!/^[\x20-\x7e]*$/.test(accept)) throw new ApiError(400, 'the Accept header must be ASCII');
      if (!accept.includes('application/json') && !accept.includes('*/*')) {
        throw new ApiError(406, 'only application/json responses are supported at this time');
      }
    }
    const claims = await tokens.authenticate(req.headers.authorization);
    const names = url.searchParams.getAll('name');
    if (names.length === 0 || names.some((n) => n === '')) {
      throw new ApiError(400, 'missing required query parameter "name": pass ?name=<catalog name>, repeated for several (name=a&name=b)');
    }
    const short = boolParam(url, 'short');
    const connected = boolParam(url, 'connected');
    const denied = names.filter((n) => !mayRead(claims, n));
    if (denied.length > 0) throw forbidden(claims, denied);

    const rows = new Map(store.all().map((r) => [r.catalogName, r]));
    const missing = [...new Set(names)].filter((n) => !rows.has(n));
    if (missing.length > 0) throw new ApiError(404, `no live specs found for names: [${missing.join(', ')}]`);
    const wanted = new Set(names);
    if (connected) {
      const all = [...rows.values()];
      for (const n of names) {
        for (const c of connectedNames(all, n)) if (rows.has(c) && mayRead(claims, c)) wanted.add(c);
      }
    }
    const now = new Date();
    const items = [...wanted].map((n) => statusResponse(store, rows.get(n)!, { short, now }));
    send(res, 200, 'application/json', JSON.stringify(items));
  }

  async function metrics(req: IncomingMessage, res: ServerResponse, rawPrefix: string): Promise<void> {
    let prefix: string;
    try {
      prefix = decodeURIComponent(rawPrefix);
    } catch {
      throw new ApiError(400, `prefix ${JSON.stringify(rawPrefix)} is not valid percent-encoding`);
    }
    const claims = await tokens.authenticate(req.headers.authorization);
    if (!prefix.endsWith('/')) throw new ApiError(400, `prefix ${JSON.stringify(prefix)} must end with a trailing '/' slash`);
    if (!mayRead(claims, prefix)) throw forbidden(claims, [prefix]);
    send(res, 200, 'text/plain; version=1.0.0; charset=utf-8', renderMetrics(store, prefix));
  }

  return {
    openapi,
    schemas,
    async handle(req, res) {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== API_PREFIX && !url.pathname.startsWith(API_PREFIX + '/')) return false;
      try {
        await route(req, res, url);
      } catch (err) {
        if (err instanceof ApiError) {
          if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
          send(res, err.status, 'application/json', JSON.stringify({ status: err.status, error: err.message }));
        } else {
          console.error(err);
          send(res, 500, 'application/json', JSON.stringify({ status: 500, error: `internal error: ${(err as Error).message}` }));
        }
      }
      return true;
    },
  };
}

function forbidden(claims: AccessClaims, names: string[]): ApiError {
  const grants = claims.prefixes.map((p) => (p === '' ? '(everything)' : p)).join(', ') || '(nothing)';
  return new ApiError(403, `${claims.sub} is not authorized to read ${names.map((n) => JSON.stringify(n)).join(', ')}; this token may read names under: ${grants}`);
}

function boolParam(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  if (v === null || v === 'false') return false;
  if (v === 'true') return true;
  throw new ApiError(400, `query parameter "${name}" must be true or false (got ${JSON.stringify(v)})`);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, `request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
}
