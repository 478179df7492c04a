// The one place where a document enters a collection (capture tasks, preview fixtures, the ingester):
// validate it against the write schema, route it to its logical-partition journal, and stamp
// `/_meta/uuid` (the collection's uuidPtr) into its TEXT — spliced into the bytes the connector or
// client sent, not cloned and re-serialised — so the journal holds the document's own bytes, integers
// beyond ±2^53 included. prepareText() takes text (and the value already parsed from it, if any);
// prepare() takes a value (serialised once, bigints exactly).
import {
  SluiceError, hasLongDigits, spliceMemberAt, parseDocument, parsePointer, resolvePointer, setPointer, stringifyDocument, withoutBigints,
  type CollectionSpec, type JsonObject, type JsonValue, type UuidProducer,
} from '@sluice/runtime';
import { encodePartitionValue, journalName, type PartitionLabels } from './names.ts';
import type { JournalTx } from './store.ts';
import type { SchemaValidators } from './validator.ts';
import { type BytePlan, type BytesSplice, checkDocumentBytes } from './byte-check.ts';

/** A document failed validation (or had no usable partition value). */
export class DocumentError extends SluiceError {
  readonly collection: string;
  constructor(collection: string, message: string) {
    super('DOCUMENT', message, { fields: { collection } });
    this.collection = collection;
  }
}

export interface PreparedDoc {
  journal: string;
  labels: PartitionLabels;
  json: string;
  /** json's UTF-8 length (no newline), counted once for the commit's progress and the journal write. */
  bytes: number;
}

/**
 * A document's journal line as pieces: text[0, at) + insert + text[at, …) (`at` is -1 when `text` is the
 * whole line), so that a writer of bytes writes them without joining them into a string first.
 */
export interface PreparedParts {
  journal: string;
  labels: PartitionLabels;
  text: string;
  at: number;
  insert: string;
}

/** The line's text (joined). */
export function partsJson(p: PreparedParts): string {
  return p.at < 0 ? p.text : `${p.text.slice(0, p.at)}${p.insert}${p.text.slice(p.at)}`;
}

export class CollectionWriter {
  readonly collection: CollectionSpec;
  readonly #validate: (doc: JsonValue) => string | null;
  readonly #uuids: UuidProducer;
  readonly #partitions: { field: string; ptr: string }[];
  readonly #uuidPtr: string;
  /** `[parent, name]` of a two-token uuidPtr (spliced into the text); else undefined (set on a copy). */
  readonly #uuidSplice: [string, string] | undefined;
  /** The one journal of a collection without partitions (named once, not per document). */
  #unpartitioned: string | undefined;
  /** The write schema for checking bytes (checkBytes), when it and the collection allow it. */
  readonly #plan: BytePlan | undefined;
  /** By BytesSplice.kind: what goes before and after the UUID's 36 characters. */
  readonly #inserts: [Buffer, Buffer][] = [];

