// One binding's capture: one sweep of its file. State per binding, under bindingStateV1.<stateKey>:
// upstream's fields and sweep rules (state.ts), plus Sluice's resume extras (etag, byteOffset, csv, parquet)
// while a file is mid-transfer; skipped when unchanged, resumed after the documents already captured of the
// same version, Parquet read by position (parquet-capture.ts), other formats parsed here or on the parser
// thread; a checkpoint every `checkpointEvery` documents and at the end.
import type { CaptureBinding, CaptureOpenContext, CaptureOutput, JsonObject, JsonValue, Logger } from '@sluice/runtime';
import { httpClient, DEFAULT_CHECKPOINT_EVERY } from './connector-options.ts';
import type { ConnectorOptions } from './connector-options.ts';
import type { CsvResume } from './csv.ts';
import { Decorator, isCustomDecoration } from './decorate.ts';
import { ConfigError, DecodeError } from './errors.ts';
import { fileNameOf, metaOf } from './file-names.ts';
import type { FileInfo } from './http-response.ts';
import { peekBody } from './http.ts';
import { minorGcBudget } from './gc.ts';
import { framedBatches, LineSink } from './lines.ts';
import { parseInWorker, releasePrestartedThread, useWorker } from './parallel.ts';
import type { ParsedBatch } from './parallel.ts';
import { checkParquetCompression, hasParquetMagic, parquetBy } from './parquet-detect.ts';
import { redactUrl, urlWithoutQuery } from './redact-url.ts';
import type { EndpointConfig, ResourceConfig } from './schema.ts';
import { fileDonePatch, formatTime, horizonOf, midFilePatch, patchChanges, readState, skipReason, sweepDonePatch } from './state.ts';
import type { BindingState, ResumeExtras, SweepState } from './state.ts';

function rawStateOf(state: JsonObject, key: string): unknown {
  const all = state['bindingStateV1'];
  if (!all || typeof all !== 'object' || Array.isArray(all)) return undefined;
  return (all as JsonObject)[key];
}

function checkpoint(key: string, patch: BindingState): CaptureOutput {
  return { checkpoint: { state: { updated: { bindingStateV1: { [key]: patch as unknown as JsonValue } }, mergePatch: true } } };
}

