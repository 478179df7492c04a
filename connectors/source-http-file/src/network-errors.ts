// A socket-level failure (DNS, refused, TLS, timeout, dropped) as a NetworkError saying what happened and
// whether it is worth retrying. Moved out of http.ts (a pure move).
import { NetworkError } from './errors.ts';

const TLS_CODES = /CERT|SSL|TLS|EPROTO|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/;

export function classifyNetworkError(err: NodeJS.ErrnoException, url: URL): Error {
  const host = url.hostname;
  const code = err.code ?? '';
  if (err.name === 'AbortError') return err;
  if (code === 'ERR_PRIVATE_ADDRESS') return new NetworkError(err.message, { cause: err, fields: { retryable: false } });
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return new NetworkError(`cannot resolve host '${host}' (DNS lookup failed: ${code}): check the URL's host name`, { cause: err, fields: { retryable: code === 'EAI_AGAIN' } });
  }
  if (code === 'ECONNREFUSED') {
    return new NetworkError(`cannot connect to ${url.host}: connection refused (${code}): check the URL's host and port and that the server is running`, { cause: err, fields: { retryable: true, refused: true } });
  }
  if (TLS_CODES.test(code) || /certificate|tls|ssl/i.test(err.message)) {
    const detail = err.message.split('\n')[0]?.replace(/^write EPROTO [0-9A-F]+:error:[0-9A-F]+:SSL routines:[^:]*:/, '').trim();
    return new NetworkError(`TLS handshake with ${url.host} failed (${code || 'TLS error'}: ${detail}): the server's certificate must be valid and trusted for this host name`, { cause: err, fields: { retryable: false } });
  }
  if (code === 'CONNECT_TIMEOUT' || code === 'IDLE_TIMEOUT' || code === 'ETIMEDOUT') {
    return new NetworkError(`timed out talking to ${url.host}: ${err.message}`, { cause: err, fields: { retryable: true } });
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED' || err.message === 'socket hang up') {
    return new NetworkError(`the connection to ${url.host} dropped (${code || err.message})`, { cause: err, fields: { retryable: true } });
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return new NetworkError(`host ${url.host} is unreachable (${code}): check the URL and the network`, { cause: err, fields: { retryable: true } });
  }
  return new NetworkError(`request to ${url.host} failed: ${err.message}`, { cause: err, fields: { retryable: false } });
}
