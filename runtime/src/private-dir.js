// Per-user cache directories that code may be loaded from, and the checks made before trusting one. Two
// caches hold code that a process runs: Node's module compile cache (the type-stripped, compiled modules of
// every bin and thread) and the runtime's compiled config validators (connector/validator-cache.ts). Neither
// may live at a shared, predictable path such as <tmpdir>/node-compile-cache, where another local user could
// plant an entry: both live under $XDG_CACHE_HOME/sluice (else ~/.cache/sluice), created 0700, and are used
// only when the directory, and every ancestor, is owned by this user or root and not writable by others
// (a sticky ancestor such as /tmp is allowed: it stops others from renaming what is ours).
// Plain JavaScript (type-checked through JSDoc): the launcher runs it before any TypeScript module loads, so
// the compile cache is on before Node would start its TypeScript stripper.
// @ts-check
import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

const uid = typeof process.getuid === 'function' ? process.getuid() : -1;

/**
 * Why `st` is not safe to trust, or null.
 * @param {import('node:fs').Stats} st @param {string} what @param {string} path @param {boolean} allowSticky
 * @returns {string | null}
 */
export function untrustedStat(st, what, path, allowSticky) {
  if (uid === -1) return 'ownership cannot be checked on this platform';
  if (st.isSymbolicLink()) return `${what} ${path} is a symbolic link`;
  if (st.uid !== uid && st.uid !== 0) return `${what} ${path} is owned by uid ${st.uid}, not by uid ${uid} or root`;
  const sticky = (st.mode & 0o1000) !== 0;
  if ((st.mode & 0o022) !== 0 && !(allowSticky && sticky && st.isDirectory())) {
    return `${what} ${path} is writable by group or others (mode ${(st.mode & 0o7777).toString(8)})`;
  }
  return null;
}

/**
 * Checks `dir` and its ancestors; null when trusted, else the reason.
 * @param {string} dir @returns {string | null}
 */
export function untrustedDir(dir) {
  /** @type {import('node:fs').Stats} */
  let st;
  try {
    st = lstatSync(dir);
  } catch (err) {
    return `${dir}: ${/** @type {NodeJS.ErrnoException} */ (err).code ?? String(err)}`;
  }
  if (!st.isDirectory()) return `${dir} is not a directory`;
  const why = untrustedStat(st, 'directory', dir, false);
  if (why) return why;
  for (let p = dirname(dir); ; p = dirname(p)) {
    /** @type {import('node:fs').Stats} */
    let ps;
    try {
      ps = lstatSync(p);
    } catch (err) {
      return `${p}: ${/** @type {NodeJS.ErrnoException} */ (err).code ?? String(err)}`;
    }
    const w = untrustedStat(ps, 'directory', p, true);
    if (w) return w;
    if (p === dirname(p)) return null;
  }
}

/**
 * `$XDG_CACHE_HOME/sluice/<name>` (an absolute XDG_CACHE_HOME only), else `~/.cache/sluice/<name>`.
 * @param {string} name @param {NodeJS.ProcessEnv} [env] @returns {string}
 */
export function userCacheDir(name, env = process.env) {
  const xdg = env['XDG_CACHE_HOME'];
  const base = xdg !== undefined && xdg.startsWith('/') ? xdg : join(homedir(), '.cache');
  return join(base, 'sluice', name);
}

/**
 * Creates `dir` (0700, parents as needed) when it is missing, then returns it if it can be trusted, else
 * undefined (never throws: a cache that cannot be used only costs time).
 * @param {string} dir @returns {string | undefined}
 */
export function privateDir(dir) {
  try {
    makeDirs(dir, 0o700);
  } catch {
    // Read-only or not creatable: the check below decides.
  }
  return untrustedDir(dir) === null ? dir : undefined;
}

/**
 * `mkdir -p` that gives up on the first error: the missing ancestors are found first, then made top-down.
 * Not Node's `mkdirSync(dir, {recursive: true})`, which never returns when making a directory answers
 * ENOENT for a parent that exists — under /proc, say (XDG_CACHE_HOME=/proc/x made every bin spin at full CPU
 * before it loaded anything; Node 20 and 24 alike).
 * @param {string} dir @param {number} mode
 */
export function makeDirs(dir, mode) {
  const missing = [];
  for (let p = dir; ; p = dirname(p)) {
    try {
      lstatSync(p);
      break;
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'ENOENT' || dirname(p) === p) throw err;
      missing.push(p);
    }
  }
  for (const p of missing.reverse()) {
    try {
      mkdirSync(p, { mode });
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'EEXIST') throw err;
    }
  }
}
