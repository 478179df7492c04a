// How a `sluice` process stops on SIGINT, SIGTERM and SIGHUP. Node's default action for them ends the process
// at once, before any `exit` handler: its connectors — each in a process group of its own (runtime/host
// process-group.ts), so a terminal's Ctrl-C reaches only sluice — are left to notice the end of their pipes,
// which one busy in synchronous code never does (on Linux setpriv's parent-death signal still kills it).
// So the bin installs these handlers before any command runs (installStopSignals):
// - a command that stops cleanly (serve, start, raw's capture) takes the signals over with onStopSignal();
// - otherwise — a command with nothing to close, a signal during serve's first publication, or a second
//   signal while a clean stop runs — every connector of the process is stopped (SIGTERM to its group, SIGKILL
//   after a grace period), the data dir's lock is released, and the process then dies of the signal, as it
//   would have without handlers;
// - except a SIGTERM repeated by the kernel after the launcher that re-executed this process died (launcherDied).

import { launcherDied } from '@sluice/runtime/launch';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof SIGNALS)[number];

type Handler = (signal: StopSignal) => void;

let handler: Handler | undefined;
let forcing = false;
let installed = false;
/** A stop signal came already. */
let stopping = false;

/** How long connectors get to stop on SIGTERM before SIGKILL, when the process stops without a command's help. */
export const FORCE_GRACE_MS = 2000;

/** Installs the process's handlers (the bin calls this once, before the command). */
export function installStopSignals(): void {
  if (installed) return;
  installed = true;
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      // serve republishes on SIGHUP with a listener of its own: then SIGHUP is not a stop.
      if (signal === 'SIGHUP' && process.listenerCount('SIGHUP') > 1) return;
      // A launcher killed with SIGKILL (runtime/src/launch.js, a bin run on Node < 24) makes the kernel send its
      // parent-death SIGTERM once per thread of it as they exit: the repeats are that one event, not a second
      // stop signal, and forcing on them cut the clean stop short (the lock-file flake of cli-launcher.test.ts).
      if (signal === 'SIGTERM' && stopping && launcherDied()) {
        process.stderr.write('sluice: SIGTERM again, from the launcher\'s death (the kernel sends one per thread of it): the stop goes on; SIGINT forces it\n');
        return;
      }
      stopping = true;
      const take = handler;
      handler = undefined;
      if (take !== undefined) take(signal);
      else void forceStop(signal, FORCE_GRACE_MS);
    });
  }
}

/**
 * The command stops cleanly on the next stop signal: `onStop` runs (once); a further signal forces the stop.
 * Returns a function that gives the signals back (after which a signal forces the stop).
 */
export function onStopSignal(onStop: Handler): () => void {
  handler = onStop;
  return () => {
    if (handler === onStop) handler = undefined;
  };
}

/**
 * Stops every connector of the process (SIGTERM to each group, SIGKILL to what is left after `graceMs`),
 * releases the data-dir locks it holds, then ends the process by `signal`, as Node's default action would
 * have. Never returns.
 */
export async function forceStop(signal: StopSignal, graceMs: number): Promise<never> {
  // Loaded here: a command that never started a connector does not pay for the host module (nor one that
  // took no lock for the lock's: a command holding one has it loaded already).
  const [{ killAllGroups, stopAllGroups }, { releaseHeldLocks }] = await Promise.all([import('@sluice/runtime/host'), import('../data-dir-lock.ts')]);
  if (!forcing) {
    forcing = true;
    const n = await stopAllGroups(graceMs);
    if (n > 0) process.stderr.write(`sluice: ${signal}: stopped ${n} connector process${n === 1 ? '' : 'es'}${graceMs > 0 ? '' : ' (SIGKILL)'}\n`);
  }
  killAllGroups();
  // Death by a signal skips `exit` handlers, where a lock is otherwise released: without this a second Ctrl-C
  // (or a second SIGTERM) during a clean stop left the data dir's lock behind, stale. Released after the
  // connectors are gone (a materialization's may still write into the dir) and with nothing awaited after it.
  releaseHeldLocks();
  for (const s of SIGNALS) process.removeAllListeners(s);
  process.kill(process.pid, signal);
  // The signal is delivered asynchronously; nothing else should run meanwhile.
  return new Promise<never>(() => undefined);
}
