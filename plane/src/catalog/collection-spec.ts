// A collection's protocol spec from its schemas and key, as Flow's build makes it: `_meta/uuid` added to the
// schemas, projections (with inference) from the author's read schema, logical partitions from the explicit
// projections. The catalog loader calls this once its checks pass; `sluice raw` calls it for the collections
// of a bindings file, so both hand connectors the same specs.
import type { CollectionSpec, JsonObject, JsonSchema } from '@sluice/runtime';
import { buildProjections, type ExplicitProjection } from './projections.ts';
import { isObject, shapeOf, type Shape } from './shape.ts';

export interface CollectionSpecInput {
  name: string;
  /** The author's write schema (without `_meta/uuid`; it is added here). */
  writeSchema: JsonSchema;
  /** The author's read schema, when it differs from the write schema. */
  readSchema?: JsonSchema;
  key: string[];
  /** Explicit projections (`projections:` of the catalog), logical partitions flagged. */
  projections?: ExplicitProjection[];
  /** The read schema's shape, when the caller already computed it. */
  readShape?: Shape;
}

export function collectionSpec(input: CollectionSpecInput): CollectionSpec {
  const read = input.readSchema ?? input.writeSchema;
  const explicit = input.projections ?? [];
  // Shapes come from the author's schemas: the `_meta` added below is not a projected field.
  const readShape = input.readShape ?? shapeOf(read);
  return {
    name: input.name,
    writeSchema: withMeta(input.writeSchema),
    readSchema: withMeta(read),
    key: [...input.key],
    uuidPtr: '/_meta/uuid',
    partitionFields: explicit.filter((p) => p.partition).map((p) => p.field).sort(),
    projections: buildProjections(readShape, input.key, explicit),
  };
}

/** Adds `_meta/uuid` (the document's publication UUID, assigned by the runtime) to a schema, as Flow's build does. */
export function withMeta(schema: JsonSchema): JsonSchema {
  const uuid: JsonObject = { type: 'string', format: 'uuid', description: 'Unique identifier of this document, assigned by the runtime; encodes its publication time' };
  if (schema === false) return false;
  // Copies only the objects on the path it changes (root, properties, _meta, its properties): a deep copy of
  // every schema was 7 % of loading a large catalog. The rest is shared with the source value, never mutated.
  const out: JsonObject = schema === true ? {} : { ...schema };
  const props: JsonObject = isObject(out.properties) ? { ...out.properties } : {};
  const meta = props._meta;
  if (meta === undefined || meta === true) {
    props._meta = { type: 'object', properties: { uuid } };
  } else if (isObject(meta)) {
    const mp: JsonObject = isObject(meta.properties) ? { ...meta.properties } : {};
    if (!('uuid' in mp)) mp.uuid = uuid;
    props._meta = { ...meta, properties: mp };
  }
  out.properties = props;
  return out;
}
