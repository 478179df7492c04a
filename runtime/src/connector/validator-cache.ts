// Where compiled config validators (ajv "standalone" code) are kept between connector starts, and the checks
// made before any of that code runs. Compiling a connector's endpoint schema costs ~40 ms of every start; the
// cache turns that into a file read. Code is only ever loaded from a directory that nobody but this user (or
// root) can write — never from a shared temp path — and only when its keyed MAC matches:
//   1. SLUICE_VALIDATOR_CACHE when set (the images point it at a root-owned, read-only directory filled at
//      build time: "precompiled validators ship with the image");
//   2. else $XDG_CACHE_HOME/sluice/validators, else ~/.cache/sluice/validators — created 0700.
// The directory checks are private-dir.js's (shared with Node's compile cache, which the launcher keeps beside
// this one). Each of the directory, its ancestors, the key file and the cached file must be owned by this user or root
// and not writable by group or others (a sticky ancestor such as /tmp is allowed, as it stops others from
// renaming what is ours); anything else and the validator is compiled instead. Every cached file carries
// HMAC-SHA256(key, cache key + code) with a 256-bit key kept in the directory (0600 when we create it).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, fstatSync, lstatSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { getCompileCacheDir } from 'node:module';
import { join, resolve } from 'node:path';
import { makeDirs, untrustedDir, untrustedStat, userCacheDir } from '../private-dir.js';

const CACHE_FORMAT = 2;
const HEADER = '// sluice-validator hmac-sha256 ';

/** The cache directory to use, or null when caching is off (Node's compile cache off and no explicit dir). */
export function validatorCacheDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const explicit = env['SLUICE_VALIDATOR_CACHE'];
  if (explicit !== undefined && explicit !== '') return explicit === 'off' ? null : resolve(explicit);
  // Cached validators follow Node's module compile cache (the bins turn it on; NODE_DISABLE_COMPILE_CACHE=1
  // turns both off), so tests that run the runtime in-process do not write to the user's cache.
  if (getCompileCacheDir() === undefined) return null;
  return userCacheDir('validators', env);
}

function readTrusted(path: string, what: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    // The path must not be a symlink, and the descriptor read must be that same file (no swap in between).
    const st = lstatSync(path);
    const fst = fstatSync(fd);
    if (!st.isFile() || st.ino !== fst.ino || st.dev !== fst.dev || untrustedStat(fst, what, path, false) !== null) return null;
    return readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A directory of MAC'd validator code; `null` from every method when the directory is not safe. */
export class ValidatorCache {
  readonly dir: string;
  /** The key once found; `null` once found missing or untrusted (creating it may still succeed). */
  #key: Buffer | null | undefined;
  constructor(dir: string) {
    this.dir = dir;
  }

  /** The directory's MAC key, creating directory and key when this user may; null when untrusted. */
  private key(create: boolean): Buffer | null {
    if (this.#key !== undefined && (this.#key !== null || !create)) return this.#key;
    if (create) {
      try {
        makeDirs(this.dir, 0o700);
      } catch {
        // Read-only or missing: fall through to the checks, which decide.
      }
    }
    if (untrustedDir(this.dir) !== null) return (this.#key = null);
    const keyFile = join(this.dir, 'key');
    let key = readTrusted(keyFile, 'key file');
    if (key === null && create) {
      try {
        const fd = openSync(keyFile, 'wx', 0o600);
        try {
          writeSync(fd, randomBytes(32));
        } finally {
          closeSync(fd);
        }
      } catch {
        // Another process created it first (read below), or the directory is read-only.
      }
      key = readTrusted(keyFile, 'key file');
    }
    this.#key = key !== null && key.length === 32 ? key : null;
    return this.#key;
  }

  static fileKey(schemaJson: string, ajvVersion: string): string {
    return createHash('sha256').update(`${CACHE_FORMAT}\0${ajvVersion}\0${schemaJson}`).digest('hex').slice(0, 40);
  }

  private mac(key: Buffer, fileKey: string, code: string): string {
    return createHmac('sha256', key).update(fileKey).update('\0').update(code).digest('hex');
  }

  /** The cached code for `fileKey` when its directory, file and MAC all check out; else null. */
  load(fileKey: string): string | null {
    const key = this.key(false);
    if (key === null) return null;
    const bytes = readTrusted(join(this.dir, `${fileKey}.cjs`), 'cached validator');
    if (bytes === null) return null;
    const text = bytes.toString('utf8');
    const nl = text.indexOf('\n');
    if (nl < 0 || !text.startsWith(HEADER)) return null;
    const got = Buffer.from(text.slice(HEADER.length, nl), 'utf8');
    const code = text.slice(nl + 1);
    const want = Buffer.from(this.mac(key, fileKey, code), 'utf8');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return null;
    return code;
  }

  /** Stores code (best effort: an unwritable or untrusted cache only costs the compile next time). */
  store(fileKey: string, code: string): void {
    const key = this.key(true);
    if (key === null) return;
    try {
      const file = join(this.dir, `${fileKey}.cjs`);
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${HEADER}${this.mac(key, fileKey, code)}\n${code}`, { mode: 0o600 });
      renameSync(tmp, file);
    } catch {
      // Read-only (e.g. an image's precompiled directory at run time).
    }
  }
}
