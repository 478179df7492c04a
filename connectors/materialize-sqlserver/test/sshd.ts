// Test fixture: a real OpenSSH server on a loopback port, with a temp host key and a temp client key in
// authorized_keys. Stopped (by its own pid) and its directory removed by `stop()`.
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { until } from '@sluice/runtime/testing';

export const SSHD = '/usr/sbin/sshd';

export function sshdUnavailable(): string | undefined {
  if (!existsSync(SSHD)) return `${SSHD} is not installed (apt-get install openssh-server)`;
  try { execFileSync('ssh-keygen', ['-?'], { stdio: 'ignore' }); } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'ssh-keygen is not installed';
  }
  return undefined;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function waitForBanner(port: number, proc: ChildProcess, stderr: () => string): Promise<void> {
  await until(`sshd to answer with its banner on port ${port}`, async () => {
    if (proc.exitCode !== null) throw new Error(`sshd exited with ${proc.exitCode}: ${stderr()}`);
    return new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('data', (d) => { s.destroy(); resolve(d.toString().startsWith('SSH-')); });
      s.once('error', () => resolve(false));
    });
  }, { ms: 30_000, intervalMs: 50, detail: stderr });
}

export interface Sshd {
  port: number;
  user: string;
  privateKey: string;
  /** A key that is not authorized. */
  otherKey: string;
  stop(): Promise<void>;
}

export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sshd-'));
  const keygen = (file: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, file)], { stdio: 'ignore' });
  keygen('host_key');
  keygen('client_key');
  keygen('other_key');
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  // sshd wants its privilege-separation directory; creating it is harmless when it exists.
  try { mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); } catch { /* not root: sshd will say so */ }
  const port = await freePort();
  const config = [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${join(dir, 'host_key')}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    `PidFile ${join(dir, 'sshd.pid')}`,
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password',
    'StrictModes no',
    'UsePAM no',
    'AllowTcpForwarding yes',
    'LogLevel ERROR',
  ].join('\n');
  writeFileSync(join(dir, 'sshd_config'), `${config}\n`);
  const proc = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  try {
    await waitForBanner(port, proc, () => err);
  } catch (e) {
    proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    port,
    user: userInfo().username,
    privateKey: readFileSync(join(dir, 'client_key'), 'utf8'),
    otherKey: readFileSync(join(dir, 'other_key'), 'utf8'),
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
