// Node's native zlib/zstd/brotli context, used synchronously through the handle of a zlib stream object:
// node:zlib's own internals (its *Sync functions use them; present since Node 10). Shared by compression.ts
// (gzip and zstd inline) and parquet-decompress.ts (pages); each falls back when this Node's object lacks them.

/** The native handle's one call: input[inOff, +inLen) into out[outOff, +outLen); what is left of each lands in `state`. */
export interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
}

/** A zlib stream object as these internals show it. */
export type ZlibObject = NodeJS.ReadWriteStream & {
  _handle?: ZlibHandle; _writeState?: Uint32Array; _defaultFlushFlag?: number; _finishFlushFlag?: number;
  errored?: Error | null; destroyed?: boolean; close?: () => void; reset?: () => void;
};

/** What a synchronous caller needs of `z`: state[0] is the output left, state[1] the input left after each call. */
export interface NativeContext { handle: ZlibHandle; state: Uint32Array; flush: number; finish: number }

/** `z`'s native context, or null when this Node's zlib object does not have it (the caller takes its fallback). */
export function nativeContext(z: ZlibObject): NativeContext | null {
  const { _handle: handle, _writeState: state, _defaultFlushFlag: flush, _finishFlushFlag: finish } = z;
  if (typeof handle?.writeSync !== 'function' || !(state instanceof Uint32Array) || typeof flush !== 'number' || typeof finish !== 'number') return null;
  // The native error is reported through the object (`errored` at once, the event later): the event must not go unhandled.
  z.on('error', () => {});
  return { handle, state, flush, finish };
}
