// The ingester: `PUT`/`POST /ingest` with `Content-Type: application/json` and a body
// `{"<collection>": [doc, …], …}`. Every document is validated against its collection's write schema
// before anything is written; then all of them are appended in ONE journal-store transaction, so a
// request is all or nothing. Success: 200 `{"Offsets": {journal: head}, "SQLite": {cluster_id,
// member_id, revision, raft_term}}` (the second member names the store actually used; see
// journals/store.ts for how the four integers are derived). Errors: 400 text/plain, message + "\n".
// Any other method, path or content type: 404 "404 page not found", as the legacy ingester's router did.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SluiceError, type JsonValue } from '@sluice/runtime';
import { headerJson, type CommitResult, type JournalStore, type JournalTx } from '../journals/store.ts';
import { DocumentError, type CollectionWriters, type PreparedDoc } from '../journals/writer.ts';

/** The name under which the ingest response reports the store's header. */
export const STORE_NAME = 'SQLite';
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export class IngestError extends SluiceError {
  readonly status: number;
  constructor(message: string, status = 400, options: { cause?: unknown } = {}) {
    super('INGEST', message, options);
    this.status = status;
  }
}

/** A validated request, ready to append. */
export interface PreparedIngest {
  collections: { name: string; docs: PreparedDoc[] }[];
}

/** Validates every document of a request body; throws IngestError naming collection, index and error. */
export function prepareIngest(writers: CollectionWriters, body: unknown): PreparedIngest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new IngestError('request body must be a JSON object mapping collection names to arrays of documents');
  }
  const collections: PreparedIngest['collections'] = [];
  for (const [collection, docs] of Object.entries(body as Record<string, unknown>)) {
    const writer = writers.get(collection);
    if (writer === undefined) throw new IngestError(`fetching specification for "${collection}": not found (no collection of that name in the catalog)`);
    if (!Array.isArray(docs)) throw new IngestError(`ingestion of collection "${collection}": expected an array of documents, got ${docs === null ? 'null' : typeof docs}`);
    const out: PreparedDoc[] = [];
    docs.forEach((doc: JsonValue, index) => {
      try {
        out.push(writer.prepare(doc));
      } catch (err) {
        if (err instanceof DocumentError) throw new IngestError(`ingestion of collection "${collection}": document ${index}: ${err.message}`, 400, { cause: err });
        throw err;
      }
    });
    collections.push({ name: collection, docs: out });
  }
  return { collections };
}

function appendPrepared(tx: JournalTx, writers: CollectionWriters, prepared: PreparedIngest, touched: Set<string>): void {
  for (const { name, docs } of prepared.collections) {
    const writer = writers.get(name);
    if (writer === undefined) throw new IngestError(`collection "${name}" was removed while ingesting`);
    for (const d of docs) {
      writer.append(tx, d);
      touched.add(d.journal);
    }
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
 * An HTTP handler for the ingester. Returns false (having written nothing) when the request is not an
 * ingest request, so it can be mounted beside other routes; `notFound` answers those with the 404.
 */
export function createIngestHandler(deps: { store: () => JournalStore; writers: () => CollectionWriters }) {
  const committer = new GroupCommitter(deps.store, deps.writers);
  return async function handleIngest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/ingest' || (req.method !== 'PUT' && req.method !== 'POST') || req.headers['content-type'] !== 'application/json') {
      return false;
    }
    let body: unknown;
    try {
      const text = await readBody(req);
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new IngestError(`request body is not valid JSON: ${(err as Error).message}`);
      }
      const result = await committer.submit(prepareIngest(deps.writers(), body));
      const json = ingestResponseJson(result);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
    } catch (err) {
      const status = err instanceof IngestError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      const text = `${message}\n`;
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    }
    return true;
  };
}

export function notFound(res: ServerResponse): void {
  const text = '404 page not found\n';
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new IngestError(`request body exceeds ${MAX_BODY_BYTES} bytes; split it into several requests`, 413);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
