// A bounded single-consumer async queue: the runtime pushes requests, a connector iterates them.
// `push` resolves when there is room again, so a slow consumer slows the reader (backpressure).

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly capacity: number;
  private ended = false;
  private failure: unknown = undefined;
  private failed = false;
  private consumerWaiter: (() => void) | null = null;
  private spaceWaiters: (() => void)[] = [];
  private iterating = false;

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

  push(item: T): Promise<void> {
    if (this.ended) throw new Error('AsyncQueue: push after end');
    this.items.push(item);
    this.wakeConsumer();
    if (this.items.length < this.capacity) return Promise.resolve();
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

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    if (this.iterating) throw new Error('AsyncQueue: only one consumer may iterate');
    this.iterating = true;
    while (true) {
      if (this.items.length > 0) {
        const item = this.items.shift()!;
        this.wakeProducers();
        yield item;
        continue;
      }
      if (this.ended) {
        if (this.failed) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => {
        this.consumerWaiter = resolve;
      });
    }
  }
}
