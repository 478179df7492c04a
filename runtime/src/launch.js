// The first thing every bin runs, before any TypeScript module loads. The sources are TypeScript that Node 24
// runs as they are (type stripping); an older Node fails on the first `.ts` import with ERR_UNKNOWN_FILE_EXTENSION
// and a stack trace. So a bin imports only this plain-JavaScript module statically, calls
// `runOnSupportedNode(import.meta.url)`, and loads the rest with dynamic imports after it returns. On an older
// Node it re-executes the same bin, with the same arguments and Node flags, on the Node 24 that `npm ci` pins into
// node_modules (the `node` devDependency), or says clearly what to install when that is absent.
// It is written for any Node that can run npm 11 (20.17 and later): no TypeScript, no newer syntax or APIs.
// @ts-check
import { existsSync, readFileSync } from 'node:fs';
// A namespace import: Node 20 (which must reach the re-exec) has no enableCompileCache/getCompileCacheDir.
import * as nodeModule from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { privateDir, userCacheDir } from './private-dir.js';

/** The oldest Node that runs the sources directly (the pinned one; type stripping and the APIs the code uses). */
export const MIN_NODE_MAJOR = 24;

/** Set on the re-executed child, so a pinned Node that is somehow too old cannot loop. */
const REEXEC_ENV = 'SLUICE_REEXECUTED_NODE';
/** Set when this bin re-executed itself to add its Node flags, so it cannot loop if they do not show. */
const FLAGS_ENV = 'SLUICE_NODE_FLAGS_APPLIED';
/** Set on the re-executed child when it gets a parent-death SIGTERM (setpriv): the launcher's pid. */
const LAUNCHER_ENV = 'SLUICE_LAUNCHER_PID';

/** This process's launcher (runOnSupportedNode's re-execution with a parent-death SIGTERM), if any. */
let launcherPid = /** @type {number | undefined} */ (undefined);

/**
 * True when this process was re-executed by the launcher with a parent-death SIGTERM and that launcher has died.
 * The kernel sends the parent-death signal each time the thread that is this process's parent exits, and a dying
 * launcher's threads exit one after another (the process is handed to the next live thread each time): a launcher
 * killed with SIGKILL can send SIGTERM several times, one event (plane/src/cli/stop-signals.ts takes the repeats
 * as one). Linux only, as setpriv is: the launcher is dead once it is no longer the parent, or is a zombie
 * (/proc/<pid>/stat state Z or X; its main thread, this process's parent, exits first).
 * @returns {boolean}
 */
