// Loads a flow.yaml catalog and everything it imports, validates it (schemas/catalog.schema.json plus the
// rules a JSON Schema cannot say: names resolve, keys are well-typed, reduce strategies are supported,
// partition and field selections name real fields) and builds each collection's spec. Every problem
// found is reported together, each with file, line, JSON pointer and what to do.
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { closestName, pointerOf, resolvePointer, unescapePointerToken } from '@sluice/runtime';
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';
import type {
  CaptureDef, Catalog, CollectionDef, EndpointRef, FieldsDef, MaterializationDef, PartitionSelectorDef, TestDef, TestStep,
} from './types.ts';
import { createAjv } from './ajv.ts';
import type { ErrorObject, ValidateFunction } from './ajv.ts';
import { catalogSchema, NAME_PATTERN } from './catalog-schema.ts';
import type { CaptureFile, CatalogFile, CollectionFile, EndpointFile, MaterializationFile, TestFile } from './catalog-schema.ts';
import { CatalogError, escapeControls } from './errors.ts';
import type { CatalogProblem } from './errors.ts';
import { collectionSpec } from './collection-spec.ts';
import type { ExplicitProjection } from './projections.ts';
import { SUPPORTED_STRATEGIES } from './reduce.ts';
import { ALL_TYPES, embeddedResources, isObject, isSchema, locate, shapeOf } from './shape.ts';
import { bundleSchemaRefs, withWriteSchemaRefs } from './schema-refs.ts';
import type { ReadSchemaFile, SchemaRole } from './schema-refs.ts';
import type { Shape } from './shape.ts';
import { readSourceText, SourceFile } from './source-file.ts';

// The schema's Name: components that are `.` or `..` would be path traversal wherever a name becomes a path
// (journal names, data-dir files, connector resources).
const NAME_RULE = "one or more components of Unicode letters, numbers, '-', '_' or '.' (a component may not be '.' or '..'), separated by '/', with no empty component and no leading or trailing '/'";
/** Flow's default interval between capture runs. */
export const DEFAULT_INTERVAL_SECONDS = 300;
const KEY_TYPES = new Set(['string', 'integer', 'boolean']);

export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

let validateCatalogFile: ValidateFunction<CatalogFile> | undefined;
function catalogValidator(): ValidateFunction<CatalogFile> {
  validateCatalogFile ??= createAjv({ verbose: true }).compile<CatalogFile>(catalogSchema);
  return validateCatalogFile;
}

/** A definition of a catalog file that validated against catalogSchema, as written (`raw`), and where it is. */
interface Entry<T = unknown> { kind: Kind; name: string; src: SourceFile; pointer: string; raw: T }
type Kind = 'collections' | 'captures' | 'materializations' | 'tests';
const SINGULAR: Record<Kind, string> = { collections: 'collection', captures: 'capture', materializations: 'materialization', tests: 'test' };

/** Loads, validates and builds the catalog rooted at `file`. Throws a CatalogError listing every problem. */
export async function loadCatalog(file: string): Promise<Catalog> {
  const loader = new Loader();
  return loader.load(resolve(file));
}

class Loader {
  readonly problems: CatalogProblem[] = [];
  readonly files = new Map<string, SourceFile>();
  readonly entries: {
    collections: Map<string, Entry<CollectionFile>>; captures: Map<string, Entry<CaptureFile>>;
    materializations: Map<string, Entry<MaterializationFile>>; tests: Map<string, Entry<TestFile>>;
  } = { collections: new Map(), captures: new Map(), materializations: new Map(), tests: new Map() };
  readonly shapes = new Map<string, Shape>();

  problem(src: SourceFile | string, pointer: string, message: string, key = false): void {
    if (typeof src === 'string') {
      this.problems.push({ file: src, line: 0, column: 0, pointer, message });
      return;
    }
    const pos = src.locate(pointer, key);
    this.problems.push({ file: src.path, line: pos.line, column: pos.column, pointer, message });
  }

