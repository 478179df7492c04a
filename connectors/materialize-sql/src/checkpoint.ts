// The runtime checkpoint as upstream's SQL materializations store it: `flow_checkpoints_v1.checkpoint` holds
// the base64 (standard alphabet, padded) of the protobuf `consumer.Checkpoint` (gazette
// consumer/protocol/protocol.proto). The JSON codec hands us that message as proto3 JSON, so we encode it
// with protobufjs from the schema below, and decode stored rows back to the same JSON. A fresh row holds the
// "explicit zero" checkpoint (a lone varint field 536870911 = 1), which decodes to an empty message: the
// runtime then starts from the beginning instead of its recovery log, exactly as with upstream's rows.
// Rows written by earlier Sluice versions hold the checkpoint as JSON text (they start with `{`) and are read
// as they are; an empty text (Sluice's earlier fresh row) means "nothing committed yet", as it always did.
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';
import type { JsonObject, JsonValue, RuntimeCheckpoint } from '@sluice/runtime';
import { SqlError } from './errors.ts';

// consumer.Checkpoint and the messages it nests, restated from the gazette schema (field numbers and wire
// types are the contract; gogoproto options only change the Go types).
const CHECKPOINT_PROTO = `
syntax = "proto3";
package consumer;
message Checkpoint {
  message Source {
    int64 read_through = 1;
    message ProducerEntry {
      bytes id = 1;
      ProducerState state = 2;
    }
    repeated ProducerEntry producers = 2;
  }
  message ProducerState {
    fixed64 last_ack = 1;
    int64 begin = 2;
  }
  map<string, Source> sources = 1;
  map<string, bytes> ack_intents = 2;
}
`;

let checkpointType: Protobuf.Type | undefined;
function type(): Protobuf.Type {
  if (checkpointType !== undefined) return checkpointType;
  // protobufjs (45 CommonJS modules, ~25 ms) loads on the first checkpoint encoded or decoded, not with the
  // connector: its spec, validate and apply never need it (issue 16, the pipeline's start-up).
  const protobuf = createRequire(import.meta.url)('protobufjs') as typeof Protobuf;
  // 64-bit fields must not pass through JS numbers: protobufjs keeps them exact only with long.js loaded.
  if (protobuf.util.Long === undefined || protobuf.util.Long === null) throw new SqlError('protobufjs was loaded without long.js; 64-bit checkpoint offsets would lose precision');
  checkpointType = protobuf.parse(CHECKPOINT_PROTO, { keepCase: false }).root.lookupType('consumer.Checkpoint');
  return checkpointType;
}

/** The explicit zero checkpoint upstream writes into a fresh row, as stored (base64). */
export const EXPLICIT_ZERO_CHECKPOINT = '+P///w8B';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

