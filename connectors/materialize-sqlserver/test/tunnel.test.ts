// The SSH tunnel against a real local sshd, forwarding to a loopback TCP echo server and a loopback HTTP server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import ssh2 from 'ssh2';
import { ConfigError } from '@sluice/runtime';
import { openTunnel, parseSshEndpoint } from '../src/tunnel.ts';
import { SqlServerClient } from '../src/sqlserver-client.ts';
import { parseEndpointConfig } from '../src/config.ts';
import { startSshd, sshdUnavailable } from './sshd.ts';
import type { Sshd } from './sshd.ts';

describe('parseSshEndpoint', () => {
  it('rejects an endpoint without a user, with the exact message', () => {
    assert.throws(() => parseSshEndpoint('ssh://host.example'), {
      message: "networkTunnel.sshForwarding.sshEndpoint 'ssh://host.example' must look like ssh://user@host[:port]",
    });
  });
  it('parses user, host and port (default 22)', () => {
    assert.deepEqual(parseSshEndpoint('ssh://flow@bastion.example.com'), { user: 'flow', host: 'bastion.example.com', port: 22 });
    assert.deepEqual(parseSshEndpoint('ssh://a%40b@10.0.0.1:2222'), { user: 'a@b', host: '10.0.0.1', port: 2222 });
    assert.deepEqual(parseSshEndpoint('ssh://u@[::1]:22'), { user: 'u', host: '::1', port: 22 });
  });
});

const skip = sshdUnavailable();
if (skip !== undefined) console.log(`# SSH tunnel tests skipped: ${skip}`);

describe('SSH tunnel through a real sshd', { skip }, () => {
  let sshd: Sshd;
  let echo: Server;
  let echoPort: number;
  let http: HttpServer;
  let httpPort: number;

  before(async () => {
    sshd = await startSshd();
    echo = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoPort = (echo.address() as AddressInfo).port;
    http = createHttpServer((req, res) => { res.setHeader('content-type', 'text/plain'); res.end(`hello through ${req.url}`); });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    httpPort = (http.address() as AddressInfo).port;
  });
  after(async () => {
    await sshd?.stop();
    await new Promise<void>((r) => (echo ? echo.close(() => r()) : r()));
    await new Promise<void>((r) => (http ? http.close(() => r()) : r()));
  });

  it('forwards TCP both ways, for several concurrent connections, with backpressure (1 MiB echoed)', async () => {
    const tunnel = await openTunnel({ sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: sshd.privateKey, targetHost: '127.0.0.1', targetPort: echoPort });
    try {
      assert.equal(tunnel.localHost, '127.0.0.1');
      assert.notEqual(tunnel.localPort, echoPort);
      const payload = Buffer.alloc(1 << 20, 0);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) & 0xff;
      const roundTrip = (data: Buffer) => new Promise<Buffer>((resolve, reject) => {
        const s = createConnection({ host: tunnel.localHost, port: tunnel.localPort });
        const chunks: Buffer[] = [];
        let n = 0;
        s.on('data', (d: Buffer) => { chunks.push(d); n += d.length; if (n >= data.length) { s.end(); resolve(Buffer.concat(chunks)); } });
        s.on('error', reject);
        s.write(data);
      });
      const [a, b] = await Promise.all([roundTrip(payload), roundTrip(Buffer.from('second connection'))]);
      assert.ok(a.equals(payload), 'the 1 MiB payload came back intact');
      assert.equal(b.toString(), 'second connection');
    } finally {
      await tunnel.close();
    }
  });

  it('forwards an HTTP request to a loopback HTTP server', async () => {
    const tunnel = await openTunnel({ sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: sshd.privateKey, targetHost: '127.0.0.1', targetPort: httpPort });
    try {
      const res = await fetch(`http://127.0.0.1:${tunnel.localPort}/via-ssh`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'hello through /via-ssh');
    } finally {
      await tunnel.close();
    }
  });

  it('explains a rejected key', async () => {
    await assert.rejects(
      openTunnel({ sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: sshd.otherKey, targetHost: '127.0.0.1', targetPort: echoPort }),
      (err: Error) => err instanceof ConfigError
        && err.message === `SSH server ${sshd.user}@127.0.0.1:${sshd.port} rejected the private key for user '${sshd.user}': add its public key to that user's authorized_keys`,
    );
  });

  it('explains an unusable private key', async () => {
    await assert.rejects(
      openTunnel({ sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: 'not a key', targetHost: '127.0.0.1', targetPort: echoPort }),
      (err: Error) => err instanceof ConfigError && /^networkTunnel\.sshForwarding\.privateKey cannot be used: /.test(err.message),
    );
  });

  it('the SQL Server client connects through the tunnel and reports a refused database port behind it', async () => {
    // Nothing listens on this port behind the SSH server: the channel open fails, so the driver sees the
    // local end closed. The error must name the tunnel.
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => { const { port } = s.address() as AddressInfo; s.close(() => resolve(port)); });
    });
    const config = parseEndpointConfig({
      address: `127.0.0.1:${closedPort}`, user: 'sa', database: 'master',
      credentials: { auth_type: 'UserPassword', password: 'x' },
      networkTunnel: { sshForwarding: { sshEndpoint: `ssh://${sshd.user}@127.0.0.1:${sshd.port}`, privateKey: sshd.privateKey } },
    });
    const client = new SqlServerClient(config, { connectTimeoutMs: 5000 });
    try {
      await assert.rejects(client.connect(), (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, new RegExp(`^could not connect to 127\\.0\\.0\\.1:${closedPort} \\(through the SSH tunnel via ssh://${sshd.user}@127\\.0\\.0\\.1:${sshd.port}\\)|^connection to 127\\.0\\.0\\.1:${closedPort} (was refused|timed out) \\(through the SSH tunnel`));
        return true;
      });
    } finally {
      await client.close();
    }
  });
});

describe('SSH tunnel errors without a server', () => {
  it('explains a refused SSH port', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => { const { port: p } = s.address() as AddressInfo; s.close(() => resolve(p)); });
    });
    await assert.rejects(
      openTunnel({ sshEndpoint: `ssh://u@127.0.0.1:${port}`, privateKey: ssh2.utils.generateKeyPairSync('ed25519').private, targetHost: '127.0.0.1', targetPort: 1 }),
      { message: `SSH connection to 127.0.0.1:${port} was refused: check the SSH endpoint's host and port` },
    );
  });
});
