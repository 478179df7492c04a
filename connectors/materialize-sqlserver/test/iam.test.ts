// AWS IAM: injected STS credentials or an assumed role, an RDS IAM auth token of the right shape (signed
// offline: SigV4 presigning needs no network), token refresh, and the client using it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '@sluice/runtime';
import { iamCredentials, rdsAuthToken, TokenSource } from '../src/iam.ts';
import type { AssumeRole } from '../src/iam.ts';
import { parseEndpointConfig } from '../src/config.ts';
import type { AwsIamCredentials } from '../src/config.ts';
import { SqlServerClient } from '../src/sqlserver-client.ts';

const role: AwsIamCredentials = { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::123456789012:role/flow', aws_region: 'eu-west-1' };

describe('IAM credentials', () => {
  it('an assume-role failure is a ConfigError naming the role', async () => {
    const failing: AssumeRole = async (arn, region) => { throw new ConfigError(`could not assume AWS role '${arn}' in ${region}: AccessDenied`); };
    await assert.rejects(iamCredentials(role, failing), { message: "could not assume AWS role 'arn:aws:iam::123456789012:role/flow' in eu-west-1: AccessDenied" });
  });
  it('uses injected STS credentials without assuming the role', async () => {
    const never: AssumeRole = async () => assert.fail('must not assume the role when credentials are injected');
    const c = await iamCredentials({ ...role, aws_access_key_id: 'ASIAINJECTED', aws_secret_access_key: 'secret', aws_session_token: 'tok' }, never);
    assert.deepEqual(c, { accessKeyId: 'ASIAINJECTED', secretAccessKey: 'secret', sessionToken: 'tok' });
  });
  it('assumes the configured role in the configured region otherwise', async () => {
    const calls: string[] = [];
    const fake: AssumeRole = async (arn, region) => { calls.push(`${arn}@${region}`); return { accessKeyId: 'ASIAROLE', secretAccessKey: 's', sessionToken: 't' }; };
    assert.equal((await iamCredentials(role, fake)).accessKeyId, 'ASIAROLE');
    assert.deepEqual(calls, ['arn:aws:iam::123456789012:role/flow@eu-west-1']);
  });
});

describe('RDS IAM auth token', () => {
  it('is a presigned rds-db:connect URL for the user at host:port, valid 15 minutes', async () => {
    const token = await rdsAuthToken({ host: 'proxy.example.com', port: 1433, user: 'flow user', region: 'eu-west-1', credentials: { accessKeyId: 'ASIAEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session/token+x' } });
    assert.ok(token.startsWith('proxy.example.com:1433/?'), token);
    const q = new URLSearchParams(token.slice(token.indexOf('?') + 1));
    assert.equal(q.get('Action'), 'connect');
    assert.equal(q.get('DBUser'), 'flow user');
    assert.equal(q.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
    assert.match(q.get('X-Amz-Credential')!, /^ASIAEXAMPLE\/\d{8}\/eu-west-1\/rds-db\/aws4_request$/);
    assert.equal(q.get('X-Amz-Expires'), '900');
    assert.equal(q.get('X-Amz-Security-Token'), 'session/token+x');
    assert.equal(q.get('X-Amz-SignedHeaders'), 'host');
    assert.match(q.get('X-Amz-Signature')!, /^[0-9a-f]{64}$/);
    assert.ok(!token.startsWith('https://'));
  });
  it('is refreshed after 10 minutes for new connections', async () => {
    let now = 0; let n = 0;
    const src = new TokenSource(async () => `token-${++n}`, () => now);
    assert.equal(await src.get(), 'token-1');
    now = 9 * 60_000;
    assert.equal(await src.get(), 'token-1');
    now = 10 * 60_000 + 1;
    assert.equal(await src.get(), 'token-2');
  });
  it('the client signs a token (offline) and then reaches for the server', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const { port } = s.address() as AddressInfo;
    await new Promise<void>((r) => s.close(() => r()));
    const config = parseEndpointConfig({ address: `127.0.0.1:${port}`, user: 'flow', database: 'd', credentials: { ...role, aws_access_key_id: 'ASIAX', aws_secret_access_key: 'y' } });
    const client = new SqlServerClient(config, { connectTimeoutMs: 3000, assumeRole: async () => assert.fail('injected credentials must be used') });
    try {
      await assert.rejects(client.connect(), { message: new RegExp(`^connection to 127\\.0\\.0\\.1:${port} was refused`) });
    } finally { await client.close(); }
  });
  it('AzureIAM: the client presents the runtime-injected token (and reaches for the server); without one it says where the token comes from', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const { port } = s.address() as AddressInfo;
    await new Promise<void>((r) => s.close(() => r()));
    const azure = { auth_type: 'AzureIAM', azure_client_id: 'app-id', azure_tenant_id: 'tenant-id' };
    const withToken = new SqlServerClient(parseEndpointConfig({ address: `127.0.0.1:${port}`, user: 'flow', database: 'd', credentials: { ...azure, azure_access_token: 'eyJ0eXAi' } }), { connectTimeoutMs: 3000 });
    try {
      await assert.rejects(withToken.connect(), { message: new RegExp(`^connection to 127\\.0\\.0\\.1:${port} was refused`) });
    } finally { await withToken.close(); }
    const without = new SqlServerClient(parseEndpointConfig({ address: `127.0.0.1:${port}`, user: 'flow', database: 'd', credentials: azure }), { connectTimeoutMs: 3000 });
    try {
      await assert.rejects(without.connect(), (err: Error) => err instanceof ConfigError && /^credentials: AzureIAM needs an access token for application app-id \(tenant tenant-id\); Flow's runtime injects it as credentials\.azure_access_token/.test(err.message));
    } finally { await without.close(); }
  });
});
