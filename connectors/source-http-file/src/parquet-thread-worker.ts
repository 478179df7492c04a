// The decoder thread of a flat Parquet file (parquet-thread.ts is the host side): row groups' bytes in
// (fetched and transferred by the main thread, in order), framed `captured` lines out — the same byte
// writer (flatRowGroup, parquet-flat.ts) and the same batching (BatchCutter) as the main-thread path, so
// the documents, the batches and their checkpoint positions are the same. The main thread keeps HTTP and
// the protocol; this one decompresses pages and writes the rows. Each output buffer is transferred to the
// main thread and comes back once written.
import { serializeError, serveThread } from '@sluice/runtime/thread';
import { parquetSchema } from 'hyparquet/src/metadata.js';
import type { FileMetaData, RowGroup } from 'hyparquet';
import { DatetimeNormalizer } from './datetime.ts';
import { DecodeError, HttpFileError } from './errors.ts';
import { LineSink } from './lines.ts';
import { BatchCutter, columnPrefixes, compressorsFor, flatRowGroup, flatShared, locateRow, rowGroupStarts } from './parquet.ts';
import type { ParquetBatch } from './parquet.ts';
import { planColumns, textParsers } from './parquet-json.ts';
import type { DecoderIn, DecoderInit, DecoderOut } from './parquet-thread.ts';
import { DECODER_OUTPUT_WINDOW } from './parquet-thread.ts';

const groups: { g: number; start: number; bytes: Uint8Array }[] = [];
let ended = false;
let credit = DECODER_OUTPUT_WINDOW;
let wake: (() => void) | null = null;
let sink: LineSink | null = null;
let started = false;
const port = serveThread<DecoderIn, DecoderOut>('source-http-file/src/parquet-thread-worker.ts', (m) => {
  if (m.t === 'group') groups.push({ g: m.g, start: m.start, bytes: m.bytes });
  else if (m.t === 'recycle') sink?.recycle(m.buffer);
  else if (m.t === 'credit') credit++;
  else if (m.t === 'end') ended = true;
  else if (m.t === 'init' && !started) {
    started = true;
    run(m.init).catch((err: unknown) => port.post({ t: 'error', error: serializeError(err) }));
  }
  const w = wake;
  wake = null;
  w?.();
});
const sleep = (): Promise<void> => new Promise((resolve) => { wake = resolve; });
/** A turn of the event loop: the host's `recycle` and `credit` messages are handled between batches. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function run(init: DecoderInit): Promise<void> {
  credit = init.outputWindow ?? DECODER_OUTPUT_WINDOW;
  const metadata: FileMetaData = init.metadata;
  const root = parquetSchema(metadata);
  const datetimes = new DatetimeNormalizer(init.defaultOffset);
  const options = { datetimes, defaultOffset: init.defaultOffset };
  const columns = planColumns(root, options);
  const prefixes = columnPrefixes(columns.map((c) => c.name)).map((p) => Buffer.from(p, 'utf8'));
  const shared = flatShared(await compressorsFor(metadata), textParsers(options));
  const lines = new LineSink(init.binding, init.file, init.startRow, init.startRow);
  sink = lines;
  const cutter = new BatchCutter(lines, init.every, (buffer) => lines.recycle(buffer));
  const starts = rowGroupStarts(metadata);
  const first = locateRow(metadata, init.startRow);
  let at: ParquetBatch = first;
  const post = async (out: ReturnType<BatchCutter['cut']>): Promise<void> => {
    if (out === null) return;
    const { written: _, ...batch } = out;
    port.post({ t: 'batch', ...batch }, [batch.lines.buffer as ArrayBuffer]);
    credit--;
    await turn();
    while (credit <= 0) await sleep();
  };
  while (true) {
    const group = groups.shift();
    if (group === undefined) {
      if (ended) break;
      await sleep();
      continue;
    }
    const { g } = group;
    const rg = metadata.row_groups[g] as RowGroup;
    const rows = Number(rg.num_rows);
    const groupStart = starts[g] as number;
    const where = `row group ${g} of ${init.shown} (rows ${groupStart}–${groupStart + rows - 1})`;
    const from = g === first.rowGroup ? first.row : 0;
    try {
      for (const r of flatRowGroup(root, rg, { start: group.start, bytes: group.bytes }, shared, columns, prefixes, lines, datetimes, from, init.batchRows, where)) {
        if (r <= from) continue;
        at = { rowGroup: r === rows ? g + 1 : g, row: r === rows ? 0 : r };
        await post(cutter.cut(at));
      }
    } catch (err) {
      if (err instanceof HttpFileError) throw err;
      throw new DecodeError(`${where} could not be decoded: ${(err as Error).message}; the file is damaged or truncated`, { byteOffset: group.start }, { cause: err });
    }
    port.post({ t: 'groupDone', g });
  }
  await post(cutter.rest(at));
  port.post({ t: 'done', offset: lines.offset, allocated: lines.allocated });
}
