// Document validation against collection schemas (ajv, JSON Schema 2020-12 with draft-07 keywords
// tolerated; Flow's annotations such as `reduce` are ignored by validation). Compiled validators are
// cached by schema text, so republishing an unchanged collection reuses them.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { JsonSchema } from '@sluice/runtime';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

export class SchemaValidators {
  readonly #ajv: Ajv2020;
  readonly #cache = new Map<string, ValidateFunction>();

  constructor() {
    this.#ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: false, allowUnionTypes: true });
    addFormats(this.#ajv);
  }

  /** Returns a function giving null for a valid document, else a one-line description of the first error. */
  get(schema: JsonSchema): (doc: unknown) => string | null {
    const text = JSON.stringify(schema);
    let fn = this.#cache.get(text);
    if (fn === undefined) {
      // A schema's $id may only be registered once per ajv instance: compile a copy without it.
      const copy = typeof schema === 'object' ? { ...schema } : schema;
      if (typeof copy === 'object') delete copy.$id;
      fn = this.#ajv.compile(copy);
      this.#cache.set(text, fn);
    }
    const validate = fn;
    return (doc) => (validate(doc) ? null : describeErrors(validate));
  }
}

function describeErrors(fn: ValidateFunction): string {
  const e = fn.errors?.[0];
  if (e === undefined) return 'document is invalid';
  const at = e.instancePath === '' ? 'document root' : e.instancePath;
  let detail = e.message ?? 'is invalid';
  if (e.keyword === 'additionalProperties') detail += ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`;
  if (e.keyword === 'enum') detail += ` (${JSON.stringify((e.params as { allowedValues?: unknown }).allowedValues)})`;
  return `${at} ${detail} (schema ${e.schemaPath})`;
}
