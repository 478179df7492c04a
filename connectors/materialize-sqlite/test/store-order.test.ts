// Stores of one transaction apply in order: the tables must equal a model applying one store after the
// other — a key repeated within a transaction (the later store wins), hard deletes between stores and of a key
// stored earlier in the same transaction, a deletion of a key never stored (skipped), several bindings
// interleaved — and the document column holds the document exactly as the request line carried it.
// (Written when stores went through 32-row statements; kept as the store path's ordering test.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64 } from '@sluice/runtime';
import type { JsonObject } from '@sluice/runtime';
import { binding, materialization, twoKeyCollection } from './helpers/fixtures.ts';
import { ConnectorProcess, checkpointOf, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-store-order-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

interface Op { binding: number; tenant: string; seq: number; value: number | null; del?: boolean; exists?: boolean }

/** The document's JSON text as the line carries it: `1.50` and the spacing would not survive re-serialising. */
function docText(op: Op): string {
  const uuid = `2024-05-01T00:00:${String(op.seq % 60).padStart(2, '0')}Z`;
  return `{"_meta":{"uuid":"${uuid}","op":"${op.del ? 'd' : 'u'}"}, "tenant":${JSON.stringify(op.tenant)},"seq":${op.seq},"value":${op.value},"exact":1.50}`;
}

function storeLine(op: Op): string {
  const body: JsonObject = {
    ...(op.binding === 0 ? {} : { binding: op.binding }),
    keyPacked: packTupleBase64([op.tenant, op.seq]),
    valuesPacked: packTupleBase64([`2024-05-01T00:00:${String(op.seq % 60).padStart(2, '0')}Z`, op.value]),
    ...(op.exists ? { exists: true } : {}),
    ...(op.del ? { delete: true } : {}),
  };
  const json = JSON.stringify({ store: body });
  return op.binding === 1 ? `${json}\n` : `${json.slice(0, -2)},"doc":${docText(op)}}}\n`;
}

test('stores apply in order: the tables equal one store applied after the other', async () => {
  const path = join(dir, 'order.db');
  const spec = materialization(path, [
    binding('std', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'], document: 'flow_document' }),
    binding('delta', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'] }, { delta: true }),
    binding('std2', twoKeyCollection(), { keys: ['tenant', 'seq'], values: ['flow_published_at', 'value'], document: 'flow_document' }),
  ], { hardDelete: true });
  await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });

  // Transaction 1: 100 rows per binding interleaved, keys repeated a few rows later (the later row must win).
  const t1: Op[] = [];
  for (let i = 0; i < 100; i++) {
    for (const b of [0, 1, 2]) t1.push({ binding: b, tenant: `t${i % 3}`, seq: i, value: i * 10 + b });
    if (i === 5) t1.push({ binding: 0, tenant: 't0', seq: 3, value: -3 });
    if (i === 2) t1.push({ binding: 2, tenant: 't1', seq: 1, value: -1 });
  }
  // Transaction 2: updates, hard deletes between stores, a delete of a key stored earlier in this same
  // transaction (after it).
  const t2: Op[] = [];
  for (let i = 0; i < 40; i++) {
    t2.push({ binding: 0, tenant: `t${i % 3}`, seq: i, value: i % 5 === 0 ? null : 1000 + i, exists: true, del: i % 7 === 0 });
    t2.push({ binding: 1, tenant: 'd', seq: i, value: i });
  }
  t2.push({ binding: 0, tenant: 'new', seq: 1, value: 1 });
  t2.push({ binding: 0, tenant: 'new', seq: 1, value: 1, exists: true, del: true });
  t2.push({ binding: 2, tenant: 'never', seq: 1, value: 1, del: true }); // never stored: skipped

  const p = new ConnectorProcess();
  p.send({ open: { materialization: spec as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } });
  await p.expect('opened');
  for (const [n, ops] of [t1, t2].entries()) {
    p.send({ acknowledge: {} });
    await p.expect('acknowledged');
    p.send({ flush: {} });
    await p.expect('flushed');
    p.child.stdin.write(ops.map(storeLine).join(''));
    p.send({ startCommit: { runtimeCheckpoint: checkpointOf(n + 1) } });
    await p.expect('startedCommit');
  }
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  assert.equal(await p.end(), 0, p.stderr);

  // The model: one statement per store, in order.
  const std = [new Map<string, Op>(), undefined, new Map<string, Op>()];
  const delta: Op[] = [];
  for (const op of [...t1, ...t2]) {
    if (op.binding === 1) { delta.push(op); continue; }
    const m = std[op.binding]!;
    const k = `${op.tenant}/${op.seq}`;
    if (op.del) m.delete(k);
    else m.set(k, op);
  }
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    for (const [b, table] of [[0, 'std'], [2, 'std2']] as const) {
      const got = db.prepare(`SELECT tenant, seq, value, flow_document FROM ${table} ORDER BY tenant, seq`).all();
      const want = [...std[b]!.values()].sort((x, y) => (x.tenant < y.tenant ? -1 : x.tenant > y.tenant ? 1 : x.seq - y.seq));
      assert.deepEqual(got.map((r) => [r.tenant, r.seq, r.value]), want.map((o) => [o.tenant, o.seq, o.value]), table);
      // The stored document is byte for byte the `doc` text of the request line.
      for (const [i, r] of got.entries()) assert.equal(r.flow_document, docText(want[i]!));
    }
    const got = db.prepare('SELECT tenant, seq, value FROM delta ORDER BY rowid').all();
    assert.deepEqual(got.map((r) => [r.tenant, r.seq, r.value]), delta.map((o) => [o.tenant, o.seq, o.value]));
  } finally {
    db.close();
  }
});
