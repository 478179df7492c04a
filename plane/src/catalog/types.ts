// The loaded catalog: the contract between catalog loading (plane/src/catalog) and everything that
// runs it (tasks, ingest, control plane). Built specs are in the protocol's own shapes (@sluice/runtime),
// so tasks hand them to connectors unchanged.
// Where a model type is what the catalog file says with defaults filled in, it is derived from catalogSchema.
import type {
  CaptureSpec, CollectionSpec, FromSchemaDef, JsonObject, JsonSchema, MaterializationSpec,
} from '@sluice/runtime';
import type { catalogSchema, MaterializationFile, PartitionSelectorFile } from './catalog-schema.ts';

export type CatalogType = 'capture' | 'collection' | 'materialization' | 'test';

/** How a task's connector is run. */
export type EndpointRef =
  /** `connector: {image, config}`: a built-in connector as a process, or a container when an engine is configured. */
  | { kind: 'connector'; image: string; config: JsonObject }
  /** `local: {command, config, env}`: exec a command speaking the JSON codec. */
  | { kind: 'local'; command: string[]; config: JsonObject; env: Record<string, string> }
  /** `sqlite: {path}`: the embedded SQLite materialization (materialize-sqlite). */
  | { kind: 'sqlite'; config: { path: string } };

export interface CollectionDef {
  name: string;
  /** Built spec with key, write/read schemas, projections (with inference), partitionFields. */
  spec: CollectionSpec;
  /** Where it was defined: file and JSON pointer, for error messages. */
  source: { file: string; pointer: string };
}

export interface CaptureDef {
  name: string;
  endpoint: EndpointRef;
  bindings: { resource: JsonObject; target: string; disable: boolean; backfill: number }[];
  intervalSeconds: number;
  disabled: boolean;
  source: { file: string; pointer: string };
}

/** A binding's partition selector: values of logical partitions to include and to exclude. */
export type PartitionSelectorDef = Required<PartitionSelectorFile>;

/** A binding's field selection as written (`recommended` defaults to true; include and exclude to empty). */
export type FieldsDef = Required<NonNullable<MaterializationFile['bindings'][number]['fields']>>;

/** Flow's `onIncompatibleSchemaChange`: what a publication does when a binding's schema change is incompatible. */
export type OnIncompatibleSchemaChange = FromSchemaDef<typeof catalogSchema, 'OnIncompatibleSchemaChange'>;

export interface MaterializationDef {
  name: string;
  endpoint: EndpointRef;
  /** Materialization-wide action (Flow's default: backfill); a binding's own wins. */
  onIncompatibleSchemaChange?: OnIncompatibleSchemaChange;
  bindings: {
    source: string;
    resource: JsonObject;
    partitions: PartitionSelectorDef;
    fields: FieldsDef;
    disable: boolean;
    backfill: number;
    onIncompatibleSchemaChange?: OnIncompatibleSchemaChange;
    /** `source: {name, notBefore, notAfter}`: only documents published in this window (RFC 3339). */
    notBefore?: string;
    notAfter?: string;
  }[];
  disabled: boolean;
  source: { file: string; pointer: string };
}

export type TestStep =
  | { ingest: { collection: string; documents: JsonObject[] } }
  | { verify: { collection: string; documents: JsonObject[] } };

export interface TestDef {
  name: string;
  steps: TestStep[];
  source: { file: string; pointer: string };
}

export interface Catalog {
  /** Absolute path of the root catalog file. */
  file: string;
  /** Absolute paths of every file read (root, imports, schema, config and document files): watch these to republish. */
  files?: string[];
  collections: Map<string, CollectionDef>;
  captures: Map<string, CaptureDef>;
  materializations: Map<string, MaterializationDef>;
  tests: Map<string, TestDef>;
}

/** The protocol specs a task is opened with, once built (field selection needs the connector's validate). */
export interface BuiltCapture { def: CaptureDef; spec: CaptureSpec }
export interface BuiltMaterialization { def: MaterializationDef; spec: MaterializationSpec }

export type { JsonSchema };
