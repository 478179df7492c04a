// Where a connector process lives and how it is ended, so that none outlives its host (the plane, `sluice raw`,
// `preview`) or a stop:
// - Each connector runs in a process group of its own (spawned `detached`: setsid), and is signalled as a group:
//   a wrapper (`sh -c 'node x'`, a container engine's helper) and whatever it started go with it.
// - On Linux it is started through `setpriv --pdeathsig KILL` (util-linux; the same process, exec'd): when the
//   thread that started it dies — the host killed with SIGKILL, or its worker thread ended — the kernel kills it.
//   A connector busy in synchronous code never reads the end of its stdin, so this is the only thing that ends
//   it when its host dies without a chance to act. (A grandchild does not inherit the setting: it sees the end
//   of its pipes as usual.)
// - The live connectors of this thread are known (`liveGroups`): when the host's process exits, those still
//   running are killed (SIGKILL to their groups; nothing can wait any more), and a command stopping on a signal
//   ends them first (plane/src/cli/stop-signals.ts).
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Process groups are POSIX; on Windows a connector is one process, killed alone. */
export const GROUPS = process.platform !== 'win32';

/** Sends `signal` to the process group led by `pid`; false when the group is gone (or groups are unsupported). */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  if (!GROUPS) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True while a process of the group led by `pid` exists (zombies included, until reaped). */
export function groupAlive(pid: number): boolean {
  return signalGroup(pid, 0);
}

/** The pids of this thread's connectors still running, each the leader of its own group. */
export const liveGroups = new Set<number>();

let exitHookInstalled = false;

/** Registers a started connector; on this process's exit, a connector still running is killed with its group. */
export function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllGroups);
}

export function untrackGroup(pid: number): void {
  liveGroups.delete(pid);
}

/**
 * SIGKILLs every connector group of this process, synchronously (safe in an `exit` handler): this thread's, and,
 * on Linux, every child of any thread of the process that leads a group of its own (a connector a worker thread
 * started, when setpriv is missing and the thread's end did not kill it already).
 */
export function killAllGroups(): void {
  for (const pid of liveGroups) signalGroup(pid, 'SIGKILL');
  liveGroups.clear();
  for (const pid of childGroupLeaders()) signalGroup(pid, 'SIGKILL');
}

/** Children of this process (any thread) that lead a process group of their own: its connectors. Linux only. */
export function childGroupLeaders(): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tasks) {
    let children: string;
    try {
      children = readFileSync(`/proc/self/task/${tid}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const word of children.split(' ')) {
      const pid = Number(word);
      if (!Number.isInteger(pid) || pid <= 0) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // Fields after the command (which may hold spaces or parentheses): state ppid pgrp …
        const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
        if (pgrp === pid) out.push(pid);
      } catch {
        // exited meanwhile
      }
    }
  }
  return out;
}

let setpriv: string | null | undefined;

/**
 * The setpriv binary when it can set a parent-death signal (Linux, util-linux 2.33 or later), else null: an
 * older setpriv would refuse the option and the connector would never start. Known by the option's help text
 * in the binary (~0.1 ms per thread; running it to ask cost ~25 ms of CPU, a fork of the whole Node process,
 * and blocked the thread 60 ms on a loaded machine). SLUICE_PDEATHSIG=0 turns it off.
 */
export function parentDeathWrapper(): string | null {
  if (setpriv !== undefined) return setpriv;
  setpriv = null;
  if (process.platform !== 'linux' || process.env['SLUICE_PDEATHSIG'] === '0') return setpriv;
  const bin = findExecutable('setpriv', process.env['PATH'], process.cwd());
  try {
    if (bin !== undefined && readFileSync(bin).includes('--pdeathsig')) setpriv = bin;
  } catch {
    // unreadable: not used
  }
  return setpriv;
}

/**
 * The file `command` runs, found as execvp would (a name with a slash is a path, from `cwd`; otherwise the first
 * executable file of that name in PATH), or undefined when there is none. A connector whose command is missing is
 * started without the wrapper, so the failure stays the host's `spawn <command> ENOENT`, not setpriv's.
 */
export function findExecutable(command: string, path: string | undefined, cwd: string): string | undefined {
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(cwd, command)]
    : (path ?? '').split(delimiter).filter((d) => d !== '').map((d) => join(isAbsolute(d) ? d : resolve(cwd, d), command));
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * How to spawn `command args`: through setpriv with a parent-death SIGKILL when it is available and the command
 * exists (see parentDeathWrapper and findExecutable), as given otherwise.
 */
export function wrappedCommand(command: string, args: readonly string[], env: Record<string, string | undefined>, cwd: string): { command: string; args: string[] } {
  const wrapper = parentDeathWrapper();
  const file = wrapper === null ? undefined : findExecutable(command, env['PATH'], cwd);
  if (wrapper === null || file === undefined) return { command, args: [...args] };
  return { command: wrapper, args: ['--pdeathsig', 'KILL', '--', file, ...args] };
}

/**
 * Stops every connector of this process: SIGTERM to each group (killAllGroups' set), then, for those still
 * running after `graceMs`, SIGKILL. Resolves when none is left (or once the SIGKILL is sent) with how many
 * groups there were.
 */
export async function stopAllGroups(graceMs: number): Promise<number> {
  const groups = new Set([...liveGroups, ...childGroupLeaders()]);
  for (const pid of groups) signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  // Polled: the groups include other threads' connectors, whose exit events this thread does not see.
  while (Date.now() < deadline && [...groups].some(groupAlive)) await new Promise((r) => setTimeout(r, 20));
  killAllGroups();
  for (const pid of groups) signalGroup(pid, 'SIGKILL');
  return groups.size;
}