export function launcherDied() {
  if (launcherPid === undefined) return false;
  if (process.ppid !== launcherPid) return true;
  try {
    const stat = readFileSync(`/proc/${launcherPid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return true;
  }
}

/**
 * The Node flags a bin runs with, declared as data in its package.json (`"sluice": {"nodeFlags": [...]}`, the
 * nearest package.json above the bin): e.g. source-http-file's heap limits. This launcher applies them; the
 * plane's registry, the connector images' entrypoints and the benches read them here to pass them themselves.
 * @param {string} bin the bin's path or file: URL
 * @returns {string[]}
 */
export function nodeFlagsOf(bin) {
  let dir = dirname(bin.startsWith('file:') ? fileURLToPath(bin) : bin);
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      /** @type {{ sluice?: { nodeFlags?: unknown } }} */
      const pkg = JSON.parse(readFileSync(file, 'utf8'));
      const flags = pkg.sluice?.nodeFlags ?? [];
      if (!Array.isArray(flags) || !flags.every((f) => typeof f === 'string' && /^--[a-z0-9-]+(=\S+)?$/.test(f))) {
        throw new Error(`${file}: "sluice.nodeFlags" must be a list of Node flags such as "--max-old-space-size=512"`);
      }
      return flags;
    }
    const up = dirname(dir);
    if (up === dir) return [];
    dir = up;
  }
}

/**
 * The declared flags this process was not started with. A flag counts as given when Node got it by name, with
 * any value (on the command line or in NODE_OPTIONS): a host's own choice wins over the declared one.
 * @param {string[]} declared
 * @returns {string[]}
 */
export function missingNodeFlags(declared) {
  const given = [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)].map((f) => f.split('=')[0]);
  return declared.filter((f) => !given.includes(f.split('=')[0]));
}

/** The major version of a Node version string ('20.20.2' → 20). @param {string} version */
export function nodeMajor(version) {
  return Number(version.split('.')[0]);
}

/** The pinned Node binary under the repository's node_modules, or undefined when `npm ci` has not installed it. */
export function pinnedNode() {
  try {
    const pkg = nodeModule.createRequire(import.meta.url).resolve('node/package.json');
    const bin = join(dirname(pkg), 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Returns when this Node can run the sources with the bin's declared Node flags (nodeFlagsOf). When flags are
 * missing (a host ran `node <bin>`), re-executes the bin with them in this same process (process.execve: same
 * pid, same stdio; a host that passes them, as the registry, the images and the benches do, pays nothing).
 * On a Node older than 24, re-executes the bin, with the flags, on the pinned Node as a child, forwards
 * SIGINT/SIGTERM/SIGHUP to it, and exits as it does (never returning); or, with no pinned Node, prints what to do
 * and exits 1.
 * @param {string} binUrl the bin's `import.meta.url`
 * @returns {Promise<void>}
 */
export async function runOnSupportedNode(binUrl) {
  const bin = fileURLToPath(binUrl);
  // The marker is for this process only: a program it starts (a `local` connector, say) applies its own flags.
  const applied = process.env[FLAGS_ENV] !== undefined;
  delete process.env[FLAGS_ENV];
  const missing = applied ? [] : missingNodeFlags(nodeFlagsOf(bin));
  const supported = nodeMajor(process.versions.node) >= MIN_NODE_MAJOR;
  if (supported && missing.length === 0) {
    // For this process only, as the flags' marker (kept through an execve below, which is this same process). The
    // loop guard too: a program this process starts on an older Node (a `local` connector run by `node`) must
    // re-execute on the pinned Node as well, not be told there is none.
    const launcher = Number(process.env[LAUNCHER_ENV]);
    delete process.env[LAUNCHER_ENV];
    delete process.env[REEXEC_ENV];
    if (Number.isInteger(launcher) && launcher > 0) launcherPid = launcher;
    enablePrivateCompileCache();
    return;
  }
  const args = [...process.execArgv, ...missing, bin, ...process.argv.slice(2)];
  if (supported && typeof process.execve === 'function') {
    process.execve(process.execPath, [process.execPath, ...args], { ...process.env, [FLAGS_ENV]: '1' });
  }
  const name = bin.split(/[\\/]/).pop()?.replace(/\.[jt]s$/, '') ?? 'sluice';
  const pinned = supported ? process.execPath : process.env[REEXEC_ENV] === undefined ? pinnedNode() : undefined;
  if (pinned === undefined) {
    const repo = fileURLToPath(new URL('../..', import.meta.url));
    process.stderr.write(`${name}: needs Node.js ${MIN_NODE_MAJOR} or later; this is Node ${process.versions.node} (${process.execPath}).\n` +
      `Run \`npm ci\` in ${repo} (it installs the pinned Node ${MIN_NODE_MAJOR} into node_modules, which this command then uses), ` +
      `or install Node ${MIN_NODE_MAJOR} (https://nodejs.org).\n`);
    process.exit(1);
  }
  // Imported only here, on the way to a re-execution: node:child_process costs every process ~8 ms of CPU to load
  // (issue 16: each connector start), and nothing else a connector does at start needs it.
  const { spawn } = await import('node:child_process');
  // The child leads a process group of its own, so a terminal's Ctrl-C reaches this process only and is forwarded
  // once: in one group the child got it twice (from the terminal and from here), and a second SIGINT forces a
  // stop (plane/src/cli/stop-signals.ts). On Linux, killed with SIGKILL this process cannot forward anything: the
  // child gets SIGTERM from the kernel instead (setpriv's parent-death signal) and stops cleanly — once per thread
  // of this process as they exit, so the child is told this pid to know the repeats for what they are (launcherDied).
  const setpriv = parentDeathSetpriv();
  const child = spawn(setpriv ?? pinned, setpriv ? ['--pdeathsig', 'TERM', '--', pinned, ...args] : args, {
    stdio: 'inherit',
    detached: process.platform !== 'win32',
    env: { ...process.env, [REEXEC_ENV]: process.versions.node, [FLAGS_ENV]: '1', [LAUNCHER_ENV]: setpriv ? String(process.pid) : undefined },
  });
  // A supervisor's signal, or a terminal's, reaches this process; the child must get it too.
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    process.on(signal, () => { if (child.exitCode === null) child.kill(signal); });
  }
  await new Promise((resolve) => {
    child.on('error', (err) => {
      process.stderr.write(`${name}: could not start the pinned Node at ${pinned}: ${err.message}\n`);
      process.exit(1);
    });
    child.on('exit', (code, signal) => {
      if (signal !== null) {
        process.removeAllListeners(signal);
        process.kill(process.pid, signal);
      }
      process.exit(code ?? 1);
      resolve(undefined);
    });
  });
}

