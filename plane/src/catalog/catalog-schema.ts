// The catalog's JSON Schema (flow.yaml and every file it imports), written once as a typed literal: the loader
// validates with it and the types of a validated catalog file are derived from it (the runtime's FromSchema), so
// a field added here is in the types too. schemas/catalog.schema.json (for editors, and `$schema` in catalog
// files) is generated from this literal and checked for drift by plane/test/catalog/catalog-schema.test.ts.
import type { FromSchema, FromSchemaDef } from '@sluice/runtime';

const NAME = {
  title: 'Catalog name',
  description: 'One or more path components separated by \'/\'; each component is Unicode letters, numbers, \'-\', \'_\' or \'.\', and not \'.\' or \'..\'; no leading or trailing \'/\'.',
  type: 'string',
  pattern: '^(?!\\.{1,2}(/|$))(?!.*/\\.{1,2}(/|$))[\\p{L}\\p{N}\\-_.]+(/[\\p{L}\\p{N}\\-_.]+)*$',
} as const;

const JSON_POINTER = {
  title: 'JSON pointer',
  description: 'A JSON pointer into a document, such as /id or /address/city.',
  type: 'string',
  pattern: '^(/([^/~]|~[01])*)+$',
} as const;

const ENDPOINT_CONFIG = {
  title: 'Configuration',
  description: 'Endpoint configuration inline, or a path (relative to this file) to a JSON or YAML file.',
  anyOf: [
    { type: 'object' },
    { type: 'string', minLength: 1 },
  ],
} as const;

/** A section of a catalog file: definitions by catalog name, each valid against `#/$defs/<def>`. */
const byName = <D extends string>(title: string, description: string, def: D) => ({
  title, description, type: 'object',
  propertyNames: { $ref: '#/$defs/Name' },
  additionalProperties: { $ref: `#/$defs/${def}` as const },
}) as const;

/** A task's endpoint: exactly one of connector, local (and for a materialization, `more`). */
const taskEndpoint = <const M extends object>(more: M) => ({
  title: 'Endpoint', type: 'object', minProperties: 1, maxProperties: 1, additionalProperties: false,
  properties: { connector: { $ref: '#/$defs/ConnectorEndpoint' }, local: { $ref: '#/$defs/LocalEndpoint' }, ...more },
}) as const;

