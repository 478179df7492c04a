// The parallel capture of one file: the main thread does HTTP (HEAD/GET, retries, Range resume) and the
// protocol; a worker thread (worker.ts) runs decompress → charset → parser → JSON text and returns
// batches of framed `captured` lines (text). Both directions are bounded: at most
// INPUT_WINDOW raw chunks and OUTPUT_WINDOW batches are in flight, so the consumer's pace still reaches
// the socket. The worker is terminated on every way out (end, error, abort, early return).
import { threadBootSource } from '@sluice/runtime/launch';
import { Worker } from 'node:worker_threads';
import { minorGcBudget } from './gc.ts';
import type { FramedBatch } from './lines.ts';
import { ConfigError, DecodeError, ErrorThresholdError, HttpFileError } from './errors.ts';
import type { FileMeta, ResumeFrom } from './pipeline.ts';
import type { ParserConfig } from './schema.ts';

const WORKER_URL = new URL('./worker.ts', import.meta.url).href;

/** Raw chunks sent to the worker and not yet taken by its parser. */
export const INPUT_WINDOW = 8;
/** Batches the worker may produce before the main thread has taken them. */
export const OUTPUT_WINDOW = 4;
/**
 * The worker's own heap limits (its heap is separate from the main thread's): a 12 MB young generation
 * (24 MB measured no faster and ~10 MB bigger), old generation bounded well below the bin's 512 MB.
 */
export const WORKER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 12, maxOldGenerationSizeMb: 256 };
/** Files smaller than this (raw bytes, by Content-Length) are parsed on the main thread: a worker's start costs more than it saves. */
export const WORKER_MIN_BYTES = 4 * 1024 * 1024;

export interface WorkerInit {
  meta: FileMeta;
  parser: ParserConfig | undefined;
  resume: ResumeFrom | undefined;
  binding: number;
  /** `_meta.file`. */
  file: string;
  /** Offset of the first record the body yields. */
  startOffset: number;
  /** Records below this offset were already captured: skipped, not emitted. */
  resumeFrom: number;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  line?: number;
  byteOffset?: number;
  fields?: Record<string, unknown>;
  cause?: { name: string; message: string };
}

/** `bodyFailed`: the body broke after the chunks already sent (the worker's input throws there, as the body would). */
export type MainToWorker = { t: 'init'; init: WorkerInit } | { t: 'chunk'; data: Uint8Array } | { t: 'end' } | { t: 'bodyFailed' } | { t: 'credit' } | { t: 'recycle'; buffer: ArrayBuffer };

/** A batch as parseInWorker yields it: call `written` once its lines are written, so the worker reuses their buffer. */
export interface ParsedBatch extends FramedBatch {
  written: (err?: Error | null) => void;
}
export type WorkerToMain =
  | ({ t: 'batch' } & FramedBatch) // `lines`: a buffer the worker transferred
  | { t: 'ack' }
  | { t: 'log'; message: string }
  | { t: 'skipped'; error: SerializedError }
  | { t: 'error'; error: SerializedError }
  | { t: 'bodyError' }
  | { t: 'done'; offset: number };

/** The error the worker raised, as the same class with the same message (what the entry point reports). */
export function rebuildError(e: SerializedError): Error {
  const options = { ...(e.fields ? { fields: e.fields } : {}), ...(e.cause ? { cause: Object.assign(new Error(e.cause.message), { name: e.cause.name }) } : {}) };
  const where = { line: e.line ?? null, byteOffset: e.byteOffset ?? null };
  let err: Error;
  switch (e.name) {
    case 'ErrorThresholdError': err = new ErrorThresholdError(e.message, where, options); break;
    case 'DecodeError': err = new DecodeError(e.message, where, options); break;
    case 'ConfigError': err = new ConfigError(e.message, options); break;
    default:
      if (e.code && e.name.endsWith('Error') && e.name !== 'Error' && e.name !== 'TypeError' && e.name !== 'RangeError') {
        err = new HttpFileError(e.code, e.message, options);
      } else {
        err = new Error(e.message, options.cause ? { cause: options.cause } : undefined);
        if (e.code) (err as Error & { code: string }).code = e.code;
      }
      err.name = e.name;
  }
  if (e.stack !== undefined) err.stack = e.stack;
  return err;
}

/**
 * Whether to parse in a worker thread: ConnectorOptions.worker, else SLUICE_HTTP_FILE_WORKER=1 (every file)
 * or =auto (files of ≥ WORKER_MIN_BYTES); by default not. Since the CSV byte path, one JS thread keeps pace
 * with the decompressor (on Node's threadpool) on 2 cores, and the thread adds ~30 MB of RSS and its start
 * (docs/architecture.md, source-http-file).
 */
export function useWorker(option: boolean | undefined, contentLength: number | null): boolean {
  if (option !== undefined) return option;
  const env = process.env['SLUICE_HTTP_FILE_WORKER'];
  if (env === '1') return true;
  if (env === 'auto') return contentLength !== null && contentLength >= WORKER_MIN_BYTES;
  return false;
}

let live = 0;
/** Parser threads started and not yet exited (tests check that every way out ends them). */
export function liveWorkers(): number {
  return live;
}

export interface ParallelEvents {
  log: (message: string) => void;
  onSkippedRow: (error: DecodeError) => void;
}

/**
 * Parses `body` in a worker thread; yields its batches in order. Throws the worker's error (same class
 * and message as the single-thread path), the body's error (HTTP), or an error naming how the worker died.
 */
