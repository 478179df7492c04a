// Benchmarks say what they need: with no peer program on PATH (Miller, zstd, zcat, sqlite3) each bench
// prints which comparison it skips and how to install the program, measures the rest, and exits 0.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PEERS, hasPeer } from '../bench/peers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function bench(name: string, args: string[], env: Record<string, string> = {}) {
  const empty = mkdtempSync(join(tmpdir(), 'sluice-nopath-'));
  try {
    // PATH holds only sh: every peer found through PATH is missing (the bench spawns node by its absolute path).
    symlinkSync('/bin/sh', join(empty, 'sh'));
    return spawnSync(process.execPath, [join(ROOT, 'bench', `${name}.ts`), ...args], { encoding: 'utf8', env: { ...process.env, PATH: empty, ...env }, timeout: 600_000 });
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}

test('peer lookup: a command on PATH is found, a missing one is not', () => {
  assert.equal(hasPeer({ command: 'sh', label: 'sh', install: '' }), true);
  assert.equal(hasPeer({ command: 'no-such-peer-program', label: 'x', install: '' }), false);
});

test('bench/materialize-sqlite.ts without sqlite3: says so, measures the connector, exits 0', () => {
  const r = bench('materialize-sqlite', [], { BENCH_DOCS: '2000' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.includes(`materialize-sqlite: the sqlite3 CLI is not installed: skipping the baseline (sqlite3 .import of the same rows) and the ratios against it. Install it: ${PEERS.sqlite3.install}\n`), r.stdout);
  assert.match(r.stdout, /delta {5}connector via protocol: 2000 docs in .* docs\/s \(no ratio: sqlite3 absent\)/);
  assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at /, 'no stack trace');
});

test('bench/http-file.ts without Miller, zstd or zcat: says so for each, measures the connector, exits 0', () => {
  const r = bench('http-file', ['--rows', '2000']);
  assert.equal(r.status, 0, r.stderr);
  for (const [p, what] of [[PEERS.zstd, 'the zstd-compressed runs'], [PEERS.miller, 'the Miller comparison (the baseline of the ≥ 2× target)'], [PEERS.zcat, "the gzip decompressor's timing"]] as const) {
    assert.ok(r.stdout.includes(`http-file: ${p.label} is not installed: skipping ${what}. Install it: ${p.install}\n`), r.stdout);
  }
  assert.match(r.stdout, /gzip: source-http-file {2}[\d,]+ rows\/s/);
  assert.doesNotMatch(r.stdout, /Miller {12}/);
  assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at /, 'no stack trace');
});