  async load(root: string): Promise<Catalog> {
    await this.loadFile(root, undefined);
    const collections = new Map<string, CollectionDef>();
    for (const e of this.entries.collections.values()) {
      const def = await this.buildCollection(e);
      if (def) collections.set(e.name, def);
    }
    const captures = new Map<string, CaptureDef>();
    for (const e of this.entries.captures.values()) {
      const def = await this.buildCapture(e);
      if (def) captures.set(e.name, def);
    }
    const materializations = new Map<string, MaterializationDef>();
    for (const e of this.entries.materializations.values()) {
      const def = await this.buildMaterialization(e, collections);
      if (def) materializations.set(e.name, def);
    }
    const tests = new Map<string, TestDef>();
    for (const e of this.entries.tests.values()) {
      const def = await this.buildTest(e);
      if (def) tests.set(e.name, def);
    }
    if (this.problems.length > 0) throw new CatalogError(this.problems);
    return { file: root, files: [...this.files.keys()], collections, captures, materializations, tests };
  }

  async loadFile(path: string, from: { src: SourceFile; pointer: string } | undefined): Promise<void> {
    if (this.files.has(path)) return;
    let src: SourceFile;
    try {
      src = await SourceFile.read(path, from ? { file: from.src.path, pointer: from.pointer } : undefined);
    } catch (err) {
      if (err instanceof CatalogError) {
        if (from) for (const p of err.problems) this.problem(from.src, p.pointer, p.message);
        else this.problems.push(...err.problems);
        return;
      }
      throw err;
    }
    this.files.set(path, src);
    const doc = src.value;
    if (doc === null) return; // an empty file is an empty catalog
    const validate = catalogValidator();
    if (validate(doc)) {
      // This file's own definitions are registered before its imports', so a duplicate is reported in the import.
      this.register(src, doc);
    } else {
      for (const p of schemaProblems(validate.errors ?? [])) this.problem(src, p.pointer, p.message, p.key);
    }
    // The imports of an invalid file are still read (their problems are reported too).
    if (!isObject(doc)) return;
    if (Array.isArray(doc.import)) {
      for (const [i, imp] of doc.import.entries()) {
        if (typeof imp !== 'string') continue;
        const target = this.resolveImport(src, pointerOf('import', i), imp);
        if (target) await this.loadFile(target, { src, pointer: pointerOf('import', i) });
      }
    }
  }

  register(src: SourceFile, doc: CatalogFile): void {
    this.registerSection(src, 'collections', doc.collections, this.entries.collections);
    this.registerSection(src, 'captures', doc.captures, this.entries.captures);
    this.registerSection(src, 'materializations', doc.materializations, this.entries.materializations);
    this.registerSection(src, 'tests', doc.tests, this.entries.tests);
  }

  registerSection<T>(src: SourceFile, kind: Kind, section: Record<string, T> | undefined, into: Map<string, Entry<T>>): void {
    for (const [name, raw] of Object.entries(section ?? {})) {
      const pointer = pointerOf(kind, name);
      const dup = this.findEntry(name);
      if (dup) {
        const pos = dup.src.locate(dup.pointer, true);
        this.problem(src, pointer, `${SINGULAR[kind]} "${name}" is already defined as a ${SINGULAR[dup.kind]} at ${dup.src.path}:${pos.line}; catalog names must be unique across collections, captures, materializations and tests — rename one`, true);
        continue;
      }
      into.set(name, { kind, name, src, pointer, raw });
    }
  }

  findEntry(name: string): Entry | undefined {
    const { collections, captures, materializations, tests } = this.entries;
    return collections.get(name) ?? captures.get(name) ?? materializations.get(name) ?? tests.get(name);
  }

  resolveImport(src: SourceFile, pointer: string, imp: string): string | undefined {
    if (/^[a-z][a-z0-9+.-]*:/i.test(imp) && !/^[a-z]:[\\/]/i.test(imp)) {
      if (imp.startsWith('file:')) return fileURLToPath(new URL(imp, pathToFileURL(src.path)));
      this.problem(src, pointer, `cannot import ${imp}: only local files (relative paths or file: URLs) can be imported; download it and import the copy`);
      return undefined;
    }
    return isAbsolute(imp) ? imp : resolve(dirname(src.path), imp);
  }