/** Starts a parser thread: it loads its modules and waits for `init` (workerData null). */
function startWorker(): Worker {
  // The bootstrap turns on the compile cache the main thread uses before worker.ts loads (measured: the
  // parser thread's RSS 51 → 28 MB).
  const worker = new Worker(threadBootSource(WORKER_URL), { eval: true, workerData: null, resourceLimits: WORKER_RESOURCE_LIMITS, stdout: false, stderr: false });
  live++;
  worker.once('exit', () => { live--; });
  return worker;
}

let prestarted: Worker | null = null;

/**
 * Starts a parser thread now, for the next parseInWorker to take: a thread takes ~0.1 s to start (a new
 * isolate, Node's bootstrap, the parser modules), which then overlaps the caller's own start-up. The
 * bin calls this when it starts; the thread idles unreferenced (it keeps no process alive) and is
 * terminated if a capture parses on the main thread instead (small files) or never runs.
 */
export function prestartParserThread(): void {
  if (prestarted !== null) return;
  prestarted = startWorker();
  prestarted.unref();
  // An idle thread that fails (e.g. cannot load) is dropped; parseInWorker then starts another.
  const failed = prestarted;
  failed.once('error', () => { if (prestarted === failed) prestarted = null; });
  failed.once('exit', () => { if (prestarted === failed) prestarted = null; });
}

/** Terminates a prestarted thread nobody took. */
export function releasePrestartedThread(): void {
  const w = prestarted;
  prestarted = null;
  void w?.terminate();
}

export async function* parseInWorker(body: AsyncIterable<Uint8Array>, init: WorkerInit, events: ParallelEvents, signal?: AbortSignal): AsyncGenerator<ParsedBatch, number> {
  const worker = prestarted ?? startWorker();
  prestarted = null;
  worker.ref();
  worker.postMessage({ t: 'init', init } satisfies MainToWorker);
  const inbox: WorkerToMain[] = [];
  let failure: { error: unknown } | null = null;
  let bodyError: { error: unknown } | null = null;
  let finished = false;
  let wakeConsumer: (() => void) | null = null;
  let wakePump: (() => void) | null = null;
  let inFlight = 0;
  const wake = (): void => {
    const c = wakeConsumer;
    wakeConsumer = null;
    c?.();
  };
  const releasePump = (): void => {
    const p = wakePump;
    wakePump = null;
    p?.();
  };
  const fail = (error: unknown): void => {
    failure ??= { error };
    wake();
    releasePump();
  };
  worker.on('message', (m: WorkerToMain) => {
    if (m.t === 'ack') {
      inFlight--;
      releasePump();
      return;
    }
    inbox.push(m);
    wake();
  });
  worker.on('error', (err: Error & { code?: string }) => {
    fail(err.code === 'ERR_WORKER_OUT_OF_MEMORY'
      ? new Error(`the parser thread ran out of memory (its limits: ${JSON.stringify(WORKER_RESOURCE_LIMITS)}); unset SLUICE_HTTP_FILE_WORKER (or set it to 0) to parse on the main thread`, { cause: err })
      : err);
  });
  worker.on('exit', (code) => {
    if (!finished) fail(new Error(`the parser thread exited unexpectedly (exit code ${code})`));
  });
  const onAbort = (): void => {
    fail(signal?.reason ?? new Error('aborted'));
    void worker.terminate();
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });

  // The pump: body chunks to the worker, at most INPUT_WINDOW not yet taken by its parser.
  const handled = minorGcBudget();
  const pump = (async () => {
    for await (const chunk of body) {
      if (failure || finished) return;
      worker.postMessage({ t: 'chunk', data: chunk } satisfies MainToWorker);
      // The body's buffers die here (the worker got a copy); this thread allocates too little to collect them soon.
      handled(chunk.length);
      inFlight++;
      while (inFlight >= INPUT_WINDOW && !failure && !finished) await new Promise<void>((resolve) => { wakePump = resolve; });
    }
    if (!failure && !finished) worker.postMessage({ t: 'end' } satisfies MainToWorker);
  })();
  // A broken body (HTTP error after retries) reaches the worker's parser after the chunks already sent,
  // where the single-thread path would see it: the batches before it still come out, then its error.
  pump.catch((err: unknown) => {
    if (failure || finished) return;
    bodyError = { error: err };
    worker.postMessage({ t: 'bodyFailed' } satisfies MainToWorker);
  });

  try {
    while (true) {
      const m = inbox.shift();
      if (m === undefined) {
        if (failure) throw (failure as { error: unknown }).error;
        await new Promise<void>((resolve) => { wakeConsumer = resolve; });
        continue;
      }
      switch (m.t) {
        case 'batch': {
          const buffer = m.lines.buffer as ArrayBuffer;
          const written = (err?: Error | null): void => {
            if (!err && !finished) worker.postMessage({ t: 'recycle', buffer } satisfies MainToWorker, [buffer]);
          };
          yield { ...m, written };
          worker.postMessage({ t: 'credit' } satisfies MainToWorker);
          break;
        }
        case 'log':
          events.log(m.message);
          break;
        case 'skipped':
          events.onSkippedRow(rebuildError(m.error) as DecodeError);
          break;
        case 'error':
          throw rebuildError(m.error);
        case 'bodyError':
          throw (bodyError as { error: unknown } | null)?.error ?? new Error('the body failed');
        case 'done':
          return m.offset;
        default:
          break;
      }
    }
  } finally {
    finished = true;
    signal?.removeEventListener('abort', onAbort);
    releasePump();
    await worker.terminate();
  }
}
