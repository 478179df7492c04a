// The external programs benchmarks compare against. A bench asks for its peer with `peer(name)`: present, it
// gets true; absent, it prints one line saying what is skipped and how to install the program, and gets false
// (the bench then skips that comparison and measures the rest). Nothing here installs anything.
import { spawnSync } from 'node:child_process';

export interface Peer {
  /** The command looked up on PATH. */
  command: string;
  /** What it is, for the message. */
  label: string;
  /** How to install it, per platform. */
  install: string;
}

export const PEERS = {
  miller: { command: 'mlr', label: 'Miller (mlr)', install: 'apt-get install miller (Debian/Ubuntu), brew install miller (macOS), or https://miller.readthedocs.io/en/latest/installing-miller/' },
  duckdb: { command: 'duckdb', label: 'DuckDB (duckdb CLI)', install: 'https://duckdb.org/docs/installation/ (a single binary: put duckdb on PATH), or brew install duckdb (macOS)' },
  sqlite3: { command: 'sqlite3', label: 'the sqlite3 CLI', install: 'apt-get install sqlite3 (Debian/Ubuntu), brew install sqlite (macOS)' },
  zcat: { command: 'zcat', label: 'zcat (gzip)', install: 'apt-get install gzip (Debian/Ubuntu); part of every Unix' },
  zstd: { command: 'zstd', label: 'zstd', install: 'apt-get install zstd (Debian/Ubuntu), brew install zstd (macOS)' },
  time: { command: '/usr/bin/time', label: 'GNU time (/usr/bin/time)', install: 'apt-get install time (Debian/Ubuntu)' },
} satisfies Record<string, Peer>;

const found = new Map<string, boolean>();

/** True when the peer's command runs here. */
export function hasPeer(p: Peer): boolean {
  let ok = found.get(p.command);
  if (ok === undefined) {
    // `command -v` finds it on PATH without running it (some peers have no --version).
    ok = spawnSync('/bin/sh', ['-c', `command -v ${JSON.stringify(p.command)}`], { stdio: 'ignore' }).status === 0;
    found.set(p.command, ok);
  }
  return ok;
}

/** Like hasPeer, and when absent prints `<bench>: <peer> is not installed: skipping <what>. Install it: <how>`. */
export function peer(bench: string, p: Peer, skipping: string): boolean {
  if (hasPeer(p)) return true;
  console.log(`${bench}: ${p.label} is not installed: skipping ${skipping}. Install it: ${p.install}`);
  return false;
}
