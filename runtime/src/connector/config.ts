// Validation of endpoint and resource configuration against a connector's own JSON Schemas (ajv):
// defaults applied, every problem reported together in one message naming JSON pointers, and no
// configuration value ever echoed (values may be secrets).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire, getCompileCacheDir } from 'node:module';
import { dirname, join } from 'node:path';
import { _, Ajv } from 'ajv';
import type { AnySchema, ErrorObject, Format, Options, ValidateFunction } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { ConfigError, SluiceError } from '../errors.ts';
import type { JsonObject, JsonSchema, JsonValue } from '../protocol/specs.ts';

/**
 * Annotation keywords connector schemas use for UIs and for Flow (no validation meaning). Any keyword
 * starting with `x-` is accepted too.
 */
export const ANNOTATION_KEYWORDS: readonly string[] = [
  'secret', 'advanced', 'order', 'multiline', 'discriminator', 'airbyte_secret', 'airbyte_hidden',
  'always_show', 'group', 'reduce',
];

type AjvInstance = InstanceType<typeof Ajv>;

// Loaded on first use (start-up: each costs a share of a connector's ~0.2 s start): the 2019-09 and 2020-12
// dialects only for schemas that ask for them, and ajv-formats' format table without its plugin entry,
// whose formatMaximum-style keywords `require('ajv')` — in a dev checkout a second copy of ajv (ajv-formats'
// own, as eslint's ajv 6 takes the top level), ~50 ms. Connector schemas use formats, not those keywords.
const requireCjs = createRequire(import.meta.url);
function ajvClass(dialect: string): typeof Ajv | typeof Ajv2019 | typeof Ajv2020 {
  if (dialect.includes('2020-12')) return (requireCjs('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020 }).Ajv2020;
  if (dialect.includes('2019-09')) return (requireCjs('ajv/dist/2019.js') as { Ajv2019: typeof Ajv2019 }).Ajv2019;
  return Ajv;
}
let formats: Record<string, Format> | undefined;
function addFormats(ajv: AjvInstance): void {
  formats ??= (requireCjs('ajv-formats/dist/formats.js') as { fullFormats: Record<string, Format> }).fullFormats;
  for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format);
}

function ajvOptions(metaSchema = false): Options {
  return {
    // Keep the generated code, so a compiled validator can be cached (see validatorCache below); its
    // formats come from ajv-formats' table, as addFormats gives them.
    code: { source: true, formats: _`require("ajv-formats/dist/formats.js").fullFormats` },
    // Checking a schema against the JSON Schema meta-schema compiles the meta-schema first (~40 ms of
    // every connector start): validators skip it; checkSchema does it, at `spec` and in the tests.
    validateSchema: metaSchema,
    allErrors: true,
    useDefaults: true,
    coerceTypes: false,
    // Strict about unknown keywords (typos), lenient about types/tuples. A `default` inside oneOf/anyOf
    // (common in discriminated config unions) is ignored rather than rejected.
    strictSchema: 'log',
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: {
      log: () => undefined,
      warn: (...args: unknown[]) => {
        const msg = args.map(String).join(' ');
        if (/default is ignored/.test(msg)) return;
        throw new Error(msg);
      },
      error: (...args: unknown[]) => {
        throw new Error(args.map(String).join(' '));
      },
    },
  };
}

function newAjv(schema: JsonSchema, metaSchema = false): AjvInstance {
  const dialect = typeof schema === 'object' && typeof schema['$schema'] === 'string' ? schema['$schema'] : '';
  const AjvClass = ajvClass(dialect);
  const ajv: AjvInstance = new AjvClass(ajvOptions(metaSchema));
  addFormats(ajv);
  for (const keyword of ANNOTATION_KEYWORDS) ajv.addKeyword({ keyword });
  const seen = new Set<string>(ANNOTATION_KEYWORDS);
  collectExtensionKeywords(schema, seen, (keyword) => ajv.addKeyword({ keyword }));
  return ajv;
}

function collectExtensionKeywords(node: JsonValue, seen: Set<string>, add: (k: string) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) collectExtensionKeywords(item, seen, add);
  } else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key.startsWith('x-') && !seen.has(key)) {
        seen.add(key);
        add(key);
      }
      collectExtensionKeywords(value, seen, add);
    }
  }
}

/** Escapes one JSON pointer token. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

function describeError(e: ErrorObject): string {
  const at = e.instancePath;
  const where = at === '' ? '(root)' : at;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${at}/${escapePointerToken(String(params['missingProperty']))} is required`;
    case 'additionalProperties':
      return `${at}/${escapePointerToken(String(params['additionalProperty']))} is not an allowed property`;
    case 'unevaluatedProperties':
      return `${at}/${escapePointerToken(String(params['unevaluatedProperty']))} is not an allowed property`;
    case 'type':
      return `${where} must be of type ${Array.isArray(params['type']) ? (params['type'] as string[]).join(' or ') : String(params['type'])}`;
    case 'enum':
      return `${where} must be one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${where} must be ${JSON.stringify(params['allowedValue'])}`;
    default:
      // ajv messages name schema constraints (limits, patterns, formats), never the value.
      return `${where} ${e.message ?? `fails "${e.keyword}"`}`;
  }
}

/** Formats ajv errors as one line (deduplicated, in order). */
export function formatSchemaErrors(errors: readonly ErrorObject[]): string {
  const seen = new Set<string>();
  for (const e of errors) {
    // "must match a schema in anyOf/oneOf" is implied by the branch errors when those are listed.
    seen.add(describeError(e));
  }
  return [...seen].join('; ');
}

