import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JournalStore, headerJson } from '../../src/journals/store.ts';
import { journalName, encodePartitionValue, decodePartitionValue } from '../../src/journals/names.ts';
import { UuidProducer, uuidTime } from '@sluice/runtime';
import { tempDir } from './helpers.ts';

test('journal names: unpartitioned, partitioned with sorted labels, encoded values', () => {
  assert.equal(journalName('acmeCo/rides', {}), 'acmeCo/rides/pivot=00');
  assert.equal(journalName('a/b', { region: 'EU', day: '3' }), 'a/b/day=3/region=EU/pivot=00');
  assert.equal(encodePartitionValue('a b/ü'), 'a%20b%2F%C3%BC');
  assert.equal(encodePartitionValue(true), '%_true');
  assert.equal(encodePartitionValue(null), '%_null');
  assert.equal(encodePartitionValue(-12), '-12');
  assert.equal(decodePartitionValue('a%20b%2F%C3%BC'), 'a b/ü');
  assert.throws(() => encodePartitionValue({} as never), /must be a scalar/);
});

test('offsets are the running sum of bytes written, per journal', (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  const r1 = store.commit((tx) => {
    tx.append('c/pivot=00', 'c', {}, '{"a":1}'); // 8 bytes with newline
    tx.append('c/pivot=00', 'c', {}, '{"a":"é"}'); // 11 bytes (é is 2 bytes) + newline = 12
    tx.append('d/pivot=00', 'd', {}, '{}');
  });
  assert.deepEqual(r1.offsets, { 'c/pivot=00': 19, 'd/pivot=00': 3 });
  const r2 = store.commit((tx) => { tx.append('c/pivot=00', 'c', {}, '[]'); });
  assert.deepEqual(r2.offsets, { 'c/pivot=00': 22 });
  assert.equal(r2.header.revision, r1.header.revision + 1);
  assert.deepEqual(store.read('c/pivot=00', 0).map((d) => [d.begin, d.end, d.json]), [[0, 8, '{"a":1}'], [8, 19, '{"a":"é"}'], [19, 22, '[]']]);
  assert.deepEqual(store.read('c/pivot=00', 8, 1).map((d) => d.begin), [8]);
  assert.equal(store.head('c/pivot=00'), 22);
  assert.equal(store.head('nope/pivot=00'), 0);
  assert.deepEqual(store.journals('d'), [{ name: 'd/pivot=00', collection: 'd', labels: {}, head: 3 }]);
});

test('a commit that throws writes nothing, including state', (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  store.commit((tx) => tx.append('c/pivot=00', 'c', {}, '1'));
  assert.throws(() => store.commit((tx) => {
    tx.append('c/pivot=00', 'c', {}, '2');
    tx.append('e/pivot=00', 'e', {}, '3');
    tx.setState('capture/x', { cursor: 1 });
    throw new Error('boom');
  }), /boom/);
  assert.equal(store.head('c/pivot=00'), 2);
  assert.deepEqual(store.journals().map((j) => j.name), ['c/pivot=00']);
  assert.equal(store.getState('capture/x'), undefined);
});

test('state and header survive reopening; raft_term counts opens; cluster id is stable', (t) => {
  const dir = tempDir(t);
  const a = JournalStore.open(dir);
  a.commit((tx) => { tx.append('c/pivot=00', 'c', {}, '1'); tx.setState('k', { v: [1] }); });
  const h1 = a.header();
  a.close();
  const b = JournalStore.open(dir);
  t.after(() => b.close());
  const h2 = b.header();
  assert.equal(h2.cluster_id, h1.cluster_id);
  assert.notEqual(h2.member_id, h1.member_id);
  assert.equal(h2.raft_term, h1.raft_term + 1);
  assert.equal(h2.revision, h1.revision);
  assert.deepEqual(b.getState('k'), { v: [1] });
  assert.match(headerJson(h2), /^\{"cluster_id":\d+,"member_id":\d+,"revision":\d+,"raft_term":\d+\}$/);
  b.setState('k', undefined);
  assert.equal(b.getState('k'), undefined);
});

