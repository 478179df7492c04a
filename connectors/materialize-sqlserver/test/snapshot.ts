// Exact-text snapshots beside the tests: `UPDATE_SNAPSHOTS=1` rewrites them, otherwise a difference fails.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function matchSnapshot(name: string, actual: string): void {
  const file = join(import.meta.dirname, 'snapshots', name);
  if (process.env.UPDATE_SNAPSHOTS === '1' || !existsSync(file)) {
    if (process.env.UPDATE_SNAPSHOTS !== '1' && process.env.CI === 'true') {
      assert.fail(`snapshot ${file} is missing; run with UPDATE_SNAPSHOTS=1 and commit it`);
    }
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  assert.equal(actual, readFileSync(file, 'utf8'), `snapshot ${name} differs; if the change is intended, rerun with UPDATE_SNAPSHOTS=1`);
}
