// Flow Ids: 8 bytes as 16 lowercase hex characters. The bits are
// (unix_ms - 1_600_000_000_000) << 23 | seq (13 bits) << 10 | shard (10 bits), so Ids sort by time.
// One generator per control store; it never goes backwards, even across restarts (seeded with the
// largest Id issued so far) or when the clock steps back.

const EPOCH_MS = 1_600_000_000_000n;
const SEQ_BITS = 13n;
const SHARD_BITS = 10n;
const MAX_SEQ = (1n << SEQ_BITS) - 1n;

export class IdGenerator {
  #lastMs = 0n;
  #seq = 0n;
  readonly #shard: bigint;

  constructor(seed?: string, shard = 0) {
    this.#shard = BigInt(shard) & ((1n << SHARD_BITS) - 1n);
    if (seed !== undefined && seed !== '') {
      const v = BigInt('0x' + normalizeId(seed));
      this.#lastMs = v >> (SEQ_BITS + SHARD_BITS);
      this.#seq = (v >> SHARD_BITS) & MAX_SEQ;
    }
  }

  next(now: number = Date.now()): string {
    let ms = BigInt(Math.floor(now)) - EPOCH_MS;
    if (ms < 0n) ms = 0n;
    if (ms <= this.#lastMs) {
      ms = this.#lastMs;
      this.#seq += 1n;
      if (this.#seq > MAX_SEQ) { ms += 1n; this.#seq = 0n; }
    } else {
      this.#seq = 0n;
    }
    this.#lastMs = ms;
    const v = (ms << (SEQ_BITS + SHARD_BITS)) | (this.#seq << SHARD_BITS) | this.#shard;
    return v.toString(16).padStart(16, '0');
  }
}

/** Accepts `aa:bb:…` as well as plain hex; returns 16 lowercase hex characters. */
export function normalizeId(id: string): string {
  const hex = id.replace(/:/g, '').toLowerCase();
  if (!/^[0-9a-f]{1,16}$/.test(hex)) throw new Error(`invalid Id "${id}": expected 16 hex characters`);
  return hex.padStart(16, '0');
}

/** The time encoded in an Id. */
export function idTime(id: string): Date {
  const v = BigInt('0x' + normalizeId(id));
  return new Date(Number((v >> (SEQ_BITS + SHARD_BITS)) + EPOCH_MS));
}
