// URLs as messages, logs and state show them: no credentials, no query (a signed URL's signature or an
// api_key parameter is a secret), no fragment. Moved out of http.ts (a pure move).
/**
 * The URL as messages and logs show it: without user:password, query string and fragment (a signed
 * URL's signature or an api_key parameter is a secret); `?…` marks a query that was there.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const hadQuery = u.search !== '';
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return `${u.toString()}${hadQuery ? '?…' : ''}`;
  } catch {
    // Not a URL: show no more than what precedes a query or fragment, without credentials.
    return url.replace(/[?#].*$/s, '').replace(/\/\/[^/@]*@/, '//');
  }
}

/** The same resource for "unchanged file" purposes: the URL without credentials, query and fragment. */
export function urlWithoutQuery(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  return u.toString();
}
