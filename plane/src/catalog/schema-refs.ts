// Resolving a collection schema's references as Flow does (issue 15.6), so catalogs written for Flow load unchanged:
// - `$ref` to another schema file (relative to the file holding the reference, or `file:`), with an optional
//   `#/pointer`: the file is embedded under `$defs` with `$id` = its file URL and the reference rewritten to that
//   URL; references inside it resolve relative to it, recursively, each file embedded once (cycles are fine);
// - in a readSchema, `flow://write-schema`, `flow://relaxed-write-schema` and `flow://inferred-schema`, embedded
//   under `$defs` by `$id` as Flow's build inlines them into the built read schema:
//     write-schema          the collection's writeSchema;
//     relaxed-write-schema  the writeSchema as well — Flow relaxes it only once an inferred schema exists;
//     inferred-schema       the writeSchema relaxed (validation keywords removed, annotations kept): the local
//                           plane does not infer schemas, so it adds no constraint and reads behave as the
//                           writeSchema says (Flow's placeholder, before anything is inferred, fails every read);
// - `flow://connector-schema` and any other URL must be embedded by `$id` already (as Flow's control plane does);
//   remote `http(s)` schemas are not fetched.
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { escapePointerToken } from '@sluice/runtime';
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';
import { isObject } from './shape.ts';

export const FLOW_WRITE_SCHEMA = 'flow://write-schema';
export const FLOW_RELAXED_WRITE_SCHEMA = 'flow://relaxed-write-schema';
export const FLOW_INFERRED_SCHEMA = 'flow://inferred-schema';
const READ_ONLY_REFS = new Set([FLOW_WRITE_SCHEMA, FLOW_RELAXED_WRITE_SCHEMA, FLOW_INFERRED_SCHEMA]);

export type SchemaRole = 'schema' | 'writeSchema' | 'readSchema';

/** Reads a referenced schema file (absolute path); returns its parsed value, or a reason it cannot be read. */
export type ReadSchemaFile = (path: string) => Promise<{ value: JsonValue } | { error: string }>;

export interface RefProblem { at: string; message: string }

/** Every `$ref` string in a JSON value, with the JSON pointer of the object holding it. */
function refsIn(value: JsonValue, at: string, out: { at: string; holder: JsonObject; ref: string }[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => refsIn(v, `${at}/${i}`, out));
  } else if (isObject(value)) {
    if (typeof value.$ref === 'string') out.push({ at, holder: value, ref: value.$ref });
    for (const [k, v] of Object.entries(value)) if (k !== 'const' && k !== 'enum' && k !== 'default' && k !== 'examples') refsIn(v, `${at}/${escapePointerToken(k)}`, out);
  }
}

function embeddedIds(schema: JsonSchema): Set<string> {
  const ids = new Set<string>();
  if (!isObject(schema)) return ids;
  for (const kw of ['$defs', 'definitions']) {
    const defs = schema[kw];
    if (isObject(defs)) for (const d of Object.values(defs)) if (isObject(d) && typeof d.$id === 'string') ids.add(d.$id);
  }
  return ids;
}

/**
 * Embeds the files `schema` references (it was found in `file`) and checks its other references. Returns the
 * schema to build with (a copy when anything changed) and the problems, each at a pointer into `schema`.
 */
export async function bundleSchemaRefs(schema: JsonSchema, file: string, role: SchemaRole, read: ReadSchemaFile): Promise<{ schema: JsonSchema; problems: RefProblem[]; files: string[] }> {
  const problems: RefProblem[] = [];
  const files: string[] = [];
  if (!isObject(schema)) return { schema, problems, files };
  const probe: { at: string; holder: JsonObject; ref: string }[] = [];
  refsIn(schema, '', probe);
  if (!probe.some((r) => !r.ref.startsWith('#'))) return { schema, problems, files };

  const root = structuredClone(schema);
  const defs: JsonObject = isObject(root.$defs) ? root.$defs : {};
  const ids = embeddedIds(root);
  const embedded = new Map<string, string>(); // file URL → path
  // (value to scan, the file its relative references resolve against, pointer prefix for problems)
  const queue: { value: JsonValue; base: string; at: string; fromFile: boolean }[] = [{ value: root, base: file, at: '', fromFile: false }];
  while (queue.length > 0) {
    const { value, base, at, fromFile } = queue.shift()!;
    const refs: { at: string; holder: JsonObject; ref: string }[] = [];
    refsIn(value, '', refs);
    for (const r of refs) {
      const where = fromFile ? at : r.at;
      const ref = r.ref;
      if (ref.startsWith('#')) continue;
      if (READ_ONLY_REFS.has(ref)) {
        if (role !== 'readSchema') problems.push({ at: `${where}/$ref`, message: `${ref} may only be referenced from a collection's readSchema (it stands for a part of the writeSchema); in a ${role}, write the schema itself` });
        continue;
      }
      const hash = ref.indexOf('#');
      const target = hash < 0 ? ref : ref.slice(0, hash);
      const fragment = hash < 0 ? '' : ref.slice(hash);
      if (ids.has(target)) continue;
      const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(target)?.[1]?.toLowerCase();
      if (scheme !== undefined && scheme !== 'file' && !/^[a-z]:[\\/]/i.test(target)) {
        problems.push({
          at: `${where}/$ref`,
          message: scheme === 'flow'
            ? `${target} is not defined in this schema: Flow's control plane embeds it under $defs with "$id": "${target}"; pull the spec again with flowctl, or replace the reference with the schema`
            : `remote schema ${target} is not fetched by the local plane; download it and reference the copy by a relative path`,
        });
        continue;
      }
      let path: string;
      try {
        path = scheme === 'file' ? fileURLToPath(new URL(target, pathToFileURL(base))) : isAbsolute(decodeURIComponent(target)) ? decodeURIComponent(target) : resolve(dirname(base), decodeURIComponent(target));
      } catch (err) {
        problems.push({ at: `${where}/$ref`, message: `cannot resolve ${JSON.stringify(ref)}: ${(err as Error).message}` });
        continue;
      }
      const url = pathToFileURL(path).href;
      r.holder.$ref = url + fragment;
      if (embedded.has(url)) continue;
      const got = await read(path);
      if ('error' in got) {
        problems.push({ at: `${where}/$ref`, message: `schema ${JSON.stringify(ref)} (from ${base}): ${got.error}` });
        embedded.set(url, path);
        continue;
      }
      if (!isObject(got.value) && typeof got.value !== 'boolean') {
        problems.push({ at: `${where}/$ref`, message: `schema ${JSON.stringify(ref)} is ${path}, which is not a JSON Schema (an object or boolean)` });
        embedded.set(url, path);
        continue;
      }
      const resource: JsonObject = isObject(got.value) ? { ...structuredClone(got.value), $id: url } : got.value ? { $id: url } : { $id: url, not: {} };
      defs[url] = resource;
      ids.add(url);
      embedded.set(url, path);
      files.push(path);
      queue.push({ value: resource, base: path, at: `${where}/$ref`, fromFile: true });
    }
  }
  if (Object.keys(defs).length > 0) root.$defs = defs;
  return { schema: root, problems, files };
}

