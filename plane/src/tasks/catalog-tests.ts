// Catalog `tests`: each runs against its own temporary journal store, so test documents never reach
// live collections. `ingest` steps go through the ingester's validation and commit; `verify` reads the
// collection back, reduces by key with the collection's schema, orders by key, and checks that each
// expected document is contained in the actual one (extra properties, such as _meta, are allowed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { escapePointerToken, resolvePointer } from '@sluice/runtime';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { combineByKey } from '../catalog/reduce.ts';
import type { Catalog, TestDef } from '../catalog/types.ts';
import { ingestDocuments } from '../ingest/ingest.ts';
import { JournalStore } from '../journals/store.ts';
import { UuidProducer } from '@sluice/runtime';
import { SchemaValidators } from '../journals/validator.ts';
import { CollectionWriters } from '../journals/writer.ts';

export interface TestOutcome { name: string; passing: boolean; error?: string }

function compareValues(a: JsonValue | undefined, b: JsonValue | undefined): number {
  const rank = (v: JsonValue | undefined) => (v === undefined || v === null ? 0 : typeof v === 'boolean' ? 1 : typeof v === 'number' ? 2 : typeof v === 'string' ? 3 : 4);
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const sa = typeof a === 'string' ? a : JSON.stringify(a ?? null);
  const sb = typeof b === 'string' ? b : JSON.stringify(b ?? null);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** Where `actual` fails to contain `expected`, as a JSON pointer; undefined when it does. */
export function mismatchAt(expected: JsonValue, actual: JsonValue | undefined, at = ''): string | undefined {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return at || '/';
    for (const [k, v] of Object.entries(expected)) {
      const m = mismatchAt(v, (actual as JsonObject)[k], `${at}/${escapePointerToken(k)}`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return at || '/';
    for (let i = 0; i < expected.length; i++) {
      const m = mismatchAt(expected[i]!, actual[i], `${at}/${i}`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  return JSON.stringify(expected) === JSON.stringify(actual) ? undefined : at || '/';
}

export function runCatalogTest(catalog: Catalog, def: TestDef): TestOutcome {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-'));
  const store = JournalStore.open(dir, { synchronous: 'NORMAL' });
  try {
    const writers = new CollectionWriters(new SchemaValidators(), new UuidProducer());
    writers.setCollections([...catalog.collections.values()].map((c) => c.spec));
    for (const [i, step] of def.steps.entries()) {
      if ('ingest' in step) {
        try {
          ingestDocuments(store, writers, { [step.ingest.collection]: step.ingest.documents });
        } catch (err) {
          return { name: def.name, passing: false, error: `step ${i} (ingest): ${(err as Error).message}` };
        }
        continue;
      }
      const { collection, documents } = step.verify;
      const coll = catalog.collections.get(collection);
      if (coll === undefined) return { name: def.name, passing: false, error: `step ${i} (verify): collection "${collection}" is not defined in the catalog` };
      const docs: JsonObject[] = [];
      for (const j of store.journals(collection)) {
        for (let offset = 0; ;) {
          const batch = store.read(j.name, offset, 10_000);
          if (batch.length === 0) break;
          for (const d of batch) docs.push(JSON.parse(d.json) as JsonObject);
          offset = batch[batch.length - 1]!.end;
        }
      }
      const key = coll.spec.key ?? [];
      const actual = combineByKey(coll.spec.readSchema ?? coll.spec.writeSchema ?? true, key, docs);
      actual.sort((a, b) => {
        for (const ptr of key) {
          const c = compareValues(resolvePointer(a, ptr), resolvePointer(b, ptr));
          if (c !== 0) return c;
        }
        return 0;
      });
      const where = `step ${i} (verify ${collection})`;
      for (const [n, expected] of documents.entries()) {
        const got = actual[n];
        if (got === undefined) return { name: def.name, passing: false, error: `${where}: expected ${documents.length} document(s) but the collection has ${actual.length}; document ${n} ${JSON.stringify(expected)} is missing` };
        const at = mismatchAt(expected, got);
        if (at !== undefined) {
          const keyOf = JSON.stringify(key.map((p) => resolvePointer(got, p) ?? null));
          return { name: def.name, passing: false, error: `${where}: document ${n} (key ${keyOf}) differs at ${at}: expected ${JSON.stringify(resolvePointer(expected, at === '/' ? '' : at) ?? null)}, found ${JSON.stringify(resolvePointer(got, at === '/' ? '' : at) ?? null)}` };
        }
      }
      if (actual.length > documents.length) {
        return { name: def.name, passing: false, error: `${where}: expected ${documents.length} document(s) but the collection has ${actual.length}; unexpected ${JSON.stringify(actual[documents.length])}` };
      }
    }
    return { name: def.name, passing: true };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
