// The parallel capture of one file: the main thread does HTTP (HEAD/GET, retries, Range resume) and the
// protocol; a worker thread (worker.ts) runs decompress → charset → parser → JSON text and returns
// batches of framed `captured` lines (text). Both directions are bounded: at most
// INPUT_WINDOW raw chunks and OUTPUT_WINDOW batches are in flight, so the consumer's pace still reaches
// the socket. The worker is terminated on every way out (end, error, abort, early return). Starting the
// thread, the channel, the mapping of its death to an error and the errors' round trip are the runtime's
// (@sluice/runtime/thread; it imports nothing of the runtime's index, which would cost this thread ~36 MB).
import { rebuildError as rebuild, threadModule } from '@sluice/runtime/thread';
import type { SerializedError } from '@sluice/runtime/thread';
import { ThreadInbox } from './thread-inbox.ts';
import { minorGcBudget } from './gc.ts';
import type { FramedBatch } from './lines.ts';
import { ConfigError, DecodeError, ErrorThresholdError, HttpFileError } from './errors.ts';
import type { FileMeta, ResumeFrom } from './pipeline.ts';
import type { ParserConfig } from './schema.ts';

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
  const { code, line, byteOffset, fields } = e.props;
  const options = {
    ...(fields !== null && typeof fields === 'object' ? { fields: fields as Record<string, unknown> } : {}),
    ...(e.cause ? { cause: Object.assign(new Error(e.cause.message), { name: e.cause.name }) } : {}),
  };
  const where = { line: typeof line === 'number' ? line : null, byteOffset: typeof byteOffset === 'number' ? byteOffset : null };
  return rebuild(e, () => {
    switch (e.name) {
      case 'ErrorThresholdError': return new ErrorThresholdError(e.message, where, options);
      case 'DecodeError': return new DecodeError(e.message, where, options);
      case 'ConfigError': return new ConfigError(e.message, options);
      default:
        if (typeof code === 'string' && code !== '' && e.name.endsWith('Error') && e.name !== 'Error' && e.name !== 'TypeError' && e.name !== 'RangeError') {
          return Object.assign(new HttpFileError(code, e.message, options), { name: e.name });
        }
        // Anything else: an Error of the same name, message, cause and properties (`code` included).
        return undefined;
    }
  });
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

const parserThreads = threadModule<MainToWorker, WorkerToMain>(new URL('./worker.ts', import.meta.url), {
  name: 'the parser thread',
  resourceLimits: WORKER_RESOURCE_LIMITS,
  outOfMemoryHint: 'unset SLUICE_HTTP_FILE_WORKER (or set it to 0) to parse on the main thread',
});

/** Parser threads started and not yet exited (tests check that every way out ends them). */
export function liveWorkers(): number {
  return parserThreads.live();
}

export interface ParallelEvents {
  log: (message: string) => void;
  onSkippedRow: (error: DecodeError) => void;
}

/**
 * Starts a parser thread now, for the next parseInWorker to take (its start overlaps the caller's own
 * start-up; the bin calls this when it starts). It loads its modules and waits for `init`, idles
 * unreferenced (it keeps no process alive) and is terminated if a capture parses on the main thread instead
 * (small files) or never runs. An idle thread that fails (e.g. cannot load) is replaced by parseInWorker.
 */
export function prestartParserThread(): void {
  parserThreads.prestart();
}

/** Terminates a prestarted thread nobody took. */
export function releasePrestartedThread(): void {
  parserThreads.releasePrestarted();
}

/**
 * Parses `body` in a worker thread; yields its batches in order. Throws the worker's error (same class
 * and message as the single-thread path), the body's error (HTTP), or an error naming how the worker died.
 */
export async function* parseInWorker(body: AsyncIterable<Uint8Array>, init: WorkerInit, events: ParallelEvents, signal?: AbortSignal): AsyncGenerator<ParsedBatch, number> {
  const worker = parserThreads.start();
  worker.hold();
  worker.post({ t: 'init', init });
  const inbox = new ThreadInbox<WorkerToMain>(worker, 'ack', signal);
  let bodyError: { error: unknown } | null = null;

  // The pump: body chunks to the worker, at most INPUT_WINDOW not yet taken by its parser.
  const handled = minorGcBudget();
  const pump = (async () => {
    for await (const chunk of body) {
      if (inbox.stopped) return;
      worker.post({ t: 'chunk', data: chunk });
      // The body's buffers die here (the worker got a copy); this thread allocates too little to collect them soon.
      handled(chunk.length);
      inbox.sent();
      if (!(await inbox.room(INPUT_WINDOW))) return;
    }
    if (!inbox.stopped) worker.post({ t: 'end' });
  })();
  // A broken body (HTTP error after retries) reaches the worker's parser after the chunks already sent,
  // where the single-thread path would see it: the batches before it still come out, then its error.
  pump.catch((err: unknown) => {
    if (inbox.stopped) return;
    bodyError = { error: err };
    worker.post({ t: 'bodyFailed' });
  });

  try {
    while (true) {
      const m = await inbox.next();
      switch (m.t) {
        case 'batch': {
          const buffer = m.lines.buffer as ArrayBuffer;
          const written = (err?: Error | null): void => {
            if (!err && !inbox.finished) worker.post({ t: 'recycle', buffer }, [buffer]);
          };
          yield { ...m, written };
          worker.post({ t: 'credit' });
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
    inbox.finish();
    await worker.terminate();
  }
}