/** One binding's capture, as batches of outputs (the documents of one parsed chunk, then any checkpoint). */
export async function* captureBinding(ctx: CaptureOpenContext<EndpointConfig, ResourceConfig>, binding: CaptureBinding<ResourceConfig>, options: ConnectorOptions): AsyncGenerator<CaptureOutput[]> {
  const config = ctx.config;
  const log: Logger = ctx.log.child({ binding: binding.index, stream: binding.resource.stream });
  const raw = rawStateOf(ctx.state, binding.stateKey);
  // Fresh: nothing captured yet for this binding, so a refused connection is a wrong URL, not a restart.
  const fresh = raw === undefined || raw === null || (typeof raw === 'object' && Object.keys(raw).length === 0);
  const client = httpClient(config, options, ctx, fresh);
  const head = await client.head();
  const name = fileNameOf(config.url);
  const prev = readState(raw, binding.stateKey, { name, url: urlWithoutQuery(config.url) });
  const modMs = head.lastModifiedDate.getTime();
  const etag = head.etag;
  // Upstream's sweep: keep the bound of an interrupted sweep, else the horizon.
  const sweep: SweepState = { minBound: prev.minBound, maxBound: prev.maxBound ?? formatTime(horizonOf(Date.now())), maxMod: prev.maxMod, path: prev.path, records: prev.records, complete: prev.complete };
  const finish = function* (): Generator<CaptureOutput[]> {
    const done = sweepDonePatch(sweep);
    if (patchChanges(raw, done)) yield [checkpoint(binding.stateKey, done)];
  };
  const skip = skipReason(prev, name, modMs, head.contentLength);
  if (skip !== null) {
    log.info(`skipping the file: ${skip}`, { lastModified: head.lastModified, etag });
    yield* finish();
    return;
  }
  // The same version as an interrupted capture of this file: resume after its records.
  const sameVersion = prev.path === name && prev.maxMod !== null && Date.parse(prev.maxMod) === modMs && (prev.etag === null || prev.etag === etag);
  const resumeFrom = sameVersion && prev.records > 0 ? prev.records : 0;
  if (!sameVersion && prev.path === name && prev.records > 0) log.info(`the file changed since the interrupted capture of ${prev.records} documents; capturing this version from the start`, { lastModified: head.lastModified, etag });
  sweep.maxMod = prev.maxMod !== null && Date.parse(prev.maxMod) >= modMs ? prev.maxMod : formatTime(modMs);
  sweep.path = name;
  sweep.complete = false;
  // Resume by Range when the state says where record `records` starts; otherwise re-read and skip.
  const byteResume = resumeFrom > 0 && prev.byteOffset !== null ? { byteOffset: prev.byteOffset, csv: prev.csv ?? undefined } : undefined;
  const parserOptions = config.parser;
  const decorator = isCustomDecoration(parserOptions) ? new Decorator(parserOptions ?? {}, name) : null;
  const midFile = (records: number, extras: Partial<ResumeExtras> = {}): CaptureOutput => checkpoint(binding.stateKey, midFilePatch({ ...sweep, records }, { etag, byteOffset: null, csv: null, parquet: null, ...extras }));
  if (resumeFrom > 0) {
    log.info(`resuming the capture of this version of the file after ${resumeFrom} documents${byteResume && !decorator ? ` from byte ${byteResume.byteOffset} (Range request)` : ' (re-reading and skipping them)'}`, { lastModified: head.lastModified });
  } else yield [midFile(0)];

  const every = options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY;
  const done = function* (): Generator<CaptureOutput[]> {
    yield [checkpoint(binding.stateKey, fileDonePatch(sweep))];
    sweep.complete = true;
    yield* finish();
  };
  // Parquet is read by position (parquet-capture.ts): known from the config, name or Content-Type, or from the body's magic below.
  const parquet = async function* (by: string, body: AsyncIterable<Uint8Array> | null): AsyncGenerator<CaptureOutput[]> {
    log.debug(`format: parquet (by ${by})`);
    if (decorator) throw new ConfigError('parser.addRecordOffset and parser.addValues are not supported for Parquet files: remove them (documents get _meta.file and _meta.offset)');
    const m = metaOf(config, head);
    checkParquetCompression(config, [m.filename, ...m.altNames], head.contentEncoding);
    // Loaded for a Parquet file only (parquet-detect.ts).
    const { captureParquet } = await import('./parquet-capture.ts');
    const total = yield* captureParquet({
      client, head, body, log, config, file: name, shown: redactUrl(config.url), binding: binding.index, every, resumeFrom, resumeAt: resumeFrom > 0 ? prev.parquet : null,
      progress: (records, at) => midFile(records, { parquet: at }),
    });
    log.info(`captured ${total - resumeFrom} documents (file has ${total})`, { lastModified: head.lastModified, etag });
    yield* done();
  };
  const headMeta = metaOf(config, head);
  const parquetReason = parquetBy(config, [headMeta.filename, ...headMeta.altNames], head.contentType);
  if (parquetReason !== null) {
    yield* parquet(parquetReason, null);
    return;
  }
  // The text formats' parsers (pipeline.ts and the modules it imports) load only for a file that needs them,
  // while the GET below is under way: a Parquet capture never does (~1 ms of start-up per module).
  const pipeline = import('./pipeline.ts');
  pipeline.catch(() => {});
  let info: FileInfo | null = null;
  let skipped = 0;
  let firstSkipped: DecodeError | null = null;
  // Custom decoration parses objects on this thread, from the start of the file.
  const resume = decorator ? undefined : byteResume;
  const body = client.get({ validator: { etag, lastModified: head.lastModified }, size: head.contentEncoding ? null : head.contentLength, onResponse: (i) => { info = i; }, ...(resume ? { from: resume.byteOffset } : {}) });
  // The GET's headers decide detection; they arrive before the first chunk.
  const lazyMeta = { get value() { return metaOf(config, info ?? head); } };
  const { first: firstChunk, body: replay } = await peekBody(body);
  const meta = lazyMeta.value;
  if (!resume && (config.parser?.format?.type ?? 'auto') === 'auto' && hasParquetMagic(firstChunk)) {
    yield* parquet('its first bytes, PAR1', replay);
    return;
  }
  let offset = resume ? resumeFrom : 0;
  let sinceCheckpoint = 0;
  const bindingIndex = binding.index;
  const tracker: { position: number | null; csv: CsvResume | null } = { position: null, csv: null };
  const onSkippedRow = (err: DecodeError): void => {
    skipped++;
    firstSkipped ??= err;
    log.warn(`malformed CSV row excluded (within errorThreshold): ${err.message}`);
  };
  // Framed lines in batches: from a parser thread (big files), or parsed here by the same loop (lines.ts).
  let batches: AsyncGenerator<ParsedBatch, number | void>;
  let lines: LineSink | null = null;
  if (!decorator && useWorker(options.worker, head.contentLength)) {
    batches = parseInWorker(replay, { meta, parser: config.parser, resume, binding: bindingIndex, file: name, startOffset: offset, resumeFrom }, {
      log: (message) => log.debug(message),
      onSkippedRow,
    }, ctx.signal);
  } else {
    // A thread started in advance for a big file is not needed for this one.
    releasePrestartedThread();
    const sink = new LineSink(bindingIndex, name, offset, resumeFrom, decorator ? (record, at) => decorator.apply(record, at) : null);
    lines = sink;
    const { parseFile } = await pipeline;
    const parsed = parseFile(replay, meta, config.parser, {
      // Upstream's decoration works on objects: no CSV rows written as JSON from their bytes then.
      ...(decorator === null ? { lines: sink } : {}),
      tracker,
      onCompression: (c, by) => log.debug(`compression: ${c} (by ${by})`),
      onFormat: (f, member) => log.debug(`format: ${f.type}${member ? ` (zip member ${member})` : ''}`),
      onSkippedRow,
    }, resume);
    batches = (async function* () {
      for await (const b of framedBatches(parsed, sink, tracker, { handled: minorGcBudget() })) {
        // Once written, the buffer is filled again.
        yield { ...b, written: (err?: Error | null) => { if (!err) sink.recycle(b.lines.buffer as ArrayBuffer); } };
      }
    })();
  }
  try {
    while (true) {
      const r = await batches.next();
      if (r.done) {
        offset = lines?.offset ?? (r.value as number);
        break;
      }
      const b = r.value;
      offset = b.offset;
      sinceCheckpoint += b.documents;
      const out: CaptureOutput[] = [{ capturedLines: { documents: b.documents, lines: b.lines, written: b.written } }];
      // Checkpoints fall at batch ends, where the byte position of the next record is known.
      if (!b.failed && sinceCheckpoint >= every) {
        sinceCheckpoint = 0;
        out.push(midFile(offset, b.position === null || decorator ? {} : { byteOffset: b.position, csv: b.csv }));
      }
      yield out;
    }
  } finally {
    await batches.return(offset);
  }
  if (offset < resumeFrom) {
    throw new DecodeError(`the file now yields ${offset} documents but ${resumeFrom} were already captured from this version; the parse is not deterministic`);
  }
  if (skipped) log.warn(`${skipped} malformed CSV rows were excluded (within errorThreshold)`, { first: (firstSkipped as DecodeError | null)?.message });
  log.info(`captured ${offset - resumeFrom} documents (file has ${offset})`, { lastModified: head.lastModified, etag });
  yield* done();
}
