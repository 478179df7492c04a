// An incremental scanner for ingest bodies `{"<collection>": [doc, …], …}`: bytes in, in chunks of any
// size, one event per collection name and per document out, each document as its own bytes. It never
// builds the whole body as a value, so a large request is handled in bounded steps (the caller yields
// between chunks) and memory holds one document at a time, not the parsed body. It only follows the
// structure (strings, brackets, depth); a document's own syntax is checked when the caller parses its
// bytes. Depth is counted here, before any recursive parser sees the document, so a document nested
// deeper than the limit is a clear 400 instead of a stack overflow.
import { SluiceError } from '@sluice/runtime';

/** A bad request (or one over a limit); `status` is the HTTP status it is answered with. */
export class IngestError extends SluiceError {
  readonly status: number;
  constructor(message: string, status = 400, options: { cause?: unknown } = {}) {
    super('INGEST', message, options);
    this.status = status;
  }
}

export interface ScannedDocument {
  collection: string;
  /** Index of the document within its collection's array. */
  index: number;
  bytes: Uint8Array;
  /**
   * False when the document has no number that could parse to ±Infinity (no exponent, no run of 300+
   * digits), so the caller can skip looking for one.
   */
  mayHaveHugeNumber: boolean;
}

export interface ScanSink {
  /** A collection name was read (before any of its documents); throw to refuse it. */
  collection(name: string): void;
  document(doc: ScannedDocument): void;
}

export interface ScanLimits {
  /** Deepest nesting of objects and arrays inside one document (the document itself is level 1). */
  maxDepth: number;
}

// Scanner states (numbers: the codebase's erasable-syntax rule has no enums).
const S = { Top: 0, KeyOrClose: 1, Key: 2, KeyString: 3, Colon: 4, Array: 5, DocOrClose: 6, Doc: 7, InDoc: 8, AfterDoc: 9, AfterArray: 10, End: 11 } as const;
type State = (typeof S)[keyof typeof S];

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function typeOfValueStart(b: number): string | null {
  if (b === 0x7b) return 'object';
  if (b === 0x5b) return 'array';
  if (b === QUOTE) return 'string';
  if (b === 0x6e) return 'null';
  if (b === 0x74 || b === 0x66) return 'boolean';
  if (b === 0x2d || (b >= 0x30 && b <= 0x39)) return 'number';
  return null;
}

/** Decodes UTF-8 strictly: an invalid byte is an error, never silently replaced. */
export function decodeUtf8(bytes: Uint8Array, where: string): string {
  try {
    return utf8.decode(bytes);
  } catch (err) {
    throw new IngestError(`${where} is not valid UTF-8; send the body encoded as UTF-8`, 400, { cause: err });
  }
}

export class IngestBodyScanner {
  readonly #sink: ScanSink;
  readonly #maxDepth: number;
  #state: State = S.Top;
  /** Bytes consumed before the current chunk (for error positions). */
  #offset = 0;
  #collection = '';
  #index = 0;
  // The collection name being read, and the document being read, when they span chunks.
  #parts: Uint8Array[] = [];
  #inString = false;
  #escape = false;
  #depth = 0;
  #prevDigit = false;
  #digits = 0;
  #huge = false;

  constructor(sink: ScanSink, limits: ScanLimits) {
    this.#sink = sink;
    this.#maxDepth = limits.maxDepth;
  }

