// One place that builds ajv instances (JSON Schema 2020-12 with formats), for catalog files, API
// resources and collection documents.
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { AnySchemaObject, ErrorObject, Format, Options, ValidateFunction } from 'ajv/dist/2020.js';
import type { JsonSchema, JsonValue } from '@sluice/runtime';
import { schemaDefects } from './schema-checks.ts';

// ajv-formats' format table is taken without its plugin entry, whose formatMinimum/formatMaximum/
// formatExclusive* keywords (limit.js) `require('ajv')`: in this checkout that is ajv-formats' own copy of ajv
// (eslint's ajv 6 holds the top level), ~64 more modules, ~50 ms of every plane start (issue 16) — and that
// copy's code generator is not ours: the code it generated called `compare` on a serialised object and threw
// "compare is not a function" on every document. The four keywords are defined here instead (limitKeywords),
// with ajv-formats' meaning: the value compared by its format's `compare` (date, time, date-time…).
const requireCjs = createRequire(import.meta.url);
let formatTable: Record<string, Format> | undefined;
const FORMAT_LIMIT_KEYWORD = /"format(Exclusive)?(Minimum|Maximum)"/;

/** formatMinimum & co. as ajv-formats defines them: pass when the value's format has no `compare`. */
function addLimitKeywords(ajv: Ajv2020, table: Record<string, Format>): void {
  const limits: [string, (c: number) => boolean][] = [
    ['formatMinimum', (c) => c >= 0],
    ['formatMaximum', (c) => c <= 0],
    ['formatExclusiveMinimum', (c) => c > 0],
    ['formatExclusiveMaximum', (c) => c < 0],
  ];
  for (const [keyword, ok] of limits) {
    ajv.addKeyword({
      keyword,
      type: 'string',
      schemaType: 'string',
      errors: false,
      validate: (limit: string, data: string, parent?: AnySchemaObject) => {
        const format: unknown = parent?.['format'];
        const def = typeof format === 'string' ? table[format] : undefined;
        const compare = def !== undefined && typeof def === 'object' && !(def instanceof RegExp) ? (def as { compare?: (a: string, b: string) => number | undefined }).compare : undefined;
        if (compare === undefined) return true;
        const c = compare(data, limit);
        return c === undefined || ok(c);
      },
    });
  }
}

/** `schema`: the one schema the instance will compile, when known; its keywords decide what is loaded. */
export function createAjv(options: Options = {}, schema?: unknown): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true, ...options });
  formatTable ??= (requireCjs('ajv-formats/dist/formats.js') as { fullFormats: Record<string, Format> }).fullFormats;
  for (const [name, format] of Object.entries(formatTable)) ajv.addFormat(name, format);
  if (schema === undefined || FORMAT_LIMIT_KEYWORD.test(JSON.stringify(schema))) {
    addLimitKeywords(ajv, formatTable);
  }
  // Formats Flow schemas use beyond the standard ones: numeric strings, and MAC addresses.
  ajv.addFormat('integer', /^[-+]?[0-9]+$/);
  ajv.addFormat('number', /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$|^(NaN|-?Infinity)$/);
  ajv.addFormat('macaddr', /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/);
  ajv.addFormat('macaddr8', /^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$/);
  return ajv;
}

export type { ErrorObject, ValidateFunction };

/**
 * Compiles a collection schema for validating documents. Flow schemas carry annotations ajv does not
 * know (reduce, secret, advanced, order…), so strict mode is off. Returns a function giving null for a
 * valid document, else a one-line description of the first problems (location and reason).
 */
export function compileDocumentSchema(schema: JsonSchema): (doc: JsonValue) => string | null {
  // The meta-schema check is schemaDefects' (one shared instance, memoised by text: the loader has already run
  // it on every collection schema), not this instance's: ajv would compile the 2020-12 meta-schema again for
  // each new instance (~75 ms of the plane's start-up, issue 16).
  const defects = schemaDefects(schema);
  if (defects.length > 0) throw new Error(`schema is invalid: ${defects.map((d) => `${d.at || '/'} ${d.message}`).join('; ')}`);
  // Unknown formats are annotations (as in Flow), not errors; keep them out of the logs.
  const ajv = createAjv({ strict: false, allErrors: false, validateFormats: true, logger: false, validateSchema: false }, schema);
  const validate = ajv.compile(schema as object | boolean);
  return (doc) => {
    if (validate(doc)) return null;
    return (validate.errors ?? []).map(describeDocumentError).join('; ');
  };
}

export function describeDocumentError(e: ErrorObject): string {
  const at = e.instancePath === '' ? 'document root' : e.instancePath;
  if (e.keyword === 'required') return `${at}: missing required property "${String(e.params.missingProperty)}"`;
  if (e.keyword === 'additionalProperties') return `${at}: unexpected property "${String(e.params.additionalProperty)}"`;
  if (e.keyword === 'enum') return `${at}: must be one of ${JSON.stringify(e.params.allowedValues)}`;
  return `${at}: ${e.message ?? e.keyword}`;
}
