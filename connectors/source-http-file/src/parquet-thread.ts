// A flat Parquet file decoded on a second thread (parquet-thread-worker.ts): this side fetches each row
// group's bytes (Range requests or the temporary copy) and transfers them to the thread in order; the thread
// decompresses and writes the rows as framed lines and transfers each batch back; the main thread only
// hands batches to the protocol and places checkpoints. HTTP, the protocol's writes and the decoding then
// overlap on two cores, as DuckDB's two threads do.
// Memory: at most ROW_GROUPS_IN_FLIGHT row groups' compressed bytes exist at once (the one being decoded and
// the next, fetched while it is), the thread holds one row group's decompressed pages, and at most
// DECODER_OUTPUT_WINDOW batches (192 KB each) wait for the main thread.
import { threadModule } from '@sluice/runtime/thread';
import type { SerializedError } from '@sluice/runtime/thread';
import type { FileMetaData, RowGroup } from 'hyparquet';
import type { ByteSource, ParquetBatch, ParquetLines } from './parquet.ts';
import { checkRowGroupSize, locateRow, maxRowGroupBytes, rowGroupSpan } from './parquet.ts';
import { rebuildError } from './parallel.ts';
import { ThreadInbox } from './thread-inbox.ts';
import { BATCH_BYTES } from './lines.ts';

/** Row groups whose bytes are fetched or being decoded at one time. */
export const ROW_GROUPS_IN_FLIGHT = 2;
/** Batches the thread may hand over before the main thread has taken them. */
export const DECODER_OUTPUT_WINDOW = 4;
/**
 * Files with fewer bytes of row groups to read than this are decoded on the main thread: starting a thread
 * (~0.1 s and ~20 MB) costs more than it saves.
 */
export const DECODER_THREAD_MIN_BYTES = 4 * 1024 * 1024;

export interface DecoderInit {
  /** The footer as read by the main thread, before planColumns rewrote any annotation. */
  metadata: FileMetaData;
  /** `_meta.file`. */
  file: string;
  /** For messages: the URL without credentials. */
  shown: string;
  binding: number;
  /** First row to emit (an index into the file); the documents' offsets start there. */
  startRow: number;
  every: number;
  defaultOffset: string;
  batchRows: number;
  /** Batches the thread may hand over before the main thread takes them (default DECODER_OUTPUT_WINDOW). */
  outputWindow?: number;
}

export type DecoderIn =
  | { t: 'init'; init: DecoderInit }
  | { t: 'group'; g: number; start: number; bytes: Uint8Array }
  | { t: 'end' }
  | { t: 'credit' }
  | { t: 'recycle'; buffer: ArrayBuffer };

export type DecoderOut =
  | { t: 'batch'; lines: Uint8Array; documents: number; offset: number; at: ParquetBatch; checkpoint: boolean }
  | { t: 'groupDone'; g: number }
  | { t: 'error'; error: SerializedError }
  | { t: 'done'; offset: number; allocated: number };

const decoderThreads = threadModule<DecoderIn, DecoderOut>(new URL('./parquet-thread-worker.ts', import.meta.url), {
  name: 'the Parquet decoder thread',
  // A small young generation, as the bin's (its batches' garbage dies young); decompressed pages are off-heap.
  resourceLimits: { maxYoungGenerationSizeMb: 6, maxOldGenerationSizeMb: 256 },
  outOfMemoryHint: 'unset SLUICE_HTTP_FILE_PARQUET_THREAD (or set it to 0) to decode on the main thread',
});

/** Decoder threads started and not yet exited (tests check that every way out ends them). */
export function liveDecoderThreads(): number {
  return decoderThreads.live();
}

/**
 * The batches the decoder thread may hold for the main thread while the main thread decodes the first row
 * group itself ('split'): enough for the thread to decode the next row group meanwhile (the 500k rides' row
 * groups are ~40 MB of lines), bounded so that memory stays bounded: 24 MiB of lines.
 */
export const SPLIT_OUTPUT_WINDOW = Math.floor((24 * 1024 * 1024) / BATCH_BYTES);

/**
 * Where a flat file's row groups are decoded (SLUICE_HTTP_FILE_PARQUET_THREAD):
 *  - 'main': all on the main thread (unset, the default, or `0`; and a file with one row group to read);
 *  - 'split' (`split`, opt-in): the first row group on the main thread, the others on the decoder thread, which
 *    starts ahead (prestartDecoderThread) and decodes the second row group while the main thread decodes the
 *    first, so that the thread's start and the first row group's warm-up overlap instead of adding up; then the
 *    main thread only hands batches on. It holds up to SPLIT_OUTPUT_WINDOW of the thread's lines meanwhile and
 *    costs the thread's start and first touch of its memory: measured on the 500k rides (docs/architecture.md),
 *    ~0.5 s more CPU and ~40 MB more RSS, and no faster on this shared two-core machine;
 *  - 'thread': all on the decoder thread (`1`; `auto` when the row groups to read hold at least
 *    DECODER_THREAD_MIN_BYTES).
 */