  /** Reads a JSON/YAML file named relative to `src` (with an optional #/pointer fragment). */
  async readReferenced(src: SourceFile, pointer: string, ref: string, what: string): Promise<{ value: JsonValue; src: SourceFile; pointer: string } | undefined> {
    const hash = ref.indexOf('#');
    const pathPart = hash >= 0 ? ref.slice(0, hash) : ref;
    const fragment = hash >= 0 ? decodeURIComponent(ref.slice(hash + 1)) : '';
    if (fragment !== '' && !fragment.startsWith('/')) {
      this.problem(src, pointer, `${what} reference "${ref}" has fragment "#${fragment}", which is not a JSON pointer; use file#/path/to/value`);
      return undefined;
    }
    const path = pathPart.startsWith('file:') ? fileURLToPath(new URL(pathPart, pathToFileURL(src.path))) : resolve(dirname(src.path), pathPart);
    let file = this.files.get(path);
    if (!file) {
      try {
        file = await SourceFile.read(path, { file: src.path, pointer });
      } catch (err) {
        if (err instanceof CatalogError) {
          for (const p of err.problems) {
            if (p.file === src.path) this.problem(src, pointer, `${what}: ${p.message}`);
            else this.problems.push({ ...p, message: `${what} file: ${p.message}` });
          }
          return undefined;
        }
        throw err;
      }
      this.files.set(path, file);
    }
    const value = resolvePointer(file.value, fragment);
    if (value === undefined) {
      this.problem(src, pointer, `${what} "${ref}": ${fragment} does not exist in ${path}; fix the #/pointer`);
      return undefined;
    }
    return { value, src: file, pointer: fragment };
  }

  async resolveSchema(src: SourceFile, pointer: string, value: JsonValue): Promise<{ schema: JsonSchema; src: SourceFile; pointer: string } | undefined> {
    if (typeof value !== 'string') return isSchema(value) ? { schema: value, src, pointer } : undefined;
    const got = await this.readReferenced(src, pointer, value, 'schema');
    if (!got) return undefined;
    if (!isSchema(got.value)) {
      this.problem(got.src, got.pointer, `schema referenced from ${src.path} must be a JSON Schema (an object or boolean)`);
      return undefined;
    }
    let schema: JsonSchema = got.value;
    if (got.pointer !== '' && isObject(schema)) {
      // A sub-schema of a larger document: bring the local definitions it refers to along.
      schema = inlineLocalRefs(schema, got.src.value);
    }
    return { schema, src: got.src, pointer: got.pointer };
  }

  /** `s` with the schema files it references embedded (bundleSchemaRefs); undefined after reporting problems. */
  async bundleRefs(s: { schema: JsonSchema; src: SourceFile; pointer: string }, collection: string, role: SchemaRole): Promise<{ schema: JsonSchema; src: SourceFile; pointer: string } | undefined> {
    const readFile: ReadSchemaFile = async (path) => {
      let file = this.files.get(path);
      if (!file) {
        try {
          file = SourceFile.parse(path, await readSourceText(path));
        } catch (err) {
          if (!(err instanceof CatalogError)) throw err;
          return { error: err.problems.map((p) => p.message.replace(/^cannot read catalog: /, `cannot read ${path}: `)).join('; ') };
        }
        this.files.set(path, file);
      }
      return { value: file.value };
    };
    const bundled = await bundleSchemaRefs(s.schema, s.src.path, role, readFile);
    for (const p of bundled.problems) this.problem(s.src, s.pointer + p.at, `collection "${collection}": ${p.message}`);
    return bundled.problems.length > 0 ? undefined : { ...s, schema: bundled.schema };
  }

  checkSchema(s: { schema: JsonSchema; src: SourceFile; pointer: string }, collection: string): boolean {
    let ok = true;
    walkSchema(s.schema, '', (node, at) => {
      if (!('reduce' in node)) return;
      const reduce = node.reduce;
      const strategy = isObject(reduce) ? reduce.strategy : undefined;
      const where = s.pointer + at + '/reduce' + (isObject(reduce) && 'strategy' in reduce ? '/strategy' : '');
      if (typeof strategy !== 'string' || !(SUPPORTED_STRATEGIES as readonly string[]).includes(strategy)) {
        ok = false;
        const got = typeof strategy === 'string' ? `strategy "${strategy}"` : `reduce annotation ${JSON.stringify(reduce)}`;
        this.problem(s.src, where, `collection "${collection}": ${got} is not supported; the local plane supports reduce strategies ${SUPPORTED_STRATEGIES.map((x) => `"${x}"`).join(' and ')} (remove the annotation for lastWriteWins)`);
      }
    });
    for (const why of schemaDefects(s.schema)) {
      ok = false;
      this.problem(s.src, s.pointer + why.at, `collection "${collection}": invalid JSON Schema: ${why.message}`);
    }
    return ok;
  }

