// Endpoint and resource configuration: the JSON Schemas are the single source of truth; the TypeScript
// types are derived from them (the runtime's FromSchema). schemas/materialize-sqlite.*.schema.json are written
// from these (drift test).

import type { FromSchema } from '@sluice/runtime';

export const endpointSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.dev/schemas/materialize-sqlite/config',
  title: 'SQLite Database',
  description: 'An embedded SQLite database file that collections are materialized into.',
  type: 'object',
  required: ['path'],
  additionalProperties: false,
  properties: {
    path: {
      type: 'string',
      title: 'Database File',
      description: 'Path of the SQLite database file, created if missing; relative paths resolve against the working directory.',
      minLength: 1,
      order: 0,
    },
    hardDelete: {
      type: 'boolean',
      title: 'Hard Delete',
      description: 'Delete rows when their source documents are deleted; when off, deletions are stored as rows with _meta/op "d".',
      default: false,
      order: 1,
    },
  },
} as const;

export const resourceSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.dev/schemas/materialize-sqlite/table-config',
  title: 'SQLite Table',
  description: 'The table a collection is materialized into.',
  type: 'object',
  required: ['table'],
  additionalProperties: false,
  properties: {
    table: {
      type: 'string',
      title: 'Table',
      description: 'Name of the table, created by the connector if it does not exist.',
      minLength: 1,
      'x-collection-name': true,
      order: 0,
    },
    delta_updates: {
      type: 'boolean',
      title: 'Delta Updates',
      description: 'Append every change as a new row instead of keeping one row per key.',
      default: false,
      'x-delta-updates': true,
      order: 1,
    },
  },
} as const;

// The runtime's validator applies defaults: properties that are required or have a default are present.
export type EndpointConfig = FromSchema<typeof endpointSchema, { defaults: true }>;
export type ResourceConfig = FromSchema<typeof resourceSchema, { defaults: true }>;
