// Why a connector died of a signal, as far as the host can tell. Node reports only the signal, never
// who sent it, so the cause is named when the host knows it (it killed the connector itself, or the
// kernel's out-of-memory killer counted a kill in this process's memory cgroup while the connector ran)
// and guessed from the signal otherwise.
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';

/**
 * The OOM killer's kill count for this process's memory cgroup (v2 `memory.events`, v1
 * `memory.oom_control`), or undefined when it cannot be read (no cgroup memory controller, no access).
 * Connectors run in the host's cgroup, so a kill of one shows here.
 */
export function oomKillCount(): number | undefined {
  let paths: string[] = [];
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (path === undefined) continue;
      if (controllers === '') paths.push(`/sys/fs/cgroup${path}/memory.events`, '/sys/fs/cgroup/memory.events');
      else if (controllers!.split(',').includes('memory')) paths.push(`/sys/fs/cgroup/memory${path}/memory.oom_control`, '/sys/fs/cgroup/memory/memory.oom_control');
    }
  } catch {
    paths = [];
  }
  for (const file of paths) {
    try {
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(file, 'utf8'));
      if (m) return Number(m[1]);
    } catch {
      // Not this one (a path that exists only outside a container, or no access).
    }
  }
  return undefined;
}

/** The signal of an exit: Node's, or a container engine's 128 + N exit code (`docker run` exits 137 on SIGKILL). */
export function exitSignal(code: number | null, signal: string | null, container: boolean): string | null {
  if (signal !== null) return signal;
  if (!container || code === null || code <= 128 || code > 128 + 64) return null;
  const found = Object.entries(constants.signals).find(([, n]) => n === code - 128);
  return found?.[0] ?? null;
}

/**
 * The failure message of a connector that died of `signal` (not killed by the host): the signal, what
 * sent it when known, else the usual causes; then its last log line, as context only.
 */
export function signalExitMessage(name: string, signal: string, o: { container: boolean; oomKilled: boolean; lastLog?: string | undefined }): string {
  const how = o.container ? `exited with code ${128 + (constants.signals[signal as keyof typeof constants.signals] ?? 0)} (${signal} in the container)` : `exited on ${signal}`;
  let why: string;
  if (o.oomKilled) why = "killed by the kernel's out-of-memory killer: the memory cgroup's oom_kill count rose while it ran; give it more memory or smaller inputs";
  else if (signal === 'SIGKILL') why = 'killed by a signal — out of memory or `kill -9`?';
  else if (signal === 'SIGTERM' || signal === 'SIGINT' || signal === 'SIGHUP' || signal === 'SIGQUIT') why = 'stopped by a signal from outside sluice — `kill`, a shutdown or a supervisor?';
  else if (['SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGABRT', 'SIGTRAP', 'SIGSYS'].includes(signal)) why = 'it crashed';
  else if (signal === 'SIGPIPE') why = 'it wrote to a closed pipe';
  else if (signal === 'SIGXCPU' || signal === 'SIGXFSZ') why = 'it exceeded a resource limit (ulimit)';
  else why = 'killed by a signal';
  const last = o.lastLog === undefined ? '' : `; its last log line was ${JSON.stringify(o.lastLog)}`;
  return `${name}: connector ${how} (${why})${last}`;
}
