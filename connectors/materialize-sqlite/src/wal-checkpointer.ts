// WAL checkpoints off the connector's main thread. After each commit the client asks a thread of its own
// (checkpoint-thread.ts) for a PASSIVE checkpoint: the committed frames are copied into the database file and
// fsynced there while the main thread goes on with the next transaction. Nothing about commits changes: a
// transaction's rows and its checkpoint row are still one COMMIT on the main thread, durable in the WAL; a
// checkpoint only moves committed pages from the WAL into the file, and SQLite makes an interrupted one (a crash,
// a killed thread) harmless, so exactly-once and crash recovery are as before.
//
// The WAL stays bounded as before: the main connection keeps its automatic checkpoint at the same size, so if
// this thread falls behind (or fails) the main thread checkpoints the rest itself, and the WAL restarts from its
// beginning once it has been copied. When the thread keeps up, that fallback finds the frames copied already
// and has only the last transaction's left. A thread that fails is logged once and not used again.
import { rebuildError, threadModule } from '@sluice/runtime/thread';
import type { SerializedError, Thread } from '@sluice/runtime/thread';

export type CheckpointIn = { type: 'open'; path: string } | { type: 'checkpoint' } | { type: 'close' };
export type CheckpointOut =
  | { type: 'opened' }
  | { type: 'checkpointed'; busy: boolean; log: number; checkpointed: number }
  | { type: 'closed' }
  | { type: 'failed'; error: SerializedError };

const checkpointThreads = threadModule<CheckpointIn, CheckpointOut>(new URL('./checkpoint-thread.ts', import.meta.url), {
  name: 'the SQLite WAL checkpoint thread',
  // It holds a connection and a statement; its heap stays tiny (SQLite's memory is not on it).
  resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 2 },
});

/** Checkpoint threads started and not yet exited (tests check that every way out ends them). */
export function liveCheckpointThreads(): number {
  return checkpointThreads.live();
}

/** Ends every checkpoint thread as if it had died (tests: the connector must go on without it). */
export function killCheckpointThreads(): Promise<void> {
  return checkpointThreads.killAll();
}

/** One database file's checkpoint thread. */
export class WalCheckpointer {
  readonly #thread: Thread<CheckpointIn, CheckpointOut>;
  readonly #onFailure: (err: Error) => void;
  /** A request is in flight (open, checkpoint or close): at most one at a time. */
  #inFlight = true;
  /** A commit came while a checkpoint was in flight: run another when it is done. */
  #again = false;
  #closeRequested = false;
  #ended = false;
  #whenEnded: () => void = () => undefined;
  readonly #ended$: Promise<void>;
  /** Checkpoints the thread finished (tests and diagnostics). */
  checkpoints = 0;
  /** The last checkpoint's answer: frames in the WAL, frames copied into the file. */
  last: { busy: boolean; log: number; checkpointed: number } | undefined;

  /** `onFailure`: called once if the thread fails (the caller logs it; its checkpoints fall back to the main thread). */
  constructor(path: string, onFailure: (err: Error) => void) {
    this.#onFailure = onFailure;
    this.#ended$ = new Promise((resolve) => { this.#whenEnded = resolve; });
    this.#thread = checkpointThreads.start();
    this.#thread.onMessage((m) => this.#answer(m));
    this.#thread.onEnd((failure) => {
      if (failure !== undefined) this.#fail(failure);
      else this.#end();
    });
    this.#post({ type: 'open', path });
  }

  /** Whether the thread still takes requests. */
  get running(): boolean {
    return !this.#ended && !this.#closeRequested;
  }

  /** Called after each commit: a checkpoint now, or right after the one in flight. Never waits. */
  afterCommit(): void {
    if (!this.running) return;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    this.#post({ type: 'checkpoint' });
  }

  /**
   * Lets a checkpoint in flight finish, then closes the thread's connection (the file's last one when the
   * connector's connections are closed: SQLite then checkpoints the rest and deletes the WAL) and ends the thread.
   * Resolves when it has ended, also when it failed (the failure is reported once, through onFailure).
   */
  close(): Promise<void> {
    if (!this.#closeRequested && !this.#ended) {
      this.#closeRequested = true;
      this.#again = false;
      if (!this.#inFlight) this.#post({ type: 'close' });
    }
    return this.#ended$;
  }

  #post(m: CheckpointIn): void {
    this.#inFlight = true;
    // The thread is unreferenced: hold the process while it owes an answer (close() is awaited at exit).
    this.#thread.hold();
    this.#thread.post(m);
  }

  #answer(m: CheckpointOut): void {
    if (this.#ended) return;
    this.#inFlight = false;
    this.#thread.release();
    switch (m.type) {
      case 'failed':
        this.#fail(rebuildError(m.error));
        return;
      case 'closed':
        this.#end();
        return;
      case 'checkpointed':
        this.checkpoints++;
        this.last = { busy: m.busy, log: m.log, checkpointed: m.checkpointed };
        break;
      case 'opened':
        break;
    }
    if (this.#closeRequested) this.#post({ type: 'close' });
    else if (this.#again) {
      this.#again = false;
      this.#post({ type: 'checkpoint' });
    }
  }

  #fail(err: Error): void {
    if (this.#ended) return;
    this.#onFailure(err);
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#inFlight) {
      this.#inFlight = false;
      this.#thread.release();
    }
    // Resolved once the thread has exited, so nothing of it outlives close().
    void this.#thread.terminate().then(this.#whenEnded, this.#whenEnded);
  }
}
