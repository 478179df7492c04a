// `sluice raw`'s input files and how its bindings become specs. A bindings file names collections, keys,
// schemas and field selections; they become the catalog's model (collection specs from
// catalog/collection-spec.ts, capture and materialization definitions) and the specs are built by
// plane/src/build as for a catalog: resource paths and constraints from the connector's Validate, state keys
// from the resource paths, field selection by selectFields. When every binding gives its `resourcePath`, no
// Validate runs (an offline build, e.g. a DBA reviewing `apply --dry-run` without a connection): the
// selection is then exactly the fields the file names.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import {
  type CaptureSpec, type CollectionSpec, ConfigError, type Constraint, type JsonObject, type JsonSchema, type JsonValue,
  type MaterializationSpec, parseDocument, resolvePointer, stringifyDocument, unescapePointerToken,
} from '@sluice/runtime';
import {
  BuildError, buildCapture, buildMaterialization, captureSpecOf, materializationBindingsOf, materializationSpecOf,
  type ValidatedMaterializationBinding,
} from '../build/build.ts';
import { collectionSpec } from '../catalog/collection-spec.ts';
import { DEFAULT_INTERVAL_SECONDS } from '../catalog/load.ts';
import type { CaptureDef, Catalog, CollectionDef, EndpointRef, FieldsDef, MaterializationDef } from '../catalog/types.ts';
import type { Launcher } from '../tasks/launcher.ts';

/** One binding of a bindings file, in the catalog's terms. */
export interface RawBinding {
  /** How errors name it: `binding 0 ({"table":"users"})`. */
  where: string;
  resource: JsonObject;
  collection: CollectionSpec;
  /** Given in the file (every binding must give one for an offline build). */
  resourcePath?: string[];
  /** Given in the file: checked against the one derived from the resource path. */
  stateKey?: string;
  backfill: number;
  /** The materialization's field selection, as the catalog's `fields`. */
  fields: FieldsDef;
  /** Given in the file: an offline build uses it; a connector's Validate must agree. */
  deltaUpdates?: boolean;
}

