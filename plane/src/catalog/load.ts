// Loads a flow.yaml catalog and everything it imports, validates it (schemas/catalog.schema.json plus the
// rules a JSON Schema cannot say: names resolve, keys are well-typed, reduce strategies are supported,
// partition and field selections name real fields) and builds each collection's spec. Every problem
// found is reported together, each with file, line, JSON pointer and what to do. Beside it: catalog-file.ts
// (a file against the catalog schema, ajv errors → problems), schema-checks.ts (checks of authors' schemas),
// collection-spec.ts (a collection's protocol spec), types.ts (the loaded model).
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pointerOf, resolvePointer } from '@sluice/runtime';
import type { JsonObject, JsonSchema, JsonValue } from '@sluice/runtime';
import type {
  CaptureDef, Catalog, CollectionDef, EndpointRef, FieldsDef, MaterializationDef, PartitionSelectorDef, TestDef, TestStep,
} from './types.ts';
import type { CaptureFile, CatalogFile, CollectionFile, EndpointFile, MaterializationFile, TestFile } from './catalog-schema.ts';
import { catalogValidator, schemaProblems } from './catalog-file.ts';
import { CatalogError } from './errors.ts';
import type { CatalogProblem } from './errors.ts';
import { collectionSpec } from './collection-spec.ts';
import type { ExplicitProjection } from './projections.ts';
import { SUPPORTED_STRATEGIES } from './reduce.ts';
import { isObject, isSchema, locate, shapeOf } from './shape.ts';
import { keyProblem, schemaDefects, walkSchema } from './schema-checks.ts';
import type { Shape } from './shape.ts';
import { bundleSchemaRefs, withWriteSchemaRefs } from './schema-refs.ts';
import type { ReadSchemaFile, SchemaRole } from './schema-refs.ts';
import { readSourceText, SourceFile } from './source-file.ts';

/** Flow's default interval between capture runs. */
export const DEFAULT_INTERVAL_SECONDS = 300;

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
