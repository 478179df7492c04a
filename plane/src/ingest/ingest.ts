// The ingester: `PUT`/`POST /ingest` with `Content-Type: application/json` (parameters allowed; the
// charset, when given, must be UTF-8) and a body `{"<collection>": [doc, …], …}`. The body is read in
// chunks by an incremental scanner (body-scanner.ts): each document is parsed from its own bytes,
// checked (finite numbers, nesting depth), validated against its collection's write schema and staged
// — its journal line encoded into per-journal buffers — as it arrives, with a yield to the event loop
// whenever a step has run for a few milliseconds, so one large request never stalls other requests and
// memory holds a few MB of the request's bytes, not its parsed documents: beyond SPILL_BYTES, the lines
// are staged in the journal store (invisible to readers) as they come. Nothing is visible until every
// document is valid; then all are appended in ONE journal-store transaction (pointing at what was
// staged, so it writes little), so a request is all or nothing; a failed one discards what it staged.
// Success: 200 `{"Offsets": {journal: head}, "SQLite": {cluster_id, member_id, revision, raft_term}}`
// (the second member names the store actually used; see journals/store.ts for the four integers).
// Errors: JSON `{"status": <code>, "error": "<message>"}` like the API (400 bad input, 413 over a limit,
// 415 another charset, 503 not ready). A request whose method is not PUT/POST, whose path is not
// /ingest or whose media type is not application/json gets the legacy ingester's 404
// "404 page not found" (text), as its router answered.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapePointerToken } from '@sluice/runtime';
import type { JsonValue } from '@sluice/runtime';
import type { PartitionLabels } from '../journals/names.ts';
import { headerJson, type CommitResult, type JournalStore, type JournalTx } from '../journals/store.ts';
import { DocumentError, type CollectionWriter, type CollectionWriters, type PreparedDoc } from '../journals/writer.ts';
import { decodeUtf8, IngestBodyScanner, IngestError, type ScannedDocument } from './body-scanner.ts';

export { IngestError } from './body-scanner.ts';

/** The name under which the ingest response reports the store's header. */
export const STORE_NAME = 'SQLite';

/** Limits of one ingest request (documented in plane/src/api/README.md). */
export interface IngestLimits {
  /** Largest body, in bytes (413 beyond). */
  maxBodyBytes: number;
  /** Most documents in one request, all collections together (413 beyond): bounds its memory and commit time. */
  maxDocuments: number;
  /**
   * Deepest nesting of objects and arrays in one document (400 beyond). 128 is serde_json's default
   * recursion limit, with which Flow's runtime parses documents.
   */
  maxDepth: number;
}

export const DEFAULT_INGEST_LIMITS: IngestLimits = { maxBodyBytes: 64 * 1024 * 1024, maxDocuments: 100_000, maxDepth: 128 };

/** Work done between two yields to the event loop, in ms. */
const SLICE_MS = 8;
/** Chunks are scanned in pieces of at most this many bytes, so a slice never runs long. */
const PIECE_BYTES = 8 * 1024;

/**
 * Most bytes of one buffer of a request's lines (one fragment once committed). Smaller than the store's
 * FRAGMENT_BYTES: staging one piece is a transaction of its own (write, fsync, checkpoint) run on the
 * event loop, and 1 MiB keeps that short.
 */
export const PIECE_LINE_BYTES = 1024 * 1024;

/** A piece of a journal's lines already written to the store with JournalStore.stage(). */
interface StoredPiece { id: number; bytes: number }

/**
 * One journal's lines from one request, encoded (UTF-8, newline-terminated) as documents arrive, in
 * the slices that yield: the synchronous commit only inserts them. The lines are held in buffers of at
 * most PIECE_LINE_BYTES, or — for a large request — already staged in the store (StoredPiece).
 */
export class StagedJournal {
  readonly journal: string;
  readonly collection: string;
  readonly labels: PartitionLabels;
  /** Sealed buffers and stored pieces, in order. */
  readonly parts: (Buffer | StoredPiece)[] = [];
  #buf: Buffer | undefined;
  #len = 0;

  constructor(journal: string, collection: string, labels: PartitionLabels) {
    this.journal = journal;
    this.collection = collection;
    this.labels = labels;
  }