  constructor(collection: CollectionSpec, validators: SchemaValidators, uuids: UuidProducer) {
    this.collection = collection;
    this.#validate = validators.get(collection.writeSchema ?? true);
    this.#uuids = uuids;
    this.#uuidPtr = collection.uuidPtr ?? '/_meta/uuid';
    const tokens = parsePointer(this.#uuidPtr);
    this.#uuidSplice = tokens.length === 2 ? [tokens[0]!, tokens[1]!] : undefined;
    this.#partitions = (collection.partitionFields ?? []).map((field) => {
      const p = collection.projections?.find((x) => x.field === field);
      if (p?.ptr === undefined) throw new DocumentError(collection.name, `collection "${collection.name}": partition field "${field}" has no projection`);
      return { field, ptr: p.ptr };
    }).sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
    // Documents are checked as bytes only where nothing is read out of them (no partitions) and the UUID is spliced.
    if (this.#partitions.length === 0 && this.#uuidSplice !== undefined) {
      const [parent, name] = this.#uuidSplice;
      this.#plan = validators.bytePlan(collection.writeSchema ?? true, parent, name);
      // As spliceMemberAt writes them (BytesSplice.kind 0–3).
      const member = `${JSON.stringify(name)}:"`;
      const open = `${JSON.stringify(parent)}:{${member}`;
      this.#inserts = [[`,${open}`, '"}'], [open, '"}'], [`,${member}`, '"'], [member, '"']].map(([a, b]) => [Buffer.from(a!), Buffer.from(b!)]);
    }
  }

  /**
   * Checks a document given as its bytes, `buf[start, end)`, in one pass (byte-check.ts): true when it is
   * certainly valid (then the line is buf[start, s.at) + before + a UUID + after + buf[s.at, end), with
   * [before, after] = insertsOf(s), in journal unpartitionedJournal()). False: not decided; validate and
   * prepare its parsed text (prepareParts) instead — the errors are that path's.
   */
  checkBytes(buf: Buffer, start: number, end: number, s: BytesSplice): boolean {
    return this.#plan !== undefined && checkDocumentBytes(buf, start, end, this.#plan, s);
  }

  /** What goes before and after the UUID for a splice checkBytes found. */
  insertsOf(s: BytesSplice): [Buffer, Buffer] {
    return this.#inserts[s.kind]!;
  }

  /** The journal of a collection without partitions (the only kind checkBytes accepts documents for). */
  unpartitionedJournal(): string {
    return this.#unpartitioned ??= journalName(this.collection.name, {});
  }

  /**
   * Validates a document given as a value and prepares its journal line (serialising it once; bigints
   * are written exactly). Throws a DocumentError whose message is `<where>: <schema error>`; the caller
   * prefixes what identifies the document.
   */
  prepare(doc: JsonValue): PreparedDoc {
    let text: string;
    try {
      text = JSON.stringify(doc);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      return this.prepareText(stringifyDocument(doc), withoutBigints(doc));
    }
    return this.prepareText(text, doc);
  }

  /**
   * Validates a document given as its JSON text (one line: no raw newline) and prepares its journal
   * line: the same text with the UUID spliced in. `parsed` is the text already parsed by the caller
   * (plain JSON.parse is fine: validation and routing read it; integers beyond ±2^53 are read exactly
   * from the text where they route); it is parsed here otherwise. Throws DocumentError as prepare().
   */
  prepareText(text: string, parsed?: JsonValue): PreparedDoc {
    const parts = this.prepareParts(text, parsed);
    const json = partsJson(parts);
    return { journal: parts.journal, labels: parts.labels, json, bytes: Buffer.byteLength(json, 'utf8') };
  }

  /** prepareText, giving the line as pieces (see PreparedParts). */
  prepareParts(text: string, parsed?: JsonValue): PreparedParts {
    let doc: JsonValue;
    if (parsed !== undefined) {
      doc = parsed;
    } else {
      try {
        doc = JSON.parse(text) as JsonValue;
      } catch (err) {
        throw new DocumentError(this.collection.name, `not valid JSON: ${(err as Error).message}`);
      }
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      throw new DocumentError(this.collection.name, `expected a JSON object, got ${doc === null ? 'null' : Array.isArray(doc) ? 'an array' : typeof doc}`);
    }
    const err = this.#validate(doc);
    if (err !== null) throw new DocumentError(this.collection.name, err);
    const exact = this.#partitions.length > 0 && hasLongDigits(text) ? parseDocument(text) : doc;
    const labels = this.#labels(exact);
    // A UUID is hex digits and dashes: quoted as is.
    const id = this.#uuids.next();
    const uuid = `"${id}"`;
    const journal = this.#partitions.length === 0 ? (this.#unpartitioned ??= journalName(this.collection.name, labels)) : journalName(this.collection.name, labels);
    const splice = this.#uuidSplice === undefined ? undefined : spliceMemberAt(text, doc, this.#uuidSplice[0], this.#uuidSplice[1], uuid);
    if (splice !== undefined) return { journal, labels, text, at: splice.at, insert: splice.insert };
    const stamped = structuredClone(hasLongDigits(text) ? parseDocument(text) : doc) as JsonObject;
    setPointer(stamped, this.#uuidPtr, id);
    return { journal, labels, text: stringifyDocument(stamped), at: -1, insert: '' };
  }

  /** The journal a document belongs to (throws DocumentError for a non-scalar partition value). */
  journalOf(doc: JsonValue): string {
    return journalName(this.collection.name, this.#labels(doc));
  }

  #labels(doc: JsonValue): PartitionLabels {
    const labels: PartitionLabels = {};
    for (const { field, ptr } of this.#partitions) {
      const v = resolvePointer(doc, ptr);
      if (v !== undefined && v !== null && typeof v === 'object') {
        throw new DocumentError(this.collection.name, `partition field "${field}" (${ptr}) must be a scalar, got ${JSON.stringify(v)}`);
      }
      labels[field] = encodePartitionValue(v);
    }
    return labels;
  }

  append(tx: JournalTx, prepared: PreparedDoc): number {
    return tx.append(prepared.journal, this.collection.name, prepared.labels, prepared.json, prepared.bytes);
  }
}

/** The writers of every collection of the current catalog, sharing one validator cache and UUID producer. */
export class CollectionWriters {
  readonly validators: SchemaValidators;
  readonly uuids: UuidProducer;
  #writers = new Map<string, CollectionWriter>();

  constructor(validators: SchemaValidators, uuids: UuidProducer) {
    this.validators = validators;
    this.uuids = uuids;
  }

  /** Replaces the set of collections (on each publication). */
  setCollections(collections: Iterable<CollectionSpec>): void {
    const next = new Map<string, CollectionWriter>();
    for (const spec of collections) next.set(spec.name, new CollectionWriter(spec, this.validators, this.uuids));
    this.#writers = next;
  }

  get(collection: string): CollectionWriter | undefined {
    return this.#writers.get(collection);
  }
}
