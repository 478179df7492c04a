// A small, real capture connector used by tests (runtime, CLI, plane) and by `npx sluice-test-capture`.
// Each binding yields `count` documents then one checkpoint; `failWith` makes open fail with a
// user-facing error, `explicitAcks` asks for acknowledgements and waits for one per checkpoint.
import { ConfigError } from '../errors.ts';
import type { CaptureConnector } from '../connector/types.ts';
import type { FromSchema } from '../connector/from-schema.ts';
import type { JsonObject } from '../protocol/specs.ts';

export const testCaptureConfigSchema = {
  type: 'object',
  title: 'Test capture',
  properties: {
    apiKey: { type: 'string', title: 'API key', description: 'Any non-empty string.', secret: true, order: 0 },
    greeting: { type: 'string', title: 'Greeting', description: 'Copied into every document.', default: 'hello', order: 1 },
    count: { type: 'integer', title: 'Count', description: 'Documents per binding.', minimum: 0, default: 3, order: 2 },
    failWith: { type: 'string', title: 'Fail with', description: 'When set, open fails with this message.', advanced: true },
    delayMs: { type: 'integer', title: 'Delay', description: 'Milliseconds before each document.', minimum: 0, default: 0, advanced: true },
  },
  required: ['apiKey'],
  additionalProperties: false,
} as const satisfies JsonObject;

export const testCaptureResourceSchema = {
  type: 'object',
  title: 'Stream',
  properties: {
    name: { type: 'string', title: 'Name', description: 'Stream name.', minLength: 1, 'x-collection-name': true },
    prefix: { type: 'string', title: 'Prefix', description: 'Prefix for document ids.' },
  },
  required: ['name'],
  additionalProperties: false,
} as const satisfies JsonObject;

/** The validated config (the runtime applies defaults): `delayMs` pauses before each document (timeouts, SIGTERM). */
export type TestCaptureConfig = FromSchema<typeof testCaptureConfigSchema, { defaults: true }>;
export type TestCaptureResource = FromSchema<typeof testCaptureResourceSchema, { defaults: true }>;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

export function createTestCapture(options: { explicitAcks?: boolean } = {}): CaptureConnector<TestCaptureConfig, TestCaptureResource> {
  return {
    configSchema: testCaptureConfigSchema,
    resourceConfigSchema: testCaptureResourceSchema,
    documentationUrl: 'https://sluice.dev/connectors/test-capture',
    resourcePathPointers: ['/name'],
    ...(options.explicitAcks ? { explicitAcknowledgements: true } : {}),

    async discover({ config }) {
      return ['alpha', 'beta'].map((name) => ({
        recommendedName: name,
        resourceConfig: { name },
        documentSchema: {
          type: 'object',
          properties: { id: { type: 'string' }, greeting: { type: 'string' }, n: { type: 'integer' } },
          required: ['id'],
        },
        key: ['/id'],
        ...(config.greeting === 'hello' ? {} : { disable: true }),
      }));
    },

    async *open(ctx) {
      const { config, bindings, state, log } = ctx;
      if (config.failWith) throw new ConfigError(config.failWith);
      log.status(`Capturing ${bindings.length} binding${bindings.length === 1 ? '' : 's'}`);
      const acks = ctx.acknowledgements[Symbol.asyncIterator]();
      for (const binding of bindings) {
        const prior = (state['bindingStateV1'] as JsonObject | undefined)?.[binding.stateKey] as JsonObject | undefined;
        const start = typeof prior?.['next'] === 'number' ? prior['next'] : 0;
        for (let n = start; n < start + config.count; n++) {
          if (config.delayMs > 0) await sleep(config.delayMs, ctx.signal);
          if (ctx.signal.aborted) return;
          yield { captured: { binding: binding.index, doc: { id: `${binding.resource.prefix ?? binding.resource.name}-${n}`, greeting: config.greeting, n } } };
        }
        yield {
          checkpoint: {
            state: { updated: { bindingStateV1: { [binding.stateKey]: { next: start + config.count } } }, mergePatch: true },
          },
        };
        if (options.explicitAcks) {
          const ack = await acks.next();
          if (ack.done) return;
          log.info('checkpoint acknowledged', { binding: binding.index, checkpoints: ack.value });
        }
      }
    },
  };
}
