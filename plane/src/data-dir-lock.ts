// One plane per data dir. Two planes on one dir append to the same journals and fence each other's
// materializations, so the plane takes `<data dir>/plane.lock` (created exclusively) before it opens anything
// there, and refuses, naming the holder, when another live process has it. The file records pid, host,
// command and start time. A lock whose pid is gone on this host is stale (a crash, a kill -9) and is replaced;
// a lock from another host (a shared filesystem) cannot be checked from here, so the refusal says how to
// remove it by hand.
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SluiceError } from '@sluice/runtime';
import { DATA_FILE_MODE, makeDataDir } from './data-dir.ts';

export const LOCK_FILE = 'plane.lock';

export interface LockOwner {
  pid: number;
  host: string;
  command: string;
  since: string;
  /** Tells this process's lock from a later one with a reused pid. */
  nonce: string;
}

export class DataDirBusyError extends SluiceError {
  readonly owner: LockOwner | undefined;
  constructor(message: string, owner: LockOwner | undefined) {
    super('DATA_DIR_BUSY', message);
    this.owner = owner;
  }
}

export interface DataDirLock {
  readonly path: string;
  readonly owner: LockOwner;
  /** Removes the lock if it is still this process's. Idempotent. */
  release(): void;
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>;
    if (typeof v.pid === 'number' && typeof v.host === 'string') {
      return { pid: v.pid, host: v.host, command: String(v.command ?? 'sluice'), since: String(v.since ?? '?'), nonce: String(v.nonce ?? '') };
    }
  } catch { /* unreadable or half-written: treated as unknown below */ }
  return undefined;
}

/** The releases of the locks this process holds: a forced stop (plane/src/cli/stop-signals.ts) runs them. */
const held = new Set<() => void>();

/**
 * Releases every data-dir lock this process holds (synchronously). For a process about to die of a signal:
 * that skips `exit` handlers, so the release registered there would not run and the lock would be left stale.
 */
export function releaseHeldLocks(): void {
  for (const release of [...held]) release();
}

/** True when a process with this pid exists on this host (EPERM: it exists under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the data dir's lock for `command` (e.g. "sluice serve"), creating the dir if needed. Throws
 * DataDirBusyError naming the holder when a live process has it; replaces a stale lock (and says so via `log`).
 */
export function lockDataDir(dataDir: string, command: string, log: (message: string) => void = () => undefined): DataDirLock {
  makeDataDir(dataDir);
  const path = join(dataDir, LOCK_FILE);
  const owner: LockOwner = { pid: process.pid, host: hostname(), command, since: new Date().toISOString(), nonce: randomUUID() };
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', DATA_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const held = readOwner(path);
      if (held === undefined) {
        // Written by a process between open and write, or damaged: only a human can tell which.
        throw new DataDirBusyError(`data dir ${dataDir} is locked (${path} exists but is not a readable lock). ` +
          `If no sluice plane uses this dir, delete ${path}; or pass --data-dir to use another dir`, undefined);
      }
      if (held.host === owner.host && !processAlive(held.pid)) {
        log(`data dir ${dataDir}: removing a stale lock of ${held.command} (pid ${held.pid}, since ${held.since}; that process is gone)`);
        try { unlinkSync(path); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; }
        continue;
      }
      const where = held.host === owner.host ? `pid ${held.pid}` : `pid ${held.pid} on host ${held.host}`;
      const hint = held.host === owner.host
        ? `Stop that process, or pass --data-dir to use another dir`
        : `Stop that process; if it is gone, delete ${path}. Or pass --data-dir to use another dir`;
      throw new DataDirBusyError(`data dir ${dataDir} is in use by ${held.command} (${where}, since ${held.since}). ${hint}`, held);
    }
    try {
      writeSync(fd, `${JSON.stringify(owner)}\n`);
    } finally {
      closeSync(fd);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      process.off('exit', release);
      held.delete(release);
      // Only our own lock: a stale-lock takeover by another process must not be undone by us.
      if (readOwner(path)?.nonce === owner.nonce) {
        try { unlinkSync(path); } catch { /* already gone */ }
      }
    };
    // A process that exits without closing the plane still leaves the dir free.
    process.on('exit', release);
    held.add(release);
    return { path, owner, release };
  }
  throw new DataDirBusyError(`data dir ${dataDir}: could not take ${path} (another process keeps replacing it); pass --data-dir to use another dir`, undefined);
}
