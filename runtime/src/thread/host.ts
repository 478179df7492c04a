// The host side of a worker thread: a module started in its own thread with the compile cache on
// (threadBootSource), a typed message channel with transfer lists, its failure mapped to an error that names
// the cause (an uncaught error, running out of memory, an exit nobody asked for), holds that keep the process
// alive only while the thread owes an answer, and a spare thread started ahead of need (prestart) that idles
// unreferenced. The protocol over the channel is the caller's: materialize-sqlite's writer thread and
// source-http-file's parser thread each define their own messages.
import { Worker } from 'node:worker_threads';
import type { ResourceLimits, Transferable } from 'node:worker_threads';
import { threadBootSource } from '../launch.js';

export interface ThreadOptions {
  /** What the thread is, in error messages: "the SQLite writer thread". */
  name: string;
  /** The thread's own heap limits (its heap is separate from the main thread's). */
  resourceLimits?: ResourceLimits;
  /** Appended to the out-of-memory error: what the user can do about it. */
  outOfMemoryHint?: string;
  /** The error for an exit the host did not ask for; default "<name> exited unexpectedly (exit code N)". */
  exitError?: (code: number) => Error;
}

/** A thread running a module; In: what the host sends, Out: what the thread sends. */
export class Thread<In, Out> {
  readonly #worker: Worker;
  #onMessage: ((m: Out) => void) | null = null;
  #queued: Out[] = [];
  #onEnd: ((failure: Error | undefined) => void) | null = null;
  #ended = false;
  #failure: Error | undefined;
  #terminating = false;
  #holds = 0;

  constructor(worker: Worker, options: ThreadOptions) {
    this.#worker = worker;
    worker.on('message', (m: Out) => {
      if (this.#onMessage !== null) this.#onMessage(m);
      else this.#queued.push(m);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const limits = options.resourceLimits;
      this.#end(err.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? new Error(`${options.name} ran out of memory (its limits: ${JSON.stringify(limits ?? {})})${options.outOfMemoryHint ? `; ${options.outOfMemoryHint}` : ''}`, { cause: err })
        : err);
    });
    worker.on('exit', (code) => {
      this.#end(this.#terminating ? undefined : (options.exitError?.(code) ?? new Error(`${options.name} exited unexpectedly (exit code ${code})`)));
    });
    // Never keeps the process alive by itself (see hold()). After the listeners: adding a 'message' listener
    // refs a worker again (Node), so an idle thread unref'd before it kept its process from exiting.
    worker.unref();
  }

  /** Whether the thread has failed or exited (posting to it does nothing). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Sends `m` to the thread; the buffers in `transfer` move there. Nothing once the thread has ended. */
  post(m: In, transfer?: readonly Transferable[]): void {
    if (!this.#ended) this.#worker.postMessage(m, transfer);
  }

  /** The thread's messages, in order (those that came before this call first). */
  onMessage(handler: (m: Out) => void): void {
    this.#onMessage = handler;
    const queued = this.#queued;
    this.#queued = [];
    for (const m of queued) handler(m);
  }

  /**
   * Called once when the thread ends: with the error naming why (its uncaught error, out of memory, an exit
   * nobody asked for), or undefined when terminate() ended it. Called at once if it has already ended.
   */
  onEnd(handler: (failure: Error | undefined) => void): void {
    this.#onEnd = handler;
    if (this.#ended) queueMicrotask(() => handler(this.#failure));
  }

  /** Keeps the process alive until the matching release(): while the thread has work or owes an answer. */
  hold(): void {
    if (this.#holds++ === 0) this.#worker.ref();
  }

  release(): void {
    if (--this.#holds === 0) this.#worker.unref();
  }

  /** Ends the thread now; its end is then not a failure. Resolves once it has exited. */
  async terminate(): Promise<void> {
    this.#terminating = true;
    if (!this.#ended) await this.#worker.terminate();
  }

  /** Ends the thread as if it had died (tests: the host must fail with the exit error). */
  async kill(): Promise<void> {
    await this.#worker.terminate();
  }

  #end(failure: Error | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#failure = failure;
    this.#onEnd?.(failure);
  }
}

/** Threads of one module: started on demand or ahead of need, counted while they run. */
export interface ThreadModule<In, Out> {
  /** A thread ready for work: the prestarted one when it is still healthy, else a new one. */
  start(): Thread<In, Out>;
  /**
   * Starts a spare thread now, for the next start() to take: a thread takes ~0.1 s to start (an isolate,
   * Node's bootstrap, the module's imports), which then overlaps the caller's own start-up. It idles
   * unreferenced (keeps no process alive). At most one.
   */
  prestart(): void;
  /** Terminates a prestarted thread nobody took. */
  releasePrestarted(): void;
  /** Threads started and not yet exited (tests check that every way out ends them). */
  live(): number;
  /** Threads started so far, prestarted ones included (tests: which start a thread and which take one). */
  spawned(): number;
  /** Terminates every running thread as if it had died (tests). */
  killAll(): Promise<void>;
}

/** The threads that run `moduleUrl` (a module that calls serveThread). */
export function threadModule<In, Out>(moduleUrl: URL | string, options: ThreadOptions): ThreadModule<In, Out> {
  const running = new Set<Thread<In, Out>>();
  let spare: Thread<In, Out> | undefined;
  let spawned = 0;
  const spawn = (): Thread<In, Out> => {
    spawned++;
    // The bootstrap turns on the main thread's compile cache before the module loads (threadBootSource).
    const worker = new Worker(threadBootSource(moduleUrl), {
      eval: true, stdout: false, stderr: false, ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    });
    const thread = new Thread<In, Out>(worker, options);
    running.add(thread);
    worker.once('exit', () => running.delete(thread));
    return thread;
  };
  return {
    start() {
      const taken = spare;
      spare = undefined;
      if (taken !== undefined && !taken.ended) return taken;
      if (taken !== undefined) void taken.terminate();
      return spawn();
    },
    prestart() {
      if (spare === undefined) spare = spawn();
    },
    releasePrestarted() {
      const taken = spare;
      spare = undefined;
      void taken?.terminate();
    },
    live: () => running.size,
    spawned: () => spawned,
    async killAll() {
      await Promise.all([...running].map((t) => t.kill()));
    },
  };
}
