// A small, real materialization connector used by tests and by `npx sluice-test-materialize`.
// It keeps rows in memory for the session (key tuple → document), so loads find earlier stores,
// and logs each committed transaction.
import { ConfigError } from '../errors.ts';
import type { DecodedLoad, DecodedStore, MaterializeConnector, Transactor } from '../connector/types.ts';
import type { FromSchema } from '../connector/from-schema.ts';
import type { JsonObject, JsonValue } from '../protocol/specs.ts';
import type { TupleValue } from '../protocol/tuple.ts';

export const testMaterializeConfigSchema = {
  type: 'object',
  title: 'Test materialization',
  properties: {
    prefix: { type: 'string', title: 'Prefix', description: 'Prefix of table names.', default: '' },
    password: { type: 'string', title: 'Password', description: 'Unused; a secret for tests.', secret: true },
    failOn: { type: 'string', title: 'Fail on', description: 'Fail at this step.', enum: ['open', 'load', 'store', 'commit'], advanced: true },
    unsatisfiable: {
      type: 'array', items: { type: 'string' }, advanced: true, title: 'Unsatisfiable fields',
      description: 'Fields validate reports UNSATISFIABLE (an incompatible schema change) unless the binding is backfilled.',
    },
  },
  additionalProperties: false,
} as const satisfies JsonObject;

export const testMaterializeResourceSchema = {
  type: 'object',
  title: 'Table',
  properties: {
    table: { type: 'string', title: 'Table', description: 'Target table.', minLength: 1, 'x-collection-name': true },
    delta: { type: 'boolean', title: 'Delta updates', description: 'Append instead of merge.', default: false, 'x-delta-updates': true },
  },
  required: ['table'],
  additionalProperties: false,
} as const satisfies JsonObject;

/** The validated configs (the runtime applies defaults). */
export type TestMaterializeConfig = FromSchema<typeof testMaterializeConfigSchema, { defaults: true }>;
export type TestMaterializeResource = FromSchema<typeof testMaterializeResourceSchema, { defaults: true }>;

/** A stable map key for a decoded tuple. */
export function tupleKey(values: readonly TupleValue[]): string {
  return JSON.stringify(values, (_k, v: unknown) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Uint8Array) return `b64:${Buffer.from(v).toString('base64')}`;
    return v;
  });
}

export function createTestMaterialize(): MaterializeConnector<TestMaterializeConfig, TestMaterializeResource> {
  return {
    configSchema: testMaterializeConfigSchema,
    resourceConfigSchema: testMaterializeResourceSchema,
    documentationUrl: 'https://sluice.dev/connectors/test-materialize',

    async validate({ config, bindings }) {
      return bindings.map((b) => {
        const constraints: Record<string, { type: 'LOCATION_REQUIRED' | 'FIELD_OPTIONAL' | 'UNSATISFIABLE'; reason?: string }> = {};
        for (const p of b.collection.projections ?? []) {
          const isKey = p.ptr !== undefined && (b.collection.key ?? []).includes(p.ptr);
          constraints[p.field] = isKey || p.ptr === undefined
            ? { type: 'LOCATION_REQUIRED', reason: isKey ? 'Keys are required' : 'The document is stored' }
            : { type: 'FIELD_OPTIONAL' };
          if ((config.unsatisfiable ?? []).includes(p.field) && b.backfill === 0) {
            constraints[p.field] = { type: 'UNSATISFIABLE', reason: `the column for "${p.field}" cannot hold its new type; backfill to re-create the table` };
          }
        }
        return { resourcePath: [config.prefix + b.resource.table], constraints, ...(b.resource.delta ? { deltaUpdates: true } : {}) };
      });
    },

    async apply({ bindings, dryRun, config }) {
      const tables = bindings.map((b) => config.prefix + b.resource.table);
      return { actionDescription: tables.length ? `${dryRun ? 'would create' : 'created'} ${tables.join(', ')}` : '' };
    },

    async open({ config, bindings, log }) {
      if (config.failOn === 'open') throw new ConfigError('the test materialization was asked to fail on open');
      const tables = bindings.map(() => new Map<string, JsonObject>());
      let staged: DecodedStore[] = [];
      let committed = 0;
      const transactor: Transactor = {
        async acknowledge() {
          return committed > 0 ? { state: { updated: { committed }, mergePatch: true } } : undefined;
        },
        async load(loads: AsyncIterable<DecodedLoad>, loaded) {
          for await (const load of loads) {
            if (config.failOn === 'load') throw new Error('the test materialization was asked to fail on load');
            const doc = tables[load.binding]!.get(tupleKey(load.key));
            if (doc) await loaded(load.binding, doc);
          }
        },
        async store(stores: AsyncIterable<DecodedStore>) {
          for await (const store of stores) {
            if (config.failOn === 'store') throw new Error('the test materialization was asked to fail on store');
            staged.push(store);
          }
        },
        async startCommit(checkpoint) {
          if (config.failOn === 'commit') throw new Error('the test materialization was asked to fail on commit');
          for (const s of staged) {
            const table = tables[s.binding]!;
            const key = tupleKey(s.key);
            if (s.delete) table.delete(key);
            else table.set(key, s.doc ?? { key: s.key as JsonValue[] });
          }
          committed++;
          log.info('committed transaction', { stores: staged.length, checkpointSources: Object.keys(checkpoint['sources'] ?? {}).length });
          staged = [];
          return { state: { updated: { lastCommit: committed }, mergePatch: true } };
        },
      };
      return { transactor, opened: {} };
    },
  };
}
