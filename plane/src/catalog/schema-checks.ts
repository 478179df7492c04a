// Checks of an author's JSON schemas that ajv's compile would otherwise report late or not at all: meta-schema
// violations, regular expressions, local references that resolve to nothing, and key or partition locations
// that may be missing or of a non-key type. Used by the loader (load.ts) on every collection schema.
import { pointerOf, resolvePointer, unescapePointerToken } from '@sluice/runtime';
import type { JsonObject, JsonSchema } from '@sluice/runtime';
import { compiledValidator, createAjv } from './ajv.ts';
import type { ValidateFunction } from './ajv.ts';
import { ALL_TYPES, embeddedResources, isObject, isSchema, locate } from './shape.ts';
import type { Shape } from './shape.ts';

const KEY_TYPES = new Set(['string', 'integer', 'boolean']);

// One shared instance checks schemas against the 2020-12 meta-schema. Compiling each collection's schema with
// its own ajv instance cost ~10 ms a collection (5,000 collections took a minute): documents' validators are
// compiled where documents are validated (journals/validator.ts), once per schema.
let metaAjv: ReturnType<typeof createAjv> | undefined;
// The 2020-12 meta-schema's validator, kept as code between starts (compiledValidator): compiling it cost ~30 ms
// of every start. A schema naming another `$schema` is checked by ajv itself (metaAjv), as before.
const META_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
let metaValidator: ValidateFunction | undefined;
const META_OPTIONS = { strict: false, logger: false } as const;

/** ajv's meta-schema errors for `schema` (ajv.validateSchema's verdict), as { at, message }. */
function metaSchemaErrors(schema: JsonSchema): { at: string; message: string }[] {
  if (typeof schema === 'boolean') return [];
  const dialect = (schema as JsonObject).$schema;
  let errors;
  if (dialect === undefined || dialect === META_2020_12) {
    metaValidator ??= compiledValidator('meta-schema 2020-12', {}, META_OPTIONS, (ajv) => ajv.getSchema(META_2020_12)!);
    errors = metaValidator(schema) ? [] : (metaValidator.errors ?? []);
  } else {
    metaAjv ??= createAjv(META_OPTIONS, {});
    errors = metaAjv.validateSchema(schema as object) ? [] : (metaAjv.errors ?? []);
  }
  return errors.map((e) => ({ at: e.instancePath, message: `${e.message ?? e.keyword}` }));
}

const defectsByText = new Map<string, { at: string; message: string }[]>();

/**
 * What keeps `schema` from compiling: meta-schema violations, regular expressions that do not compile (as
 * ajv compiles them, with the u flag) and local references that resolve to nothing. Memoised by text.
 */
export function schemaDefects(schema: JsonSchema): { at: string; message: string }[] {
  const text = JSON.stringify(schema);
  const known = defectsByText.get(text);
  if (known) return known;
  const out: { at: string; message: string }[] = [];
  try {
    out.push(...metaSchemaErrors(schema));
  } catch (err) {
    out.push({ at: '', message: (err as Error).message });
  }
  walkSchema(schema, '', (node, at) => {
    const patterns: [string, string][] = [];
    if (typeof node.pattern === 'string') patterns.push([node.pattern, `${at}/pattern`]);
    if (isObject(node.patternProperties)) for (const p of Object.keys(node.patternProperties)) patterns.push([p, `${at}/patternProperties`]);
    for (const [p, where] of patterns) {
      try {
        new RegExp(p, 'u');
      } catch (err) {
        out.push({ at: where, message: `pattern ${JSON.stringify(p)} is not a valid regular expression: ${(err as Error).message}` });
      }
    }
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#') && !hasAnchorOrPointer(resourceAt(schema, at), node.$ref)) {
      out.push({ at: `${at}/$ref`, message: `can't resolve reference ${node.$ref}` });
    } else if (typeof node.$ref === 'string' && !node.$ref.startsWith('#')) {
      const hash = node.$ref.indexOf('#');
      const resource = embeddedResources(schema).get(hash < 0 ? node.$ref : node.$ref.slice(0, hash));
      if (resource === undefined || (hash >= 0 && !hasAnchorOrPointer(resource, node.$ref.slice(hash)))) {
        out.push({ at: `${at}/$ref`, message: `can't resolve reference ${node.$ref}` });
      }
    }
  });
  if (defectsByText.size > 10_000) defectsByText.clear();
  defectsByText.set(text, out);
  return out;
}

/** The schema resource a pointer into `schema` is in: an embedded one (`$defs` entry with `$id`), or `schema`. */
function resourceAt(schema: JsonSchema, at: string): JsonSchema {
  const m = /^\/(\$defs|definitions)\/([^/]+)/.exec(at);
  if (m && isObject(schema)) {
    const defs = schema[m[1]!];
    const d = isObject(defs) ? defs[unescapePointerToken(m[2]!)] : undefined;
    if (isObject(d) && typeof d.$id === 'string') return d;
  }
  return schema;
}

function hasAnchorOrPointer(schema: JsonSchema, ref: string): boolean {
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref.slice(1));
  } catch {
    return false;
  }
  if (fragment === '' || fragment.startsWith('/')) return resolvePointer(schema, fragment) !== undefined;
  let found = false;
  walkSchema(schema, '', (node) => {
    if (node.$anchor === fragment || node.$dynamicAnchor === fragment) found = true;
  });
  return found;
}

/** Why a key or partition location is unsuitable, or null when it always exists with a key type. */
export function keyProblem(shape: Shape, ptr: string): string | null {
  const { shape: at, exists } = locate(shape, ptr);
  if (exists === 'CANNOT') return 'cannot exist';
  if (exists !== 'MUST') return 'may not exist (it is not required, or a parent is not required or may not be an object)';
  const types = ALL_TYPES.filter((t) => at.types.has(t));
  const bad = types.filter((t) => !KEY_TYPES.has(t));
  if (types.length === 0 || bad.length > 0) return `may be of type ${bad.length ? bad.join(' or ') : 'anything'}`;
  return null;
}

/** Visits every sub-schema with its JSON pointer relative to `schema`. */
export function walkSchema(schema: JsonSchema, at: string, visit: (node: JsonObject, at: string) => void): void {
  if (!isObject(schema)) return;
  visit(schema, at);
  for (const kw of ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']) {
    const m = schema[kw];
    if (isObject(m)) for (const [k, v] of Object.entries(m)) if (isSchema(v)) walkSchema(v, `${at}${pointerOf(kw, k)}`, visit);
  }
  for (const kw of ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems']) {
    const v = schema[kw];
    if (isSchema(v)) walkSchema(v, `${at}/${kw}`, visit);
  }
  for (const kw of ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items']) {
    const v = schema[kw];
    if (Array.isArray(v)) v.forEach((s, i) => { if (isSchema(s)) walkSchema(s, `${at}/${kw}/${i}`, visit); });
  }
}