export type DecoderMode = 'main' | 'split' | 'thread';

function envMode(): string {
  return process.env['SLUICE_HTTP_FILE_PARQUET_THREAD'] ?? '';
}

/**
 * Starts a decoder thread ahead of need when the file may use one (by its size, before the footer is read):
 * its start (~0.1 s: Node's bootstrap, hyparquet, the byte writer) then overlaps the footer's and the first
 * row group's requests. An unused one is ended by releaseDecoderThread.
 */
export function prestartDecoderThread(contentLength: number | null): void {
  const env = envMode();
  if (env !== '1' && env !== 'split' && (env !== 'auto' || contentLength === null || contentLength < DECODER_THREAD_MIN_BYTES)) return;
  decoderThreads.prestart();
}

/** Ends a prestarted decoder thread nobody took. */
export function releaseDecoderThread(): void {
  decoderThreads.releasePrestarted();
}

/** Where a flat file's row groups from `startRow` are decoded (DecoderMode). */
export function decoderMode(metadata: FileMetaData, startRow: number): DecoderMode {
  const env = envMode();
  if (env === '1') return 'thread';
  const first = locateRow(metadata, startRow).rowGroup;
  // split: nothing after the first row group is nothing for a thread to do.
  if (env === 'split') return first + 1 < metadata.row_groups.length ? 'split' : 'main';
  if (env !== 'auto') return 'main';
  let bytes = 0;
  for (const rg of metadata.row_groups.slice(first)) {
    const { start, end } = rowGroupSpan(rg);
    bytes += end - start;
  }
  return bytes >= DECODER_THREAD_MIN_BYTES ? 'thread' : 'main';
}

export interface DecoderOptions {
  init: DecoderInit;
  source: ByteSource;
  log: (message: string) => void;
  signal?: AbortSignal;
}

/** The rows of a flat file from `init.startRow`, decoded on the decoder thread, as batches of lines in order. */
export async function* decodeInThread(o: DecoderOptions): AsyncGenerator<ParquetLines> {
  const { init, source } = o;
  const groups = init.metadata.row_groups;
  const limit = maxRowGroupBytes();
  const first = locateRow(init.metadata, init.startRow).rowGroup;
  const thread = decoderThreads.start();
  thread.hold();
  // structuredClone happens here, before the caller's planColumns (if any) rewrites the schema's annotations.
  thread.post({ t: 'init', init });
  const inbox = new ThreadInbox<DecoderOut>(thread, 'groupDone', o.signal);

  // The pump: each row group's bytes to the thread, in order, at most ROW_GROUPS_IN_FLIGHT at once.
  const pump = (async () => {
    for (let g = first; g < groups.length; g++) {
      if (!(await inbox.room(ROW_GROUPS_IN_FLIGHT))) return;
      checkRowGroupSize(init.metadata, g, init.shown, limit);
      inbox.sent();
      const { start, end } = rowGroupSpan(groups[g] as RowGroup);
      let bytes: Uint8Array = await source.read(start, end);
      if (inbox.stopped) return;
      o.log(`parquet: row group ${g}: ${Number((groups[g] as RowGroup).num_rows)} rows, ${bytes.length} bytes (to the decoder thread)`);
      // Only a whole ArrayBuffer can be transferred (a small read may be a view of Node's shared pool).
      if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) bytes = new Uint8Array(bytes);
      thread.post({ t: 'group', g, start, bytes }, [bytes.buffer as ArrayBuffer]);
    }
    thread.post({ t: 'end' });
  })();
  pump.catch((err: unknown) => inbox.fail(err));

  try {
    while (true) {
      const m = await inbox.next();
      if (m.t === 'batch') {
        const buffer = m.lines.buffer as ArrayBuffer;
        yield {
          lines: m.lines, documents: m.documents, offset: m.offset, at: m.at, checkpoint: m.checkpoint,
          written: (err) => { if (!err && !inbox.finished) thread.post({ t: 'recycle', buffer }, [buffer]); },
        };
        thread.post({ t: 'credit' });
      } else if (m.t === 'error') {
        throw rebuildError(m.error);
      } else if (m.t === 'done') {
        o.log(`parquet: decoder thread: ${m.allocated} line buffers allocated`);
        return;
      }
    }
  } finally {
    inbox.finish();
    await thread.terminate();
  }
}