  async buildCollection(e: Entry<CollectionFile>): Promise<CollectionDef | undefined> {
    const raw = e.raw;
    const at = (...segs: string[]) => e.pointer + pointerOf(...segs);
    const before = this.problems.length;
    if ('derive' in raw) {
      this.problem(e.src, at('derive'), `collection "${e.name}": derivations are not supported by the local plane; remove "derive" (or run this catalog on Flow)`, true);
    }
    const hasSchema = 'schema' in raw;
    const hasWrite = 'writeSchema' in raw;
    const hasRead = 'readSchema' in raw;
    if (hasSchema && (hasWrite || hasRead)) {
      this.problem(e.src, at(hasWrite ? 'writeSchema' : 'readSchema'), `collection "${e.name}": give either "schema" or both "writeSchema" and "readSchema", not both forms`, true);
    } else if (!hasSchema && !(hasWrite && hasRead)) {
      const missing = !hasWrite && !hasRead ? '"schema"' : hasWrite ? '"readSchema" (writeSchema is given)' : '"writeSchema" (readSchema is given)';
      this.problem(e.src, e.pointer, `collection "${e.name}": missing ${missing}; give "schema", or both "writeSchema" and "readSchema"`, true);
    }
    if (this.problems.length > before) return undefined;

    const writeRaw = await this.resolveSchema(e.src, at(hasSchema ? 'schema' : 'writeSchema'), raw[hasSchema ? 'schema' : 'writeSchema']!);
    const readRaw = hasSchema ? writeRaw : await this.resolveSchema(e.src, at('readSchema'), raw.readSchema!);
    if (!writeRaw || !readRaw) return undefined;
    // Schema files referenced by $ref are embedded; flow:// references in the read schema resolve (schema-refs.ts).
    const write = await this.bundleRefs(writeRaw, e.name, hasSchema ? 'schema' : 'writeSchema');
    const readBundled = hasSchema ? write : await this.bundleRefs(readRaw, e.name, 'readSchema');
    if (!write || !readBundled) return undefined;
    const read = hasSchema ? write : { ...readBundled, schema: withWriteSchemaRefs(readBundled.schema, write.schema) };
    if (!this.checkSchema(write, e.name) || (read !== write && !this.checkSchema(read, e.name))) return undefined;

    // Shapes come from the author's schemas (collectionSpec adds `_meta`, which is not a projected field).
    const writeShape = shapeOf(write.schema);
    const readShape = read === write ? writeShape : shapeOf(read.schema);
    const key = raw.key;
    for (const [i, ptr] of key.entries()) {
      for (const [label, shape] of read === write ? [['schema', writeShape] as const] : [['writeSchema', writeShape] as const, ['readSchema', readShape] as const]) {
        const why = keyProblem(shape, ptr);
        if (why) this.problem(e.src, at('key', String(i)), `collection "${e.name}": key ${ptr} ${why} in its ${label}; keys must always exist and be string, integer or boolean — add it to "required" with such a type, or choose another key`);
      }
    }

    const explicit: ExplicitProjection[] = [];
    for (const [field, p] of Object.entries(raw.projections ?? {})) {
      const ptr = typeof p === 'string' ? p : p.location;
      const partition = typeof p !== 'string' && p.partition === true;
      const pAt = at('projections', field);
      if (field.length === 0) this.problem(e.src, pAt, `collection "${e.name}": projection names must not be empty`, true);
      if (field === 'flow_document' || field === 'flow_published_at') {
        this.problem(e.src, pAt, `collection "${e.name}": projection "${field}" is reserved; choose another field name`, true);
        continue;
      }
      const located = locate(readShape, ptr);
      if (located.exists === 'CANNOT') {
        this.problem(e.src, pAt, `collection "${e.name}": projection "${field}" points at ${ptr}, which cannot exist in documents of this schema; fix the location`);
      }
      if (partition) {
        const why = keyProblem(readShape, ptr);
        if (why) this.problem(e.src, pAt, `collection "${e.name}": logical partition "${field}" at ${ptr} ${why}; partition fields must always exist and be string, integer or boolean`);
      }
      explicit.push({ field, ptr, partition });
    }
    if (this.problems.length > before) return undefined;

    const spec = collectionSpec({
      name: e.name, writeSchema: write.schema, key, projections: explicit, readShape,
      ...(read === write ? {} : { readSchema: read.schema }),
    });
    this.shapes.set(e.name, readShape);
    return { name: e.name, spec, source: { file: e.src.path, pointer: e.pointer } };
  }

