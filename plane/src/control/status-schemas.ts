// The control plane's status resources as typed JSON Schema literals: the types the control store keeps
// (publication history, activation, alerts; live-spec.ts) are derived from them with FromSchemaDef, so a member
// added to a schema is in the types too. schemas/api/<Name>.json (what the API validates with and openapi.json is
// generated from) are generated from these and checked for drift by plane/test/control/status-schemas.test.ts
// (UPDATE_SNAPSHOTS=1 rewrites them). References are `#/$defs/<Name>` here and `<Name>.json` in the files.
import type { FromSchemaDef } from '@sluice/runtime';

export const statusSchemas = {
  $defs: {
    Id: {
      description: 'An identifier: 16 lowercase hex characters (8 bytes), time-ordered.',
      type: 'string',
      pattern: '^[0-9a-f]{16}$',
    },
    StatusType: {
      description: 'Result of a publication.',
      type: 'string',
      enum: ['queued', 'buildFailed', 'testFailed', 'publishFailed', 'success', 'emptyDraft', 'expectPubIdMismatch', 'buildIdLockFailure', 'deprecatedBackground'],
    },
    LockFailure: {
      description: 'An optimistic locking failure.',
      type: 'object',
      properties: {
        catalog_name: {
          type: 'string',
        },
        expected: {
          '$ref': '#/$defs/Id',
        },
        actual: {
          anyOf: [
            {
              '$ref': '#/$defs/Id',
            },
            {
              type: 'null',
            },
          ],
        },
      },
      required: ['catalog_name', 'expected'],
    },
    JobStatus: {
      description: 'Final result of a publication.',
      type: 'object',
      properties: {
        type: {
          '$ref': '#/$defs/StatusType',
        },
        lockFailures: {
          type: 'array',
          items: {
            '$ref': '#/$defs/LockFailure',
          },
        },
      },
      required: ['type'],
    },
    Error: {
      description: 'An error.',
      type: 'object',
      properties: {
        detail: {
          type: 'string',
        },
        catalog_name: {
          type: 'string',
        },
        scope: {
          anyOf: [
            {
              type: 'string',
            },
            {
              type: 'null',
            },
          ],
        },
      },
      required: ['detail'],
    },
    CatalogType: {
      description: 'Type of a live spec.',
      type: 'string',
      enum: ['capture', 'collection', 'materialization', 'test'],
    },
    StatusSummaryType: {
      description: 'ok: no problem seen; taskDisabled: task disabled; warning: not fully working, expected to clear soon; error: an error with this spec.',
      type: 'string',
      enum: ['ok', 'taskDisabled', 'warning', 'error'],
    },
    ShardRef: {
      description: 'A shard of a task.',
      type: 'object',
      properties: {
        name: {
          type: 'string',
          description: 'Task name.',
        },
        keyBegin: {
          type: 'string',
          description: 'Start of the shard\'s key range, as hex.',
        },
        rClockBegin: {
          type: 'string',
          description: 'Start of the shard\'s rClock range, as hex.',
        },
        build: {
          '$ref': '#/$defs/Id',
        },
      },
      required: ['name', 'keyBegin', 'rClockBegin', 'build'],
    },
    ShardFailure: {
      description: 'An observed shard failure.',
      type: 'object',
      properties: {
        shard: {
          '$ref': '#/$defs/ShardRef',
        },
        ts: {
          type: 'string',
          format: 'date-time',
        },
        message: {
          type: 'string',
          description: 'For users; may use Markdown.',
        },
        fields: {
          type: 'object',
          description: 'Connector-defined details; eventType, eventTarget and error are strings.',
          properties: {
            eventType: {
              type: 'string',
            },
            eventTarget: {
              type: 'string',
            },
            error: {
              type: 'string',
            },
          },
        },
      },
      required: ['shard', 'ts', 'message'],
    },
    ShardStatusCheck: {
      description: 'Last observed status of the task\'s shards.',
      type: 'object',
      properties: {
        status: {
          type: 'string',
          enum: ['Ok', 'Pending', 'Failed'],
          description: 'Ok: every shard is primary; Pending: some shard is pending or backfilling and none failed, or no shards yet; Failed: a shard failed.',
        },
        first_ts: {
          type: 'string',
          format: 'date-time',
        },
        last_ts: {
          type: 'string',
          format: 'date-time',
        },
        count: {
          type: 'integer',
          minimum: 0,
          maximum: 4294967295,
          description: 'Number of checks that returned this status.',
        },
      },
      required: ['status', 'first_ts', 'last_ts'],
    },
    ActivationStatus: {
      description: 'Activation of the task\'s shards in the data plane.',
      type: 'object',
      properties: {
        last_activated: {
          '$ref': '#/$defs/Id',
        },
        last_activated_at: {
          anyOf: [
            {
              type: 'string',
              format: 'date-time',
            },
            {
              type: 'null',
            },
          ],
        },
        last_failure: {
          anyOf: [
            {
              '$ref': '#/$defs/ShardFailure',
            },
            {
              type: 'null',
            },
          ],
        },
        next_retry: {
          anyOf: [
            {
              type: 'string',
              format: 'date-time',
            },
            {
              type: 'null',
            },
          ],
        },
        recent_failure_count: {
          type: 'integer',
          minimum: 0,
          maximum: 4294967295,
          description: 'Failures over the last 24 hours for the activated build.',
        },
        shard_status: {
          anyOf: [
            {
              '$ref': '#/$defs/ShardStatusCheck',
            },
            {
              type: 'null',
            },
          ],
        },
      },
    },
    PublicationInfo: {
      description: 'One (possibly condensed) entry of publication history.',
      type: 'object',
      properties: {
        id: {
          '$ref': '#/$defs/Id',
        },
        created: {
          type: 'string',
          format: 'date-time',
        },
        completed: {
          type: 'string',
          format: 'date-time',
        },
        detail: {
          anyOf: [
            {
              type: 'string',
            },
            {
              type: 'null',
            },
          ],
        },
        result: {
          anyOf: [
            {
              '$ref': '#/$defs/JobStatus',
            },
            {
              type: 'null',
            },
          ],
        },
        errors: {
          type: 'array',
          items: {
            '$ref': '#/$defs/Error',
          },
        },
        is_touch: {
          type: 'boolean',
          description: 'The publication did not modify the spec.',
        },
        count: {
          type: 'integer',
          minimum: 1,
          description: 'Publications condensed into this entry; omitted when 1.',
        },
      },
      required: ['id'],
    },
    ControllerAlert: {
      description: 'An alert raised by the controller.',
      type: 'object',
      properties: {
        state: {
          type: 'string',
          enum: ['firing', 'resolved'],
        },
        spec_type: {
          '$ref': '#/$defs/CatalogType',
        },
        first_ts: {
          type: 'string',
          format: 'date-time',
        },
        last_ts: {
          anyOf: [
            {
              type: 'string',
              format: 'date-time',
            },
            {
              type: 'null',
            },
          ],
        },
        error: {
          type: 'string',
        },
        count: {
          type: 'integer',
          minimum: 0,
          maximum: 4294967295,
        },
        resolved_at: {
          anyOf: [
            {
              type: 'string',
              format: 'date-time',
            },
            {
              type: 'null',
            },
          ],
        },
      },
      required: ['state', 'spec_type', 'first_ts', 'last_ts', 'error', 'count', 'resolved_at'],
      additionalProperties: true,
    },
  },
} as const;

type Def<N extends string> = FromSchemaDef<typeof statusSchemas, N>;
export type StatusSchemaName = keyof typeof statusSchemas.$defs;

export type CatalogTypeStatus = Def<'CatalogType'>;
export type StatusTypeStatus = Def<'StatusType'>;
export type StatusSummaryTypeStatus = Def<'StatusSummaryType'>;
export type ShardRefStatus = Def<'ShardRef'>;
export type ShardFailureStatus = Def<'ShardFailure'>;
export type ShardStatusCheckStatus = Def<'ShardStatusCheck'>;
export type ActivationStatus = Def<'ActivationStatus'>;
export type PublicationInfoStatus = Def<'PublicationInfo'>;
export type ControllerAlertStatus = Def<'ControllerAlert'>;

/** The file text of schemas/api/<name>.json. */
export function statusSchemaFile(name: StatusSchemaName): string {
  const toFile = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(toFile);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === '$ref' && typeof x === 'string' ? `${x.slice('#/$defs/'.length)}.json` : toFile(x)]));
  };
  const def = toFile(statusSchemas.$defs[name]) as object;
  const file = { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: `https://sluice.local/schemas/api/${name}.json`, title: name, ...def };
  return `${JSON.stringify(file, null, 2)}\n`;
}
