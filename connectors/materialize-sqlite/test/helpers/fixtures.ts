// Test fixtures: collections with every type mapping, materialization specs, snapshot files, a logger.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import type { CollectionSpec, Inference, Logger, MaterializationBindingSpec, MaterializationSpec, Projection } from '@sluice/runtime';

export const SNAPSHOT_DIR = join(import.meta.dirname, '..', 'snapshots');

/** Compare with test/snapshots/<name>; UPDATE_SNAPSHOTS=1 rewrites. */
export function matchSnapshot(name: string, actual: string): void {
  const file = join(SNAPSHOT_DIR, name);
  if (process.env.UPDATE_SNAPSHOTS === '1') {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  let expected: string;
  try { expected = readFileSync(file, 'utf8'); } catch {
    assert.fail(`snapshot ${file} is missing: run the tests with UPDATE_SNAPSHOTS=1 to write it`);
  }
  assert.equal(actual, expected, `snapshot ${name} differs (UPDATE_SNAPSHOTS=1 rewrites it)`);
}

export function proj(field: string, ptr: string | undefined, inference: Inference, extra: Partial<Projection> = {}): Projection {
  const p: Projection = { field, inference, ...extra };
  if (ptr !== undefined && ptr !== '') p.ptr = ptr;
  return p;
}

const must = (types: string[], more: Partial<Inference> = {}): Inference => ({ types, exists: 'MUST', ...more });
const may = (types: string[], more: Partial<Inference> = {}): Inference => ({ types, exists: 'MAY', ...more });

/** A collection exercising every type mapping, keyed by /id (integer). */
export function allTypesCollection(name = 'acmeCo/all-types'): CollectionSpec {
  return {
    name,
    key: ['/id'],
    projections: [
      proj('_meta/op', '/_meta/op', must(['string'])),
      proj('arr', '/arr', may(['array'])),
      proj('bigint', '/bigint', may(['integer'], { numeric: { hasMaximum: true, maximum: 1e20 } })),
      proj('bin', '/bin', may(['string'], { string: { contentEncoding: 'base64' } })),
      proj('bool', '/bool', must(['boolean'])),
      proj('date', '/date', may(['string'], { string: { format: 'date' } })),
      proj('flow_document', '', must(['object'])),
      proj('flow_published_at', '/_meta/uuid', must(['string'], { string: { format: 'date-time' } })),
      proj('id', '/id', must(['integer']), { isPrimaryKey: true }),
      proj('int', '/int', may(['integer', 'null'])),
      proj('multi', '/multi', may(['integer', 'string'])),
      proj('nullonly', '/nullonly', may(['null'])),
      proj('num', '/num', may(['number'])),
      proj('obj', '/obj', may(['object'])),
      proj('str', '/str', must(['string'])),
      proj('strInt', '/strInt', may(['string'], { string: { format: 'integer' } })),
      proj('strNum', '/strNum', may(['string'], { string: { format: 'number' } })),
      proj('ts', '/ts', may(['string'], { string: { format: 'date-time' } })),
    ],
  };
}

/** A collection with a two-part key (string, integer) and a couple of values. */
export function twoKeyCollection(name = 'acmeCo/events'): CollectionSpec {
  return {
    name,
    key: ['/tenant', '/seq'],
    projections: [
      proj('flow_document', '', must(['object'])),
      proj('flow_published_at', '/_meta/uuid', must(['string'], { string: { format: 'date-time' } })),
      proj('seq', '/seq', must(['integer']), { isPrimaryKey: true }),
      proj('tenant', '/tenant', must(['string']), { isPrimaryKey: true }),
      proj('value', '/value', may(['number'])),
    ],
  };
}

export const ALL_TYPES_VALUES = ['_meta/op', 'arr', 'bigint', 'bin', 'bool', 'date', 'flow_published_at', 'int', 'multi', 'num', 'obj', 'str', 'strInt', 'strNum', 'ts'];

export function binding(table: string, collection: CollectionSpec, selection: { keys: string[]; values: string[]; document?: string }, opts: { delta?: boolean; backfill?: number; fieldConfig?: Record<string, Record<string, string | boolean>> } = {}): MaterializationBindingSpec {
  const b: MaterializationBindingSpec = {
    resourceConfig: opts.delta === true ? { table, delta_updates: true } : { table },
    resourcePath: [table],
    collection,
    fieldSelection: { ...selection, ...(opts.fieldConfig === undefined ? {} : { fieldConfig: opts.fieldConfig }) },
  };
  if (opts.delta === true) b.deltaUpdates = true;
  if (opts.backfill !== undefined) b.backfill = opts.backfill;
  return b;
}

export function materialization(path: string, bindings: MaterializationBindingSpec[], extra: Record<string, unknown> = {}, name = 'acmeCo/mat'): MaterializationSpec {
  return { name, connectorType: 'LOCAL', config: { path, ...extra } as never, bindings };
}

/** A logger that records lines (and prints nothing). */
export function testLogger(): Logger & { lines: { level: string; msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const make = (): Logger & { lines: typeof lines } => ({
    lines,
    debug: (msg, fields) => { lines.push({ level: 'debug', msg, ...(fields ? { fields } : {}) }); },
    info: (msg, fields) => { lines.push({ level: 'info', msg, ...(fields ? { fields } : {}) }); },
    warn: (msg, fields) => { lines.push({ level: 'warn', msg, ...(fields ? { fields } : {}) }); },
    error: (msg, fields) => { lines.push({ level: 'error', msg, ...(fields ? { fields } : {}) }); },
    status: (msg, fields) => { lines.push({ level: 'status', msg, ...(fields ? { fields } : {}) }); },
    child: () => make(),
  });
  return make();
}
