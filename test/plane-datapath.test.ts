// The plane's data path under `serve`, end to end through real connector processes: documents keep
// their exact bytes (integers beyond ±2^53 included) from capture through journals to SQLite, and
// deletions (`_meta/op = "d"`) reach the table as hard deletes when the connector's hardDelete is on
// and as soft deletes (the row keeps the deletion document) when it is off.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { until } from '@sluice/runtime/testing';
import { startPlane } from '../plane/src/cli/serve.ts';

const LINES_CAPTURE = fileURLToPath(new URL('./fixtures/lines-capture.ts', import.meta.url));

const DOCS = [
  '{"id":1,"name":"one"}',
  '{"id":2,"name":"two"}',
  '{"id":9007199254740993,"v":1234567890123456789,"name":"big"}',
  '{"id":9007199254740992,"v":-9223372036854775808,"name":"big-1"}',
];

function catalog(dir: string): string {
  const sqlite = (file: string, hardDelete: boolean) => `
    endpoint:
      connector:
        image: ghcr.io/sluice-dev/materialize-sqlite:v1
        config: {path: ${JSON.stringify(join(dir, file))}, hardDelete: ${hardDelete}}
    bindings:
      - source: acmeCo/things
        resource: {table: things}`;
  return `
collections:
  acmeCo/things:
    schema:
      type: object
      properties:
        id: {type: integer}
        v: {type: integer}
        name: {type: string}
      required: [id]
    key: [/id]
captures:
  acmeCo/lines:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(LINES_CAPTURE)}]
        config: {docs: ${JSON.stringify(DOCS)}}
    bindings:
      - resource: {name: things}
        target: acmeCo/things
materializations:
  acmeCo/hard:${sqlite('hard.db', true)}
  acmeCo/soft:${sqlite('soft.db', false)}
`;
}

function query(file: string, sql: string): Record<string, unknown>[] {
  const db = new DatabaseSync(file, { readOnly: true, readBigInts: true });
  try { return db.prepare(sql).all().map((r) => ({ ...r })); } finally { db.close(); }
}

/** `query`, or undefined while the file or its table is not there yet (what an `until` polls through). */
function queryIfReady(file: string, sql: string): Record<string, unknown>[] | undefined {
  try {
    return query(file, sql);
  } catch (err) {
    // The connector may hold its write lock (creating the table, a WAL checkpoint) as this polls.
    if (/unable to open|no such table|database is locked/.test((err as Error).message)) return undefined;
    throw err;
  }
}

test('serve: exact integers from capture to SQLite; deletions are hard with hardDelete on and soft with it off', { timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-datapath-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'flow.yaml');
  writeFileSync(file, catalog(dir));
  const running = await startPlane({ catalogFile: file, dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, ingestPort: 0, log: () => undefined });
  t.after(() => running.close());
  assert.equal(running.first.result, 'success');

  // Journals hold the connector's bytes with the UUID spliced in.
  const journal = await until('the capture to commit', () => {
    const j = running.plane.store.journals('acmeCo/things')[0];
    return j !== undefined && j.head > 0 ? j : undefined;
  });
  const lines = running.plane.store.read(journal.name, 0, 100).map((d) => d.json);
  assert.equal(lines.length, 4);
  for (const [i, line] of lines.entries()) {
    assert.match(line, /,"_meta":\{"uuid":"[0-9a-f-]{36}"\}\}$/);
    assert.equal(line.replace(/,"_meta":\{"uuid":"[0-9a-f-]{36}"\}\}$/, '}'), DOCS[i]);
  }

  for (const db of ['hard.db', 'soft.db']) {
    const rows = await until(`4 rows in ${db}`, () => {
      const r = queryIfReady(join(dir, db), 'SELECT id, v, name, flow_document FROM things ORDER BY id');
      return r?.length === 4 ? r : undefined;
    });
    // Two keys one apart beyond 2^53 are two rows; INTEGER columns and flow_document hold every digit.
    assert.deepEqual(rows.map((r) => [r.id, r.v, r.name]), [
      [1n, null, 'one'], [2n, null, 'two'], [9007199254740992n, -9223372036854775808n, 'big-1'], [9007199254740993n, 1234567890123456789n, 'big'],
    ]);
    assert.match(String(rows[3]!.flow_document), /^\{"id":9007199254740993,"v":1234567890123456789,"name":"big","_meta":\{"uuid":"[0-9a-f-]{36}"\}\}$/);
  }

  // A deletion, ingested over HTTP.
  const res = await fetch(running.ingestUrl, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'acmeCo/things': [{ id: 2, _meta: { op: 'd' } }] }) });
  assert.equal(res.status, 200, await res.text());
  await until('the row of id 2 to leave hard.db', () => queryIfReady(join(dir, 'hard.db'), 'SELECT id FROM things WHERE id = 2')?.length === 0);
  assert.deepEqual(query(join(dir, 'hard.db'), 'SELECT id FROM things ORDER BY id').map((r) => r.id), [1n, 9007199254740992n, 9007199254740993n]);
  const soft = await until('the deletion document in soft.db', () => {
    const r = queryIfReady(join(dir, 'soft.db'), 'SELECT name, flow_document FROM things WHERE id = 2');
    return r?.length === 1 && String(r[0]!.flow_document).includes('"op":"d"') ? r[0] : undefined;
  });
  assert.equal(soft.name, null, 'the soft-deleted row holds the deletion document');
  assert.equal(query(join(dir, 'soft.db'), 'SELECT count(*) AS n FROM things')[0]!.n, 4n);
});
