// The API's JSON Schemas (schemas/api/*.json) are the single source of the request/response shapes:
// the server validates with them and openapi.json is generated from them.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { createAjv } from '../catalog/ajv.ts';
import type { ErrorObject, ValidateFunction } from '../catalog/ajv.ts';

export const API_SCHEMA_DIR = fileURLToPath(new URL('../../../schemas/api/', import.meta.url));

/** Every API schema by component name (file name without .json). */
export function loadApiSchemas(): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const f of readdirSync(API_SCHEMA_DIR).filter((n) => n.endsWith('.json')).sort()) {
    out.set(f.slice(0, -5), JSON.parse(readFileSync(join(API_SCHEMA_DIR, f), 'utf8')) as JsonObject);
  }
  return out;
}

export class ApiSchemas {
  readonly schemas = loadApiSchemas();
  /** Built on the first request that validates: adding the schemas compiles ajv's meta-schema (~0.1 s of start-up). */
  #ajv: ReturnType<typeof createAjv> | undefined;
  readonly #compiled = new Map<string, ValidateFunction>();

  #instance(): ReturnType<typeof createAjv> {
    if (this.#ajv === undefined) {
      const ajv = createAjv({ strict: false });
      for (const s of this.schemas.values()) ajv.addSchema(s as object);
      this.#ajv = ajv;
    }
    return this.#ajv;
  }

  validator(name: string): ValidateFunction {
    let v = this.#compiled.get(name);
    if (!v) {
      const s = this.schemas.get(name);
      if (!s) throw new Error(`no API schema named ${name}`);
      v = this.#instance().getSchema(String(s.$id))!;
      this.#compiled.set(name, v);
    }
    return v;
  }

  /** Problems of `value` against schema `name`, as readable lines (empty when valid). */
  problems(name: string, value: JsonValue): string[] {
    const v = this.validator(name);
    if (v(value)) return [];
    return (v.errors ?? []).map(describe);
  }
}

function describe(e: ErrorObject): string {
  const at = e.instancePath === '' ? 'body' : e.instancePath;
  if (e.keyword === 'required') return `${at}: missing required member "${String(e.params.missingProperty)}"`;
  if (e.keyword === 'additionalProperties') return `${at}: unknown member "${String(e.params.additionalProperty)}"`;
  if (e.keyword === 'const') return `${at}: must be ${JSON.stringify(e.params.allowedValue)}`;
  return `${at}: ${e.message ?? e.keyword}`;
}