  /** Bytes held in memory (the current buffer's capacity and the sealed buffers). */
  memory(): number {
    let n = this.#buf?.length ?? 0;
    for (const p of this.parts) if (Buffer.isBuffer(p)) n += p.length;
    return n;
  }

  /** `bytes`: json's UTF-8 length when already counted (PreparedDoc.bytes). */
  add(json: string, bytes = Buffer.byteLength(json, 'utf8')): void {
    const n = bytes + 1;
    if (this.#len > 0 && this.#len + n > PIECE_LINE_BYTES) this.seal();
    const free = this.#buf === undefined ? 0 : this.#buf.length - this.#len;
    if (free < n) {
      // Grow by doubling up to a fragment (a small request stays small); a longer line gets its own size.
      const size = Math.max(this.#len + n, Math.min(PIECE_LINE_BYTES, Math.max(16 * 1024, 2 * (this.#buf?.length ?? 0))));
      const next = Buffer.allocUnsafe(size);
      if (this.#buf !== undefined) this.#buf.copy(next, 0, 0, this.#len);
      this.#buf = next;
    }
    const buf = this.#buf!;
    this.#len += buf.write(json, this.#len, 'utf8');
    buf[this.#len++] = 0x0a;
  }

  /** Ends the current buffer (the next line starts a new one). */
  seal(): void {
    if (this.#buf === undefined || this.#len === 0) return;
    // A buffer much larger than its content is copied down, so unused capacity is not held to commit.
    this.parts.push(this.#len * 2 < this.#buf.length ? Buffer.from(this.#buf.subarray(0, this.#len)) : this.#buf.subarray(0, this.#len));
    this.#buf = undefined;
    this.#len = 0;
  }
}

/** A validated request, ready to append: its journals in the order the request first wrote each. */
export interface PreparedIngest {
  journals: StagedJournal[];
}

/** Bytes of encoded lines a request may hold in memory before it stages them in the store. */
export const SPILL_BYTES = 4 * 1024 * 1024;

/** Collects prepared documents by journal. */
class Stager {
  readonly #byJournal = new Map<string, StagedJournal>();
  #memory = 0;

  add(collection: string, doc: PreparedDoc): void {
    let staged = this.#byJournal.get(doc.journal);
    if (staged === undefined) {
      staged = new StagedJournal(doc.journal, collection, doc.labels);
      this.#byJournal.set(doc.journal, staged);
    }
    staged.add(doc.json, doc.bytes);
    this.#memory += doc.json.length + 1; // an estimate (UTF-16 units); spill() measures
  }

  /** True when the request holds enough lines in memory that they should go to the store. */
  mustSpill(): boolean {
    return this.#memory > SPILL_BYTES && [...this.#byJournal.values()].reduce((n, j) => n + j.memory(), 0) > SPILL_BYTES;
  }

  /**
   * Stages every buffer in the store (a transaction each, yielding between them), so the request holds
   * little in memory and its commit little to write.
   */
  async spill(store: JournalStore, pause: () => Promise<void>): Promise<void> {
    for (const j of this.#byJournal.values()) {
      j.seal();
      for (let i = 0; i < j.parts.length; i++) {
        const p = j.parts[i]!;
        if (!Buffer.isBuffer(p)) continue;
        j.parts[i] = { id: store.stage(p), bytes: p.length };
        await pause();
      }
    }
    this.#memory = 0;
  }

  done(): PreparedIngest {
    for (const j of this.#byJournal.values()) j.seal();
    return { journals: [...this.#byJournal.values()] };
  }
}

/** Discards what a request that failed had staged in the store (yielding between pieces). */
export async function discardPrepared(store: JournalStore, journals: Iterable<StagedJournal>): Promise<void> {
  for (const j of journals) {
    for (const p of j.parts) {
      if (Buffer.isBuffer(p)) continue;
      store.discardStaged(p.id);
      await yieldToEventLoop();
    }
  }
}

function unknownCollection(name: string): IngestError {
  return new IngestError(`fetching specification for ${JSON.stringify(name)}: not found (no collection of that name in the catalog)`);
}

/**
 * The pointer of the first number that is not finite (`1e400` parses to Infinity and would be stored
 * as null), or null when every number is finite.
 */
export function nonFinitePointer(value: JsonValue, at = ''): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : at;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = nonFinitePointer(value[i]!, `${at}/${i}`);
      if (p !== null) return p;
    }
    return null;
  }
  for (const k of Object.keys(value)) {
    const p = nonFinitePointer(value[k]!, `${at}/${escapePointerToken(String(k))}`);
    if (p !== null) return p;
  }
  return null;
}

/**
 * Admits one document: only what can be kept exactly. A number too large for a double is refused
 * (it would be stored as null), then the collection's write schema decides.
 */
function prepareOne(writer: CollectionWriter, collection: string, index: number, doc: JsonValue, checkNumbers = true, text?: string): PreparedDoc {
  const where = `ingestion of collection ${JSON.stringify(collection)}: document ${index}`;
  if (checkNumbers) {
    const ptr = nonFinitePointer(doc);
    if (ptr !== null) {
      throw new IngestError(`${where}: ${ptr === '' ? 'document root' : ptr}: number is out of range (beyond ±1.7976931348623157e308, it cannot be stored exactly); send it as a string, or a smaller number`);
    }
  }
  try {
    // From the request's text, the journal keeps the document's own bytes (integers beyond ±2^53 exact).
    return text === undefined ? writer.prepare(doc) : writer.prepareText(text, doc);
  } catch (err) {
    if (err instanceof DocumentError) throw new IngestError(`${where}: ${err.message}`, 400, { cause: err });
    throw err;
  }
}

/** Validates every document of a parsed body (catalog tests); throws IngestError naming collection, index and error. */
export function prepareIngest(writers: CollectionWriters, body: unknown): PreparedIngest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new IngestError('request body must be a JSON object mapping collection names to arrays of documents');
  }
  const stager = new Stager();
  for (const [collection, docs] of Object.entries(body as Record<string, unknown>)) {
    const writer = writers.get(collection);
    if (writer === undefined) throw unknownCollection(collection);
    if (!Array.isArray(docs)) throw new IngestError(`ingestion of collection ${JSON.stringify(collection)}: expected an array of documents, got ${docs === null ? 'null' : typeof docs}`);
    docs.forEach((doc: JsonValue, index) => stager.add(collection, prepareOne(writer, collection, index, doc)));
  }
  return stager.done();
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Reads, scans, parses, validates and encodes a request body in bounded steps that yield to the event
 * loop. With a store, lines beyond SPILL_BYTES are staged in it as they come, so memory holds at most
 * about SPILL_BYTES of the request (plus one document); the caller commits the result or, if it fails,
 * discards it (discardPrepared). Throws IngestError on bad input or a limit, having discarded what it
 * staged; the caller must still drain the request when it throws before the body's end.
 */
export async function prepareIngestStream(body: AsyncIterable<Uint8Array>, writers: CollectionWriters, limits: IngestLimits = DEFAULT_INGEST_LIMITS, store?: JournalStore): Promise<PreparedIngest> {
  const stager = new Stager();
  try {
    return await scanInto(stager, body, writers, limits, store);
  } catch (err) {
    if (store !== undefined) await discardPrepared(store, stager.done().journals);
    throw err;
  }
}

/**
 * A document at least this large is admitted in steps with a yield between them (decode, parse,
 * validate, encode: each one pass over its bytes) instead of one, so it holds the event loop for one
 * pass at a time.
 */
const LARGE_DOCUMENT_BYTES = 512 * 1024;

interface PendingDocument { d: ScannedDocument; writer: CollectionWriter }

async function scanInto(stager: Stager, body: AsyncIterable<Uint8Array>, writers: CollectionWriters, limits: IngestLimits, store: JournalStore | undefined): Promise<PreparedIngest> {
  let current: CollectionWriter | undefined;
  let count = 0;
  // Documents waiting for the loop below: a large one, and every one after it (order is kept).
  const pending: PendingDocument[] = [];
  const where = (d: ScannedDocument) => `ingestion of collection ${JSON.stringify(d.collection)}: document ${d.index}`;
  const parse = (d: ScannedDocument, text: string): JsonValue => {
    try {
      return JSON.parse(text) as JsonValue;
    } catch (err) {
      throw new IngestError(`request body is not valid JSON: ${where(d)}: ${(err as Error).message}`, 400, { cause: err });
    }
  };
  // A journal line has no raw newline; in valid JSON one can only be whitespace, so it becomes a space.
  const lineOf = (text: string) => (text.includes('\n') || text.includes('\r') ? text.replace(/[\r\n]/g, ' ') : text);
  const scanner = new IngestBodyScanner({
    collection(name) {
      current = writers.get(name);
      if (current === undefined) throw unknownCollection(name);
    },
    document(d) {
      if (++count > limits.maxDocuments) {
        throw new IngestError(`request has more than ${limits.maxDocuments} documents; split it into several requests (each request is one transaction)`, 413);
      }
      if (pending.length > 0 || d.bytes.length >= LARGE_DOCUMENT_BYTES) {
        pending.push({ d, writer: current! });
        return;
      }
      const text = decodeUtf8(d.bytes, where(d));
      stager.add(d.collection, prepareOne(current!, d.collection, d.index, parse(d, text), d.mayHaveHugeNumber, lineOf(text)));
    },
  }, { maxDepth: limits.maxDepth });

  let size = 0;
  let sliceStart = performance.now();
  const pause = async () => {
    await yieldToEventLoop();
    sliceStart = performance.now();
  };
  const drainPending = async () => {
    for (let i = 0; i < pending.length; i++) {
      const { d, writer } = pending[i]!;
      if (d.bytes.length < LARGE_DOCUMENT_BYTES) {
        const text = decodeUtf8(d.bytes, where(d));
        stager.add(d.collection, prepareOne(writer, d.collection, d.index, parse(d, text), d.mayHaveHugeNumber, lineOf(text)));
        if (performance.now() - sliceStart >= SLICE_MS) await pause();
        continue;
      }
      const text = decodeUtf8(d.bytes, where(d));
      await pause();
      const doc = parse(d, text);
      await pause();
      const prepared = prepareOne(writer, d.collection, d.index, doc, d.mayHaveHugeNumber, lineOf(text));
      await pause();
      stager.add(d.collection, prepared);
      await pause();
      if (store !== undefined && stager.mustSpill()) await stager.spill(store, pause);
    }
    pending.length = 0;
  };
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limits.maxBodyBytes) throw new IngestError(`request body exceeds ${limits.maxBodyBytes} bytes; split it into several requests`, 413);
    for (let at = 0; at < chunk.length; at += PIECE_BYTES) {
      scanner.push(at === 0 && chunk.length <= PIECE_BYTES ? chunk : chunk.subarray(at, at + PIECE_BYTES));
      if (pending.length > 0) await drainPending();
      if (performance.now() - sliceStart >= SLICE_MS) await pause();
      if (store !== undefined && stager.mustSpill()) await stager.spill(store, pause);
    }
  }
  scanner.end();
  return stager.done();
}

function appendPrepared(tx: JournalTx, writers: CollectionWriters, prepared: PreparedIngest, touched: Set<string>): void {
  for (const j of prepared.journals) {
    if (writers.get(j.collection) === undefined) throw new IngestError(`collection ${JSON.stringify(j.collection)} was removed while ingesting`);
    for (const p of j.parts) {
      if (Buffer.isBuffer(p)) tx.appendBytes(j.journal, j.collection, j.labels, p);
      else tx.appendStaged(j.journal, j.collection, j.labels, p.id, p.bytes);
    }
    touched.add(j.journal);
  }
}

/** Validates the whole request, then commits it in one transaction. Throws IngestError on bad input. */
export function ingestDocuments(store: JournalStore, writers: CollectionWriters, body: unknown): CommitResult {
  const prepared = prepareIngest(writers, body);
  return store.commit((tx) => appendPrepared(tx, writers, prepared, new Set()));
}

/**
 * Group commit: requests validated in the same turn of the event loop are appended in ONE journal
 * transaction (one fsync), as the legacy ingester let concurrent requests share a commit. Each request
 * is still all-or-nothing: it is entirely inside the transaction, and a failed transaction fails every
 * request in it. Each response reports the heads, after that transaction, of the journals it wrote.
 */
export class GroupCommitter {
  readonly #store: () => JournalStore;
  readonly #writers: () => CollectionWriters;
  #queue: { prepared: PreparedIngest; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }[] = [];

  constructor(store: () => JournalStore, writers: () => CollectionWriters) {
    this.#store = store;
    this.#writers = writers;
  }

  submit(prepared: PreparedIngest): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      if (this.#queue.push({ prepared, resolve, reject }) === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#queue;
    this.#queue = [];
    const touched = batch.map(() => new Set<string>());
    let result: CommitResult;
    try {
      const writers = this.#writers();
      result = this.#store().commit((tx) => batch.forEach((b, i) => appendPrepared(tx, writers, b.prepared, touched[i]!)));
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    batch.forEach((b, i) => {
      const offsets: Record<string, number> = {};
      for (const j of touched[i]!) offsets[j] = result.offsets[j]!;
      b.resolve({ offsets, header: result.header });
    });
  }
}

export function ingestResponseJson(result: CommitResult): string {
  return `{"Offsets":${JSON.stringify(result.offsets)},"${STORE_NAME}":${headerJson(result.header)}}`;
}

/**
 * What a Content-Type header asks for: 'json' (application/json, UTF-8 or no charset), 'not-json'
 * (another media type, or none: the legacy 404), or the unsupported charset's name.
 */
export function ingestContentType(header: string | undefined): 'json' | 'not-json' | { charset: string } {
  if (header === undefined) return 'not-json';
  const [type, ...params] = header.split(';');
  if (type!.trim().toLowerCase() !== 'application/json') return 'not-json';
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq === -1 || p.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    if (!/^utf-?8$/i.test(charset)) return { charset };
  }
  return 'json';
}

/** Sends a JSON error body, as the API does: `{"status": <code>, "error": "<message>"}`. */
export function sendIngestError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ status, error: message });
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

/** True for a request the ingester answers (an ingest path and method), whatever its content type. */
export function isIngestRoute(req: IncomingMessage): boolean {
  const path = (req.url ?? '').split('?')[0];
  return path === '/ingest' && (req.method === 'PUT' || req.method === 'POST');
}

/**
 * An HTTP handler for the ingester. Returns false (having written nothing) when the request is not an
 * ingest request, so it can be mounted beside other routes; `notFound` answers those with the 404.
 */
export function createIngestHandler(deps: { store: () => JournalStore; writers: () => CollectionWriters; limits?: Partial<IngestLimits>; log?: (message: string) => void }) {
  const committer = new GroupCommitter(deps.store, deps.writers);
  const limits = { ...DEFAULT_INGEST_LIMITS, ...deps.limits };
  return async function handleIngest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (!isIngestRoute(req)) return false;
    const type = ingestContentType(req.headers['content-type']);
    if (type === 'not-json') return false;
    if (type !== 'json') {
      req.resume();
      sendIngestError(res, 415, `unsupported charset ${JSON.stringify(type.charset)}: the ingester reads UTF-8 only; send the body as UTF-8 with Content-Type: application/json (or application/json; charset=utf-8)`);
      return true;
    }
    let prepared: PreparedIngest | undefined;
    try {
      // A failed request keeps its stream (destroyOnReturn: false) so the rest can be drained and answered.
      prepared = await prepareIngestStream(req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>, deps.writers(), limits, deps.store());
      const json = ingestResponseJson(await committer.submit(prepared));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
    } catch (err) {
      // A commit that failed leaves what the request staged unreferenced.
      if (prepared !== undefined) await discardPrepared(deps.store(), prepared.journals).catch(() => undefined);
      const known = err instanceof IngestError;
      if (!known) deps.log?.(`ingest: internal error: ${(err as Error).stack ?? String(err)}`);
      const status = known ? err.status : 500;
      const message = known ? err.message : `internal error: ${(err as Error).message}`;
      // The client may still be sending: read the rest of the body (discarding it) before answering,
      // so it sees this answer rather than a reset connection; beyond the size limit, answer and close.
      if (!req.readableEnded && !(status === 413 && /exceeds/.test(message))) await drain(req, limits.maxBodyBytes);
      sendIngestError(res, status, message, req.readableEnded ? {} : { connection: 'close' });
      if (!req.readableEnded) res.on('finish', () => req.destroy());
    }
    return true;
  };
}

async function drain(req: IncomingMessage, max: number): Promise<void> {
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) return;
    }
  } catch {
    // The client went away: nothing to answer.
  }
}

export function notFound(res: ServerResponse): void {
  const text = '404 page not found\n';
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
