// Validation of endpoint and resource configuration against a connector's own JSON Schemas (ajv):
// defaults applied, every problem reported together in one message naming JSON pointers, and no
// configuration value ever echoed (values may be secrets).
import { createRequire } from 'node:module';
import type { _ as CodeTag, Ajv, AnySchema, ErrorObject, Format, Options, ValidateFunction } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { ConfigError, SluiceError } from '../errors.ts';
import type { JsonObject, JsonSchema, JsonValue } from '../protocol/specs.ts';
import { explainConfig, formatConfigProblem } from './config-errors.ts';
import type { ExplainOptions } from './config-errors.ts';
import { ValidatorCache, validatorCacheDir } from './validator-cache.ts';

export { closestName, explainConfig, formatConfigProblem, reduceUnionErrors, unknownKeyProblems, IAM_INJECTED_KEYS } from './config-errors.ts';
export type { ConfigProblem, ExplainOptions } from './config-errors.ts';
export { ValidatorCache, validatorCacheDir } from './validator-cache.ts';
export { untrustedDir } from '../private-dir.js';

/**
 * Annotation keywords connector schemas use for UIs and for Flow (no validation meaning). Any keyword
 * starting with `x-` is accepted too.
 */
export const ANNOTATION_KEYWORDS: readonly string[] = [
  'secret', 'advanced', 'order', 'multiline', 'discriminator', 'airbyte_secret', 'airbyte_hidden',
  'always_show', 'group', 'reduce',
];

type AjvInstance = InstanceType<typeof Ajv>;

