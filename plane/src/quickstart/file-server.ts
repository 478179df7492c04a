// A loopback HTTP server for one file, as the HTTP-file connector expects a source to behave: HEAD and
// GET with Last-Modified and ETag, conditional requests, and byte ranges (for resumed downloads).
import { createHash } from 'node:crypto';
import type * as Http from 'node:http';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

// node:http with require, not an ESM import (whose facade loads undici: ~50–80 ms of `sluice start`; serve.ts).
const { createServer } = createRequire(import.meta.url)('node:http') as typeof Http;

export interface ServedFile {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function serveFile(opts: { body: Buffer; path: string; contentType: string; lastModified: Date; host?: string; port?: number }): Promise<ServedFile> {
  const etag = `"${createHash('sha256').update(opts.body).digest('hex').slice(0, 16)}"`;
  const lastModified = opts.lastModified.toUTCString();
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== opts.path) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' });
      res.end();
      return;
    }
    const headers: Record<string, string | number> = { 'content-type': opts.contentType, 'last-modified': lastModified, etag, 'accept-ranges': 'bytes' };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
    const ifRange = req.headers['if-range'];
    if (range && (ifRange === undefined || ifRange === etag || ifRange === lastModified)) {
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), opts.body.length - 1) : opts.body.length - 1;
      if (start >= opts.body.length || start > end) {
        res.writeHead(416, { 'content-range': `bytes */${opts.body.length}` });
        res.end();
        return;
      }
      res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${opts.body.length}`, 'content-length': end - start + 1 });
      res.end(req.method === 'HEAD' ? undefined : opts.body.subarray(start, end + 1));
      return;
    }
    res.writeHead(200, { ...headers, 'content-length': opts.body.length });
    res.end(req.method === 'HEAD' ? undefined : opts.body);
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}${opts.path}`,
    server,
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
