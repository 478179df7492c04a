// The mssql client's connection failures, explained: real loopback sockets for refused connections and
// timeouts, a real (failing) DNS lookup for an unknown host, and the server's own login/database messages
// (shaped as mssql reports them) for the cases that need a SQL Server to say them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { ConfigError } from '@sluice/runtime';
import { SqlError } from '@sluice/materialize-sql';
import { parseEndpointConfig } from '../src/config.ts';
import { APP_NAME, SqlServerClient, buildPoolConfig } from '../src/sqlserver-client.ts';
import { connectError, missingCreateTableError, statementError } from '../src/errors.ts';
import { checkServerVersion } from '../src/connector.ts';

const cfg = (address: string) => parseEndpointConfig({ address, user: 'flow', database: 'analytics', credentials: { auth_type: 'UserPassword', password: 'pw' } });

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('SqlServerClient connection errors', () => {
  it('a refused connection names the address', async () => {
    const port = await closedPort();
    const client = new SqlServerClient(cfg(`127.0.0.1:${port}`), { connectTimeoutMs: 3000 });
    try {
      await assert.rejects(client.connect(), (err: Error) => err instanceof ConfigError && err.message.startsWith(`connection to 127.0.0.1:${port} was refused: check that SQL Server is running`));
    } finally { await client.close(); }
  });

  it('a refused connection on the defaulted port suggests :1433', async () => {
    // Port 3306 on loopback: refused unless something listens there (then this case cannot be shown).
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => { probe.once('error', () => resolve(false)); probe.listen(3306, '127.0.0.1', () => probe.close(() => resolve(true))); });
    if (!free) { console.log('# skipped: something listens on 127.0.0.1:3306'); return; }
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {}, status() {}, child() { return log; } };
    const client = new SqlServerClient(cfg('127.0.0.1'), { connectTimeoutMs: 3000, log });
    assert.deepEqual(warnings, ['address has no port, so port 3306 is used (the documented default); SQL Server usually listens on 1433: if this is not intended, set address to 127.0.0.1:1433']);
    try {
      await assert.rejects(client.connect(), {
        message: 'connection to 127.0.0.1:3306 was refused; the address has no port, so 3306 was used, but SQL Server usually listens on 1433: try address 127.0.0.1:1433',
      });
    } finally { await client.close(); }
  });

  it('a server that never answers the login times out', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => { sockets.push(s); });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as AddressInfo;
    const client = new SqlServerClient(cfg(`127.0.0.1:${port}`), { connectTimeoutMs: 1000 });
    try {
      await assert.rejects(client.connect(), { message: `connection to 127.0.0.1:${port} timed out (incorrect host or port, or a firewall dropping the connection?)` });
    } finally {
      await client.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('an unknown host is reported as not found', async () => {
    const client = new SqlServerClient(cfg('no-such-host.invalid:1433'), { connectTimeoutMs: 3000 });
    try {
      await assert.rejects(client.connect(), { message: "host at address 'no-such-host.invalid' cannot be found: check the address" });
    } finally { await client.close(); }
  });
});

describe('pool configuration', () => {
  it('always encrypts, names the application, keeps quoted identifiers and ANSI null defaults, no request timeout', () => {
    const c = buildPoolConfig(cfg('db.example.com:1433'), 'db.example.com', 1433);
    assert.equal(APP_NAME, 'Flow Materialization Connector');
    assert.deepEqual({ server: c.server, port: c.port, database: c.database, requestTimeout: c.requestTimeout, connectionTimeout: c.connectionTimeout }, {
      server: 'db.example.com', port: 1433, database: 'analytics', requestTimeout: 0, connectionTimeout: 20_000,
    });
    assert.equal(c.options?.encrypt, true);
    assert.equal(c.options?.trustServerCertificate, true);
    assert.equal(c.options?.appName, 'Flow Materialization Connector');
    assert.equal(c.options?.enableQuotedIdentifier, true);
    assert.equal(c.options?.enableAnsiNullDefault, true);
    assert.equal(c.password, undefined);
  });
});

describe('server messages', () => {
  const target = { host: 'db', port: 1433, portDefaulted: false, user: 'flow', database: 'analytics' };
  it('login failed', () => {
    const err = Object.assign(new Error("Login failed for user 'flow'."), { code: 'ELOGIN' });
    const e = connectError(err, target);
    assert.ok(e instanceof ConfigError);
    assert.equal(e.message, "Login failed for user 'flow': check the user and its password (or the IAM role and that RDS Proxy IAM authentication is enabled)");
  });
  it('missing database', () => {
    const err = Object.assign(new Error('Cannot open database "analytics" requested by the login. The login failed.'), { code: 'ELOGIN' });
    assert.equal(connectError(err, target).message, 'Cannot open database "analytics" requested by the login. The login failed. — database \'analytics\' does not exist on db:1433 or user \'flow\' may not use it: check the database name and the user\'s access');
  });
  it('missing CREATE TABLE permission, from the check and from a failing statement', () => {
    assert.equal(missingCreateTableError(target).message, "user 'flow' has no CREATE TABLE permission in database 'analytics': grant it, e.g. GRANT CONTROL ON DATABASE::analytics TO flow");
    const err = Object.assign(new Error("CREATE TABLE permission denied in database 'analytics'."), { number: 262 });
    const e = statementError(err, 'CREATE TABLE t (id BIGINT);', target);
    assert.ok(e instanceof SqlError);
    assert.equal(e.number, 262);
    assert.match(e.message, /^CREATE TABLE permission denied in database 'analytics'\. — user 'flow' lacks a permission in database 'analytics'/);
  });
  it('SQL Server before 2017 is refused; Azure SQL is accepted', () => {
    assert.throws(() => checkServerVersion(13, 2), { message: 'SQL Server major version 13 is not supported: the connector needs SQL Server 2017 (version 14) or later' });
    checkServerVersion(14, 3);
    checkServerVersion(12, 5);
  });
});
