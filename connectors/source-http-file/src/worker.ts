// The parser thread of the parallel capture (parallel.ts): raw body chunks in, framed `captured` lines out.
// It runs exactly what the single-thread path runs — parseFile (decompress → charset → parser → JSON
// text) and the connector's per-record loop (resume skip, `_meta`, offsets) — and hands each parsed batch
// back as the text of its protocol lines, with the record count, the offset
// after it and the resume position, so the main thread only writes bytes and places checkpoints.
import { parentPort, workerData } from 'node:worker_threads';
import { parseFile } from './pipeline.ts';
import { addMeta, closeJsonRecord } from './record.ts';
import type { CsvResume } from './csv.ts';
import type { MainToWorker, SerializedError, WorkerInit, WorkerToMain } from './parallel.ts';
import { OUTPUT_WINDOW } from './parallel.ts';

const port = parentPort;
if (!port) throw new Error('source-http-file/src/worker.ts runs only as a worker thread');
const init = workerData as WorkerInit;

const post = (m: WorkerToMain, transfer?: ArrayBuffer[]): void => port.postMessage(m, transfer);

// Input: chunks the main thread sends (it keeps at most INPUT_WINDOW unacknowledged in flight).
const chunks: Uint8Array[] = [];
let ended = false;
let bodyFailed = false;
/** Thrown by the input where the body broke; the main thread rethrows the body's own error. */
const BODY_FAILED = new Error('the HTTP body failed (see the main thread)');
let credit = OUTPUT_WINDOW;
let wake: (() => void) | null = null;
port.on('message', (m: MainToWorker) => {
  if (m.t === 'chunk') chunks.push(m.data);
  else if (m.t === 'end') ended = true;
  else if (m.t === 'bodyFailed') bodyFailed = true;
  else credit++;
  const w = wake;
  wake = null;
  w?.();
});
const sleep = (): Promise<void> => new Promise((resolve) => { wake = resolve; });

async function* input(): AsyncGenerator<Uint8Array> {
  while (true) {
    const c = chunks.shift();
    if (c !== undefined) {
      post({ t: 'ack' });
      yield c;
      continue;
    }
    if (ended) return;
    if (bodyFailed) throw BODY_FAILED;
    await sleep();
  }
}

function serialize(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & { code?: unknown; line?: unknown; byteOffset?: unknown; fields?: unknown };
  const out: SerializedError = { name: e.name, message: e.message };
  if (e.stack !== undefined) out.stack = e.stack;
  if (typeof e.code === 'string') out.code = e.code;
  if (typeof e.line === 'number') out.line = e.line;
  if (typeof e.byteOffset === 'number') out.byteOffset = e.byteOffset;
  if (e.fields && typeof e.fields === 'object') out.fields = e.fields as Record<string, unknown>;
  if (e.cause instanceof Error) out.cause = { name: e.cause.name, message: e.cause.message };
  return out;
}

const docOpen = init.binding === 0 ? '{"captured":{"doc":' : `{"captured":{"binding":${init.binding},"doc":`;
const metaPrefix = `{"file":${JSON.stringify(init.file)},"offset":`;
let offset = init.startOffset;

/**
 * Hands a batch's lines over as a string: it is copied into the main thread's heap, where it dies young.
 * (Transferred UTF-8 buffers were measured slower and bigger: the main thread allocates little, so its
 * GC ran rarely and the dead external buffers piled up.)
 */
function sendBatch(lines: string, documents: number, position: number | null, csv: CsvResume | null, failed = false): void {
  post({ t: 'batch', lines, documents, offset, position, csv, failed });
  credit--;
}

async function run(): Promise<void> {
  const tracker: { position: number | null; csv: CsvResume | null } = { position: null, csv: null };
  for await (const batch of parseFile(input(), init.meta, init.parser, {
    jsonText: true,
    tracker,
    onCompression: (c, by) => post({ t: 'log', message: `compression: ${c} (by ${by})` }),
    onFormat: (f, member) => post({ t: 'log', message: `format: ${f.type}${member ? ` (zip member ${member})` : ''}` }),
    onSkippedRow: (err) => post({ t: 'skipped', error: serialize(err) }),
  }, init.resume)) {
    let text = '';
    let documents = 0;
    try {
      for (const record of batch) {
        if (offset < init.resumeFrom) { offset++; continue; }
        if (typeof record === 'string') {
          // The line encodeCapturedJson writes for `{ captured: { binding, docJson } }`.
          text += `${docOpen}${closeJsonRecord(record, `${metaPrefix}${offset}}`)}}}\n`;
          offset++;
          documents++;
          continue;
        }
        addMeta(record, init.file, offset);
        offset++;
        documents++;
        // The line the runtime writes for `{ captured: { binding, doc } }`.
        text += `${docOpen}${JSON.stringify(record)}}}\n`;
      }
    } catch (err) {
      // The documents before the failure still go out first, as on the single-thread path.
      if (documents) sendBatch(text, documents, tracker.position, tracker.position === null ? null : tracker.csv, true);
      throw err;
    }
    // A batch of only skipped records (resume by re-reading) gives nothing, as on the single-thread path.
    if (documents) sendBatch(text, documents, tracker.position, tracker.position === null ? null : tracker.csv);
    while (credit <= 0) await sleep();
  }
  post({ t: 'done', offset });
}

run().catch((err: unknown) => post(err === BODY_FAILED || (err instanceof Error && err.cause === BODY_FAILED) ? { t: 'bodyError' } : { t: 'error', error: serialize(err) }));
