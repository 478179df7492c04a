// Processes as tests see them through /proc (Linux): whether one still runs, and which it started.
import { readdirSync, readFileSync } from 'node:fs';

/** Running and not a zombie (an orphan is reaped by whoever adopted it, which may be slow to do so). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The children of every thread of `pid` (the plane's materializations start theirs from worker threads). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter((w) => w !== '').map(Number));
    } catch { /* thread ended */ }
  }
  return out;
}
