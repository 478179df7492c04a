// Document validation against collection schemas, through the catalog's one ajv set-up
// (compileDocumentSchema: JSON Schema 2020-12, Flow's formats, annotations such as `reduce` ignored).
// Compiled validators are cached by schema text, so republishing an unchanged collection reuses them.
import type { JsonSchema, JsonValue } from '@sluice/runtime';
import { compileDocumentSchema } from '../catalog/ajv.ts';
import { type BytePlan, compileBytePlan } from './byte-check.ts';

export class SchemaValidators {
  readonly #cache = new Map<string, (doc: JsonValue) => string | null>();

  /** Returns a function giving null for a valid document, else a one-line description of the error. */
  get(schema: JsonSchema): (doc: JsonValue) => string | null {
    const text = JSON.stringify(schema);
    let fn = this.#cache.get(text);
    if (fn === undefined) {
      fn = compileDocumentSchema(schema);
      this.#cache.set(text, fn);
    }
    return fn;
  }

  readonly #plans = new Map<string, BytePlan | null>();

  /**
   * The schema compiled for checking documents' bytes (byte-check.ts), for a UUID at `/<parent>/<name>`;
   * undefined when the schema is not of the kind that check decides.
   */
  bytePlan(schema: JsonSchema, parent: string, name: string): BytePlan | undefined {
    const key = `${parent}\u0000${name}\u0000${JSON.stringify(schema)}`;
    let plan = this.#plans.get(key);
    if (plan === undefined) {
      plan = compileBytePlan(schema, parent, name) ?? null;
      this.#plans.set(key, plan);
    }
    return plan ?? undefined;
  }
}