  async resolveConfig(src: SourceFile, pointer: string, value: JsonValue, task: string): Promise<JsonObject | undefined> {
    let config: JsonValue = value;
    let where = { src, pointer };
    if (typeof value === 'string') {
      const got = await this.readReferenced(src, pointer, value, `config of "${task}"`);
      if (!got) return undefined;
      config = got.value;
      where = { src: got.src, pointer: got.pointer };
    }
    if (!isObject(config)) {
      this.problem(where.src, where.pointer, `config of "${task}" must be an object`);
      return undefined;
    }
    if ('sops' in config) {
      this.problem(where.src, where.pointer, `config of "${task}" is sops-encrypted; the local plane cannot decrypt it — decrypt it (sops -d) into a local file`);
      return undefined;
    }
    return config;
  }

  async buildEndpoint(e: Entry, endpoint: EndpointFile): Promise<EndpointRef | undefined> {
    const at = e.pointer + '/endpoint';
    if (endpoint.connector) {
      const config = await this.resolveConfig(e.src, `${at}/connector/config`, endpoint.connector.config, e.name);
      return config && { kind: 'connector', image: endpoint.connector.image, config };
    }
    if (endpoint.local) {
      const config = await this.resolveConfig(e.src, `${at}/local/config`, endpoint.local.config, e.name);
      return config && { kind: 'local', command: endpoint.local.command, config, env: { ...endpoint.local.env } };
    }
    // Only a materialization's endpoint may be `sqlite` (a capture's schema has no such member).
    if ('sqlite' in endpoint && endpoint.sqlite) {
      return { kind: 'sqlite', config: { path: resolve(dirname(e.src.path), endpoint.sqlite.path) } };
    }
    return undefined;
  }

  async buildCapture(e: Entry<CaptureFile>): Promise<CaptureDef | undefined> {
    const raw = e.raw;
    const before = this.problems.length;
    const endpoint = await this.buildEndpoint(e, raw.endpoint);
    const bindings: CaptureDef['bindings'] = [];
    for (const [i, b] of raw.bindings.entries()) {
      this.checkCollectionRef(e, `${e.pointer}/bindings/${i}/target`, b.target, 'target');
      bindings.push({ resource: b.resource, target: b.target, disable: b.disable === true, backfill: b.backfill ?? 0 });
    }
    let intervalSeconds = DEFAULT_INTERVAL_SECONDS;
    if (raw.interval !== undefined) {
      intervalSeconds = parseInterval(raw.interval);
      if (intervalSeconds <= 0) this.problem(e.src, `${e.pointer}/interval`, `capture "${e.name}": interval must be greater than zero`);
    }
    if (this.problems.length > before || !endpoint) return undefined;
    return {
      name: e.name, endpoint, bindings, intervalSeconds,
      disabled: raw.shards?.disable === true,
      source: { file: e.src.path, pointer: e.pointer },
    };
  }

  checkCollectionRef(e: Entry, pointer: string, name: string, role: string): boolean {
    if (this.entries.collections.has(name)) return true;
    const other = this.findEntry(name);
    const hint = other ? `it is a ${SINGULAR[other.kind]}, not a collection` : `define it under "collections" (here or in an imported file) or fix the name`;
    this.problem(e.src, pointer, `${SINGULAR[e.kind]} "${e.name}": ${role} "${name}" is not a collection of this catalog; ${hint}`);
    return false;
  }

