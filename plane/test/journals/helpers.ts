// Collections built in code for data-plane tests (independent of catalog loading).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CollectionSpec, JsonObject, Projection } from '@sluice/runtime';

export function tempDir(t: { after: (fn: () => void) => void }, prefix = 'sluice-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A collection with scalar top-level properties; `partitions` names properties that are logical partitions. */
export function collection(name: string, props: Record<string, JsonObject>, key: string[], options: { partitions?: string[]; required?: string[]; reduce?: JsonObject } = {}): CollectionSpec {
  const partitions = options.partitions ?? [];
  const required = options.required ?? [...new Set([...key.map((k) => k.slice(1)), ...partitions])];
  const schema: JsonObject = { type: 'object', properties: props, required };
  if (options.reduce) schema.reduce = options.reduce;
  const projections: Projection[] = [
    { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } },
    { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { types: ['string'], string: { format: 'date-time' }, exists: 'MUST' } },
  ];
  for (const [field, s] of Object.entries(props)) {
    const t = s.type;
    const types = Array.isArray(t) ? (t as string[]) : typeof t === 'string' ? [t] : [];
    const p: Projection = { field, ptr: `/${field}`, inference: { types, exists: required.includes(field) ? 'MUST' : 'MAY' } };
    if (key.includes(`/${field}`)) p.isPrimaryKey = true;
    if (partitions.includes(field)) p.isPartitionKey = true;
    projections.push(p);
  }
  projections.sort((a, b) => (a.field < b.field ? -1 : 1));
  return { name, writeSchema: schema, key, uuidPtr: '/_meta/uuid', partitionFields: [...partitions].sort(), projections };
}