/** Whether a (read) schema references one of the flow:// schemas that stand for the writeSchema. */
export function usesWriteSchemaRefs(schema: JsonSchema): boolean {
  const refs: { at: string; holder: JsonObject; ref: string }[] = [];
  refsIn(schema, '', refs);
  return refs.some((r) => READ_ONLY_REFS.has(r.ref));
}

// Validation keywords removed by relaxation; annotations (title, description, default, reduce, secret…),
// structure (properties, items, $defs, $ref, allOf/anyOf/oneOf, if/then/else) stay.
const VALIDATION_KEYWORDS = new Set([
  'type', 'const', 'enum', 'required', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum',
  'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minContains',
  'maxContains', 'contains', 'minProperties', 'maxProperties', 'additionalProperties', 'unevaluatedProperties',
  'unevaluatedItems', 'propertyNames', 'dependentRequired', 'not', 'contentEncoding', 'contentMediaType',
]);

/** The schema with its validation keywords removed, recursively (see the file comment). */
export function relaxSchema(schema: JsonSchema): JsonSchema {
  const visit = (v: JsonValue): JsonValue => {
    if (Array.isArray(v)) return v.map(visit);
    if (!isObject(v)) return v;
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (VALIDATION_KEYWORDS.has(k)) continue;
      if (k === 'const' || k === 'default' || k === 'examples' || k === 'reduce') out[k] = x;
      else if (k === 'properties' || k === 'patternProperties' || k === '$defs' || k === 'definitions' || k === 'dependentSchemas') {
        out[k] = isObject(x) ? Object.fromEntries(Object.entries(x).map(([n, s]) => [n, visit(s)])) : x;
      } else out[k] = visit(x);
    }
    return out;
  };
  return typeof schema === 'boolean' ? true : visit(schema) as JsonObject;
}

/**
 * The read schema to build: `read` with the flow:// schemas it references embedded under `$defs` (see the file
 * comment). Resources `write` embeds by `$id` move up to the read schema's `$defs`, so each `$id` is defined once.
 */
export function withWriteSchemaRefs(read: JsonSchema, write: JsonSchema): JsonSchema {
  if (!isObject(read) || !usesWriteSchemaRefs(read)) return read;
  const out: JsonObject = { ...read };
  const defs: JsonObject = isObject(read.$defs) ? { ...read.$defs } : {};
  let writeBody: JsonSchema = write;
  if (isObject(write) && isObject(write.$defs)) {
    const own: JsonObject = {};
    for (const [k, d] of Object.entries(write.$defs)) {
      if (isObject(d) && typeof d.$id === 'string') {
        if (!(k in defs)) defs[k] = d;
      } else {
        own[k] = d;
      }
    }
    writeBody = { ...write, $defs: own };
    if (Object.keys(own).length === 0) delete (writeBody as JsonObject).$defs;
  }
  const as = (id: string, s: JsonSchema): JsonObject => (isObject(s) ? { ...s, $id: id } : s ? { $id: id } : { $id: id, not: {} });
  const refs: { at: string; holder: JsonObject; ref: string }[] = [];
  refsIn(read, '', refs);
  const used = new Set(refs.map((r) => r.ref));
  if (used.has(FLOW_WRITE_SCHEMA)) defs[FLOW_WRITE_SCHEMA] = as(FLOW_WRITE_SCHEMA, writeBody);
  if (used.has(FLOW_RELAXED_WRITE_SCHEMA)) defs[FLOW_RELAXED_WRITE_SCHEMA] = as(FLOW_RELAXED_WRITE_SCHEMA, writeBody);
  if (used.has(FLOW_INFERRED_SCHEMA)) defs[FLOW_INFERRED_SCHEMA] = as(FLOW_INFERRED_SCHEMA, relaxSchema(writeBody));
  out.$defs = defs;
  return out;
}
