// Test helper: a control plane with its API on a loopback HTTP server (port 0), a refresh token, and
// one-call status queries. For this package's tests and the data plane's end-to-end tests:
//
//   const cp = await startControlPlaneServer();            // or { dataDir } to reuse a data dir
//   cp.controlPlane.recorder.publish(...)                   // or hand cp.controlPlane.recorder to real tasks
//   const [s] = await cp.status(['acmeCo/task']);           // StatusResponse items (throws on non-200)
//   assert.equal(s.summary.status, 'ok');
//   await cp.close();
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createControlPlane } from './index.ts';
import type { ControlPlane } from './index.ts';

export interface StatusItem {
  catalog_name: string;
  summary: { status: 'ok' | 'taskDisabled' | 'warning' | 'error'; message: string };
  [member: string]: unknown;
}

export interface ControlPlaneServer {
  controlPlane: ControlPlane;
  dataDir: string;
  /** Base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  /** A fresh access token (creates and exchanges a single-use refresh token with the given prefixes). */
  accessToken(prefixes?: string[]): Promise<string>;
  /** GET /api/v1/catalog/status; throws with the error body on a non-200 answer. */
  status(names: string[], opts?: { short?: boolean; connected?: boolean }): Promise<StatusItem[]>;
  close(): Promise<void>;
}

export async function startControlPlaneServer(opts: { dataDir?: string } = {}): Promise<ControlPlaneServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'sluice-control-'));
  const controlPlane = createControlPlane({ dataDir });
  const server = createServer((req, res) => {
    controlPlane.handle(req, res).then((served) => {
      if (!served) { res.writeHead(404); res.end('not found'); }
    }, (err: unknown) => { res.writeHead(500); res.end(String(err)); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref(); // a failed assertion that skips close() must not keep the test process alive
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let cached: string | undefined;

  const accessToken = async (prefixes?: string[]) => {
    const t = await controlPlane.tokens.create(prefixes ? { prefixes } : {});
    const res = await fetch(`${url}/api/v1/auth/token`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: t.id, secret: t.secret }),
    });
    if (res.status !== 200) throw new Error(`token exchange failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  return {
    controlPlane, dataDir, url, accessToken,
    async status(names, o = {}) {
      cached ??= await accessToken();
      const q = new URLSearchParams(names.map((n): [string, string] => ['name', n]));
      if (o.short) q.set('short', 'true');
      if (o.connected) q.set('connected', 'true');
      const res = await fetch(`${url}/api/v1/catalog/status?${q}`, { headers: { Authorization: `Bearer ${cached}` } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`status ${res.status}: ${body}`);
      return JSON.parse(body) as StatusItem[];
    },
    async close() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      controlPlane.close();
    },
  };
}
