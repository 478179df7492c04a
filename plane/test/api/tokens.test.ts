// Token lifecycle and every 401 case, over a real loopback HTTP server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { signJwt, verifyJwt } from '../../src/control/index.ts';
import { startControlPlaneServer } from '../../src/control/testing.ts';

type Cp = Awaited<ReturnType<typeof startControlPlaneServer>>;

async function exchange(cp: Cp, body: unknown, contentType = 'application/json') {
  const res = await fetch(`${cp.url}/api/v1/auth/token`, { method: 'POST', headers: { 'Content-Type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

async function statusWith(cp: Cp, authorization?: string) {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.Authorization = authorization;
  const res = await fetch(`${cp.url}/api/v1/catalog/status?name=acme/orders`, { headers });
  return { status: res.status, body: await res.json() as Record<string, unknown>, wwwAuth: res.headers.get('www-authenticate') };
}

function setup(cp: Cp) {
  cp.controlPlane.recorder.publish({ specs: [{ catalogName: 'acme/orders', specType: 'collection', spec: {}, connected: [], disabled: false }], detail: 'load', result: 'success' });
}

test('bad input: a token request that is not a TokenRequest gets 422 naming the problem', async () => {
  const cp = await startControlPlaneServer();
  assert.deepEqual(await exchange(cp, { grant_type: 'password', refresh_token_id: '0000000000000001', secret: 's', extra: 1 }), {
    status: 422,
    body: { status: 422, error: 'request body is not a TokenRequest ({"grant_type": "refresh_token", "refresh_token_id": <Id>, "secret": <string>}): body: unknown member "extra"; /grant_type: must be "refresh_token"' },
  });
  assert.deepEqual(await exchange(cp, '{not json'), { status: 400, body: { status: 400, error: 'request body is not JSON: Expected property name or \'}\' in JSON at position 1 (line 1 column 2)' } });
  assert.equal((await exchange(cp, {}, 'text/plain')).status, 415);
  await cp.close();
});

test('refresh token lifecycle: hashed at rest, exchange, JWT claims, single-use rotation, multi-use', async () => {
  const cp = await startControlPlaneServer();
  setup(cp);
  const t = await cp.controlPlane.tokens.create({ prefixes: ['acme/'] });
  assert.match(t.id, /^[0-9a-f]{16}$/);
  assert.deepEqual(JSON.parse(Buffer.from(t.token, 'base64').toString()), { id: t.id, secret: t.secret });
  const row = cp.controlPlane.store.getToken(t.id)!;
  assert.ok(!row.hash.includes(t.secret), 'only a hash is stored');
  assert.match(row.hash, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  const keyFile = join(cp.dataDir, 'jwt-signing-key');
  assert.equal(statSync(keyFile).mode & 0o777, 0o600);

  const first = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: t.id, secret: t.secret });
  assert.equal(first.status, 200);
  const rotated = first.body.refresh_token as { id: string; secret: string };
  assert.equal(rotated.id, t.id);
  assert.notEqual(rotated.secret, t.secret);
  const claims = verifyJwt(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'hex'), first.body.access_token as string);
  assert.equal(claims.exp - claims.iat, 3600);
  assert.equal(claims.role, 'authenticated');
  assert.equal(claims.sub, 'local-user');
  assert.deepEqual(claims.prefixes, ['acme/']);
  assert.equal((await statusWith(cp, `Bearer ${first.body.access_token as string}`)).status, 200);

  // The old secret is spent; the rotated one works once.
  const reused = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: t.id, secret: t.secret });
  assert.deepEqual(reused, { status: 401, body: { status: 401, error: `failed to exchange refresh token: invalid secret for refresh token "${t.id}" (single-use tokens rotate: use the secret returned by the last exchange)` } });
  assert.equal((await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: t.id, secret: rotated.secret })).status, 200);

  // Concurrent exchanges of one single-use secret: exactly one wins.
  const t2 = await cp.controlPlane.tokens.create();
  const both = await Promise.all([1, 2].map(() => exchange(cp, { grant_type: 'refresh_token', refresh_token_id: t2.id, secret: t2.secret })));
  assert.deepEqual(both.map((b) => b.status).sort(), [200, 401]);

  // Multi-use: no rotation, reusable, and usable directly as a bearer (Prometheus style).
  const m = await cp.controlPlane.tokens.create({ multiUse: true });
  for (let i = 0; i < 2; i++) {
    const r = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: m.id, secret: m.secret });
    assert.equal(r.status, 200);
    assert.equal(r.body.refresh_token, undefined);
  }
  assert.equal((await statusWith(cp, `Bearer ${m.token}`)).status, 200);
  await cp.close();
});

