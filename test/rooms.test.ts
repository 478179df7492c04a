// The rooms of the repository, as docs/architecture.md states them ("Rooms: one line per folder"), hold for the
// code: every folder with code has a row, every row names a folder that exists, and every relative or
// `@sluice/*` import lands in a folder its row allows. The table is the rule; this test only reads it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.turbo', 'coverage']);
const CODE = /\.(ts|js|mjs)$/;

interface Room { folder: string; mayImport: Set<string> | 'anything' }

function readRooms(): Map<string, Room> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const start = doc.indexOf('## Rooms: one line per folder');
  assert.ok(start >= 0, 'docs/architecture.md has no "## Rooms: one line per folder" section');
  const end = doc.indexOf('\n## ', start + 1);
  const rooms = new Map<string, Room>();
  for (const line of doc.slice(start, end < 0 ? undefined : end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const folder = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!folder) continue;
    const allowed = cells[3] ?? '';
    const mayImport = allowed === 'anything'
      ? 'anything' as const
      : new Set([...allowed.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    assert.ok(!rooms.has(folder), `docs/architecture.md lists the room ${folder} twice`);
    rooms.set(folder, { folder, mayImport });
  }
  return rooms;
}

/** Folders under the repository root holding code files directly, as paths relative to the root. */
function codeFolders(dir = ROOT, out = new Map<string, string[]>()): Map<string, string[]> {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) codeFolders(path, out);
    else if (CODE.test(name) && dir !== ROOT) {
      const folder = relative(ROOT, dir);
      out.set(folder, [...out.get(folder) ?? [], path]);
    }
  }
  return out;
}

/** `@sluice/<pkg>[/sub]` → the folder its package.json export points at. */
function packageExports(): Map<string, string> {
  const exports = new Map<string, string>();
  const workspaces = ['runtime', 'plane', ...readdirSync(join(ROOT, 'connectors')).map((c) => `connectors/${c}`)];
  for (const ws of workspaces) {
    const pkgPath = join(ROOT, ws, 'package.json');
    if (!existsSync(pkgPath)) continue;
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { name: string; exports?: Record<string, string> };
    for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
      exports.set(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`, relative(ROOT, dirname(join(ROOT, ws, target))));
    }
  }
  return exports;
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

test('docs/architecture.md has one row per folder that holds code, and no row for a folder that does not', () => {
  const rooms = readRooms();
  const folders = codeFolders();
  const missing = [...folders.keys()].filter((f) => !rooms.has(f)).sort();
  assert.deepEqual(missing, [], `folders with code but no row in docs/architecture.md's Rooms table: ${missing.join(', ')} — add a row saying what lives there and what it may import`);
  const stale = [...rooms.keys()].filter((f) => !folders.has(f)).sort();
  assert.deepEqual(stale, [], `rows in docs/architecture.md's Rooms table for folders without code: ${stale.join(', ')} — remove or fix them`);
});

test('every import lands in a folder its room may import', () => {
  const rooms = readRooms();
  const exports = packageExports();
  const wrong: string[] = [];
  for (const [folder, files] of codeFolders()) {
    const room = rooms.get(folder);
    if (!room || room.mayImport === 'anything') continue;
    for (const file of files) {
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(IMPORT)) {
        const spec = (m[1] ?? m[2])!;
        let target: string | undefined;
        if (spec.startsWith('.')) {
          if (spec.endsWith('.json')) continue; // package.json and data files are not rooms
          target = relative(ROOT, dirname(resolve(dirname(file), spec)));
        } else if (spec.startsWith('@sluice/')) {
          target = exports.get(spec);
          if (target === undefined) wrong.push(`${relative(ROOT, file)}: ${spec} is not an export of a workspace package`);
        }
        if (target === undefined || target === folder) continue;
        if (!room.mayImport.has(target)) wrong.push(`${relative(ROOT, file)} imports ${spec} (${target}), which the room ${folder} may not import`);
      }
    }
  }
  assert.deepEqual(wrong, [], `imports outside their room (docs/architecture.md, "Rooms"):\n${wrong.join('\n')}`);
});

test('the room check sees a forbidden import', () => {
  // The regular expression must find the import forms the code uses, or the test above passes vacuously.
  const sample = `import { a } from '../x.ts';\nimport type { B } from "@sluice/runtime";\nexport { c } from './c.ts';\nconst m = await import('../y.ts');`;
  assert.deepEqual([...sample.matchAll(IMPORT)].map((m) => m[1] ?? m[2]), ['../x.ts', '@sluice/runtime', './c.ts', '../y.ts']);
});
