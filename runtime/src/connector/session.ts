// Plumbing shared by serveCapture and serveMaterialize: where requests come from, where responses
// go, the logger, cancellation, and the wording of ordering errors.
import type { Writable } from 'node:stream';
import { ProtocolError } from '../errors.ts';
import { type ByteSource, type Line, LineSplitter, chunkIterator } from '../protocol/line-reader.ts';
import { stdinSource } from '../protocol/fd-chunks.ts';
import { type Envelope, parseEnvelope, quoteList } from '../protocol/envelope.ts';
import type { ScanOptions } from '../protocol/envelope-scan.ts';
import { MessageWriter } from '../protocol/message-writer.ts';
import { JsonLogger, type LogSink } from '../log.ts';
import type { Logger } from './types.ts';

export interface ServeOptions {
  /** Request bytes; defaults to stdin (stdinSource: one reused buffer when it is a pipe or socket). Arrays of chunks work too (tests). */
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

/**
 * Reads request envelopes one at a time; resolves STOPPED if the stop signal fires first. Lines of a
 * chunk are split at once, so requests already read are available synchronously (`tryNext`).
 */
export class RequestReader {
  private readonly chunks: AsyncIterator<Uint8Array | string>;
  private readonly splitter = new LineSplitter({ name: 'stdin' });
  private readonly stop = new Tripwire();
  private lines: Line[] = [];
  private index = 0;
  private eof = false;
  private closed = false;
  readonly variants: readonly string[];
  private readonly scan: ScanOptions | undefined;
  /**
   * A session's own fast path, tried on each line before the envelope parse: an envelope (with whatever the
   * session decoded already), or undefined to parse the line as usual. It must never decide differently
   * from the usual parse: lines it declines, or would reject, take the usual path (and its errors).
   */
  fast: ((line: Line) => Envelope | undefined) | undefined = undefined;

  constructor(source: ByteSource, variants: readonly string[], signal: AbortSignal, scan?: ScanOptions) {
    this.variants = variants;
    this.scan = scan;
    this.chunks = chunkIterator(source);
    if (signal.aborted) this.stop.trip();
    else signal.addEventListener('abort', () => this.stop.trip(), { once: true });
  }

  /** A request already read, null at end of input, STOPPED, or undefined when a read is needed. */
  tryNext(): Envelope | null | Stopped | undefined {
    if (this.stop.tripped) return STOPPED;
    if (this.index < this.lines.length) {
      const line = this.lines[this.index++]!;
      return (this.fast !== undefined ? this.fast(line) : undefined) ?? parseEnvelope(line, this.variants, 'request', 'stdin', this.scan);
    }
    if (this.eof || this.closed) return null;
    return undefined;
  }

  /** The next request, null at end of input, or STOPPED. */
  async next(): Promise<Envelope | null | Stopped> {
    while (true) {
      const ready = this.tryNext();
      if (ready !== undefined) return ready;
      const result = await this.stop.race(this.chunks.next());
      if (result === INTERRUPTED) return STOPPED;
      if (result.done) {
        this.eof = true;
        this.splitter.end();
      } else {
        this.lines = this.splitter.push(result.value);
        this.index = 0;
      }
    }
  }

  /** Stops reading (does not wait for a pending read). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    void Promise.resolve(this.chunks.return?.()).catch(() => undefined);
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

/** `scan`: members the requests' fast path may check instead of parse (see ScanOptions). */
export function openSessionIO(options: ServeOptions, variants: readonly string[], scan?: ScanOptions): SessionIO {
  const log = options.log ?? new JsonLogger({ ...(options.stderr ? { stream: options.stderr } : {}), env: options.env ?? process.env });
  const controller = new AbortController();
  if (options.signal) {
    if (options.signal.aborted) controller.abort(options.signal.reason);
    else options.signal.addEventListener('abort', () => controller.abort(options.signal?.reason), { once: true });
  }
  const writer = new MessageWriter(options.output ?? process.stdout);
  const requests = new RequestReader(options.input ?? stdinSource(), variants, controller.signal, scan);
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
/** A request that cannot open an RPC, while the process awaits its first request or (after a unary RPC) its next. */
export function unexpectedBetweenRpcs(request: Envelope, expected: readonly string[]): ProtocolError {
  return unexpectedRequest(request, request.line === 1 ? 'awaiting the first request' : 'awaiting the next request', expected);
}

/**
 * After a unary RPC's response: flushes it, then reads the next request — null at the end of input (or
 * when stopped), which ends the process as before.
 */
export async function nextAfterUnary(io: SessionIO): Promise<Envelope | null> {
  await io.writer.flush();
  const next = await io.requests.next();
  return next === null || isStopped(next) ? null : next;
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

export const INTERRUPTED = Symbol('interrupted');
export type Interrupted = typeof INTERRUPTED;

/**
 * Races per-message promises against a one-time event (stop or failure) without leaving a reaction on
 * a long-lived promise for every message (Promise.race against a never-settling promise leaks one
 * reaction per call). `trip()` makes pending and later races resolve INTERRUPTED; `fail(err)` makes
 * them reject with err.
 */
export class Tripwire {
  private readonly waiters = new Set<() => void>();
  private state: 'armed' | 'tripped' | 'failed' = 'armed';
  private error: unknown = undefined;

  get tripped(): boolean {
    return this.state !== 'armed';
  }

  trip(): void {
    if (this.state !== 'armed') return;
    this.state = 'tripped';
    this.wake();
  }

  fail(err: unknown): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.error = err;
    this.wake();
  }

  private wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w();
  }

  /** Watches a background promise: its rejection fails the tripwire. */
  watch<T>(promise: Promise<T>): Promise<T> {
    promise.catch((err: unknown) => this.fail(err));
    return promise;
  }

  race<T>(promise: Promise<T>): Promise<T | Interrupted> {
    if (this.state !== 'armed') {
      promise.catch(() => undefined);
      return this.state === 'failed' ? Promise.reject(this.error) : Promise.resolve(INTERRUPTED);
    }
    return new Promise<T | Interrupted>((resolve, reject) => {
      const waiter = (): void => {
        promise.catch(() => undefined);
        if (this.state === 'failed') reject(this.error);
        else resolve(INTERRUPTED);
      };
      this.waiters.add(waiter);
      promise.then(
        (value) => {
          this.waiters.delete(waiter);
          resolve(value);
        },
        (err: unknown) => {
          this.waiters.delete(waiter);
          reject(err);
        },
      );
    });
  }

  /** Throws the failure, if any (for synchronous fast paths). */
  throwIfFailed(): void {
    if (this.state === 'failed') throw this.error;
  }

  /** race(), for promises that only end by failure: an INTERRUPTED result is a bug. */
  async must<T>(promise: Promise<T>): Promise<T> {
    const result = await this.race(promise);
    if (result === INTERRUPTED) throw new Error('interrupted without an error');
    return result as T;
  }
}
