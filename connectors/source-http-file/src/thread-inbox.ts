// The main side of the connector's two thread pipes (the CSV parser thread, parallel.ts; the Parquet decoder
// thread, parquet-thread.ts): a pump posts input pieces to the thread, the thread acknowledges each piece and
// sends its output messages in order. This keeps what both had written out by hand: the inbox, the count of
// pieces not yet acknowledged (which bounds what is in flight), and the first failure — the thread's, an abort's
// or the pump's — which wakes both the consumer and the pump.
import type { Thread } from '@sluice/runtime/thread';

export class ThreadInbox<Out extends { t: string }> {
  readonly #messages: Out[] = [];
  readonly #ackType: Out['t'];
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: () => void;
  #failure: { error: unknown } | null = null;
  #finished = false;
  #inFlight = 0;
  #wakeConsumer: (() => void) | null = null;
  #wakePump: (() => void) | null = null;

  constructor(thread: Thread<unknown, Out>, ackType: Out['t'], signal?: AbortSignal) {
    this.#ackType = ackType;
    this.#signal = signal;
    thread.onMessage((m) => {
      if (m.t === this.#ackType) {
        this.#inFlight--;
        this.#releasePump();
        return;
      }
      this.#messages.push(m);
      this.#wakeConsumer?.();
      this.#wakeConsumer = null;
    });
    // Its uncaught error, running out of memory (named with its limits) or an exit nobody asked for; nothing
    // when this side terminated it (the end, an error here, the abort, which failed the capture already).
    thread.onEnd((err) => {
      if (err !== undefined && !this.#finished) this.fail(err);
    });
    this.#onAbort = () => {
      this.fail(signal?.reason ?? new Error('aborted'));
      void thread.terminate();
    };
    if (signal?.aborted) this.#onAbort();
    else signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** True once the pipe failed or its consumer finished: the pump stops. */
  get stopped(): boolean {
    return this.#failure !== null || this.#finished;
  }

  get failed(): boolean {
    return this.#failure !== null;
  }

  /** Records the first failure; the consumer throws it once the messages before it are taken. */
  fail(error: unknown): void {
    this.#failure ??= { error };
    this.#wakeConsumer?.();
    this.#wakeConsumer = null;
    this.#releasePump();
  }

  /** The pump sent a piece the thread will acknowledge. */
  sent(): void {
    this.#inFlight++;
  }

  /** Waits while `limit` pieces are unacknowledged; false when the pump should stop instead. */
  async room(limit: number): Promise<boolean> {
    while (this.#inFlight >= limit && !this.stopped) await new Promise<void>((resolve) => { this.#wakePump = resolve; });
    return !this.stopped;
  }

  /** The thread's next message in order; throws the failure when every message before it was taken. */
  async next(): Promise<Out> {
    while (true) {
      const m = this.#messages.shift();
      if (m !== undefined) return m;
      if (this.#failure) throw this.#failure.error;
      await new Promise<void>((resolve) => { this.#wakeConsumer = resolve; });
    }
  }

  /** The consumer is done (returned or threw): the pump stops and the abort listener goes. */
  finish(): void {
    this.#finished = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#releasePump();
  }

  get finished(): boolean {
    return this.#finished;
  }

  #releasePump(): void {
    const p = this.#wakePump;
    this.#wakePump = null;
    p?.();
  }
}