/** A fixture: transactions of documents, each with its exact text (integers beyond ±2^53 kept). */
export interface Fixture {
  transactions: { collection: string; doc: JsonObject; text: string; line: number }[][];
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function readStructured(file: string, flag: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the ${flag} file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseYaml(text) as unknown;
  } catch (err) {
    throw new ConfigError(`the ${flag} file ${file} is not valid JSON or YAML: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** A JSON or YAML file holding an object (absent file: {}). */
export async function readObject(file: string | undefined, flag: string): Promise<JsonObject> {
  if (file === undefined) return {};
  const value = await readStructured(file, flag);
  if (value === null || value === undefined) return {};
  if (!isObject(value)) throw new ConfigError(`the ${flag} file ${file} must hold an object`);
  return value;
}

export async function readFixture(file: string): Promise<Fixture> {
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new ConfigError(`cannot read the --fixture file ${file}: ${err.code ?? err.message}`);
  });
  return parseFixtureText(text, file);
}

export function parseFixtureText(text: string, file: string): Fixture {
  const transactions: Fixture['transactions'] = [];
  let current: Fixture['transactions'][number] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = parseDocument(line);
    } catch (err) {
      throw new ConfigError(`--fixture ${file}:${i + 1}: not valid JSON (${(err as Error).message})`);
    }
    if (isObject(value) && value['commit'] === true) {
      transactions.push(current);
      current = [];
    } else if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && isObject(value[1])) {
      current.push({ collection: value[0], doc: value[1], text: stringifyDocument(value[1]), line: i + 1 });
    } else {
      throw new ConfigError(`--fixture ${file}:${i + 1}: expected ["<collection>", {document}] or {"commit": true}`);
    }
  });
  if (current.length > 0) transactions.push(current);
  return { transactions };
}

/** How errors name a binding: its resource path, else its resource config. */
function bindingName(b: JsonObject, i: number): string {
  const path = b['resourcePath'];
  if (Array.isArray(path) && path.length > 0) return `binding ${i} (${path.join('/')})`;
  const resource = b['resourceConfig'] ?? b['resource'];
  return resource === undefined ? `binding ${i}` : `binding ${i} (${JSON.stringify(resource)})`;
}

/** A binding of Flow's spec JSON: `resourceConfig` and a `collection` spec object. */
function isFlowBinding(b: JsonObject): boolean {
  return isObject(b['resourceConfig']) && isObject(b['collection']);
}

const SHORTHAND_KEYS = ['resource', 'collection', 'source', 'key', 'schema', 'resourcePath', 'stateKey', 'backfill', 'fields', 'deltaUpdates'];
const isPointers = (v: unknown): v is string[] => Array.isArray(v) && v.length > 0 && v.every((k) => typeof k === 'string' && k.startsWith('/'));
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const fieldOf = (ptr: string): string => ptr.slice(1);
const ptrOf = (field: string): string => `/${field}`;

/**
 * Reads a bindings file: a list, {bindings: [...]}, or a whole CaptureSpec/MaterializationSpec (its bindings);
 * each in the shorthand form or Flow's own. `docs` are the fixture's documents, which a shorthand binding
 * without a schema takes its collection's schema from.
 */
export async function readBindings(file: string | undefined, task: string, docs: Fixture['transactions'][number]): Promise<RawBinding[]> {
  if (file === undefined) return [];
  const value = await readStructured(file, '--bindings');
  const list = isObject(value) && Array.isArray(value['bindings']) ? value['bindings'] : value;
  if (!Array.isArray(list)) throw new ConfigError(`the --bindings file ${file} must hold a list of bindings, {bindings: [...]}, or a Flow CaptureSpec/MaterializationSpec`);
  return list.map((b: unknown, i) => {
    if (!isObject(b)) throw new ConfigError(`--bindings ${file}: binding ${i} must be an object`);
    const where = bindingName(b, i);
    const check = (cond: boolean, what: string): void => {
      if (!cond) throw new ConfigError(`--bindings ${file}: ${where}: ${what}`);
    };
    check(b['resourcePath'] === undefined || isStrings(b['resourcePath']), '"resourcePath" must be a list of strings');
    check(b['stateKey'] === undefined || typeof b['stateKey'] === 'string', '"stateKey" must be a string');
    check(b['backfill'] === undefined || (typeof b['backfill'] === 'number' && Number.isInteger(b['backfill']) && b['backfill'] >= 0), '"backfill" must be a whole number');
    check(b['deltaUpdates'] === undefined || typeof b['deltaUpdates'] === 'boolean', '"deltaUpdates" must be true or false');
    const given = {
      ...(b['resourcePath'] !== undefined ? { resourcePath: b['resourcePath'] as string[] } : {}),
      ...(b['stateKey'] !== undefined ? { stateKey: b['stateKey'] as string } : {}),
      ...(b['deltaUpdates'] !== undefined ? { deltaUpdates: b['deltaUpdates'] as boolean } : {}),
      backfill: (b['backfill'] as number | undefined) ?? 0,
    };
    if (isFlowBinding(b)) {
      // Flow's own form, as `flowctl` builds it: resourceConfig, collection (with projections), fieldSelection.
      const c = b['collection'] as JsonObject;
      check(typeof c['name'] === 'string' && c['name'] !== '', '"collection.name" must be the collection\'s name');
      check(isPointers(c['key']), '"collection.key" must be a non-empty list of JSON pointers like "/id"');
      check(c['projections'] === undefined || Array.isArray(c['projections']), '"collection.projections" must be a list of projections');
      check(b['fieldSelection'] === undefined || isObject(b['fieldSelection']), '"fieldSelection" must be an object {keys, values, document}');
      const collection = { uuidPtr: '/_meta/uuid', ...c } as unknown as CollectionSpec;
      const selection = (b['fieldSelection'] ?? {}) as { keys?: unknown; values?: unknown; document?: unknown };
      const fields = fieldsOf(collection, { keys: selection.keys, values: selection.values, document: selection.document === '' ? null : selection.document }, (what) => check(false, `"fieldSelection": ${what}`));
      return { where, resource: b['resourceConfig'] as JsonObject, collection, fields, ...given };
    }
    const unknown = Object.keys(b).filter((k) => !SHORTHAND_KEYS.includes(k));
    check(unknown.length === 0, `unknown member${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; a binding has ${SHORTHAND_KEYS.join(', ')} (or is in Flow's form, with "resourceConfig" and a "collection" spec)`);
    check(b['collection'] === undefined || typeof b['collection'] === 'string', '"collection" must be a collection name; a collection spec object belongs in Flow\'s binding form, with "resourceConfig"');
    check(b['resource'] === undefined || isObject(b['resource']), '"resource" must be an object');
    check(b['key'] === undefined || isPointers(b['key']), '"key" must be a non-empty list of JSON pointers like "/id"');
    check(b['schema'] === undefined || isObject(b['schema']), '"schema" must be a JSON schema object');
    check(b['fields'] === undefined || isObject(b['fields']), '"fields" must be an object {keys, values, document}');
    const key = (b['key'] as string[] | undefined) ?? ['/id'];
    const name = (b['collection'] ?? b['source'] ?? `${task}/${i}`) as string;
    const f = (b['fields'] ?? {}) as { keys?: unknown; values?: unknown; document?: unknown };
    check(f.values === undefined || isStrings(f.values), '"fields.values" must be a list of field names');
    const values = (f.values as string[] | undefined) ?? [];
    const schema = (b['schema'] as JsonObject | undefined)
      ?? schemaOfDocuments([...key, ...values.map(ptrOf)], key, docs.filter((d) => d.collection === name).map((d) => d.doc));
    const document = f.document === undefined ? 'flow_document' : f.document;
    // A document field under another name than flow_document is an explicit projection of the root.
    const explicit = typeof document === 'string' && document !== 'flow_document' ? [{ field: document, ptr: '', partition: false }] : [];
    const collection = collectionSpec({ name, writeSchema: schema, key, projections: explicit });
    const fields = fieldsOf(collection, { keys: f.keys, values, document }, (what) => check(false, `"fields": ${what}`));
    return { where, resource: (b['resource'] as JsonObject | undefined) ?? {}, collection, fields, ...given };
  });
}

/**
 * A field selection `{keys, values, document}` as the catalog's `fields`: the values and the document
 * included, nothing recommended, the document excluded when it is null. Keys are always the collection key's.
 */
function fieldsOf(collection: CollectionSpec, sel: { keys: unknown; values: unknown; document: unknown }, fail: (what: string) => void): FieldsDef {
  const projections = collection.projections ?? [];
  const keyFields = (collection.key ?? []).map((ptr) => projections.find((p) => p.ptr === ptr && p.field === unescapePointerToken(fieldOf(ptr)))?.field ?? fieldOf(ptr));
  if (sel.keys !== undefined && (!isStrings(sel.keys) || sel.keys.join('\u0000') !== keyFields.join('\u0000'))) {
    fail(`keys must be the collection key's fields, [${keyFields.join(', ')}] (got ${JSON.stringify(sel.keys)}); to key by other fields, change the key`);
  }
  if (sel.values !== undefined && !isStrings(sel.values)) fail('values must be a list of field names');
  if (sel.document !== undefined && sel.document !== null && typeof sel.document !== 'string') fail('document must be a field name, or null for none');
  const include: Record<string, JsonObject> = {};
  for (const v of (sel.values as string[] | undefined) ?? []) include[v] = {};
  const exclude: string[] = [];
  const roots = projections.filter((p) => p.ptr === undefined || p.ptr === '').map((p) => p.field);
  if (sel.document === null) exclude.push(...roots);
  else include[typeof sel.document === 'string' ? sel.document : 'flow_document'] = {};
  return { recommended: false, include, exclude };
}

function typeOf(v: JsonValue | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'bigint') return 'integer';
  return typeof v;
}

/**
 * A collection schema for a shorthand binding without one: an object with a property at each of `pointers`
 * (the key and the selected values), typed as the fixture's documents have it; the key and any location
 * every document has are required. The collection spec (projections, inference) is then built from it as
 * for a catalog.
 */
export function schemaOfDocuments(pointers: string[], key: string[], docs: JsonObject[]): JsonSchema {
  const root: JsonObject = { type: 'object' };
  for (const ptr of new Set(pointers)) {
    const tokens = ptr.slice(1).split('/').map(unescapePointerToken);
    const types = new Set<string>();
    let always = docs.length > 0;
    for (const doc of docs) {
      const t = typeOf(resolvePointer(doc, ptr));
      if (t === undefined) always = false;
      else types.add(t);
    }
    if (types.has('integer') && types.has('number')) types.delete('integer');
    const required = always || key.includes(ptr);
    let node = root;
    tokens.forEach((token, i) => {
      const props = (node['properties'] ??= {}) as JsonObject;
      if (required) {
        const req = (node['required'] ??= []) as string[];
        if (!req.includes(token)) req.push(token);
      }
      if (i === tokens.length - 1) {
        props[token] = types.size > 0 ? { type: [...types].sort() } : {};
      } else {
        const next = isObject(props[token]) ? props[token] : { type: 'object' };
        props[token] = next;
        node = next;
      }
    });
  }
  return root;
}

/** The catalog a raw task is built from: its bindings' collections. */
function catalogOf(bindings: RawBinding[]): Catalog {
  const collections = new Map<string, CollectionDef>();
  for (const b of bindings) collections.set(b.collection.name, { name: b.collection.name, spec: b.collection, source: { file: '', pointer: '' } });
  return { file: '', collections, captures: new Map(), materializations: new Map(), tests: new Map() };
}

const SOURCE = { file: '', pointer: '' };

export function captureDefOf(name: string, endpoint: EndpointRef, bindings: RawBinding[]): CaptureDef {
  return {
    name, endpoint, intervalSeconds: DEFAULT_INTERVAL_SECONDS, disabled: false, source: SOURCE,
    bindings: bindings.map((b) => ({ resource: b.resource, target: b.collection.name, disable: false, backfill: b.backfill })),
  };
}

export function materializationDefOf(name: string, endpoint: EndpointRef, bindings: RawBinding[]): MaterializationDef {
  return {
    // A binding whose schema change the destination cannot take fails the build (no automatic backfill).
    name, endpoint, disabled: false, source: SOURCE, onIncompatibleSchemaChange: 'abort',
    bindings: bindings.map((b) => ({
      source: b.collection.name, resource: b.resource, partitions: { include: {}, exclude: {} }, fields: b.fields,
      disable: false, backfill: b.backfill,
    })),
  };
}

/** True when no Validate is needed: every binding gives its resource path. */
function offline(bindings: RawBinding[]): boolean {
  return bindings.length > 0 && bindings.every((b) => b.resourcePath !== undefined);
}

/** What the file gave (resource path, state key, delta updates) must be what the build made. */
function checkGiven(bindings: RawBinding[], built: { resourcePath?: string[]; stateKey?: string; deltaUpdates?: boolean }[]): void {
  const problems: string[] = [];
  bindings.forEach((b, i) => {
    const s = built[i]!;
    if (b.resourcePath !== undefined && JSON.stringify(b.resourcePath) !== JSON.stringify(s.resourcePath ?? [])) {
      problems.push(`${b.where}: "resourcePath" is ${JSON.stringify(b.resourcePath)}, but the connector's Validate says ${JSON.stringify(s.resourcePath ?? [])}; remove it, or give it on every binding to build without Validate`);
    }
    if (b.stateKey !== undefined && b.stateKey !== s.stateKey) {
      problems.push(`${b.where}: "stateKey" is ${JSON.stringify(b.stateKey)}, but the state key of resource path ${JSON.stringify(s.resourcePath ?? [])} is ${JSON.stringify(s.stateKey)} (Flow's rule: the path's components percent-encoded, joined by %2F, .v<backfill> after a backfill); remove it`);
    }
    if (b.deltaUpdates !== undefined && b.deltaUpdates !== (s.deltaUpdates === true)) {
      problems.push(`${b.where}: "deltaUpdates" is ${b.deltaUpdates}, but the connector's Validate says ${s.deltaUpdates === true}; set delta updates in the resource config (e.g. delta_updates: true) or remove it`);
    }
  });
  if (problems.length > 0) throw new ConfigError(problems.length === 1 ? problems[0]! : `${problems.length} problems:\n - ${problems.join('\n - ')}`);
}

/** Builds the capture spec as the plane does (Validate through `launcher`), or offline from the given resource paths. */
export async function buildRawCapture(def: CaptureDef, bindings: RawBinding[], launcher: Launcher): Promise<CaptureSpec> {
  const spec = offline(bindings)
    ? captureSpecOf(def, bindings.map((b) => b.collection), bindings.map((b) => ({ resourcePath: b.resourcePath! })))
    : (await buildCapture(catalogOf(bindings), def, { launcher, version: 'raw', apply: false })).spec;
  checkGiven(bindings, spec.bindings ?? []);
  return spec;
}

/**
 * Builds the materialization spec as the plane does (Validate through `launcher`, then field selection), or
 * offline: the given resource paths and delta updates, every projection allowed, the named fields selected.
 */
export async function buildRawMaterialization(def: MaterializationDef, bindings: RawBinding[], launcher: Launcher): Promise<MaterializationSpec> {
  if (!offline(bindings)) {
    const built = await buildMaterialization(catalogOf(bindings), def, { launcher, version: 'raw', apply: false });
    checkGiven(bindings, built.spec.bindings ?? []);
    return built.spec;
  }
  const allowed: Constraint = { type: 'FIELD_OPTIONAL', reason: 'sluice raw: built without Validate' };
  const validated: ValidatedMaterializationBinding[] = bindings.map((b) => ({
    resourcePath: b.resourcePath!,
    constraints: Object.fromEntries((b.collection.projections ?? []).map((p) => [p.field, allowed])),
    ...(b.deltaUpdates ? { deltaUpdates: true } : {}),
  }));
  const selected = materializationBindingsOf(def, bindings.map((b) => b.collection), validated);
  if (selected.errors.length > 0) throw new BuildError(selected.errors);
  checkGiven(bindings, selected.bindings);
  return materializationSpecOf(def, selected.bindings);
}