test('follow yields committed documents as they arrive and stops on abort', async (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  store.commit((tx) => tx.append('c/pivot=00', 'c', {}, '"a"'));
  const ac = new AbortController();
  const seen: string[] = [];
  const reader = (async () => {
    for await (const d of store.follow('c/pivot=00', 0, ac.signal, 5000)) {
      seen.push(d.json);
      if (seen.length === 3) ac.abort();
    }
  })();
  await new Promise((r) => setImmediate(r));
  store.commit((tx) => { tx.append('c/pivot=00', 'c', {}, '"b"'); tx.append('c/pivot=00', 'c', {}, '"c"'); });
  await reader;
  assert.deepEqual(seen, ['"a"', '"b"', '"c"']);
});

test('uuids are version 1, strictly increasing per producer, and carry their time', () => {
  const p = new UuidProducer(new Uint8Array([2, 0, 0, 0, 0, 1]));
  const a = p.next(1_700_000_000_000);
  const b = p.next(1_700_000_000_000);
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-8000-030000000001$/);
  assert.notEqual(a, b);
  assert.equal(uuidTime(a)?.toISOString(), '2023-11-14T22:13:20.000Z');
  assert.equal(uuidTime('not-a-uuid'), undefined);
});

test('staged bytes are invisible until a commit points at them; unreferenced ones are discarded or swept on open', (t) => {
  const dir = tempDir(t);
  const store = JournalStore.open(dir);
  const staged = (s: JournalStore) => s.stagedPieces();
  store.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"a":0}'));
  const a = store.stage(Buffer.from('{"a":1}\n{"a":2}\n'));
  const b = store.stage(Buffer.from('{"a":3}\n'));
  const lost = store.stage(Buffer.from('{"lost":1}\n'));
  assert.throws(() => store.stage(Buffer.from('{"a":4}')), /whole lines/);
  assert.deepEqual(store.read('c/pivot=00', 0).map((d) => d.json), ['{"a":0}'], 'staged lines are not read');
  assert.equal(staged(store), 3);
  // A commit mixing lines and staged pieces keeps their order and offsets.
  const r = store.commit((tx) => {
    tx.append('c/pivot=00', 'c', {}, '{"x":1}');
    tx.appendStaged('c/pivot=00', 'c', {}, a, 16);
    tx.appendBytes('c/pivot=00', 'c', {}, Buffer.from('{"y":1}\n'));
    tx.appendStaged('c/pivot=00', 'c', {}, b, 8);
  });
  assert.equal(r.offsets['c/pivot=00'], 8 + 8 + 16 + 8 + 8);
  const docs = store.read('c/pivot=00', 0);
  assert.deepEqual(docs.map((d) => d.json), ['{"a":0}', '{"x":1}', '{"a":1}', '{"a":2}', '{"y":1}', '{"a":3}']);
  assert.deepEqual(docs.map((d) => d.begin), [0, 8, 16, 24, 32, 40]);
  assert.deepEqual(store.read('c/pivot=00', 24, 2).map((d) => d.json), ['{"a":2}', '{"y":1}']);
  // A piece that is not there (or not that long) fails the commit; a committed piece is never discarded.
  assert.throws(() => store.commit((tx) => tx.appendStaged('c/pivot=00', 'c', {}, lost, 3)), /staged piece \d+ is 11 bytes, not 3/);
  assert.throws(() => store.commit((tx) => tx.appendStaged('c/pivot=00', 'c', {}, 99_999, 3)), /staged piece 99999 is missing/);
  store.discardStaged(a);
  assert.equal(store.read('c/pivot=00', 0).length, 6);
  assert.equal(staged(store), 3);
  store.close();
  // The piece no commit points at (its request never committed: the process died) is swept on open.
  const reopened = JournalStore.open(dir);
  t.after(() => reopened.close());
  assert.equal(staged(reopened), 2);
  assert.deepEqual(reopened.read('c/pivot=00', 0).map((d) => d.json), ['{"a":0}', '{"x":1}', '{"a":1}', '{"a":2}', '{"y":1}', '{"a":3}']);
  const c = reopened.stage(Buffer.from('{"z":1}\n'));
  reopened.discardStaged(c);
  assert.equal(staged(reopened), 2);
});

