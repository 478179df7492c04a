// The state rules (state.ts) and the file name (connector.ts) on their own: upstream's Validate, its skip
// rules, the patches at file and sweep ends, Sluice's earlier shape, and the name upstream derives.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../src/errors.ts';
import { fileNameOf } from '../src/file-names.ts';
import { fileDonePatch, formatTime, horizonOf, midFilePatch, patchChanges, readState, skipReason, sweepDonePatch, ZERO_TIME } from '../src/state.ts';

const FILE = { name: 'data.csv', url: 'https://h.example/a/data.csv' };
const LM = Date.parse('2015-10-21T07:28:00Z');

describe('state', () => {
  test('the file name: last segment of the decoded path, not trimmed, no query', () => {
    assert.equal(fileNameOf('https://u:p@h.example/a/My%20File.csv?sig=x#f'), 'My File.csv');
    assert.equal(fileNameOf('https://h.example/a/b%2Fc.csv'), 'c.csv');
    assert.equal(fileNameOf('https://h.example/dir/'), '');
    assert.equal(fileNameOf('https://h.example'), '');
    assert.equal(fileNameOf('https://h.example/a+b%C3%A9.csv'), 'a+bé.csv');
    assert.equal(fileNameOf('https://h.example/%FF.csv'), '\ufffd.csv');
  });

  test('times as Go writes them; the horizon is now + 2 s rounded to the second', () => {
    assert.equal(formatTime(LM), '2015-10-21T07:28:00Z');
    assert.equal(formatTime(LM + 250), '2015-10-21T07:28:00.25Z');
    assert.equal(formatTime(Date.parse(ZERO_TIME)), ZERO_TIME);
    assert.equal(horizonOf(LM + 400), LM + 2000);
    assert.equal(horizonOf(LM + 600), LM + 3000);
  });

  test('upstream\'s Validate rules refuse bad states with a clear error', () => {
    const bad = (s: object, msg: RegExp): void => assert.throws(() => readState(s, 'k', FILE), (e: unknown) => e instanceof ConfigError && msg.test(e.message));
    bad({ minBound: '2016-01-01T00:00:00Z', maxMod: '2015-01-01T00:00:00Z' }, /binding 'k' is invalid: expected maxMod > minBound/);
    bad({ minBound: '2016-01-01T00:00:00Z', maxBound: '2015-01-01T00:00:00Z' }, /expected maxBound > minBound/);
    bad({ maxBound: '2015-01-01T00:00:00Z', maxMod: '2016-01-01T00:00:00Z' }, /expected maxBound > maxMod/);
    bad({ path: '', records: 3 }, /expected records == 0 if path is empty/);
    bad({ path: '', complete: true }, /expected !complete if path is empty/);
    bad({ minBound: 'yesterday' }, /minBound 'yesterday' is not an RFC 3339 time/);
    bad({ records: '3' }, /records must be an integer/);
  });

  test('skip rules as upstream', () => {
    const s = readState({ minBound: '2015-10-21T07:28:00Z', maxBound: '2030-01-01T00:00:00Z' }, 'k', FILE);
    assert.match(skipReason(s, 'data.csv', LM, 10) ?? '', /unchanged since the last capture/);
    assert.equal(skipReason(s, 'data.csv', LM + 1000, 10), null);
    assert.match(skipReason(s, 'data.csv', Date.parse('2030-01-01T00:00:00Z'), 10) ?? '', /not before this sweep's bound/);
    assert.match(skipReason(s, 'data.csv', LM + 1000, 0) ?? '', /empty/);
    const mid = readState({ path: 'zzz.csv', records: 2, maxMod: '2015-10-21T07:28:00Z' }, 'k', FILE);
    assert.match(skipReason(mid, 'data.csv', LM, 10) ?? '', /sorts after 'data.csv'/);
    const done = readState({ path: 'data.csv', complete: true, maxMod: '2015-10-21T07:28:00Z', maxBound: '2030-01-01T00:00:00Z' }, 'k', FILE);
    assert.match(skipReason(done, 'data.csv', LM, 10) ?? '', /captured completely in this sweep/);
  });

  test('patches: mid-file carries the extras, a completed file and a finished sweep remove them', () => {
    const sweep = { minBound: ZERO_TIME, maxBound: '2030-01-01T00:00:00Z', maxMod: '2015-10-21T07:28:00Z', path: 'data.csv', records: 5, complete: false };
    assert.deepEqual(midFilePatch(sweep, { etag: '"e"', byteOffset: 10, csv: null, parquet: null }), { ...sweep, etag: '"e"', byteOffset: 10, csv: null, parquet: null });
    assert.deepEqual(midFilePatch({ ...sweep, path: '' }, { etag: null, byteOffset: null, csv: null, parquet: null })['records'], 0);
    assert.deepEqual(fileDonePatch(sweep), { ...sweep, records: 0, complete: true, etag: null, byteOffset: null, csv: null, parquet: null });
    const finished = sweepDonePatch(sweep);
    assert.deepEqual(finished, { minBound: '2015-10-21T07:28:00Z', maxBound: null, maxMod: null, path: '', records: 0, complete: false, etag: null, byteOffset: null, csv: null, parquet: null });
    assert.equal(patchChanges({ minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false }, finished), false);
    assert.equal(patchChanges({ minBound: '2015-10-21T07:28:00Z', path: '', records: 0, complete: false, maxBound: '2030-01-01T00:00:00Z' }, finished), true);
    assert.equal(patchChanges(undefined, finished), true);
  });

  test('Sluice\'s earlier shape: complete → minBound; mid-file of the same URL (query ignored) → resumable; another URL → dropped', () => {
    assert.deepEqual(readState({ path: 'https://h.example/a/data.csv?sig=1', maxMod: '2015-10-21T07:28:00Z', minBound: '2015-10-21T07:28:00Z', records: 9, complete: true }, 'k', FILE),
      { minBound: '2015-10-21T07:28:00Z', maxBound: null, maxMod: null, path: '', records: 0, complete: false, etag: null, byteOffset: null, csv: null, parquet: null });
    const mid = readState({ path: 'https://h.example/a/data.csv?sig=1', maxMod: '2015-10-21T07:28:00Z', etag: '"e"', records: 7, byteOffset: 70, complete: false }, 'k', FILE);
    assert.deepEqual([mid.path, mid.records, mid.etag, mid.byteOffset, mid.minBound], ['data.csv', 7, '"e"', 70, ZERO_TIME]);
    const other = readState({ path: 'https://other.example/x.csv', maxMod: '2015-10-21T07:28:00Z', records: 7, complete: false }, 'k', FILE);
    assert.deepEqual([other.path, other.records, other.minBound], ['', 0, ZERO_TIME]);
  });
});