test('every 401 case has a clear message', async () => {
  const cp = await startControlPlaneServer();
  setup(cp);
  const key = Buffer.from(readFileSync(join(cp.dataDir, 'jwt-signing-key'), 'utf8').trim(), 'hex');
  const good = await cp.accessToken();
  const now = Math.floor(Date.now() / 1000);
  const [h, b] = good.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(b, 'base64url').toString()) as Record<string, unknown>;
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, prefixes: ['', 'x'] })).toString('base64url')}.${good.split('.')[2]!}`;
  const otherKey = signJwt(Buffer.alloc(32, 7), { ...claims });
  const expired = signJwt(key, { ...claims, iat: now - 7200, exp: now - 3600 });
  const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${b}.`;
  const single = await cp.controlPlane.tokens.create();

  const cases: [string | undefined, RegExp][] = [
    [undefined, /^This is an authenticated API but the request is missing a required Authorization: Bearer token/],
    ['Basic dXNlcjpwYXNz', /^malformed Authorization header: expected "Bearer <token>"$/],
    ['Bearer a.b', /^failed to parse authorization token: malformed JWT/],
    ['Bearer !!!.x.y', /^failed to parse authorization token: malformed JWT/],
    [`Bearer ${tampered}`, /^failed to parse authorization token: invalid signature \(the token was altered or was not issued by this server\)$/],
    [`Bearer ${otherKey}`, /^failed to parse authorization token: invalid signature/],
    [`Bearer ${expired}`, /^failed to parse authorization token: token expired at .*; get a new one from POST \/api\/v1\/auth\/token$/],
    [`Bearer ${none}`, /^failed to parse authorization token: unsupported algorithm "none"; tokens are signed with HS256$/],
    [`Bearer ${single.token}`, /is single-use and cannot be sent as a bearer token/],
    [`Bearer ${Buffer.from(JSON.stringify({ id: single.id, secret: 'wrong' })).toString('base64')}`, /single-use/],
    [`Bearer ${Buffer.from(JSON.stringify({ id: '00000000000000ff', secret: 'x' })).toString('base64')}`, /^failed to exchange refresh token: unknown refresh token id "00000000000000ff"/],
  ];
  for (const [auth, message] of cases) {
    const r = await statusWith(cp, auth);
    assert.equal(r.status, 401, `${auth}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.status, 401);
    assert.match(r.body.error as string, message);
    assert.equal(r.wwwAuth, 'Bearer');
  }
  // Refresh-token exchange failures.
  const unknown = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: '00000000000000ff', secret: 'x' });
  assert.deepEqual(unknown.body, { status: 401, error: 'failed to exchange refresh token: unknown refresh token id "00000000000000ff"; create one with `sluice token create`' });
  const multi = await cp.controlPlane.tokens.create({ multiUse: true });
  const wrong = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: multi.id, secret: 'nope' });
  assert.deepEqual(wrong.body, { status: 401, error: `failed to exchange refresh token: invalid secret for refresh token "${multi.id}"` });
  const old = await cp.controlPlane.tokens.create({ validForSeconds: 1 });
  cp.controlPlane.store.db.prepare('UPDATE refresh_tokens SET updated_at = ? WHERE id = ?').run('2020-01-01T00:00:00.000Z', old.id);
  const exp = await exchange(cp, { grant_type: 'refresh_token', refresh_token_id: old.id, secret: old.secret });
  assert.deepEqual(exp.body, { status: 401, error: `failed to exchange refresh token: refresh token "${old.id}" has expired; create a new one with \`sluice token create\`` });
  // The good token still works, and a restarted server (same data dir, same key) accepts it.
  assert.equal((await statusWith(cp, `Bearer ${good}`)).status, 200);
  await cp.close();
  const again = await startControlPlaneServer({ dataDir: cp.dataDir });
  assert.equal((await statusWith(again, `Bearer ${good}`)).status, 200);
  await again.close();
});