  #syntax(at: number, b: number, expected: string): IngestError {
    const got = b === -1 ? 'the end of the body' : `'${String.fromCharCode(b)}'`;
    return new IngestError(`request body is not valid JSON: expected ${expected} at byte ${at}, got ${got}`);
  }

  #where(): string {
    return `ingestion of collection ${JSON.stringify(this.#collection)}: document ${this.#index}`;
  }

  /** Scans one chunk; calls the sink for each collection name and complete document in it. */
  push(chunk: Uint8Array): void {
    const n = chunk.length;
    let i = 0;
    let start = 0; // where the current key or document began in this chunk
    while (i < n) {
      switch (this.#state) {
        case S.Top: case S.KeyOrClose: case S.Key: case S.Colon: case S.Array: case S.DocOrClose: case S.Doc:
        case S.AfterDoc: case S.AfterArray: case S.End: {
          const b = chunk[i]!;
          if (isSpace(b)) { i++; continue; }
          const at = this.#offset + i;
          switch (this.#state) {
            case S.Top:
              if (b !== 0x7b) throw new IngestError('request body must be a JSON object mapping collection names to arrays of documents');
              this.#state = S.KeyOrClose;
              break;
            case S.KeyOrClose: case S.Key:
              if (b === 0x7d && this.#state === S.KeyOrClose) { this.#state = S.End; break; }
              if (b !== QUOTE) throw this.#syntax(at, b, this.#state === S.Key ? 'a collection name' : "a collection name or '}'");
              this.#state = S.KeyString;
              this.#escape = false;
              this.#parts = [];
              start = i;
              break;
            case S.Colon:
              if (b !== 0x3a) throw this.#syntax(at, b, "':'");
              this.#state = S.Array;
              break;
            case S.Array:
              if (b !== 0x5b) {
                const type = typeOfValueStart(b);
                if (type === null) throw this.#syntax(at, b, 'an array of documents');
                throw new IngestError(`ingestion of collection ${JSON.stringify(this.#collection)}: expected an array of documents, got ${type}`);
              }
              this.#state = S.DocOrClose;
              this.#index = 0;
              break;
            case S.DocOrClose: case S.Doc:
              if (b === 0x5d && this.#state === S.DocOrClose) { this.#state = S.AfterArray; break; }
              if (b !== 0x7b) {
                const type = typeOfValueStart(b);
                if (type === null) throw this.#syntax(at, b, 'a document');
                throw new IngestError(`${this.#where()}: expected a JSON object, got ${type}`);
              }
              this.#state = S.InDoc;
              this.#parts = [];
              this.#depth = 0;
              this.#inString = false;
              this.#escape = false;
              this.#prevDigit = false;
              this.#digits = 0;
              this.#huge = false;
              start = i;
              continue; // InDoc reads the '{' itself
            case S.AfterDoc:
              if (b === 0x2c) this.#state = S.Doc;
              else if (b === 0x5d) this.#state = S.AfterArray;
              else throw this.#syntax(at, b, "',' or ']' after a document");
              break;
            case S.AfterArray:
              if (b === 0x2c) this.#state = S.Key;
              else if (b === 0x7d) this.#state = S.End;
              else throw this.#syntax(at, b, "',' or '}' after an array of documents");
              break;
            case S.End:
              throw this.#syntax(at, b, 'the end of the body after the closing \'}\'');
          }
          i++;
          continue;
        }
        case S.KeyString: {
          // `start` is the opening quote when it is in this chunk (else 0); parts hold earlier chunks' bytes.
          let done = -1;
          for (let j = i; j < n; j++) {
            const b = chunk[j]!;
            if (this.#escape) { this.#escape = false; continue; }
            if (b === BACKSLASH) this.#escape = true;
            else if (b === QUOTE) { done = j; break; }
          }
          if (done === -1) { i = n; continue; }
          this.#parts.push(chunk.subarray(start, done + 1));
          const raw = decodeUtf8(Buffer.concat(this.#parts), 'a collection name');
          this.#parts = [];
          let name: string;
          try {
            name = JSON.parse(raw) as string;
          } catch (err) {
            throw new IngestError(`request body is not valid JSON: collection name ${raw}: ${(err as Error).message}`, 400, { cause: err });
          }
          this.#collection = name;
          this.#sink.collection(name);
          this.#state = S.Colon;
          i = done + 1;
          continue;
        }
        case S.InDoc: {
          const max = this.#maxDepth;
          let inString = this.#inString;
          let escape = this.#escape;
          let depth = this.#depth;
          let prevDigit = this.#prevDigit;
          let digits = this.#digits;
          let huge = this.#huge;
          let done = -1;
          let j = i;
          for (; j < n; j++) {
            const b = chunk[j]!;
            if (inString) {
              if (escape) escape = false;
              else if (b === BACKSLASH) escape = true;
              else if (b === QUOTE) inString = false;
              continue;
            }
            if (b >= 0x30 && b <= 0x39) {
              if (++digits >= 300) huge = true;
              prevDigit = true;
              continue;
            }
            if ((b === 0x65 || b === 0x45) && prevDigit) huge = true;
            prevDigit = false;
            digits = 0;
            if (b === QUOTE) inString = true;
            else if (b === 0x7b || b === 0x5b) {
              if (++depth > max) throw new IngestError(`${this.#where()}: nested deeper than ${max} levels of objects and arrays (the limit is ${max})`);
            } else if (b === 0x7d || b === 0x5d) {
              if (--depth === 0) { done = j; break; }
            }
          }
          this.#inString = inString;
          this.#escape = escape;
          this.#depth = depth;
          this.#prevDigit = prevDigit;
          this.#digits = digits;
          this.#huge = huge;
          if (done === -1) { i = n; continue; }
          let bytes: Uint8Array;
          if (this.#parts.length === 0) bytes = chunk.subarray(start, done + 1);
          else {
            this.#parts.push(chunk.subarray(start, done + 1));
            bytes = Buffer.concat(this.#parts);
            this.#parts = [];
          }
          this.#sink.document({ collection: this.#collection, index: this.#index, bytes, mayHaveHugeNumber: huge });
          this.#index++;
          this.#state = S.AfterDoc;
          i = done + 1;
          continue;
        }
      }
    }
    // A name or document continuing into the next chunk: keep its bytes from this one.
    if (this.#state === S.KeyString || this.#state === S.InDoc) this.#parts.push(chunk.subarray(start));
    this.#offset += n;
  }

  /** The body ended: throws unless it was one complete object. */
  end(): void {
    if (this.#state === S.End) return;
    if (this.#state === S.Top) throw new IngestError('request body is empty; send a JSON object mapping collection names to arrays of documents');
    if (this.#state === S.InDoc) throw new IngestError(`request body is not valid JSON: it ends inside ${this.#where()}`);
    throw this.#syntax(this.#offset, -1, 'more JSON');
  }
}
