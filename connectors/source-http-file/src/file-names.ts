// A file's names: the binding name for a URL, the file name as upstream derives it (`_meta/file`, the
// state's `path`), and what format and compression detection see (names, Content-Type, Content-Encoding).
import type { FileInfo } from './http-response.ts';
import type { EndpointConfig } from './schema.ts';

/** The binding name for a URL: its last non-empty path segment, else the host. */
export function recommendedName(url: string): string {
  const u = new URL(url);
  const segments = u.pathname.replace(/\/+$/, '').split('/');
  const last = decodeURIComponent(segments[segments.length - 1] ?? '');
  return (last || u.hostname).replace(/^\/+|\/+$/g, '');
}

/**
 * The file's name as upstream derives it (its listing path, hence `_meta/file` and the state's `path`):
 * the last "/"-segment of the URL's percent-decoded path, not trimmed ("" for a URL ending in "/").
 * No query, fragment or credentials. Percent-escapes decode to bytes read as UTF-8 (invalid ones
 * become U+FFFD, as Go's JSON encoding of the name would give).
 */
export function fileNameOf(url: string): string {
  const u = new URL(url);
  const bytes: number[] = [];
  const path = u.pathname;
  for (let i = 0; i < path.length; i++) {
    const m = path[i] === '%' ? /^[0-9a-f]{2}$/i.exec(path.slice(i + 1, i + 3)) : null;
    if (m) { bytes.push(parseInt(m[0], 16)); i += 2; continue; }
    for (const b of Buffer.from(path[i] as string)) bytes.push(b);
  }
  const decoded = Buffer.from(bytes).toString('utf8');
  return decoded.slice(decoded.lastIndexOf('/') + 1);
}

function dispositionName(value: string | null): string | null {
  if (!value) return null;
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(value);
  return m ? decodeURIComponent(m[1] as string) : null;
}

/**
 * What format and compression detection see: `parser.filename` if set, else the file's name (then the
 * final URL's name and Content-Disposition); the response's Content-Type / Content-Encoding, else
 * `parser.contentType` / `parser.contentEncoding` (upstream: the response's headers win when present).
 */
export function metaOf(config: EndpointConfig, info: FileInfo | null): { filename: string; altNames: string[]; contentType: string | null; contentEncoding: string | null } {
  const altNames: string[] = [];
  const name = fileNameOf(config.url);
  const filename = config.parser?.filename ? config.parser.filename : name;
  if (info) {
    const finalName = fileNameOf(info.finalUrl);
    if (finalName && finalName !== filename) altNames.push(finalName);
    const disp = dispositionName(info.contentDisposition);
    if (disp) altNames.push(disp);
  }
  return {
    filename,
    altNames,
    contentType: info?.contentType || config.parser?.contentType || null,
    contentEncoding: info?.contentEncoding || config.parser?.contentEncoding || null,
  };
}