test('documents live in one file per journal; bytes a crashed commit left past the head are never read and are cut off', async (t) => {
  const { appendFileSync, readdirSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { DatabaseSync } = await import('node:sqlite');
  const dir = tempDir(t);
  const a = JournalStore.open(dir);
  // Over FRAGMENT_BYTES in one commit: several fragments, read back across their boundaries.
  const big = 'x'.repeat(1000);
  a.commit((tx) => { for (let i = 0; i < 5000; i++) tx.append('c/pivot=00', 'c', {}, `{"i":${i},"s":"${big}"}`); });
  const head = a.head('c/pivot=00');
  a.close();
  const files = readdirSync(join(dir, 'journals'));
  assert.equal(files.length, 1);
  const file = join(dir, 'journals', files[0]!);
  assert.equal(statSync(file).size, head, 'the file holds exactly the committed bytes');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  // A commit that crashed after writing its bytes, before its transaction: garbage past the head.
  appendFileSync(file, '{"i":"never committed"}\n{"half');
  // …and a fragment an earlier version wrote as a BLOB, after the file's.
  const db = new DatabaseSync(join(dir, 'journals.db'));
  db.prepare('INSERT INTO fragments (journal, begin_offset, end_offset, data) VALUES ((SELECT id FROM journals), ?, ?, ?)').run(head, head + 10, Buffer.from('{"old":1}\n'));
  db.prepare('UPDATE journals SET head = ?').run(head + 10);
  db.close();

  const b = JournalStore.open(dir);
  t.after(() => b.close());
  const docs = b.read('c/pivot=00', 0, 10_000);
  assert.equal(docs.length, 5001);
  assert.deepEqual(docs.slice(0, 5000).map((d) => (JSON.parse(d.json) as { i: number }).i), Array.from({ length: 5000 }, (_, i) => i));
  assert.equal(docs[5000]!.json, '{"old":1}');
  assert.equal(docs[5000]!.end, head + 10);
  // readLines: the same documents as bytes (across file fragments and into the BLOB one), within limit and maxBytes.
  const all = b.readLines('c/pivot=00', 0, 10_000);
  assert.equal(all.docs, 5001);
  assert.equal(all.end, head + 10);
  assert.equal(all.data.toString('utf8'), docs.map((d) => `${d.json}\n`).join(''));
  const some = b.readLines('c/pivot=00', docs[4000]!.begin, 10, docs[4003]!.begin - docs[4000]!.begin);
  assert.deepEqual([some.docs, some.end], [3, docs[4003]!.begin]);
  assert.equal(some.data.toString('utf8'), docs.slice(4000, 4003).map((d) => `${d.json}\n`).join(''));
  // A budget that ends inside a line takes that line whole (read on past the first read).
  const cut = b.readLines('c/pivot=00', docs[10]!.begin, 100, docs[12]!.begin - docs[10]!.begin + 5);
  assert.deepEqual([cut.docs, cut.end], [3, docs[13]!.begin]);
  // Each result's buffer is its own: moving it to another thread leaves the store's reads intact.
  for (const r of [all, some, cut, b.readLines('c/pivot=00', head, 1)]) structuredClone(r.data, { transfer: [r.data.buffer as ArrayBuffer] });
  assert.equal(b.readLines('c/pivot=00', 0, 10_000).data.toString('utf8'), docs.map((d) => `${d.json}\n`).join(''));
  assert.deepEqual(b.readLines('c/pivot=00', head + 10, 10), { data: Buffer.alloc(0), docs: 0, end: head + 10 });
  assert.equal(b.readLines('nope/pivot=00', 0).docs, 0);
  // The next commit cuts the garbage off and writes at the head (past the BLOB's range: a sparse stretch).
  b.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"new":2}'));
  assert.equal(statSync(file).size, head + 10 + 10);
  assert.deepEqual(b.read('c/pivot=00', head, 10).map((d) => d.json), ['{"old":1}', '{"new":2}']);
});

