// Discover for Parquet: the document schema written from the file's own schema (no sampling), with only
// formats Flow knows (date-time, date, uuid, number). It describes exactly what parquet-json.ts emits.
import type { JsonObject, JsonValue } from '@sluice/runtime';
import type { SchemaElement, SchemaTree } from 'hyparquet';

const META: JsonObject = {
  type: 'object',
  properties: {
    file: { type: 'string', description: 'The key of the source file, added automatically by Flow' },
    offset: { type: 'integer', minimum: 0, description: 'The offset of the record within the source file, added automatically by Flow' },
  },
  required: ['file', 'offset'],
};

function withNull(s: JsonObject, nullable: boolean): JsonObject {
  if (!nullable) return s;
  const t = s['type'];
  if (t === undefined) return s;
  const types = Array.isArray(t) ? [...(t as string[])] : [t as string];
  if (!types.includes('null')) types.push('null');
  return { ...s, type: types };
}

function leafSchema(el: SchemaElement): JsonObject {
  const lt = el.logical_type;
  const ct = el.converted_type;
  if (lt?.type === 'DECIMAL' || ct === 'DECIMAL') {
    return { type: ['number', 'string'], format: 'number', description: `Parquet DECIMAL(${lt?.type === 'DECIMAL' ? lt.precision : el.precision ?? '?'}, ${lt?.type === 'DECIMAL' ? lt.scale : el.scale ?? 0}): a number when a double holds it exactly, else a string of every digit` };
  }
  if (lt?.type === 'TIMESTAMP' || ct === 'TIMESTAMP_MILLIS' || ct === 'TIMESTAMP_MICROS' || el.type === 'INT96') return { type: 'string', format: 'date-time' };
  if (lt?.type === 'DATE' || ct === 'DATE') return { type: 'string', format: 'date' };
  if (lt?.type === 'TIME' || ct === 'TIME_MILLIS' || ct === 'TIME_MICROS') return { type: 'string', description: 'Parquet TIME: time of day, HH:MM:SS.fraction' };
  if (lt?.type === 'UUID') return { type: 'string', format: 'uuid' };
  if (lt?.type === 'STRING' || ct === 'UTF8' || lt?.type === 'ENUM' || ct === 'ENUM' || lt?.type === 'JSON' || ct === 'JSON') return { type: 'string' };
  switch (el.type) {
    case 'BOOLEAN': return { type: 'boolean' };
    case 'INT32':
    case 'INT64': return { type: 'integer' };
    // NaN and infinities are written as null.
    case 'FLOAT':
    case 'DOUBLE': return { type: ['number', 'null'] };
    default:
      if (lt?.type === 'FLOAT16') return { type: ['number', 'null'] };
      return { type: 'string', contentEncoding: 'base64' };
  }
}

function nodeSchema(node: SchemaTree, inRepeated: boolean): JsonObject {
  const el = node.element;
  const first = node.children[0];
  let s: JsonObject;
  if (el.converted_type === 'LIST' && node.children.length === 1 && first && first.children.length <= 1 && first.element.repetition_type === 'REPEATED') {
    const element = first.children.length === 1 ? (first.children[0] as SchemaTree) : first;
    s = { type: 'array', items: nodeSchema(element, true) };
  } else if (el.converted_type === 'MAP' && node.children.length === 1 && first && first.children.length === 2 && first.element.repetition_type === 'REPEATED') {
    s = { type: 'object', additionalProperties: nodeSchema(first.children[1] as SchemaTree, true) };
  } else if (node.children.length) {
    const properties: Record<string, JsonValue> = {};
    const required: string[] = [];
    for (const c of node.children) {
      properties[c.element.name] = nodeSchema(c, false);
      required.push(c.element.name);
    }
    s = { type: 'object', properties, required };
  } else s = leafSchema(el);
  if (el.repetition_type === 'REPEATED' && !inRepeated) return { type: 'array', items: s };
  return withNull(s, el.repetition_type === 'OPTIONAL' || (inRepeated && el.repetition_type !== 'REQUIRED'));
}

/** The collection schema for a Parquet file of this schema: every column is present (null when missing). */
export function parquetDocumentSchema(root: SchemaTree): JsonObject {
  const properties: Record<string, JsonValue> = { _meta: META };
  const required = ['_meta'];
  for (const c of root.children) {
    properties[c.element.name] = nodeSchema(c, false);
    required.push(c.element.name);
  }
  return { type: 'object', 'x-infer-schema': true, required, properties };
}