class CheckpointShapeError extends SqlError {
  constructor(where: string, what: string) {
    super(`the runtime checkpoint cannot be stored: ${where} ${what} (a consumer.Checkpoint has sources{readThrough, producers[{id, state{lastAck, begin}}]} and ackIntents only)`, { code: 'CHECKPOINT' });
  }
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function object(v: JsonValue | undefined, where: string): JsonObject {
  if (!isObject(v)) throw new CheckpointShapeError(where, `must be an object, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  return v;
}

function fields(v: JsonValue | undefined, where: string, allowed: readonly string[]): JsonObject {
  const o = object(v, where);
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new CheckpointShapeError(where, `has the unknown field '${k}'`);
  return o;
}

/** A 64-bit integer as proto3 JSON gives it (decimal string, or a number that is an exact integer) → {low, high}. */
function int64(v: JsonValue | undefined, where: string, unsigned: boolean): { low: number; high: number; unsigned: boolean } | undefined {
  if (v === undefined || v === null) return undefined;
  let n: bigint;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) n = BigInt(v);
  else if (typeof v === 'number' && Number.isSafeInteger(v)) n = BigInt(v);
  else throw new CheckpointShapeError(where, `must be a ${unsigned ? 'u' : ''}int64 (a decimal string), got ${JSON.stringify(v)}`);
  if (unsigned ? n < 0n || n > UINT64_MAX : n < INT64_MIN || n > INT64_MAX) throw new CheckpointShapeError(where, `is out of the ${unsigned ? 'u' : ''}int64 range: ${v}`);
  if (n === 0n) return undefined; // proto3 writes no default values (as Go's marshaller does)
  const bits = BigInt.asUintN(64, n);
  return { low: Number(bits & 0xffffffffn) | 0, high: Number(bits >> 32n) | 0, unsigned };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** proto3 JSON bytes: standard or URL-safe base64, padded or not. */
function bytes(v: JsonValue | undefined, where: string): Uint8Array | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new CheckpointShapeError(where, `must be base64 bytes, got ${JSON.stringify(v)}`);
  if (BASE64.test(v)) return Buffer.from(v, 'base64');
  if (BASE64URL.test(v)) return Buffer.from(v, 'base64url');
  throw new CheckpointShapeError(where, `is not base64: ${JSON.stringify(v)}`);
}

/** The runtime checkpoint (proto3 JSON of consumer.Checkpoint) → protobuf bytes. Unknown fields are refused: nothing may be lost. */
export function encodeCheckpoint(checkpoint: RuntimeCheckpoint): Uint8Array {
  const cp = fields(checkpoint, 'the checkpoint', ['sources', 'ackIntents']);
  const sources: Record<string, unknown> = {};
  if (cp.sources !== undefined && cp.sources !== null) {
    for (const [journal, raw] of Object.entries(object(cp.sources, 'sources'))) {
      const at = `sources[${JSON.stringify(journal)}]`;
      const s = fields(raw, at, ['readThrough', 'producers']);
      const source: Record<string, unknown> = {};
      const readThrough = int64(s.readThrough, `${at}.readThrough`, false);
      if (readThrough !== undefined) source.readThrough = readThrough;
      if (s.producers !== undefined && s.producers !== null) {
        if (!Array.isArray(s.producers)) throw new CheckpointShapeError(`${at}.producers`, 'must be an array');
        source.producers = s.producers.map((p, i) => {
          const pat = `${at}.producers[${i}]`;
          const entry = fields(p, pat, ['id', 'state']);
          const out: Record<string, unknown> = {};
          const id = bytes(entry.id, `${pat}.id`);
          if (id !== undefined) out.id = id;
          // The Go side always writes the state (non-nullable), zero or not.
          const st = entry.state === undefined || entry.state === null ? {} : fields(entry.state, `${pat}.state`, ['lastAck', 'begin']);
          const state: Record<string, unknown> = {};
          const lastAck = int64(st.lastAck, `${pat}.state.lastAck`, true);
          const begin = int64(st.begin, `${pat}.state.begin`, false);
          if (lastAck !== undefined) state.lastAck = lastAck;
          if (begin !== undefined) state.begin = begin;
          out.state = state;
          return out;
        });
      }
      sources[journal] = source;
    }
  }
  const ackIntents: Record<string, Uint8Array> = {};
  if (cp.ackIntents !== undefined && cp.ackIntents !== null) {
    for (const [journal, raw] of Object.entries(object(cp.ackIntents, 'ackIntents'))) {
      ackIntents[journal] = bytes(raw, `ackIntents[${JSON.stringify(journal)}]`) ?? new Uint8Array(0);
    }
  }
  const t = type();
  return t.encode(t.fromObject({ sources, ackIntents })).finish();
}

/** Protobuf bytes → the proto3 JSON the runtime expects (64-bit as strings, bytes as base64, defaults omitted). */
export function decodeCheckpoint(data: Uint8Array): RuntimeCheckpoint {
  const t = type();
  // Without `defaults`/`arrays`/`objects`, protobufjs lists only what the bytes carry: proto3 JSON omits the rest.
  return t.toObject(t.decode(data), { longs: String, bytes: String }) as JsonObject;
}

/** The text stored in the checkpoints table for a runtime checkpoint. */
export function checkpointToText(checkpoint: RuntimeCheckpoint): string {
  return Buffer.from(encodeCheckpoint(checkpoint)).toString('base64');
}

/**
 * Read a stored checkpoint: base64 protobuf (upstream's format and ours), JSON text (Sluice's earlier rows), or
 * empty/NULL (Sluice's earlier fresh row: nothing committed). Returns undefined for "nothing committed".
 */
export function checkpointFromText(text: string | null | undefined, table: string): RuntimeCheckpoint | undefined {
  if (text === null || text === undefined) return undefined;
  const s = text.trim();
  if (s === '') return undefined;
  if (s.startsWith('{')) {
    let v: unknown;
    try {
      v = JSON.parse(s);
    } catch (cause) {
      throw new SqlError(`${table} holds a checkpoint that starts like JSON but does not parse; was it edited by hand?`, { cause });
    }
    if (!isObject(v as JsonValue)) throw new SqlError(`${table} holds a JSON checkpoint that is not an object`);
    return v as RuntimeCheckpoint;
  }
  if (!BASE64.test(s)) throw new SqlError(`${table} holds a checkpoint that is neither base64 protobuf nor JSON (${s.length} characters); was it written by another tool?`);
  try {
    return decodeCheckpoint(Buffer.from(s, 'base64'));
  } catch (cause) {
    throw new SqlError(`${table} holds a checkpoint whose bytes are not a consumer.Checkpoint: ${(cause as Error).message}`, { cause });
  }
}
