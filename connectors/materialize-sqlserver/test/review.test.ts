// Offline review: `apply` with dryRun through the real bin (a child process speaking the protocol) lists every
// statement for the fixture without connecting (the address cannot even be resolved), and each statement parses.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { FIXTURE } from './fixture.ts';
import { matchSnapshot } from './snapshot.ts';
import { assertTsql, grammarReady, statementsOf } from './tsql-grammar.ts';

const BIN = join(import.meta.dirname, '..', 'bin', 'materialize-sqlserver.js');

function runBin(request: object): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } });
    let stdout = ''; let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(`${JSON.stringify(request)}\n`);
  });
}

const unresolvable = { ...FIXTURE, config: { ...FIXTURE.config, address: 'sqlserver.invalid' } };

describe('spec', () => {
  it('the spec response (what the control plane and UIs see) matches the snapshot', async () => {
    const r = await runBin({ spec: {} });
    assert.equal(r.code, 0, r.stderr);
    const spec = (JSON.parse(r.stdout) as { spec: Record<string, unknown> }).spec;
    assert.equal(spec.protocol, 3032023);
    assert.equal(spec.documentationUrl, 'https://go.estuary.dev/materialize-sqlserver');
    matchSnapshot('spec.json', `${JSON.stringify(spec, null, 2)}\n`);
  });
});

describe('offline review (apply --dry-run)', () => {
  before(grammarReady);

  it('a bad config still fails before anything else, with the problem named', async () => {
    const r = await runBin({ apply: { materialization: { ...FIXTURE, config: { address: 'x', user: 'u', database: 'd' } }, dryRun: true } });
    assert.equal(r.code, 1);
    const last = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { level: string; msg: string };
    assert.equal(last.level, 'error');
    assert.match(last.msg, /credentials/);
  });

  it('lists every statement for the fixture without connecting; each parses as T-SQL', async () => {
    const r = await runBin({ apply: { materialization: unresolvable, dryRun: true } });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const applied = (JSON.parse(lines[0]!) as { applied: { actionDescription: string } }).applied;
    const script = applied.actionDescription;
    matchSnapshot('review.sql', script);
    // Every kind of statement a DBA must see:
    for (const needle of ['IF SCHEMA_ID(', 'CREATE TABLE dbo.flow_checkpoints_v1', 'CREATE TABLE dbo.key_value', 'CREATE TABLE "Weird ""Schema"""."delta updates"',
      'UPDATE dbo.flow_checkpoints_v1 SET fence = fence + 1', 'CREATE TABLE #flow_temp_load_0', 'CREATE TABLE #flow_temp_store_1', 'UNION ALL',
      'MERGE INTO dbo.key_value', 'INSERT INTO "Weird ""Schema"""."delta updates"', 'SET "checkpoint" = ']) {
      assert.ok(script.includes(needle), `the review lists ${needle}`);
    }
    assert.ok(!script.includes('MERGE INTO "Weird'), 'delta-updates tables are never merged');
    const stmts = statementsOf(script);
    assert.ok(stmts.length >= 30, `${stmts.length} statements`);
    for (const s of stmts) {
      try { assertTsql(s); } catch (err) { assert.fail(`review statement does not parse:\n${s}\n${(err as Error).message}`); }
    }
    assert.match(r.stderr, /listed the statements without connecting/);
    assert.doesNotMatch(r.stderr, /cannot be found|could not connect/);
  });

  it('resource configs are validated once, by the runtime: the `_meta` Flow writes is kept, an unknown key refused', async () => {
    // Flow's control plane writes `_meta` into resource configs (estuary/connectors#2784); the runtime tolerates it.
    const withMeta = { ...unresolvable, bindings: unresolvable.bindings!.map((b) => ({ ...b, resourceConfig: { ...b.resourceConfig, _meta: { path: ['x'] } } })) };
    const [plain, meta] = await Promise.all([runBin({ apply: { materialization: unresolvable, dryRun: true } }), runBin({ apply: { materialization: withMeta, dryRun: true } })]);
    assert.equal(meta.code, 0, meta.stderr);
    assert.equal(meta.stdout, plain.stdout, 'the same review with `_meta` in every resource config');
    const typo = { ...unresolvable, bindings: unresolvable.bindings!.map((b, i) => (i === 1 ? { ...b, resourceConfig: { ...b.resourceConfig, tabel: 'x' } } : b)) };
    const refused = await runBin({ apply: { materialization: typo, dryRun: true } });
    assert.equal(refused.code, 1);
    const last = JSON.parse(refused.stderr.trim().split('\n').at(-1)!) as { level: string; msg: string };
    assert.match(last.msg, /^Invalid resource config of binding 1 .*\/tabel is not an allowed property; did you mean 'table'\?$/);
  });

  it('warns when the port defaulted to 3306', async () => {
    const r = await runBin({ apply: { materialization: { ...unresolvable, bindings: FIXTURE.bindings!.slice(0, 1) }, dryRun: true } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /"level":"warn","msg":"address has no port, so port 3306 is used \(the documented default\); SQL Server usually listens on 1433: if this is not intended, set address to sqlserver\.invalid:1433"/);
  });
});
