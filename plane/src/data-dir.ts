// The plane's data directory holds refresh-token hashes and the JWT signing key (control.db,
// jwt-signing-key), every journal (journals.db and journals/) and lock files: only its owner may read it (issue 17.11).
// The directory is 0700 and its files 0600 — created so, and fixed (with a warning) when found looser,
// e.g. a data dir made by an older Sluice (0755 / 0644).
import { chmodSync, closeSync, lstatSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '@sluice/runtime';
import { makeDirs } from '@sluice/runtime/private-dir';

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;

/**
 * Creates `dir` (0700) and its missing parents. Not `mkdirSync(dir, {recursive: true})`: under /proc that
 * never returns (`sluice serve --data /proc/x` spun at full CPU); makeDirs fails with ENOENT instead.
 */
export function makeDataDir(dir: string): void {
  try {
    makeDirs(dir, DATA_DIR_MODE);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOTDIR' ? 'a part of its path is a file, not a directory' : e.code === 'ENOENT' ? 'a directory on its path cannot be created there' : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied' : e.code === 'EROFS' ? 'the filesystem is read-only' : (e.message ?? String(err));
    throw new SluiceError('DATA_DIR', `cannot create the data dir ${dir}: ${why} (${e.code ?? 'error'}). Choose another with --data-dir DIR or SLUICE_DATA_DIR.`, { cause: err });
  }
  if (!statSync(dir).isDirectory()) {
    throw new SluiceError('DATA_DIR', `the data dir ${dir} exists and is not a directory. Choose another with --data-dir DIR or SLUICE_DATA_DIR, or remove that file.`);
  }
}

/**
 * Creates `file` empty with mode 0600 when it does not exist, so that SQLite (which gives its -wal and -shm files
 * the database file's mode) and every later writer find it private.
 */
export function makePrivateFile(file: string): void {
  try {
    closeSync(openSync(file, 'wx', DATA_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * Creates the data dir if needed and makes it and everything in it private: directories 0700, files 0600
 * (symbolic links are left alone). Returns what was changed, one line each, after calling `warn` once with
 * a summary when anything was.
 */
export function secureDataDir(dir: string, warn: (message: string) => void = () => undefined): string[] {
  makeDataDir(dir);
  const changed: string[] = [];
  const fix = (path: string, want: number): void => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return; // removed meanwhile
    }
    if (st.isSymbolicLink()) return;
    const mode = st.mode & 0o777;
    // Only take permissions away: a file the owner made read-only stays read-only.
    const target = mode & want;
    if (mode !== target) {
      chmodSync(path, target);
      changed.push(`${path}: ${mode.toString(8).padStart(4, '0')} → ${target.toString(8).padStart(4, '0')}`);
    }
    if (st.isDirectory()) for (const name of readdirSync(path)) fix(join(path, name), lstatSync(join(path, name)).isDirectory() ? DATA_DIR_MODE : DATA_FILE_MODE);
  };
  fix(dir, DATA_DIR_MODE);
  if (changed.length > 0) {
    warn(`data dir ${dir} was readable by other users; made it 0700 and its files 0600 (${changed.length} change${changed.length === 1 ? '' : 's'}: ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ', …' : ''})`);
  }
  return changed;
}
