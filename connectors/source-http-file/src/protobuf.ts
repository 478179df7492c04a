// Protobuf: the whole input is one message of the configured type (reference §4.8), so the core buffers
// the bytes (bounded) and decodes at the end. Output follows the proto3 JSON mapping: lowerCamelCase
// keys, enum names, defaults omitted, 64-bit integers as strings, bytes as base64.
import protobuf from 'protobufjs';
import type { JsonObject } from '@sluice/runtime';
import { ConfigError, DecodeError } from './errors.ts';

/** Upper bound on one protobuf message. */
export const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

function allTypes(ns: protobuf.NamespaceBase, out: protobuf.Type[] = []): protobuf.Type[] {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) out.push(nested);
    if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) allTypes(nested as protobuf.NamespaceBase, out);
  }
  return out;
}

/** Compiles the .proto source and finds the message by package-relative or full name. */
export function compileMessageType(protoFile: string, message: string): protobuf.Type {
  let root: protobuf.Root;
  try {
    root = protobuf.parse(protoFile, { keepCase: false }).root;
  } catch (err) {
    throw new ConfigError(`the protobuf .proto file does not compile: ${(err as Error).message}`, { cause: err });
  }
  const wanted = message.replace(/^\./, '');
  const types = allTypes(root);
  const found = types.find((t) => t.fullName.replace(/^\./, '') === wanted)
    ?? types.find((t) => t.name === wanted)
    ?? types.find((t) => t.fullName.endsWith(`.${wanted}`));
  if (!found) throw new ConfigError(`no such message '${message}' found in proto file (messages: ${types.map((t) => t.fullName.replace(/^\./, '')).join(', ') || 'none'})`);
  try {
    found.resolveAll();
  } catch (err) {
    throw new ConfigError(`the protobuf message '${message}' cannot be resolved: ${(err as Error).message}`, { cause: err });
  }
  return found;
}

export class ProtobufRecordParser {
  readonly #type: protobuf.Type;
  #chunks: Uint8Array[] = [];
  #length = 0;

  constructor(type: protobuf.Type) {
    this.#type = type;
  }

  push(chunk: Uint8Array): JsonObject[] {
    if (chunk.length === 0) return [];
    this.#length += chunk.length;
    if (this.#length > MAX_MESSAGE_BYTES) throw new DecodeError(`protobuf message is larger than ${MAX_MESSAGE_BYTES} bytes: the whole file is decoded as one message`, { byteOffset: MAX_MESSAGE_BYTES });
    this.#chunks.push(chunk);
    return [];
  }

  end(): JsonObject[] {
    if (this.#length === 0) return [];
    const bytes = Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#length = 0;
    let msg: protobuf.Message;
    try {
      msg = this.#type.decode(bytes);
    } catch (err) {
      const at = (err as { offset?: number }).offset;
      throw new DecodeError(`failed to decode the file as protobuf message '${this.#type.name}': ${(err as Error).message}`, { byteOffset: typeof at === 'number' ? at : null }, { cause: err });
    }
    const obj = this.#type.toObject(msg, { longs: String, enums: String, bytes: String, defaults: false, json: true }) as JsonObject;
    return [obj];
  }
}
