// Turns documents of one collection into journal appends: validate against the write schema, stamp
// `/_meta/uuid` (the collection's uuidPtr), route to the logical-partition journal, serialize.
// Used by the ingester and by capture tasks, so both write exactly the same bytes.
import { SluiceError, type CollectionSpec, type JsonObject, type JsonValue } from '@sluice/runtime';
import { encodePartitionValue, journalName, type PartitionLabels } from './names.ts';
import { resolvePointer, setPointer } from './pointer.ts';
import type { JournalTx } from './store.ts';
import type { UuidProducer } from './uuid.ts';
import type { SchemaValidators } from './validator.ts';

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
}

export class CollectionWriter {
  readonly collection: CollectionSpec;
  readonly #validate: (doc: JsonValue) => string | null;
  readonly #uuids: UuidProducer;
  readonly #partitions: { field: string; ptr: string }[];
  readonly #uuidPtr: string;

  constructor(collection: CollectionSpec, validators: SchemaValidators, uuids: UuidProducer) {
    this.collection = collection;
    this.#validate = validators.get(collection.writeSchema ?? true);
    this.#uuids = uuids;
    this.#uuidPtr = collection.uuidPtr ?? '/_meta/uuid';
    this.#partitions = (collection.partitionFields ?? []).map((field) => {
      const p = collection.projections?.find((x) => x.field === field);
      if (p?.ptr === undefined) throw new DocumentError(collection.name, `collection "${collection.name}": partition field "${field}" has no projection`);
      return { field, ptr: p.ptr };
    }).sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  }

  /**
   * Validates `doc` and prepares its journal line. Throws a DocumentError whose message is
   * `<where>: <schema error>`; the caller prefixes what identifies the document.
   */
  prepare(doc: JsonValue): PreparedDoc {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      throw new DocumentError(this.collection.name, `expected a JSON object, got ${doc === null ? 'null' : Array.isArray(doc) ? 'an array' : typeof doc}`);
    }
    const err = this.#validate(doc);
    if (err !== null) throw new DocumentError(this.collection.name, err);
    const labels = this.#labels(doc);
    const stamped = structuredClone(doc) as JsonObject;
    setPointer(stamped, this.#uuidPtr, this.#uuids.next());
    return { journal: journalName(this.collection.name, labels), labels, json: JSON.stringify(stamped) };
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
    return tx.append(prepared.journal, this.collection.name, prepared.labels, prepared.json);
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
