// A poison document (#17.1, #17.2): an integer that an INTEGER column cannot hold enters through
// /ingest (the schema sets no maximum, so ingest cannot tell) and fails the materialization. The task
// must back off (growing delays, the true count in the log), report `error` with a message naming the
// collection, the key, the field and the fix, and recover once a later document supersedes it.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { runTokenCommand } from '../../plane/src/cli/token.ts';
import { startPlane } from '../../plane/src/cli/serve.ts';
import { ingest, tempDir } from './helpers.ts';
import { until } from '@sluice/runtime/testing';

interface Item { summary: { status: string; message: string }; controller_error?: string; controller_failures?: number }

test('poison document: back-off grows, status is error naming collection, key, field and fix; superseding it recovers', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  const dataDir = join(dir, 'data');
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}, v: {type: integer}}, required: [id]}
    key: [/id]
materializations:
  hostile/to-sqlite:
    endpoint: {sqlite: {path: out.db}}
    bindings:
      - source: hostile/events
        resource: {table: events}
`);
  const logs: string[] = [];
  const running = await startPlane({
    catalogFile: join(dir, 'flow.yaml'), dataDir, host: '127.0.0.1', port: 0, ingestPort: 0, watch: false,
    log: (m) => logs.push(m), backoff: { baseMs: 200, maxMs: 60_000 },
  });
  t.after(() => running.close());
  assert.equal(running.first.result, 'success', running.first.errors.join('\n'));

  let printed = '';
  assert.equal(await runTokenCommand(['create', '--data-dir', dataDir], { out: (s) => { printed += s; }, err: (s) => { printed += s; } }), 0);
  const [, id, secret] = /id: +([0-9a-f]{16})[\s\S]*secret: +(\S+)/.exec(printed) ?? [];
  const exchanged = await fetch(`${running.apiUrl}/auth/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: id, secret }) });
  const { access_token: token } = await exchanged.json() as { access_token: string };
  const status = async (): Promise<Item> => {
    const res = await fetch(`${running.apiUrl}/catalog/status?name=hostile/to-sqlite`, { headers: { Authorization: `Bearer ${token}` } });
    return ((await res.json()) as Item[])[0]!;
  };

  const poison = await ingest(running.ingestUrl, '{"hostile/events": [{"id": 1, "v": 123456789012345678901234567890}, {"id": 2, "v": 5}]}');
  assert.equal(poison.status, 200, poison.body);

  // Back-off: three failures in a row, each retry later than the last (200 ms, 400 ms, 800 ms).
  const failures = () => logs.filter((l) => l.startsWith('hostile/to-sqlite: failed'));
  await until('three failures of the materialization', () => failures().length >= 3, { ms: 60_000, detail: () => logs.join('\n') });
  const [f1, f2, f3] = failures();
  assert.match(f1!, /^hostile\/to-sqlite: failed once, retrying in 200 ms: /);
  assert.match(f2!, /^hostile\/to-sqlite: failed 2 times in a row, retrying in 400 ms: /);
  assert.match(f3!, /^hostile\/to-sqlite: failed 3 times in a row, retrying in 800 ms: /);

  // Status: error, with the failure message — collection, key, field and how to fix it.
  const failing = await status();
  assert.equal(failing.summary.status, 'error', JSON.stringify(failing));
  assert.match(failing.summary.message, /^task shard failed (once|\d+ times in a row), next retry at .* UTC: /);
  assert.match(failing.summary.message, /events \(collection hostile\/events\): cannot write value field 'v' \(INTEGER\) of the document with key \[1\]: 123456789012345\d+ is outside the 64-bit integer range of an INTEGER column; declare a maximum in the schema so the field maps to TEXT/);
  assert.ok((failing.controller_failures ?? 0) >= 1);

  // Superseded: the same key with a value that fits. The next retry reduces both and commits.
  assert.equal((await ingest(running.ingestUrl, '{"hostile/events": [{"id": 1, "v": 7}]}')).status, 200);
  const db = join(dir, 'out.db');
  const rows = () => {
    try {
      const conn = new DatabaseSync(db, { readOnly: true });
      try { return conn.prepare('SELECT id, v FROM events ORDER BY id').all().map((r) => `${String(r.id)}=${String(r.v)}`).join(','); } finally { conn.close(); }
    } catch { return ''; }
  };
  await until('the table to hold the superseding value', () => rows() === '1=7,2=5', { ms: 120_000, detail: () => `rows: ${rows()}\n${logs.join('\n')}` });
  const recovered = await until('the status to clear', async () => { const s = await status(); return s.summary.status === 'ok' ? s : undefined; }, { ms: 30_000 });
  assert.equal(recovered.controller_error, undefined);
  assert.equal(recovered.controller_failures, undefined);
  assert.equal(running.plane.runners.get('hostile/to-sqlite')?.failures, 0);
});