  async buildMaterialization(e: Entry<MaterializationFile>, collections: Map<string, CollectionDef>): Promise<MaterializationDef | undefined> {
    const raw = e.raw;
    const before = this.problems.length;
    const endpoint = await this.buildEndpoint(e, raw.endpoint);
    const bindings: MaterializationDef['bindings'] = [];
    for (const [i, b] of raw.bindings.entries()) {
      const bAt = `${e.pointer}/bindings/${i}`;
      const srcObj = typeof b.source === 'string' ? undefined : b.source;
      const source = typeof b.source === 'string' ? b.source : b.source.name;
      const sourceAt = srcObj ? `${bAt}/source/name` : `${bAt}/source`;
      if (!this.checkCollectionRef(e, sourceAt, source, 'source')) continue;
      const coll = collections.get(source);
      if (srcObj?.partitions && b.partitions) {
        this.problem(e.src, `${bAt}/partitions`, `materialization "${e.name}": partitions are given both in the binding and in its source; keep one`, true);
      }
      const partRaw = b.partitions ?? srcObj?.partitions ?? {};
      const partAt = b.partitions ? `${bAt}/partitions` : `${bAt}/source/partitions`;
      const partitions: PartitionSelectorDef = { include: {}, exclude: {} };
      for (const side of ['include', 'exclude'] as const) {
        for (const [field, values] of Object.entries(partRaw[side] ?? {})) {
          if (coll && !(coll.spec.partitionFields ?? []).includes(field)) {
            const have = coll.spec.partitionFields ?? [];
            this.problem(e.src, `${partAt}/${side}/${field}`, `materialization "${e.name}": "${field}" is not a logical partition of collection "${source}"; ${have.length ? `its partitions are ${have.map((f) => `"${f}"`).join(', ')}` : 'it has no logical partitions (declare a projection with partition: true)'}`, true);
          }
          partitions[side][field] = values;
        }
      }
      const fields: FieldsDef = {
        recommended: b.fields?.recommended !== false,
        include: { ...b.fields?.include },
        exclude: b.fields?.exclude ?? [],
      };
      if (coll) {
        const names = new Set((coll.spec.projections ?? []).map((p) => p.field));
        const unknown = (field: string, where: string) => {
          this.problem(e.src, where, `materialization "${e.name}": "${field}" is not a field of collection "${source}"; its fields are ${[...names].map((f) => `"${f}"`).join(', ')}`, where.includes('/include/'));
        };
        for (const f of Object.keys(fields.include)) if (!names.has(f)) unknown(f, `${bAt}/fields/include/${f}`);
        for (const [j, f] of fields.exclude.entries()) {
          if (!names.has(f)) unknown(f, `${bAt}/fields/exclude/${j}`);
          if (f in fields.include) this.problem(e.src, `${bAt}/fields/exclude/${j}`, `materialization "${e.name}": field "${f}" is both included and excluded; keep one`);
        }
      }
      const binding: MaterializationDef['bindings'][number] = {
        source, resource: b.resource, partitions, fields,
        disable: b.disable === true, backfill: b.backfill ?? 0,
      };
      if (b.onIncompatibleSchemaChange !== undefined) binding.onIncompatibleSchemaChange = b.onIncompatibleSchemaChange;
      if (srcObj?.notBefore !== undefined) binding.notBefore = srcObj.notBefore;
      if (srcObj?.notAfter !== undefined) binding.notAfter = srcObj.notAfter;
      bindings.push(binding);
    }
    if (this.problems.length > before || !endpoint) return undefined;
    const def: MaterializationDef = { name: e.name, endpoint, bindings, disabled: raw.shards?.disable === true, source: { file: e.src.path, pointer: e.pointer } };
    if (raw.onIncompatibleSchemaChange !== undefined) def.onIncompatibleSchemaChange = raw.onIncompatibleSchemaChange;
    return def;
  }

  async buildTest(e: Entry<TestFile>): Promise<TestDef | undefined> {
    const before = this.problems.length;
    const steps: TestStep[] = [];
    for (const [i, step] of e.raw.entries()) {
      const sAt = `${e.pointer}/${i}`;
      const kind = step.ingest !== undefined ? 'ingest' : 'verify';
      const body = step.ingest ?? step.verify;
      if (body === undefined || (step.ingest !== undefined && step.verify !== undefined)) {
        this.problem(e.src, sAt, `test "${e.name}": step ${i} must have exactly one of "ingest" or "verify"`);
        continue;
      }
      this.checkCollectionRef(e, `${sAt}/${kind}/collection`, body.collection, `${kind} collection`);
      const read = typeof body.documents === 'string' ? await this.readDocuments(e, `${sAt}/${kind}/documents`, body.documents) : body.documents;
      const documents = Array.isArray(read) ? read.filter(isObject) : [];
      if (!Array.isArray(read) || documents.length !== read.length) {
        this.problem(e.src, `${sAt}/${kind}/documents`, `test "${e.name}": documents must be an array of objects`);
        continue;
      }
      steps.push(kind === 'ingest' ? { ingest: { collection: body.collection, documents } } : { verify: { collection: body.collection, documents } });
    }
    if (this.problems.length > before) return undefined;
    return { name: e.name, steps, source: { file: e.src.path, pointer: e.pointer } };
  }

