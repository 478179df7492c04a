// A bounded single-consumer async queue: the runtime pushes requests, a connector iterates them.
// `push` resolves when there is room again, so a slow consumer slows the reader (backpressure).

const RESOLVED: Promise<void> = Promise.resolve();

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly capacity: number;
  private ended = false;
  private failure: unknown = undefined;
  private failed = false;
  private consumerWaiter: (() => void) | null = null;
  private spaceWaiters: (() => void)[] = [];
  private iterating = false;
  private abandoned = false;
  private dropped = 0;

  constructor(capacity = 1024) {
    this.capacity = capacity;
  }

  /** Number of items not yet taken by the consumer. */
  get size(): number {
    return this.items.length;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** True when a push would have to wait for the consumer. */
  get isFull(): boolean {
    return !this.abandoned && this.items.length >= this.capacity;
  }

  /** Items the consumer never read: still queued, or dropped after it abandoned the queue. */
  get unread(): number {
    return this.items.length + this.dropped;
  }

  /** The consumer is gone: drop queued and future items (counting them) and unblock producers. */
  abandon(): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.dropped += this.items.length;
    this.items.length = 0;
    const waiters = this.spaceWaiters;
    this.spaceWaiters = [];
    for (const w of waiters) w();
  }

  push(item: T): Promise<void> {
    if (this.ended) throw new Error('AsyncQueue: push after end');
    if (this.abandoned) {
      this.dropped++;
      return RESOLVED;
    }
    this.items.push(item);
    this.wakeConsumer();
    if (this.items.length < this.capacity) return RESOLVED;
    return new Promise<void>((resolve) => this.spaceWaiters.push(resolve));
  }

  end(): void {
    this.ended = true;
    this.wakeConsumer();
  }

  /** Ends the queue with an error thrown to the consumer after the queued items. */
  fail(err: unknown): void {
    this.failure = err;
    this.failed = true;
    this.end();
  }

  private wakeConsumer(): void {
    const waiter = this.consumerWaiter;
    this.consumerWaiter = null;
    waiter?.();
  }

  private wakeProducers(): void {
    if (this.items.length >= this.capacity) return;
    const waiters = this.spaceWaiters;
    this.spaceWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * The next queued item, taken synchronously, or undefined when none is queued (then await the iterator's
   * next()). For a consumer that drains what is queued without a promise per item; the iterator must be the
   * one consuming (only one consumer), and items must not be undefined.
   */
  shiftNow(): T | undefined {
    if (this.items.length === 0) return undefined;
    const value = this.items.shift();
    this.wakeProducers();
    return value;
  }

  /** A hand-written iterator: an item that is already queued costs no extra promise hops. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterating) throw new Error('AsyncQueue: only one consumer may iterate');
    this.iterating = true;
    const next = (): Promise<IteratorResult<T>> => {
      if (this.items.length > 0) {
        const value = this.items.shift()!;
        this.wakeProducers();
        return Promise.resolve({ value, done: false });
      }
      if (this.ended) {
        return this.failed ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
      }
      return new Promise<void>((resolve) => {
        this.consumerWaiter = resolve;
      }).then(next);
    };
    return {
      next,
      return: (): Promise<IteratorResult<T>> => {
        // The consumer stopped early (break): what it will never read is dropped and counted.
        this.abandon();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
