// Attacks on a running `sluice serve` (the real bin) that the campaign found held, kept as tests:
// token attacks on the API (none, a forged `alg: none`, a tampered payload, another key, an expired
// token, a guessed refresh-token secret), slow-loris clients holding many connections open with
// half-sent headers while others are served, and a YAML bomb (billion laughs) published into the
// running plane — refused with a clear error, the plane still serving.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { runTokenCommand } from '../../plane/src/cli/token.ts';
import { signJwt } from '../../plane/src/control/index.ts';
import { freePort, ingest, spawnServe, tempDir } from './helpers.ts';
import { until } from '@sluice/runtime/testing';

const CATALOG = `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}}, required: [id]}
    key: [/id]
`;

/** A billion-laughs YAML: 9^10 strings if every alias were expanded. */
function yamlBomb(): string {
  const lines = [CATALOG.trim(), 'x0: &x0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 10; i++) lines.push(`x${i}: &x${i} [${Array(9).fill(`*x${i - 1}`).join(',')}]`);
  return `${lines.join('\n')}\n`;
}

test('serve under attack: tokens, slow-loris, a YAML bomb', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  const catalog = join(dir, 'flow.yaml');
  const dataDir = join(dir, 'data');
  writeFileSync(catalog, CATALOG);
  const [port, ingestPort] = [await freePort(), await freePort()];
  const serve = spawnServe(t, ['--catalog', catalog, '--port', String(port), '--ingest-port', String(ingestPort), '--data-dir', dataDir]);
  await serve.waitFor(/^sluice: ready/m);
  const api = `http://127.0.0.1:${port}/api/v1`;
  const ingestUrl = `http://127.0.0.1:${ingestPort}/ingest`;

  await t.test('token attacks: every forged, altered, foreign, expired or guessed credential is a 401 that echoes no secret', async () => {
    let printed = '';
    assert.equal(await runTokenCommand(['create', '--data-dir', dataDir], { out: (s) => { printed += s; }, err: (s) => { printed += s; } }), 0, printed);
    const [, id, secret] = /id: +([0-9a-f]{16})[\s\S]*secret: +(\S+)/.exec(printed) ?? [];
    const exchange = (body: object) => fetch(`${api}/auth/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    // A guessed secret for a real id, and a guessed id: 401, and the refresh token still works after.
    for (const guess of [{ refresh_token_id: id, secret: 'guess' }, { refresh_token_id: 'ffffffffffffffff', secret: secret }]) {
      const r = await exchange({ grant_type: 'refresh_token', ...guess });
      const text = await r.text();
      assert.equal(r.status, 401, text);
      assert.ok(!text.includes(secret!), 'the secret is not echoed');
    }
    const good = await exchange({ grant_type: 'refresh_token', refresh_token_id: id, secret });
    assert.equal(good.status, 200);
    const { access_token: token } = await good.json() as { access_token: string };
    const [h, b, sig] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(b, 'base64url').toString()) as Record<string, unknown>;
    const key = Buffer.from(readFileSync(join(dataDir, 'jwt-signing-key'), 'utf8').trim(), 'hex');
    const now = Math.floor(Date.now() / 1000);
    const attacks: [string, string | undefined, RegExp][] = [
      ['no token', undefined, /missing a required Authorization: Bearer token/],
      ['alg none', `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${b}.`, /unsupported algorithm "none"/],
      // Its own token with a later expiry: the signature no longer matches.
      ['tampered claims', `Bearer ${h}.${Buffer.from(JSON.stringify({ ...claims, exp: Number(claims.exp) + 86_400 })).toString('base64url')}.${sig}`, /invalid signature/],
      ['another key', `Bearer ${signJwt(Buffer.alloc(32, 7), claims)}`, /invalid signature/],
      ['expired', `Bearer ${signJwt(key, { ...claims, iat: now - 7200, exp: now - 3600 })}`, /token expired/],
      ['garbage', `Bearer ${'A'.repeat(10_000)}`, /malformed token \(neither a JWT nor a base64 refresh token\)/],
    ];
    for (const [what, authorization, message] of attacks) {
      const r = await fetch(`${api}/catalog/status?name=hostile/events`, { headers: authorization === undefined ? {} : { Authorization: authorization } });
      const body = await r.json() as { status: number; error: string };
      assert.equal(r.status, 401, `${what}: ${JSON.stringify(body)}`);
      assert.match(body.error, message, what);
      assert.ok(!body.error.includes(secret!), `${what}: the secret is not echoed`);
    }
    const ok = await fetch(`${api}/catalog/status?name=hostile/events`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(ok.status, 200);
  });

  await t.test('slow-loris: 200 connections holding half-sent headers do not keep others from being served', async () => {
    const sockets: Socket[] = [];
    t.after(() => { for (const s of sockets) s.destroy(); });
    for (let i = 0; i < 200; i++) {
      const target = i % 2 === 0 ? port : ingestPort;
      const s = connect(target, '127.0.0.1');
      s.on('error', () => undefined);
      s.write(`POST /${i % 2 === 0 ? 'api/v1/openapi.json' : 'ingest'} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
      sockets.push(s);
    }
    await until('the 200 slow connections to open', () => sockets.every((s) => !s.connecting), { ms: 30_000 });
    // One more byte on each, as a slow-loris client drips them; then normal clients are served.
    for (const s of sockets) s.write('a');
    const openapi = await fetch(`${api}/openapi.json`);
    assert.equal(openapi.status, 200);
    const r = await ingest(ingestUrl, '{"hostile/events": [{"id": 1}]}');
    assert.equal(r.status, 200, r.body);
    assert.equal(sockets.filter((s) => s.destroyed).length, 0, 'the slow clients were still connected while others were served');
  });

  await t.test('YAML bomb: the publication is refused with a clear error; the plane keeps serving', async () => {
    const before = serve.stderr().length;
    writeFileSync(catalog, yamlBomb());
    serve.child.kill('SIGHUP');
    await until('the publication of the YAML bomb to fail', () => /Excessive alias count/.exec(serve.stderr().slice(before)), { ms: 60_000, detail: () => serve.stderr() });
    assert.match(serve.stderr().slice(before), /publication [0-9a-f]{16} failed: catalog error:\n {2}\S*flow\.yaml:1:1: \(document root\): cannot read YAML: Excessive alias count indicates a resource exhaustion attack/);
    const r = await ingest(ingestUrl, '{"hostile/events": [{"id": 2}]}');
    assert.equal(r.status, 200, r.body);
    assert.equal((await fetch(`${api}/openapi.json`)).status, 200);
  });

  assert.equal(await serve.stop(), 0, serve.stderr());
});