test('readLines fills buffers handed back with recycle() again, with the right bytes', (t) => {
  const store = JournalStore.open(tempDir(t));
  t.after(() => store.close());
  store.commit((tx) => { for (let i = 0; i < 3000; i++) tx.append('c/pivot=00', 'c', {}, `{"i":${i},"s":"${'y'.repeat(i % 50)}"}`); });
  const expected = store.read('c/pivot=00', 0, 10_000).map((d) => `${d.json}\n`);
  const first = store.readLines('c/pivot=00', 0, 2000);
  assert.equal(first.data.toString('utf8'), expected.slice(0, 2000).join(''));
  const buffer = first.data.buffer as ArrayBuffer;
  store.recycle([buffer]);
  // A smaller read goes into the recycled buffer (a view of its start), with exactly its own bytes.
  const second = store.readLines('c/pivot=00', first.end, 500);
  assert.equal(second.data.buffer, buffer, 'the recycled buffer was filled again');
  assert.equal(second.data.byteLength, second.end - first.end);
  assert.equal(second.data.toString('utf8'), expected.slice(2000, 2500).join(''));
  // A read larger than every spare gets fresh memory; a detached buffer is never kept.
  const moved = structuredClone(second.data.buffer, { transfer: [second.data.buffer as ArrayBuffer] });
  store.recycle([second.data.buffer as ArrayBuffer]);
  const third = store.readLines('c/pivot=00', 0, 3000);
  assert.notEqual(third.data.buffer, buffer);
  assert.equal(third.data.toString('utf8'), expected.join(''));
  assert.ok(moved.byteLength > 0);
});

test('the journals directory is synced before the first commit into a file, and only then', async (t) => {
  const { writeFileSync, existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const dir = tempDir(t);
  const a = JournalStore.open(dir);
  assert.equal(a.directorySyncs, 0);
  // A new file: synced once, then appended to with no further sync.
  a.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"a":1}'));
  assert.equal(a.directorySyncs, 1, 'the commit that created c\'s file');
  a.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"a":2}'));
  assert.equal(a.directorySyncs, 1, 'c\'s file again: no sync');
  // A journal whose bytes are all staged (in the database) has no file yet.
  const piece = a.stage(Buffer.from('{"d":1}\n'));
  a.commit((tx) => tx.appendStaged('d/pivot=00', 'd', {}, piece, 8));
  assert.equal(a.directorySyncs, 1, 'staged bytes need no file');
  a.close();
  const dId = 2;
  assert.equal(existsSync(join(dir, 'journals', `${dId}.jnl`)), false);
  // d's file as a process that created it and died before syncing the directory left it (no committed fragment in it).
  writeFileSync(join(dir, 'journals', `${dId}.jnl`), '{"never":"committed"}\n', { mode: 0o600 });

  const b = JournalStore.open(dir);
  t.after(() => b.close());
  // Reading a file a committed fragment is in, and appending to it: no sync.
  assert.deepEqual(b.read('c/pivot=00', 0).map((d) => d.json), ['{"a":1}', '{"a":2}']);
  b.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"a":3}'));
  assert.equal(b.directorySyncs, 0, 'c\'s file in a new process: no sync');
  // An existing file no committed fragment is in: synced before the commit that records bytes in it.
  b.commit((tx) => tx.append('d/pivot=00', 'd', {}, '{"d":2}'));
  assert.equal(b.directorySyncs, 1, 'd\'s file, left by a creator that may not have synced the directory');
  assert.deepEqual(b.read('d/pivot=00', 0).map((d) => d.json), ['{"d":1}', '{"d":2}']);
  // A new journal in this process: its file is created, so synced.
  b.commit((tx) => tx.append('e/pivot=00', 'e', {}, '{"e":1}'));
  assert.equal(b.directorySyncs, 2);
  // NORMAL (no fsyncs at all): never.
  const c = JournalStore.open(tempDir(t), { synchronous: 'NORMAL' });
  c.commit((tx) => tx.append('c/pivot=00', 'c', {}, '{"a":1}'));
  assert.equal(c.directorySyncs, 0);
  c.close();
});
