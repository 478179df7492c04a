// FoundationDB tuple codec for keyPacked / valuesPacked (flow-protocol.md §3.6).
// Implementation: see the runtime issue; this file fixes the value type others code against.

/** A UUID element (type code 0x30), 16 bytes. */
export interface TupleUuid { uuid: Uint8Array }

/**
 * One decoded tuple element. Integers that fit in a JS safe integer are numbers, larger ones BigInt;
 * bytes (code 0x01, which Flow uses for object/array fields holding their JSON text) are Uint8Array.
 */
export type TupleValue = null | boolean | number | bigint | string | Uint8Array | TupleUuid | TupleValue[];