// Loaded on first use (start-up: each costs a share of a connector's ~0.2 s start): ajv itself only when a
// schema is compiled (~50–90 ms to load; a cached validator needs only its small runtime helpers), the
// 2019-09 and 2020-12 dialects only for schemas that ask for them, and ajv-formats' format table without its plugin entry,
// whose formatMaximum-style keywords `require('ajv')` — in a dev checkout a second copy of ajv (ajv-formats'
// own, as eslint's ajv 6 takes the top level), ~50 ms. Connector schemas use formats, not those keywords.
const requireCjs = createRequire(import.meta.url);
function ajvClass(dialect: string): typeof Ajv | typeof Ajv2019 | typeof Ajv2020 {
  if (dialect.includes('2020-12')) return (requireCjs('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020 }).Ajv2020;
  if (dialect.includes('2019-09')) return (requireCjs('ajv/dist/2019.js') as { Ajv2019: typeof Ajv2019 }).Ajv2019;
  return ajvModule().Ajv;
}
function ajvModule(): { Ajv: typeof Ajv; _: typeof CodeTag } {
  return requireCjs('ajv') as { Ajv: typeof Ajv; _: typeof CodeTag };
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
    code: { source: true, formats: ajvModule()._`require("ajv-formats/dist/formats.js").fullFormats` },
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

/** Formats ajv errors as one line (deduplicated, in order; unions reduced). */
export function formatSchemaErrors(errors: readonly ErrorObject[], schema: JsonSchema = true, value?: JsonValue): string {
  return explainConfig(schema, value, errors).map(formatConfigProblem).join('; ');
}

// ---- Compiled validators, cached (validator-cache.ts: a per-user or build-time directory, checked) --------

let ajvVersion: string | undefined;
let cache: ValidatorCache | null | undefined;

function validatorCache(): ValidatorCache | null {
  if (cache === undefined) {
    const dir = validatorCacheDir();
    cache = dir === null ? null : new ValidatorCache(dir);
  }
  return cache;
}

function loadCached(c: ValidatorCache, key: string): ValidateFunction | null {
  const code = c.load(key);
  if (code === null) return null;
  try {
    const module = { exports: {} as unknown };
    // ajv's generated validator code, as store() wrote it (a CommonJS module), its MAC checked by load().
    new Function('module', 'exports', 'require', code)(module, module.exports, requireCjs);
    return typeof module.exports === 'function' ? module.exports as ValidateFunction : null;
  } catch {
    return null; // stale: compile instead
  }
}

function storeCached(c: ValidatorCache, key: string, ajv: AjvInstance, validate: ValidateFunction): void {
  try {
    const standaloneCode = (requireCjs('ajv/dist/standalone/index.js') as { default: (a: AjvInstance, v: ValidateFunction) => string }).default;
    c.store(key, standaloneCode(ajv, validate));
  } catch {
    // Code generation failing only costs the compile next time.
  }
}

/** Compiles `schema` (or loads its cached code); throws what ajv throws for a broken schema. */
function compileValidator(schema: JsonSchema, metaSchema: boolean): ValidateFunction {
  const c = metaSchema ? null : validatorCache();
  let key = '';
  if (c !== null) {
    ajvVersion ??= (requireCjs('ajv/package.json') as { version: string }).version;
    key = ValidatorCache.fileKey(JSON.stringify(schema), ajvVersion);
    const cached = loadCached(c, key);
    if (cached !== null) return cached;
  }
  const ajv = newAjv(schema, metaSchema);
  const validate = ajv.compile(schema as AnySchema);
  if (c !== null) storeCached(c, key, ajv, validate);
  return validate;
}

/** A compiled configuration schema. */
export class ConfigValidator {
  readonly schema: JsonSchema;
  private readonly validateFn: ValidateFunction;
  private readonly explain: ExplainOptions;

  /**
   * Throws (not userFacing) when the connector's own schema is broken: a bug in the connector. With
   * `metaSchema`, the schema is also checked against its JSON Schema meta-schema (see checkSchema).
   * `explain.tolerate` names keys accepted beyond the schema (see config-errors.ts).
   */
  constructor(schema: JsonSchema, label: string, metaSchema = false, explain: ExplainOptions = {}) {
    this.schema = schema;
    this.explain = explain;
    try {
      this.validateFn = compileValidator(schema, metaSchema);
    } catch (err) {
      throw brokenSchema(label, err);
    }
  }

  /**
   * Validates a copy of `value` (absent = `{}`), applies defaults and returns it deeply frozen. Unknown keys
   * are refused at every level, with the nearest allowed name (config-errors.ts).
   * `subject` names what is validated, e.g. "endpoint config" or `resource config of binding 0`.
   */
  validate<T = JsonObject>(value: JsonValue | undefined, subject: string): T {
    const data = value === undefined ? {} : structuredClone(value);
    const valid = this.validateFn(data);
    const errors = valid ? [] : [...(this.validateFn.errors ?? [])];
    const problems = explainConfig(this.schema, data, errors, this.explain);
    if (problems.length > 0) {
      const lines = problems.map(formatConfigProblem);
      const n = lines.length;
      throw new ConfigError(`Invalid ${subject} (${n} problem${n === 1 ? '' : 's'}): ${lines.join('; ')}`, {
        fields: { problems: lines },
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

/** What ConnectorSchemas reads of a connector (ConnectorSpecInfo). */
export interface ConnectorSchemaInfo {
  configSchema: JsonSchema;
  resourceConfigSchema: JsonSchema;
  configKeysBeyondSchema?: Readonly<Record<string, readonly string[]>> | undefined;
  resourceKeysBeyondSchema?: Readonly<Record<string, readonly string[]>> | undefined;
}

function tolerate(keys: Readonly<Record<string, readonly string[]>> | undefined): ExplainOptions {
  return keys === undefined ? {} : { tolerate: keys };
}

/** The endpoint and resource validators of a connector, compiled on first use. */
export class ConnectorSchemas {
  private config?: ConfigValidator;
  private resource?: ConfigValidator;
  private readonly schemas: ConnectorSchemaInfo;
  constructor(schemas: ConnectorSchemaInfo) {
    this.schemas = schemas;
  }
  get configValidator(): ConfigValidator {
    this.config ??= new ConfigValidator(this.schemas.configSchema, 'endpoint config', false, tolerate(this.schemas.configKeysBeyondSchema));
    return this.config;
  }
  get resourceValidator(): ConfigValidator {
    // Flow's control plane writes `_meta` (e.g. `{path: [...]}`) into resource configs (estuary/connectors#2784).
    const declared = this.schemas.resourceKeysBeyondSchema ?? {};
    this.resource ??= new ConfigValidator(this.schemas.resourceConfigSchema, 'resource config', false, tolerate({ ...declared, '': [...(declared[''] ?? []), '_meta'] }));
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