/**
 * setpriv when it can set a parent-death signal (Linux, util-linux 2.33 or later: the option is in its binary),
 * else undefined. As runtime/src/host/process-group.ts's parentDeathWrapper, for this plain-JavaScript module.
 * @returns {string | undefined}
 */
function parentDeathSetpriv() {
  if (process.platform !== 'linux' || process.env['SLUICE_PDEATHSIG'] === '0') return undefined;
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    const file = join(dir, 'setpriv');
    try {
      if (dir !== '' && readFileSync(file).includes('--pdeathsig')) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Turns on Node's module compile cache in this user's private cache directory (private-dir.js), unless it is
 * already on (NODE_COMPILE_CACHE) or turned off (NODE_DISABLE_COMPILE_CACHE=1). The sources are TypeScript:
 * without the cache every process and thread starts Node's TypeScript stripper (a WebAssembly module) and
 * strips every module it loads — measured ~1 s of CPU per connector start, paid by each spec/validate/apply of
 * a publication and by each task session. Never at a shared path like <tmpdir>/node-compile-cache (Node's
 * default), where another user could plant compiled code. Returns the directory in use, or undefined.
 * @returns {string | undefined}
 */
export function enablePrivateCompileCache() {
  const current = nodeModule.getCompileCacheDir?.();
  if (current !== undefined) return current;
  if (process.env['NODE_DISABLE_COMPILE_CACHE'] !== undefined && process.env['NODE_DISABLE_COMPILE_CACHE'] !== '') return undefined;
  const dir = privateDir(process.env['SLUICE_COMPILE_CACHE'] || userCacheDir('node-compile-cache'));
  if (dir === undefined) return undefined;
  const result = nodeModule.enableCompileCache?.(dir);
  return result?.directory;
}

/**
 * The source of a `new Worker(source, { eval: true })` bootstrap that turns on this thread's compile cache
 * (a thread does not inherit it) before it imports `moduleUrl`: cached modules skip the TypeScript stripper,
 * which otherwise costs each new thread ~0.4 s of CPU and ~23 MB of RSS.
 * @param {string | URL} moduleUrl @returns {string}
 */
export function threadBootSource(moduleUrl) {
  const dir = nodeModule.getCompileCacheDir?.();
  return `const m = require('node:module'); const dir = ${JSON.stringify(dir ?? null)}; if (dir) m.enableCompileCache(dir); import(${JSON.stringify(String(moduleUrl))});`;
}
