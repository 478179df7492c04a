// End to end: `sluice raw materialize-sqlserver apply --dry-run --config c.yaml --bindings b.yaml` (the documented
// offline-review command) prints every statement without connecting, each parsing as T-SQL.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertTsql, grammarReady, statementsOf } from './tsql-grammar.ts';

const SLUICE = join(import.meta.dirname, '..', '..', '..', 'plane', 'bin', 'sluice.js');
const skip = existsSync(SLUICE) ? undefined : `the sluice CLI (${SLUICE}) is not present`;
if (skip !== undefined) console.log(`# CLI review test skipped: ${skip}`);

const CONFIG = `address: sqlserver.invalid:1433
user: flow
database: analytics
schema: sales
hardDelete: true
credentials:
  auth_type: UserPassword
  password: not-used-offline
`;
const BINDINGS = `- resource: {table: orders}
  resourcePath: [sales, orders]
  collection: acme/orders
  key: [/id]
  schema:
    type: object
    required: [id, total]
    properties:
      id: {type: integer}
      total: {type: number}
      customer: {type: string}
      placed_at: {type: string, format: date-time}
      key: {type: string}
  fields: {keys: [id], values: [customer, key, placed_at, total], document: flow_document}
- resource: {table: order events, delta_updates: true}
  resourcePath: [sales, order events]
  collection: acme/events
  deltaUpdates: true
  fields: {keys: [id], values: [total], document: null}
  schema:
    type: object
    required: [id]
    properties: {id: {type: integer}, total: {type: number}}
`;

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = ''; let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sluice raw materialize-sqlserver apply --dry-run', { skip }, () => {
  let dir: string;
  before(async () => {
    await grammarReady();
    dir = mkdtempSync(join(tmpdir(), 'sluice-sqlserver-review-'));
    writeFileSync(join(dir, 'c.yaml'), CONFIG);
    writeFileSync(join(dir, 'b.yaml'), BINDINGS);
  });
  after(() => { if (dir !== undefined) rmSync(dir, { recursive: true, force: true }); });

  it('prints the review script without connecting; every statement parses', async () => {
    const r = await run(['raw', 'materialize-sqlserver', 'apply', '--dry-run', '--config', join(dir, 'c.yaml'), '--bindings', join(dir, 'b.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    const script = (JSON.parse(r.stdout.trim()) as { applied: { actionDescription: string } }).applied.actionDescription;
    for (const needle of ['IF SCHEMA_ID(N\'sales\') IS NULL', 'CREATE TABLE sales.flow_checkpoints_v1', 'CREATE TABLE sales.orders', 'CREATE TABLE sales."order events"',
      '"key" varchar(MAX)', 'placed_at DATETIME2', 'SET fence = fence + 1', 'CREATE TABLE #flow_temp_load_0', 'CREATE TABLE #flow_temp_store_1',
      'MERGE INTO sales.orders', 'INSERT INTO sales."order events"', 'SET "checkpoint" = ']) {
      assert.ok(script.includes(needle), `the review lists ${needle}`);
    }
    assert.ok(!script.includes('-- Note:'), 'resource paths agree');
    for (const s of statementsOf(script)) assertTsql(s);
    assert.doesNotMatch(r.stderr, /cannot be found|could not connect/);
  });
});