  async readDocuments(e: Entry, pointer: string, ref: string): Promise<JsonValue> {
    const path = resolve(dirname(e.src.path), ref);
    if (path.endsWith('.jsonl') || path.endsWith('.ndjson')) {
      let text: string;
      try {
        text = await readSourceText(path, { file: e.src.path, pointer });
      } catch (err) {
        if (!(err instanceof CatalogError)) throw err;
        for (const p of err.problems) this.problem(e.src, pointer, p.message);
        return null;
      }
      try {
        return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as JsonValue);
      } catch (err) {
        this.problem(e.src, pointer, `cannot read documents from ${path}: ${(err as Error).message}`);
        return null;
      }
    }
    const got = await this.readReferenced(e.src, pointer, ref, 'documents');
    return got ? got.value : null;
  }
}

// One shared instance checks schemas against the 2020-12 meta-schema. Compiling each collection's schema with
// its own ajv instance cost ~10 ms a collection (5,000 collections took a minute): documents' validators are
// compiled where documents are validated (journals/validator.ts), once per schema.
let metaAjv: ReturnType<typeof createAjv> | undefined;
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
  metaAjv ??= createAjv({ strict: false, logger: false });
  try {
    if (!metaAjv.validateSchema(schema as object | boolean)) {
      for (const e of metaAjv.errors ?? []) out.push({ at: e.instancePath, message: `${e.message ?? e.keyword}` });
    }
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
function keyProblem(shape: Shape, ptr: string): string | null {
  const { shape: at, exists } = locate(shape, ptr);
  if (exists === 'CANNOT') return 'cannot exist';
  if (exists !== 'MUST') return 'may not exist (it is not required, or a parent is not required or may not be an object)';
  const types = ALL_TYPES.filter((t) => at.types.has(t));
  const bad = types.filter((t) => !KEY_TYPES.has(t));
  if (types.length === 0 || bad.length > 0) return `may be of type ${bad.length ? bad.join(' or ') : 'anything'}`;
  return null;
}

/** Visits every sub-schema with its JSON pointer relative to `schema`. */
function walkSchema(schema: JsonSchema, at: string, visit: (node: JsonObject, at: string) => void): void {
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

/** Copies a sub-schema, replacing `#/…` references to its enclosing document with the referenced values. */
function inlineLocalRefs(schema: JsonObject, doc: JsonValue, depth = 0): JsonObject {
  const visit = (v: JsonValue, d: number): JsonValue => {
    if (Array.isArray(v)) return v.map((x) => visit(x, d));
    if (!isObject(v)) return v;
    if (typeof v.$ref === 'string' && v.$ref.startsWith('#/') && d < 16) {
      const target = resolvePointer(doc, decodeURIComponent(v.$ref.slice(1)));
      if (target !== undefined) {
        const rest = Object.fromEntries(Object.entries(v).filter(([k]) => k !== '$ref'));
        const resolved = visit(target, d + 1);
        return Object.keys(rest).length === 0 ? resolved : { allOf: [resolved, visit(rest, d)] };
      }
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x, d)]));
  };
  return visit(schema, depth) as JsonObject;
}

/** Seconds of a duration such as 30s, 5m, 1h30m or 500ms. */
export function parseInterval(s: string): number {
  let total = 0;
  for (const m of s.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : m[2] === 's' ? n : m[2] === 'm' ? n * 60 : n * 3600;
  }
  return total;
}

interface SchemaProblem { pointer: string; message: string; key: boolean }

/**
 * A value as a JSON string literal with every control, bidi and line/paragraph separator character escaped, so a
 * hostile name cannot rewrite a terminal or log line when it is echoed.
 */
export function quoted(value: unknown): string {
  return escapeControls(JSON.stringify(value) ?? String(value));
}

