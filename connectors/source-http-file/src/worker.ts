// The parser thread of the parallel capture (parallel.ts): raw body chunks in, framed `captured` lines out.
// It runs exactly what the single-thread path runs — parseFile (decompress → charset → parser) and the
// connector's per-record loop (resume skip, `_meta`, offsets) — and writes the lines into reusable
// buffers (lines.ts; CSV rows go there straight from bytes, csv-bytes.ts), handed back as batches with the
// record count, the offset after them and the resume position, so the main thread only writes bytes and
// places checkpoints. A thread may be started before its file is known (prestartParserThread): it then
// loads its modules and waits for the `init` message.
import { serializeError, serveThread } from '@sluice/runtime/thread';
import { parseFile } from './pipeline.ts';
import { minorGcBudget } from './gc.ts';
import { framedBatches, LineSink } from './lines.ts';
import type { CsvResume } from './csv.ts';
import type { MainToWorker, WorkerInit, WorkerToMain } from './parallel.ts';
import { OUTPUT_WINDOW } from './parallel.ts';

// Input: chunks the main thread sends (it keeps at most INPUT_WINDOW unacknowledged in flight).
const chunks: Uint8Array[] = [];
let ended = false;
let bodyFailed = false;
/** Thrown by the input where the body broke; the main thread rethrows the body's own error. */
const BODY_FAILED = new Error('the HTTP body failed (see the main thread)');
let credit = OUTPUT_WINDOW;
let wake: (() => void) | null = null;
let sink: LineSink | null = null;
const port = serveThread<MainToWorker, WorkerToMain>('source-http-file/src/worker.ts', (m) => {
  if (m.t === 'chunk') chunks.push(m.data);
  else if (m.t === 'recycle') sink?.recycle(m.buffer);
  else if (m.t === 'init') start(m.init);
  else if (m.t === 'end') ended = true;
  else if (m.t === 'bodyFailed') bodyFailed = true;
  else credit++;
  const w = wake;
  wake = null;
  w?.();
});
const post = (m: WorkerToMain, transfer?: ArrayBuffer[]): void => port.post(m, transfer);
const sleep = (): Promise<void> => new Promise((resolve) => { wake = resolve; });

/** Dead input and decompressed buffers are freed by collections this thread rarely triggers itself (gc.ts). */
const handled = minorGcBudget();

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

/** Hands each batch over (its buffer is transferred, not copied), within the main thread's credit. */
async function run(init: WorkerInit, lines: LineSink): Promise<void> {
  const tracker: { position: number | null; csv: CsvResume | null } = { position: null, csv: null };
  const parsed = parseFile(input(), init.meta, init.parser, {
    lines,
    tracker,
    onCompression: (c, by) => post({ t: 'log', message: `compression: ${c} (by ${by})` }),
    onFormat: (f, member) => post({ t: 'log', message: `format: ${f.type}${member ? ` (zip member ${member})` : ''}` }),
    onSkippedRow: (err) => post({ t: 'skipped', error: serializeError(err) }),
  }, init.resume);
  // Small batches are merged while more input is already here (fewer messages and writes).
  for await (const b of framedBatches(parsed, lines, tracker, { mergeWhile: () => chunks.length > 0, handled })) {
    post({ t: 'batch', ...b }, [b.lines.buffer as ArrayBuffer]);
    credit--;
    while (credit <= 0) await sleep();
  }
  post({ t: 'log', message: `parser thread: ${lines.allocated} line buffers allocated` });
  post({ t: 'done', offset: lines.offset });
}

let started = false;
function start(init: WorkerInit): void {
  if (started) return;
  started = true;
  // Lines go into reusable buffers that are transferred to the main thread and come back once written.
  const lines = new LineSink(init.binding, init.file, init.startOffset, init.resumeFrom);
  sink = lines;
  run(init, lines).catch((err: unknown) => post(err === BODY_FAILED || (err instanceof Error && err.cause === BODY_FAILED) ? { t: 'bodyError' } : { t: 'error', error: serializeError(err) }));
}
