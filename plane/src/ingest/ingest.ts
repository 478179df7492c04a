// The ingester: `PUT`/`POST /ingest` with `Content-Type: application/json` and a body
// `{"<collection>": [doc, …], …}`. Every document is validated against its collection's write schema
// before anything is written; then all of them are appended in ONE journal-store transaction, so a
// request is all or nothing. Success: 200 `{"Offsets": {journal: head}, "SQLite": {cluster_id,
// member_id, revision, raft_term}}` (the second member names the store actually used; see
// journals/store.ts for how the four integers are derived). Errors: 400 text/plain, message + "\n".
// Any other method, path or content type: 404 "404 page not found", as the legacy ingester's router did.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SluiceError, type JsonValue } from '@sluice/runtime';
import { headerJson, type CommitResult, type JournalStore } from '../journals/store.ts';
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

/** Validates the whole request, then commits it in one transaction. Throws IngestError on bad input. */
export function ingestDocuments(store: JournalStore, writers: CollectionWriters, body: unknown): CommitResult {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new IngestError('request body must be a JSON object mapping collection names to arrays of documents');
  }
  const prepared: { writerName: string; docs: PreparedDoc[] }[] = [];
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
    prepared.push({ writerName: collection, docs: out });
  }
  return store.commit((tx) => {
    for (const { writerName, docs } of prepared) {
      const writer = writers.get(writerName);
      if (writer === undefined) throw new IngestError(`collection "${writerName}" was removed while ingesting`);
      for (const d of docs) writer.append(tx, d);
    }
  });
}

export function ingestResponseJson(result: CommitResult): string {
  return `{"Offsets":${JSON.stringify(result.offsets)},"${STORE_NAME}":${headerJson(result.header)}}`;
}

/**
 * An HTTP handler for the ingester. Returns false (having written nothing) when the request is not an
 * ingest request, so it can be mounted beside other routes; `notFound` answers those with the 404.
 */
export function createIngestHandler(deps: { store: () => JournalStore; writers: () => CollectionWriters }) {
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
      const result = ingestDocuments(deps.store(), deps.writers(), body);
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