// ---- Compiled validators, cached ---------------------------------------------------------------------
// Compiling a connector's endpoint schema costs ~40 ms of every connector start (http-file's). When Node's
// module compile cache is on (the bins turn it on; NODE_DISABLE_COMPILE_CACHE=1 turns it off), the
// validator's generated code (ajv "standalone" code) is kept beside it, keyed by the ajv version and the
// schema, and later starts load it instead of compiling. The cache is trusted as Node's own is.

const CACHE_FORMAT = 1;
let ajvVersion: string | undefined;

function cacheFile(schema: JsonSchema): string | null {
  const dir = getCompileCacheDir();
  if (dir === undefined) return null;
  ajvVersion ??= (requireCjs('ajv/package.json') as { version: string }).version;
  const key = createHash('sha256').update(`${CACHE_FORMAT}\0${ajvVersion}\0${JSON.stringify(schema)}`).digest('hex').slice(0, 40);
  return join(dir, 'sluice-ajv', `${key}.cjs`);
}

function loadCached(file: string): ValidateFunction | null {
  let code: string;
  try {
    code = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const module = { exports: {} as unknown };
    // ajv's generated validator code, as storeCached wrote it (a CommonJS module).
    new Function('module', 'exports', 'require', code)(module, module.exports, requireCjs);
    return typeof module.exports === 'function' ? module.exports as ValidateFunction : null;
  } catch {
    return null; // unreadable or stale: compile instead
  }
}

function storeCached(file: string, ajv: AjvInstance, validate: ValidateFunction): void {
  try {
    const standaloneCode = (requireCjs('ajv/dist/standalone/index.js') as { default: (a: AjvInstance, v: ValidateFunction) => string }).default;
    const code = standaloneCode(ajv, validate);
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, file);
  } catch {
    // A read-only or missing cache only costs the compile next time.
  }
}

/** Compiles `schema` (or loads its cached code); throws what ajv throws for a broken schema. */
function compileValidator(schema: JsonSchema, metaSchema: boolean): ValidateFunction {
  const file = metaSchema ? null : cacheFile(schema);
  const cached = file === null ? null : loadCached(file);
  if (cached !== null) return cached;
  const ajv = newAjv(schema, metaSchema);
  const validate = ajv.compile(schema as AnySchema);
  if (file !== null) storeCached(file, ajv, validate);
  return validate;
}

/** A compiled configuration schema. */
export class ConfigValidator {
  readonly schema: JsonSchema;
  private readonly validateFn: ValidateFunction;

  /**
   * Throws (not userFacing) when the connector's own schema is broken: a bug in the connector. With
   * `metaSchema`, the schema is also checked against its JSON Schema meta-schema (see checkSchema).
   */
  constructor(schema: JsonSchema, label: string, metaSchema = false) {
    this.schema = schema;
    try {
      this.validateFn = compileValidator(schema, metaSchema);
    } catch (err) {
      throw brokenSchema(label, err);
    }
  }

  /**
   * Validates a copy of `value` (absent = `{}`), applies defaults and returns it deeply frozen.
   * `subject` names what is validated, e.g. "endpoint config" or `resource config of binding 0`.
   */
  validate<T = JsonObject>(value: JsonValue | undefined, subject: string): T {
    const data = value === undefined ? {} : structuredClone(value);
    if (!this.validateFn(data)) {
      const errors = this.validateFn.errors ?? [];
      const n = new Set(errors.map(describeError)).size;
      throw new ConfigError(`Invalid ${subject} (${n} problem${n === 1 ? '' : 's'}): ${formatSchemaErrors(errors)}`, {
        fields: { problems: errors.map(describeError) },
      });
    }
    return deepFreeze(data) as T;
  }
}

function brokenSchema(label: string, err: unknown): SluiceError {
  return new SluiceError('SCHEMA', `the connector's ${label} schema is invalid: ${(err as Error).message}`, { cause: err, userFacing: false });
}

/** Compiles a schema checked against its JSON Schema meta-schema too; throws (not userFacing) when it is broken. */
export function checkSchema(schema: JsonSchema, label: string): void {
  void new ConfigValidator(schema, label, true);
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Resolves a JSON pointer (RFC 6901) in a JSON value; undefined when absent. */
export function resolvePointer(doc: JsonValue | undefined, pointer: string): JsonValue | undefined {
  if (pointer === '') return doc;
  if (!pointer.startsWith('/')) return undefined;
  let node = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      node = node[Number(token)];
    } else if (typeof node === 'object' && node !== null) {
      node = Object.hasOwn(node, token) ? node[token] : undefined;
    } else {
      return undefined;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/** The endpoint and resource validators of a connector, compiled on first use. */
export class ConnectorSchemas {
  private config?: ConfigValidator;
  private resource?: ConfigValidator;
  private readonly schemas: { configSchema: JsonSchema; resourceConfigSchema: JsonSchema };
  constructor(schemas: { configSchema: JsonSchema; resourceConfigSchema: JsonSchema }) {
    this.schemas = schemas;
  }
  get configValidator(): ConfigValidator {
    this.config ??= new ConfigValidator(this.schemas.configSchema, 'endpoint config');
    return this.config;
  }
  get resourceValidator(): ConfigValidator {
    this.resource ??= new ConfigValidator(this.schemas.resourceConfigSchema, 'resource config');
    return this.resource;
  }
  /**
   * For `spec`: checks both schemas against their meta-schema, so a broken connector schema surfaces there
   * rather than at validate time, and compiles the validators (cached with the compile cache, e.g. when an
   * image is built).
   */
  check(): void {
    checkSchema(this.schemas.configSchema, 'endpoint config');
    checkSchema(this.schemas.resourceConfigSchema, 'resource config');
    void this.configValidator;
    void this.resourceValidator;
  }
}
