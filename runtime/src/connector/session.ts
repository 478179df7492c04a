// Plumbing shared by serveCapture and serveMaterialize: where requests come from, where responses
// go, the logger, cancellation, and the wording of ordering errors.
import type { Writable } from 'node:stream';
import { ProtocolError } from '../errors.ts';
import { type ByteSource, type Envelope, MessageWriter, quoteList, readEnvelopes } from '../protocol/framing.ts';
import { JsonLogger, type LogSink } from '../log.ts';
import type { Logger } from './types.ts';

export interface ServeOptions {
  /** Request bytes; defaults to process.stdin. Arrays of chunks work too (tests). */
  input?: ByteSource;
  /** Where response lines go; defaults to process.stdout. */
  output?: Writable;
  /** Where JSON log lines go when no `log` is given; defaults to process.stderr. */
  stderr?: LogSink;
  /** Environment for LOG_LEVEL etc.; defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Aborting it (e.g. on SIGTERM) ends the session cleanly. */
  signal?: AbortSignal;
  log?: Logger;
}

const STOPPED = Symbol('stopped');
export type Stopped = typeof STOPPED;

/** Reads request envelopes one at a time; resolves STOPPED if the stop signal fires first. */
export class RequestReader {
  private readonly iterator: AsyncIterator<Envelope>;
  private readonly stop: Promise<Stopped>;
  private closed = false;
  readonly variants: readonly string[];

  constructor(source: ByteSource, variants: readonly string[], signal: AbortSignal) {
    this.variants = variants;
    this.iterator = readEnvelopes(source, variants, 'request', { name: 'stdin' })[Symbol.asyncIterator]();
    this.stop = new Promise<Stopped>((resolve) => {
      if (signal.aborted) resolve(STOPPED);
      else signal.addEventListener('abort', () => resolve(STOPPED), { once: true });
    });
  }

  /** The next request, null at end of input, or STOPPED. */
  async next(): Promise<Envelope | null | Stopped> {
    if (this.closed) return null;
    const next = this.iterator.next();
    next.catch(() => undefined); // if the stop wins, a later read error is not ours to report
    const result = await Promise.race([next, this.stop]);
    if (result === STOPPED) return STOPPED;
    return result.done ? null : result.value;
  }

  /** Stops reading (does not wait for a pending read). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    void Promise.resolve(this.iterator.return?.()).catch(() => undefined);
  }
}

export function isStopped(value: unknown): value is Stopped {
  return value === STOPPED;
}

export interface SessionIO {
  log: Logger;
  writer: MessageWriter;
  requests: RequestReader;
  /** Aborted when the caller's signal aborts or when serve* returns. */
  controller: AbortController;
}

export function openSessionIO(options: ServeOptions, variants: readonly string[]): SessionIO {
  const log = options.log ?? new JsonLogger({ ...(options.stderr ? { stream: options.stderr } : {}), env: options.env ?? process.env });
  const controller = new AbortController();
  if (options.signal) {
    if (options.signal.aborted) controller.abort(options.signal.reason);
    else options.signal.addEventListener('abort', () => controller.abort(options.signal?.reason), { once: true });
  }
  const writer = new MessageWriter(options.output ?? process.stdout);
  const requests = new RequestReader(options.input ?? process.stdin, variants, controller.signal);
  return { log, writer, requests, controller };
}

/** `unexpected "load" request (line 3) while awaiting acknowledge; expected "acknowledge"`. */
export function unexpectedRequest(request: Envelope, state: string, expected: readonly string[] | string): ProtocolError {
  const want = typeof expected === 'string' ? expected : expected.length === 1 ? `"${expected[0]}"` : `one of ${quoteList(expected)}`;
  return new ProtocolError(`unexpected "${request.variant}" request (line ${request.line}) while ${state}; expected ${want}`, {
    fields: { request: request.variant, state, line: request.line },
  });
}

/** `input ended while loading; expected "load" or "flush"` */
export function unexpectedEof(state: string, expected: readonly string[]): ProtocolError {
  const want = expected.length === 1 ? `"${expected[0]}"` : `one of ${quoteList(expected)}`;
  return new ProtocolError(`stdin ended while ${state}; expected ${want}`, { fields: { state } });
}

/** After a unary response: anything but end of input is an error. */
export async function expectEndOfInput(io: SessionIO, answered: Envelope): Promise<void> {
  const next = await io.requests.next();
  if (next === null || isStopped(next)) return;
  throw unexpectedRequest(next, `done with the unary "${answered.variant}" RPC`, 'end of input (a unary RPC takes exactly one request)');
}

/** Checks a binding index from a request or from connector output. */
export function checkBindingIndex(value: unknown, count: number, what: string): number {
  const index = value === undefined ? 0 : value;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
    throw new ProtocolError(`${what}: binding must be a non-negative integer, got ${JSON.stringify(index)}`);
  }
  if (index >= count) {
    throw new ProtocolError(`${what}: binding ${index} is out of range (the task has ${count} binding${count === 1 ? '' : 's'})`);
  }
  return index;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** Rejects with the first failure reported; used to race background work against the main loop. */
export class FailureLatch {
  readonly promise: Promise<never>;
  private rejectFn!: (err: unknown) => void;
  failed = false;
  constructor() {
    this.promise = new Promise<never>((_, reject) => {
      this.rejectFn = reject;
    });
    this.promise.catch(() => undefined);
  }
  fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.rejectFn(err);
  }
  /** Watches a background promise: its rejection fails the latch. */
  watch<T>(promise: Promise<T>): Promise<T> {
    promise.catch((err: unknown) => this.fail(err));
    return promise;
  }
  race<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.promise]);
  }
}
