// One place that builds ajv instances (JSON Schema 2020-12 with formats), for catalog files, API
// resources and collection documents; and the validators the plane compiles at every start, kept as code
// between starts (compiledValidator).
import { createRequire } from 'node:module';
import type { _ as CodeTag } from 'ajv';
import type { Ajv2020, AnySchema, AnySchemaObject, ErrorObject, Format, Options, ValidateFunction } from 'ajv/dist/2020.js';
import { ValidatorCache, validatorCacheDir } from '@sluice/runtime';
import type { JsonSchema, JsonValue } from '@sluice/runtime';
import { schemaDefects } from './schema-checks.ts';

// ajv itself is loaded on the first compile, not with this module: a plane whose validators are all cached
// (compiledValidator) never loads it before its first publication — ~85 ms of its start-up CPU (issue 16).
// ajv-formats' format table is taken without its plugin entry, whose formatMinimum/formatMaximum/
// formatExclusive* keywords (limit.js) `require('ajv')`: in this checkout that is ajv-formats' own copy of ajv
// (eslint's ajv 6 holds the top level), ~64 more modules, ~50 ms of every plane start (issue 16) — and that
// copy's code generator is not ours: the code it generated called `compare` on a serialised object and threw
// "compare is not a function" on every document. The four keywords are defined here instead (limitKeywords),
// with ajv-formats' meaning: the value compared by its format's `compare` (date, time, date-time…).
const requireCjs = createRequire(import.meta.url);
let formatTable: Record<string, Format> | undefined;
const FORMAT_LIMIT_KEYWORD = /"format(Exclusive)?(Minimum|Maximum)"/;

/**
 * The formats of every plane ajv instance: ajv-formats' full table, and those Flow schemas use beyond the standard
 * ones (numeric strings, MAC addresses). One object per process: cached validator code looks its formats up in it.
 */
export function documentFormats(): Record<string, Format> {
  formatTable ??= {
    ...(requireCjs('ajv-formats/dist/formats.js') as { fullFormats: Record<string, Format> }).fullFormats,
    integer: /^[-+]?[0-9]+$/,
    number: /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$|^(NaN|-?Infinity)$/,
    macaddr: /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/,
    macaddr8: /^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$/,
  };
  return formatTable;
}

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
  const { Ajv2020: AjvClass } = requireCjs('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020 };
  const ajv = new AjvClass({ allErrors: true, allowUnionTypes: true, ...options });
  const table = documentFormats();
  for (const [name, format] of Object.entries(table)) ajv.addFormat(name, format);
  if (schema === undefined || FORMAT_LIMIT_KEYWORD.test(JSON.stringify(schema))) {
    addLimitKeywords(ajv, table);
  }
  return ajv;
}

// ---- Validators kept as code between starts ------------------------------------------------------------------
// Compiling the catalog schema (~75 ms), the 2020-12 meta-schema (~30 ms) and each collection schema (~5 ms) was
// most of the plane's work before its first publication could start a connector. The code ajv generates
// ("standalone") is kept in the runtime's validator cache (ValidatorCache: this user's private directory, every
// file MAC'd; on only while Node's compile cache is, as in connectors), keyed by the purpose, the ajv options,
// ajv's version and the schema text; it reads its formats from documentFormats() when it runs, so nothing of this
// module's is baked into it. A schema using the format-limit keywords (JavaScript functions) is always compiled.
const FORMATS_MODULE = 'sluice:plane-formats';
let cache: ValidatorCache | null | undefined;
let ajvVersion: string | undefined;

function requireForCode(id: string): unknown {
  return id === FORMATS_MODULE ? documentFormats() : requireCjs(id);
}

/**
 * `schema`'s validator built with createAjv(options) — `select` picks another of that instance's validators (the
 * meta-schema's) — or the same validator from code kept by an earlier start.
 */
export function compiledValidator<T = unknown>(purpose: string, schema: AnySchema | JsonSchema, options: Options, select?: (ajv: Ajv2020) => ValidateFunction): ValidateFunction<T> {
  const text = JSON.stringify(schema);
  if (cache === undefined) {
    const dir = validatorCacheDir();
    cache = dir === null ? null : new ValidatorCache(dir);
  }
  const c = FORMAT_LIMIT_KEYWORD.test(text) ? null : cache;
  if (c === null) {
    const ajv = createAjv(options, schema);
    return (select ? select(ajv) : ajv.compile(schema as AnySchema)) as ValidateFunction<T>;
  }
  ajvVersion ??= (requireCjs('ajv/package.json') as { version: string }).version;
  const key = ValidatorCache.fileKey(`plane\0${purpose}\0${JSON.stringify(options)}\0${text}`, ajvVersion);
  const code = c.load(key);
  if (code !== null) {
    try {
      const module = { exports: {} as unknown };
      // ajv's generated code as store() wrote it (a CommonJS module), its MAC checked by load().
      new Function('module', 'exports', 'require', code)(module, module.exports, requireForCode);
      if (typeof module.exports === 'function') return module.exports as ValidateFunction<T>;
    } catch {
      // Unusable (another ajv's runtime helpers): compiled below, and stored again.
    }
  }
  const codegen = requireCjs('ajv/dist/compile/codegen/index.js') as { _: typeof CodeTag };
  const ajv = createAjv({ ...options, code: { source: true, formats: codegen._`require(${FORMATS_MODULE})` } }, schema);
  const validate = select ? select(ajv) : ajv.compile(schema as AnySchema);
  try {
    const standaloneCode = (requireCjs('ajv/dist/standalone/index.js') as { default: (a: Ajv2020, v: ValidateFunction) => string }).default;
    c.store(key, standaloneCode(ajv, validate));
  } catch {
    // Code generation failing only costs the compile next time.
  }
  return validate as ValidateFunction<T>;
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
  const validate = compiledValidator('document', schema, { strict: false, allErrors: false, validateFormats: true, logger: false, validateSchema: false });
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
