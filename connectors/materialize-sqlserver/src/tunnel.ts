// SSH tunnel: one SSH session (ssh2) to `sshEndpoint`, and a local TCP listener on 127.0.0.1 (ephemeral port)
// whose every connection is forwarded through the session (direct-tcpip) to the database host:port as the SSH
// server sees it. The database driver then connects to the local end.
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { Client } from 'ssh2';
import type { ClientChannel } from 'ssh2';
import { ConfigError } from '@sluice/runtime';
import type { Logger } from '@sluice/runtime';

export interface SshEndpoint { user: string; host: string; port: number }

/** ssh://user@host[:port] */
export function parseSshEndpoint(endpoint: string): SshEndpoint {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(`networkTunnel.sshForwarding.sshEndpoint '${endpoint}' is not a URL like ssh://user@host[:port]`);
  }
  if (url.protocol !== 'ssh:' || url.username === '' || url.hostname === '') {
    throw new ConfigError(`networkTunnel.sshForwarding.sshEndpoint '${endpoint}' must look like ssh://user@host[:port]`);
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { user: decodeURIComponent(url.username), host, port: url.port === '' ? 22 : Number(url.port) };
}

export interface Tunnel {
  /** Local end: connect the driver here. */
  localHost: string;
  localPort: number;
  /** ssh://user@host:port, for messages. */
  description: string;
  close(): Promise<void>;
}

export interface TunnelOptions {
  sshEndpoint: string;
  privateKey: string;
  /** The database as the SSH server sees it. */
  targetHost: string;
  targetPort: number;
  log?: Logger;
  /** Milliseconds to wait for the SSH handshake. */
  readyTimeoutMs?: number;
}

function sshError(err: Error & { level?: string; code?: string }, ep: SshEndpoint): ConfigError {
  const where = `${ep.user}@${ep.host}:${ep.port}`;
  if (err.level === 'client-authentication') {
    return new ConfigError(`SSH server ${where} rejected the private key for user '${ep.user}': add its public key to that user's authorized_keys`, { cause: err });
  }
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new ConfigError(`SSH host '${ep.host}' cannot be found: check networkTunnel.sshForwarding.sshEndpoint`, { cause: err });
  if (err.code === 'ECONNREFUSED') return new ConfigError(`SSH connection to ${ep.host}:${ep.port} was refused: check the SSH endpoint's host and port`, { cause: err });
  if (/timed out/i.test(err.message)) return new ConfigError(`SSH connection to ${ep.host}:${ep.port} timed out: check the SSH endpoint and firewalls`, { cause: err });
  if (/privateKey|Cannot parse|Unsupported key/i.test(err.message)) {
    return new ConfigError(`networkTunnel.sshForwarding.privateKey cannot be used: ${err.message} (give an unencrypted OpenSSH or PEM private key)`, { cause: err });
  }
  return new ConfigError(`SSH tunnel through ${where} failed: ${err.message}`, { cause: err });
}

export async function openTunnel(opts: TunnelOptions): Promise<Tunnel> {
  const ep = parseSshEndpoint(opts.sshEndpoint);
  const ssh = new Client();
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => { ssh.removeListener('ready', onReady); reject(sshError(err, ep)); };
    const onReady = () => { ssh.removeListener('error', onError); resolve(); };
    ssh.once('ready', onReady);
    ssh.once('error', onError);
    try {
      ssh.connect({ host: ep.host, port: ep.port, username: ep.user, privateKey: opts.privateKey, readyTimeout: opts.readyTimeoutMs ?? 20_000, keepaliveInterval: 30_000 });
    } catch (err) {
      reject(sshError(err as Error, ep));
    }
  });
  let broken: Error | undefined;
  ssh.on('error', (err) => { broken = err; opts.log?.warn('SSH tunnel error', { error: err.message }); });
  ssh.on('close', () => { broken ??= new Error('SSH session closed'); });

  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    if (broken !== undefined) { sock.destroy(broken); return; }
    sock.pause();
    ssh.forwardOut(sock.remoteAddress ?? '127.0.0.1', sock.remotePort ?? 0, opts.targetHost, opts.targetPort, (err?: Error, stream?: ClientChannel) => {
      if (err !== undefined || stream === undefined) {
        opts.log?.warn('SSH tunnel could not open a channel to the database', { error: err?.message, target: `${opts.targetHost}:${opts.targetPort}` });
        sock.destroy();
        return;
      }
      // pipe() carries backpressure both ways.
      sock.pipe(stream).pipe(sock);
      stream.on('error', () => sock.destroy());
      sock.on('error', () => stream.destroy());
      stream.on('close', () => sock.destroy());
      sock.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => { server.removeListener('error', reject); resolve(); });
  });
  const { port } = server.address() as AddressInfo;
  const description = `ssh://${ep.user}@${ep.host}:${ep.port}`;
  opts.log?.info('SSH tunnel open', { via: description, localPort: port, target: `${opts.targetHost}:${opts.targetPort}` });
  let closed = false;
  return {
    localHost: '127.0.0.1',
    localPort: port,
    description,
    async close() {
      if (closed) return;
      closed = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      ssh.end();
    },
  };
}
