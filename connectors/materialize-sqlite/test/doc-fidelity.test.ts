// Integers beyond ±2^53 in a document stay exact on the connector's whole path (data is sacred): stored in
// the document column as the text that came, and sent back in `loaded` as the same digits, through the real
// bin and a real SQLite file. A reducing collection combines the loaded document with new ones, so a rounded
// `loaded` would change the stored value on its next update.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { packTupleBase64 } from '@sluice/runtime';
import type { JsonObject, TupleValue } from '@sluice/runtime';
import { ALL_TYPES_VALUES, allTypesCollection, binding, materialization } from './helpers/fixtures.ts';
import { ConnectorProcess, unary } from './helpers/driver.ts';

const dir = mkdtempSync(join(tmpdir(), 'mat-sqlite-doc-fidelity-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a document with integers beyond 2^53 is stored and loaded back with the same digits', async () => {
  const path = join(dir, 'fidelity.db');
  const spec = materialization(path, [binding('all_types', allTypesCollection(), { keys: ['id'], values: ALL_TYPES_VALUES, document: 'flow_document' })]);
  await unary({ apply: { materialization: spec as unknown as JsonObject, version: 'v1' } });
  const open = { open: { materialization: spec as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } };
  const required: Record<string, TupleValue> = { '_meta/op': 'c', bool: true, flow_published_at: '2024-05-01T10:00:00Z', str: 's', int: 9007199254740993n };
  const values: TupleValue[] = ALL_TYPES_VALUES.map((f) => required[f] ?? null);
  // 2^53 + 1 (an i64), and numbers no double holds: one far beyond i64, one negative, one inside an array.
  const doc = '{"_meta":{"op":"c","uuid":"2024-05-01T10:00:00Z"},"id":7,"bool":true,"str":"s","int":9007199254740993,"big":123456789012345678901234567890,"neg":-9223372036854775809,"list":[18446744073709551615]}';

  const p = new ConnectorProcess();
  test.after(() => p.kill());
  p.send(open);
  await p.expect('opened');
  p.send({ acknowledge: {} });
  await p.expect('acknowledged');
  p.send({ flush: {} });
  await p.expect('flushed');
  p.child.stdin.write(`{"store":{"keyPacked":"${packTupleBase64([7])}","valuesPacked":"${packTupleBase64(values)}","doc":${doc}}}\n`);
  await p.commitAndAcknowledge({ sources: {} });
  // The next transaction loads the key: the document comes back with every digit.
  p.child.stdin.write(`{"load":{"keyPacked":"${packTupleBase64([7])}"}}\n`);
  p.send({ flush: {} });
  const loaded = await p.readText();
  assert.ok(loaded.startsWith('{"loaded":'), `expected "loaded", got ${loaded.slice(0, 200)}`);
  for (const digits of ['9007199254740993', '123456789012345678901234567890', '-9223372036854775809', '[18446744073709551615]']) {
    assert.ok(loaded.includes(digits), `loaded document keeps ${digits}: ${loaded}`);
  }
  await p.expect('flushed');
  await p.commitAndAcknowledge({ sources: {} });
  assert.equal(await p.end(), 0, p.stderr);

  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const row = db.prepare('SELECT flow_document FROM all_types WHERE id = 7').get() as { flow_document: string };
    assert.equal(row.flow_document, doc, 'the document column holds the text as it came');
  } finally {
    db.close();
  }
});
