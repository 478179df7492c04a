// `sluice raw` against the built-in connectors: a real capture over loopback HTTP and a real
// materialization into a SQLite file.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { sluice } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-raw-builtin-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('sluice raw source-http-file capture', () => {
  const csv = 'id,name\n1,alpha\n2,beta\n';
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/csv');
    res.setHeader('last-modified', 'Tue, 01 Oct 2024 10:00:00 GMT');
    res.setHeader('etag', '"v1"');
    res.setHeader('content-length', String(Buffer.byteLength(csv)));
    res.end(req.method === 'HEAD' ? undefined : csv);
  });
  let url = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rides.csv`;
  });
  after(() => server.close());

  it('prints opened, the documents and a checkpoint', async () => {
    const config = file('http.yaml', `url: ${url}\n`);
    const bindings = file('http-bindings.yaml', '- resource: {stream: rides}\n  collection: acme/rides\n  key: [/_meta/row_id]\n');
    const r = await sluice(['raw', 'source-http-file', 'capture', '--config', config, '--bindings', bindings]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.lines.map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], { opened: {} });
    const docs = lines.filter((l) => 'captured' in l).map((l) => l.captured.doc);
    assert.deepEqual(docs.map((d) => [String(d.id), d.name]), [['1', 'alpha'], ['2', 'beta']]);
    assert.ok('checkpoint' in lines.at(-1), 'ends with a checkpoint');
  });
});

describe('sluice raw materialize-sqlite', () => {
  it('apply then materialize a fixture into a SQLite file', async () => {
    const db = join(dir, 'out.db');
    const config = file('sqlite.yaml', `path: ${db}\n`);
    const bindings = file('sqlite-bindings.yaml', [
      '- resource: {table: users}',
      '  collection: acme/users',
      '  key: [/id]',
      '  fields: {values: [name]}',
      '  schema: {type: object, required: [id], properties: {id: {type: integer}, name: {type: string}}}',
    ].join('\n'));
    const fixture = file('users.jsonl', '["acme/users",{"id":1,"name":"a"}]\n["acme/users",{"id":2,"name":"b"}]\n{"commit":true}\n["acme/users",{"id":1,"name":"a2"}]\n{"commit":true}\n');
    const applied = await sluice(['raw', 'materialize-sqlite', 'apply', '--config', config, '--bindings', bindings]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(JSON.parse(applied.lines[0]!).applied.actionDescription, /CREATE TABLE IF NOT EXISTS users/);
    const r = await sluice(['raw', 'materialize-sqlite', 'materialize', '--config', config, '--bindings', bindings, '--fixture', fixture]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.lines.map((l) => Object.keys(JSON.parse(l))[0]), [
      'opened', 'acknowledged', 'flushed', 'startedCommit', 'acknowledged', 'loaded', 'flushed', 'startedCommit', 'acknowledged',
    ]);
    const sqlite = new DatabaseSync(db, { readOnly: true });
    try {
      assert.deepEqual(sqlite.prepare('SELECT id, name FROM users ORDER BY id').all().map((row) => ({ ...row })), [{ id: 1, name: 'a2' }, { id: 2, name: 'b' }]);
    } finally {
      sqlite.close();
    }
  });
});
