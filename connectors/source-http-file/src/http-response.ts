// What the HTTP client reads of a response: its headers as FileInfo, HTTP dates, Retry-After, and an error
// body's first bytes as one short line for messages. Moved out of http.ts (a pure move).
import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type { IncomingMessage } from 'node:http';

// Loaded with require: an ESM import of node:http builds its ESM facade, which reads every export and
// so loads undici (fetch, WebSocket) too — ~45 ms of start-up this connector never uses.
const require = createRequire(import.meta.url);
const http = require('node:http') as typeof Http;

/** How much of an error body is read for the message. */
export const BODY_SNIPPET_BYTES = 500;

export interface FileInfo {
  /** The URL that answered, after redirects. */
  finalUrl: string;
  status: number;
  lastModified: string | null;
  etag: string | null;
  contentLength: number | null;
  contentType: string | null;
  contentEncoding: string | null;
  contentDisposition: string | null;
  acceptRanges: boolean;
}

const HTTP_DATE = [
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/, // IMF-fixdate
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2} GMT$/, // RFC 850
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/, // asctime
];

/** Parses an HTTP date (IMF-fixdate, RFC 850 or asctime); null when malformed. */
export function parseHttpDate(value: string): Date | null {
  const v = value.trim();
  if (!HTTP_DATE.some((re) => re.test(v))) return null;
  const ms = Date.parse(HTTP_DATE[2]?.test(v) ? `${v} GMT` : v);
  return Number.isNaN(ms) ? null : new Date(ms);
}

export function header(res: IncomingMessage, name: string): string | null {
  const v = res.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

export function infoOf(res: IncomingMessage, finalUrl: string): FileInfo {
  const len = header(res, 'content-length');
  return {
    finalUrl,
    status: res.statusCode ?? 0,
    lastModified: header(res, 'last-modified'),
    etag: header(res, 'etag'),
    contentLength: len !== null && /^\d+$/.test(len.trim()) ? Number(len) : null,
    contentType: header(res, 'content-type'),
    contentEncoding: header(res, 'content-encoding'),
    contentDisposition: header(res, 'content-disposition'),
    acceptRanges: (header(res, 'accept-ranges') ?? '').toLowerCase().includes('bytes'),
  };
}

export function statusText(status: number): string {
  return `${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
}

/**
 * An error body as one short line for messages: tags, scripts and styles dropped (a 404's HTML page), whitespace
 * collapsed, at most 200 characters.
 */
export function bodyLine(body: string): string {
  const text = body.replace(/<(script|style)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ').replace(/<[^>]*>?/g, ' ')
    .replace(/&nbsp;/g, ' ').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ').trim();
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

export async function readSnippet(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      n += chunk.length;
      if (n >= BODY_SNIPPET_BYTES) break;
    }
  } catch {
    // a partial body is still useful
  }
  res.destroy();
  return Buffer.concat(chunks).subarray(0, BODY_SNIPPET_BYTES).toString('utf8');
}

export function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const date = parseHttpDate(v);
  return date ? Math.max(0, date.getTime() - Date.now()) : null;
}
