// The materialization threads (materialize-thread.ts) as one pool, in a module of its own that loads only the
// runtime's thread host: `serve` and `start` start a thread ahead while the rest of the plane loads
// (prestartMaterializationThread), and tasks/materialize.ts takes it for a publication's first materialization.
import { threadModule } from '@sluice/runtime/thread';
import type { FromThread, ToThread } from './materialize-thread-messages.ts';

export const materializeThreads = threadModule<ToThread, FromThread>(new URL('./materialize-thread.ts', import.meta.url), {
  name: 'the materialization thread',
  // As the plane's own flags (package.json nodeFlags: --max-semi-space-size=4): a thread's heap is its own.
  resourceLimits: { maxYoungGenerationSizeMb: 12 },
});

/**
 * Starts a materialization thread now, for the first publication's first new materialization to take. A thread's
 * start (an isolate, Node's bootstrap, the driver's modules: ~0.15 s of CPU) otherwise begins only once the
 * catalog is loaded, and the connector it spawns, whose validate and apply the ready line waits for, after it
 * (issue 16). Started before the plane loads its own modules, it boots on the other core meanwhile. A publication
 * that does not take it ends it (releaseMaterializationThread); it never keeps the process alive.
 */
export function prestartMaterializationThread(): void {
  materializeThreads.prestart();
}

/** Ends the thread started ahead when nothing took it. */
export function releaseMaterializationThread(): void {
  materializeThreads.releasePrestarted();
}
