// openapi.json, generated from schemas/api/*.json: every route, parameter, request and response, and
// the bearer-JWT security scheme. Component names are the schema file names.
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { loadApiSchemas } from './schemas.ts';
import planePackage from '../../package.json' with { type: 'json' };

function rewriteRefs(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(rewriteRefs);
  if (v === null || typeof v !== 'object') return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === '$schema' || k === '$id') continue;
    out[k] = k === '$ref' && typeof x === 'string' && x.endsWith('.json') ? `#/components/schemas/${x.slice(0, -5)}` : rewriteRefs(x);
  }
  return out;
}

const errorResponse = (description: string): JsonObject => ({
  description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ApiError' } } },
});

export function buildOpenApi(): JsonObject {
  const schemas: JsonObject = {};
  for (const [name, s] of loadApiSchemas()) schemas[name] = rewriteRefs(s);
  const auth = { '401': errorResponse('Missing, malformed, expired or invalid bearer token'), '403': errorResponse('The token may not read this name or prefix') };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Flow Control Plane V1 API',
      summary: 'Controlling the control plane',
      description: 'API for the Flow control plane, as served by the Sluice local plane (`sluice serve`).',
      // The API as this build serves it: the plane package's version.
      version: planePackage.version,
    },
    servers: [{ url: '/' }],
    security: [{ ApiKey: [] }],
    paths: {
      '/api/v1/catalog/status': {
        get: {
          operationId: 'getCatalogStatus',
          summary: 'Status of live specs',
          description: 'One StatusResponse per named live spec (and, with connected=true, per spec one hop upstream or downstream).',
          parameters: [
            { name: 'name', in: 'query', required: true, style: 'form', explode: true, description: 'Catalog names of live specs to report (repeat the parameter for several).', schema: { type: 'array', items: { type: 'string' }, minItems: 1 } },
            { name: 'connected', in: 'query', required: false, description: 'Also report the specs connected to the named ones.', schema: { type: 'boolean', default: false } },
            { name: 'short', in: 'query', required: false, description: 'Omit connector_status and controller_status.', schema: { type: 'boolean', default: false } },
          ],
          responses: {
            '200': { description: 'Statuses of the live specs', content: { 'application/json': { schema: { $ref: '#/components/schemas/StatusResponseList' } } } },
            '400': errorResponse('Missing name, or a malformed parameter'),
            ...auth,
            '404': errorResponse('Some named live specs do not exist'),
            '406': errorResponse('The Accept header does not allow application/json'),
          },
        },
      },
      '/api/v1/auth/token': {
        post: {
          operationId: 'createAccessToken',
          summary: 'Exchange a refresh token for an access token',
          description: 'Refresh tokens are created with `sluice token create`. Single-use refresh tokens rotate: the response carries the new secret.',
          security: [],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TokenRequest' } } } },
          responses: {
            '200': { description: 'An access token', content: { 'application/json': { schema: { $ref: '#/components/schemas/TokenResponse' } } } },
            '400': errorResponse('The body is not JSON'),
            '401': errorResponse('Unknown refresh token, wrong secret, or expired refresh token'),
            '415': errorResponse('Content-Type is not application/json'),
            '422': errorResponse('The body is not a TokenRequest'),
          },
        },
      },
      '/api/v1/metrics/{prefix}': {
        get: {
          operationId: 'getMetrics',
          summary: 'Prometheus metrics of the tasks under a prefix',
          description: 'Prometheus text exposition for every task whose name starts with the prefix. The prefix is the rest of the path (it may contain "/") and must end with "/".',
          parameters: [{ name: 'prefix', in: 'path', required: true, description: 'Catalog name prefix ending in "/".', schema: { type: 'string' } }],
          responses: {
            '200': { description: 'Metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
            '400': errorResponse('The prefix does not end with "/"'),
            ...auth,
          },
        },
      },
      '/api/v1/openapi.json': {
        get: {
          operationId: 'getOpenApi',
          summary: 'This API description',
          security: [],
          responses: { '200': { description: 'The OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
    },
    components: {
      schemas,
      securitySchemes: {
        ApiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Sluice access token from POST /api/v1/auth/token' },
      },
    },
  };
}