export const catalogSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.local/schemas/catalog.schema.json',
  title: 'Sluice catalog (flow.yaml)',
  description: 'A catalog file: collections, captures, materializations and tests, plus imports of other catalog files.',
  type: 'object',
  additionalProperties: false,
  properties: {
    $schema: {
      title: 'Schema',
      description: 'URI of the JSON Schema of this file (ignored).',
      type: 'string',
    },
    import: {
      title: 'Imports',
      description: 'Other catalog files to load, as paths relative to this file (or file: URLs).',
      type: 'array',
      items: { type: 'string', minLength: 1 },
    },
    collections: byName('Collections', 'Collections by name.', 'Collection'),
    captures: byName('Captures', 'Capture tasks by name.', 'Capture'),
    materializations: byName('Materializations', 'Materialization tasks by name.', 'Materialization'),
    tests: byName('Tests', 'Catalog tests by name: ordered ingest and verify steps.', 'Test'),
    storageMappings: {
      title: 'Storage mappings',
      description: 'Legacy storage mappings; accepted and ignored by the local plane.',
      type: 'object',
    },
  },
  $defs: {
    Name: NAME,
    JsonPointer: JSON_POINTER,
    SchemaRef: {
      title: 'Schema',
      description: 'A JSON Schema inline, or a path (relative to this file) to a JSON or YAML schema file, optionally with a #/json/pointer fragment.',
      anyOf: [
        { type: 'object' },
        { type: 'boolean' },
        { type: 'string', minLength: 1 },
      ],
    },
    Collection: {
      title: 'Collection',
      type: 'object',
      additionalProperties: false,
      required: ['key'],
      properties: {
        schema: { $ref: '#/$defs/SchemaRef' },
        writeSchema: { $ref: '#/$defs/SchemaRef' },
        readSchema: { $ref: '#/$defs/SchemaRef' },
        key: {
          title: 'Key',
          description: 'JSON pointers of the collection key; documents with equal keys are reduced together.',
          type: 'array',
          minItems: 1,
          items: { $ref: '#/$defs/JsonPointer' },
        },
        projections: {
          title: 'Projections',
          description: 'Field name to a JSON pointer, or to {location, partition} for a logical partition.',
          type: 'object',
          additionalProperties: {
            anyOf: [
              JSON_POINTER,
              {
                type: 'object',
                additionalProperties: false,
                required: ['location'],
                properties: {
                  location: { $ref: '#/$defs/JsonPointer' },
                  partition: {
                    title: 'Partition',
                    description: 'Whether this projection is a logical partition.',
                    type: 'boolean',
                    default: false,
                  },
                },
              },
            ],
          },
        },
        derive: { title: 'Derivation', description: 'Not supported by the local plane.' },
        journals: {
          title: 'Journals',
          description: 'Journal tuning; accepted and ignored.',
          type: 'object',
        },
        expectPubId: {
          title: 'Expected publication id',
          description: 'Accepted and ignored.',
          type: 'string',
        },
        delete: { title: 'Delete', description: 'Accepted and ignored.', type: 'boolean' },
      },
    },
    ConnectorEndpoint: {
      title: 'Connector',
      description: 'A connector image and its configuration.',
      type: 'object',
      additionalProperties: false,
      required: ['image', 'config'],
      properties: {
        image: {
          title: 'Image',
          description: 'Connector image with its tag, such as ghcr.io/estuary/materialize-sqlserver:v2.',
          type: 'string',
          minLength: 1,
        },
        config: ENDPOINT_CONFIG,
      },
    },
    LocalEndpoint: {
      title: 'Local command',
      description: 'A command speaking the connector protocol (JSON codec) on stdin/stdout.',
      type: 'object',
      additionalProperties: false,
      required: ['command', 'config'],
      properties: {
        command: {
          title: 'Command',
          description: 'Program and arguments.',
          type: 'array',
          minItems: 1,
          items: { type: 'string' },
        },
        config: ENDPOINT_CONFIG,
        env: {
          title: 'Environment',
          description: 'Extra environment variables.',
          type: 'object',
          additionalProperties: { type: 'string' },
        },
        protobuf: {
          title: 'Protobuf',
          description: 'Must be false or absent: only the JSON codec is supported.',
          const: false,
        },
      },
    },
    Shards: {
      title: 'Shards',
      type: 'object',
      properties: {
        disable: {
          title: 'Disable',
          description: 'Disable the task\'s shards.',
          type: 'boolean',
          default: false,
        },
      },
    },
    Interval: {
      title: 'Interval',
      description: 'Minimum time between capture runs: a duration such as 30s, 5m, 1h or 1h30m.',
      type: 'string',
      pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$',
    },
    Capture: {
      title: 'Capture',
      type: 'object',
      additionalProperties: false,
      required: ['endpoint', 'bindings'],
      properties: {
        endpoint: taskEndpoint({}),
        bindings: {
          title: 'Bindings',
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['resource', 'target'],
            properties: {
              resource: {
                title: 'Resource',
                description: 'Connector-defined resource configuration.',
                type: 'object',
              },
              target: { $ref: '#/$defs/Name' },
              disable: { title: 'Disable', type: 'boolean', default: false },
              backfill: {
                title: 'Backfill',
                description: 'Backfill counter; increment to re-capture from scratch.',
                type: 'integer',
                minimum: 0,
                default: 0,
              },
            },
          },
        },
        interval: { $ref: '#/$defs/Interval' },
        shards: { $ref: '#/$defs/Shards' },
        autoDiscover: { title: 'Auto-discover', description: 'Accepted and ignored by the local plane.' },
        expectPubId: { type: 'string' },
        delete: { type: 'boolean' },
      },
    },
    PartitionSelector: {
      title: 'Partition selector',
      type: 'object',
      additionalProperties: false,
      properties: {
        include: { $ref: '#/$defs/PartitionValues' },
        exclude: { $ref: '#/$defs/PartitionValues' },
      },
    },
    PartitionValues: {
      type: 'object',
      additionalProperties: {
        type: 'array',
        items: { type: ['string', 'number', 'boolean'] },
      },
    },
    Materialization: {
      title: 'Materialization',
      type: 'object',
      additionalProperties: false,
      required: ['endpoint', 'bindings'],
      properties: {
        endpoint: taskEndpoint({
          sqlite: {
            title: 'Embedded SQLite',
            type: 'object',
            additionalProperties: false,
            required: ['path'],
            properties: {
              path: {
                title: 'Path',
                description: 'Database file, relative to this catalog file.',
                type: 'string',
                minLength: 1,
              },
            },
          },
        }),
        bindings: {
          title: 'Bindings',
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['source', 'resource'],
            properties: {
              source: {
                anyOf: [
                  NAME,
                  {
                    type: 'object',
                    additionalProperties: false,
                    required: ['name'],
                    properties: {
                      name: { $ref: '#/$defs/Name' },
                      notBefore: { type: 'string', format: 'date-time' },
                      notAfter: { type: 'string', format: 'date-time' },
                      partitions: { $ref: '#/$defs/PartitionSelector' },
                    },
                    title: 'an object {name, notBefore, notAfter, partitions}',
                  },
                ],
              },
              resource: {
                title: 'Resource',
                description: 'Connector-defined resource configuration (for SQL: table).',
                type: 'object',
              },
              partitions: { $ref: '#/$defs/PartitionSelector' },
              fields: {
                title: 'Field selection',
                type: 'object',
                additionalProperties: false,
                properties: {
                  recommended: { type: 'boolean', default: true },
                  include: {
                    type: 'object',
                    additionalProperties: { type: 'object' },
                  },
                  exclude: {
                    type: 'array',
                    items: { type: 'string' },
                  },
                },
              },
              disable: { type: 'boolean', default: false },
              backfill: { type: 'integer', minimum: 0, default: 0 },
              priority: { type: 'integer' },
              onIncompatibleSchemaChange: { $ref: '#/$defs/OnIncompatibleSchemaChange' },
            },
          },
        },
        shards: { $ref: '#/$defs/Shards' },
        sourceCapture: { description: 'Accepted and ignored by the local plane.' },
        expectPubId: { type: 'string' },
        delete: { type: 'boolean' },
        onIncompatibleSchemaChange: { $ref: '#/$defs/OnIncompatibleSchemaChange' },
      },
    },
    Test: {
      title: 'Test',
      type: 'array',
      items: {
        type: 'object',
        minProperties: 1,
        additionalProperties: false,
        properties: {
          description: { type: 'string' },
          ingest: { $ref: '#/$defs/TestDocuments' },
          verify: { $ref: '#/$defs/TestDocuments' },
        },
      },
    },
    TestDocuments: {
      type: 'object',
      additionalProperties: false,
      required: ['collection', 'documents'],
      properties: {
        collection: { $ref: '#/$defs/Name' },
        description: { type: 'string' },
        documents: {
          description: 'Documents inline, or a path (relative to this file) to a JSON, JSON Lines or YAML file holding an array.',
          anyOf: [
            {
              type: 'array',
              items: { type: 'object' },
            },
            { type: 'string', minLength: 1 },
          ],
        },
        partitions: { $ref: '#/$defs/PartitionSelector' },
      },
    },
    OnIncompatibleSchemaChange: {
      title: 'On incompatible schema change',
      description: 'What to do when a binding\'s source collection changes in a way the endpoint cannot take (the connector\'s Validate marks a selected field unsatisfiable): backfill the binding (default), disable the binding, disable the materialization, or abort the publication. A binding\'s own setting wins over the materialization\'s.',
      type: 'string',
      enum: ['backfill', 'disableBinding', 'disableTask', 'abort'],
    },
  },
} as const;

/** A catalog file as it validates against catalogSchema. */
export type CatalogFile = FromSchema<typeof catalogSchema>;
type Def<N extends string> = FromSchemaDef<typeof catalogSchema, N>;
/** One collection, capture, materialization or test of a valid catalog file, as written. */
export type CollectionFile = Def<'Collection'>;
export type CaptureFile = Def<'Capture'>;
export type MaterializationFile = Def<'Materialization'>;
export type TestFile = Def<'Test'>;
export type EndpointFile = CaptureFile['endpoint'] | MaterializationFile['endpoint'];
export type PartitionSelectorFile = Def<'PartitionSelector'>;

/** Catalog names (collections, tasks, tests), as the schema's Name pattern says. */
export const NAME_PATTERN = new RegExp(NAME.pattern, 'u');
