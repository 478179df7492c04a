// What a publication of a loaded catalog records: one PublishedSpec per catalog item, with the edges
// between tasks and collections (used by `connected=true` on the status route).
import type { JsonObject } from '@sluice/runtime';
import type { Catalog } from '../catalog/types.ts';
import type { PublishedSpec } from './recorder.ts';

/** The PublishedSpecs of every item of `catalog`, for ControlRecorder.publish. */
export function publishedSpecsOf(catalog: Catalog): PublishedSpec[] {
  const edges = new Map<string, Set<string>>();
  const link = (a: string, b: string) => {
    if (!edges.has(a)) edges.set(a, new Set());
    if (!edges.has(b)) edges.set(b, new Set());
    edges.get(a)!.add(b);
    edges.get(b)!.add(a);
  };
  for (const c of catalog.captures.values()) for (const b of c.bindings) link(c.name, b.target);
  for (const m of catalog.materializations.values()) for (const b of m.bindings) link(m.name, b.source);
  for (const t of catalog.tests.values()) {
    for (const s of t.steps) link(t.name, 'ingest' in s ? s.ingest.collection : s.verify.collection);
  }
  const connected = (name: string) => [...(edges.get(name) ?? [])].sort();
  // `source` (file and pointer) is where a spec was written, not what it is: leave it out, so moving a
  // definition between files is a touch, not an edit.
  const specOf = (def: { source: unknown }): JsonObject => {
    const { source: _source, ...rest } = def;
    return JSON.parse(JSON.stringify(rest)) as JsonObject;
  };
  const out: PublishedSpec[] = [];
  for (const c of catalog.collections.values()) {
    out.push({ catalogName: c.name, specType: 'collection', spec: specOf(c), connected: connected(c.name), disabled: false });
  }
  for (const c of catalog.captures.values()) {
    out.push({ catalogName: c.name, specType: 'capture', spec: specOf(c), connected: connected(c.name), disabled: c.disabled });
  }
  for (const m of catalog.materializations.values()) {
    out.push({ catalogName: m.name, specType: 'materialization', spec: specOf(m), connected: connected(m.name), disabled: m.disabled });
  }
  for (const t of catalog.tests.values()) {
    out.push({ catalogName: t.name, specType: 'test', spec: specOf(t), connected: connected(t.name), disabled: false });
  }
  return out;
}