/** Turns ajv errors against catalog.schema.json into messages an author can act on. */
function schemaProblems(errors: ErrorObject[]): SchemaProblem[] {
  let errs = [...errors];
  // anyOf: when exactly one branch fits the value's type, report that branch's errors; else one summary.
  for (const a of errors.filter((x) => x.keyword === 'anyOf')) {
    const branches = ((a.parentSchema as JsonObject | undefined)?.anyOf as JsonObject[] | undefined) ?? [];
    const inBranch = (x: ErrorObject, i: number) => x.schemaPath.startsWith(`${a.schemaPath}/${i}/`);
    const viable = branches.map((_, i) => i).filter((i) => !errs.some((x) => inBranch(x, i) && x.instancePath === a.instancePath && x.keyword === 'type'));
    if (viable.length === 1) {
      errs = errs.filter((x) => x !== a && !branches.some((_, i) => i !== viable[0] && inBranch(x, i)));
    } else {
      errs = errs.filter((x) => !branches.some((_, i) => inBranch(x, i)));
    }
  }
  const out: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const e of errs) {
    let p: SchemaProblem;
    const propertyName = (e as ErrorObject & { propertyName?: string }).propertyName;
    if (e.keyword === 'propertyNames') continue; // reported through the name's own error
    if (propertyName !== undefined) {
      p = { pointer: `${e.instancePath}${pointerOf(propertyName)}`, key: true, message: `${quoted(propertyName)} is not a valid catalog name: names are ${NAME_RULE}` };
    } else if (e.keyword === 'required') {
      p = { pointer: e.instancePath, key: false, message: `missing required property "${String(e.params.missingProperty)}"` };
    } else if (e.keyword === 'additionalProperties') {
      const allowed = Object.keys(((e.parentSchema as JsonObject | undefined)?.properties as JsonObject | undefined) ?? {});
      const name = String(e.params.additionalProperty);
      const near = closestName(name, allowed);
      p = { pointer: `${e.instancePath}${pointerOf(name)}`, key: true, message: `unknown property ${quoted(name)}; ${near !== undefined ? `did you mean "${near}"? (expected one of: ${allowed.join(', ')})` : `expected one of: ${allowed.join(', ')}`}` };
    } else if (e.keyword === 'enum') {
      const allowed = (e.params.allowedValues as JsonValue[] | undefined) ?? [];
      const near = typeof e.data === 'string' ? closestName(e.data, allowed.filter((x): x is string => typeof x === 'string')) : undefined;
      p = { pointer: e.instancePath, key: false, message: `${quoted(e.data)} is not one of ${allowed.map((x) => quoted(x)).join(', ')}${near !== undefined ? `; did you mean "${near}"?` : ''}` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'Catalog name') {
      p = { pointer: e.instancePath, key: false, message: `${quoted(e.data)} is not a valid catalog name: names are ${NAME_RULE}` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'JSON pointer') {
      p = { pointer: e.instancePath, key: false, message: `${JSON.stringify(e.data)} is not a JSON pointer; write locations like /id or /address/city` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'Interval') {
      p = { pointer: e.instancePath, key: false, message: `${JSON.stringify(e.data)} is not a duration; write e.g. 30s, 5m, 1h or 1h30m` };
    } else if (e.keyword === 'anyOf') {
      const branches = ((e.parentSchema as JsonObject | undefined)?.anyOf as JsonObject[] | undefined) ?? [];
      const kinds = branches.map((b) => (b.title as string | undefined) ?? (Array.isArray(b.type) ? b.type.join(' or ') : String(b.type ?? 'value')));
      p = { pointer: e.instancePath, key: false, message: `must be ${[...new Set(kinds)].join(', or ')}` };
    } else if (e.keyword === 'maxProperties' || e.keyword === 'minProperties') {
      const allowed = Object.keys(((e.parentSchema as JsonObject | undefined)?.properties as JsonObject | undefined) ?? {});
      p = { pointer: e.instancePath, key: false, message: `must have exactly one of: ${allowed.join(', ')}` };
    } else if (e.keyword === 'const' && e.instancePath.endsWith('/protobuf')) {
      p = { pointer: e.instancePath, key: false, message: 'only the JSON codec is supported; remove "protobuf"' };
    } else {
      p = { pointer: e.instancePath, key: false, message: e.message ?? e.keyword };
    }
    const id = `${p.pointer}\u0000${p.message}`;
    if (!seen.has(id)) { seen.add(id); out.push(p); }
  }
  return out;
}
