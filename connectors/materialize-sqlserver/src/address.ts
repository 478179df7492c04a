// `address` is host[:port]. When the port is missing the SPEC's default (3306) applies; SQL Server normally
// listens on 1433, so the connector warns when it defaults and suggests `:1433` if that connection is refused.
import { ConfigError } from '@sluice/runtime';
import { SPEC_DEFAULT_PORT, SQLSERVER_USUAL_PORT } from './config.ts';

export interface ParsedAddress {
  host: string;
  port: number;
  /** True when the address had no port and the SPEC's default was used. */
  portDefaulted: boolean;
}

export function parseAddress(address: string): ParsedAddress {
  const a = address.trim();
  if (a === '') throw new ConfigError('address must not be empty: give host[:port], e.g. db.example.com:1433');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) {
    throw new ConfigError(`address '${address}' must be host[:port] without a scheme, e.g. db.example.com:1433`);
  }
  let host: string;
  let portText: string | undefined;
  if (a.startsWith('[')) {
    // [IPv6]:port or [IPv6]
    const end = a.indexOf(']');
    if (end < 0) throw new ConfigError(`address '${address}': missing ']' after the IPv6 address`);
    host = a.slice(1, end);
    const rest = a.slice(end + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) throw new ConfigError(`address '${address}': expected ':port' after ']'`);
      portText = rest.slice(1);
    }
  } else if ((a.match(/:/g) ?? []).length > 1) {
    host = a; // a bare IPv6 address: no port
  } else {
    const i = a.lastIndexOf(':');
    if (i < 0) host = a;
    else { host = a.slice(0, i); portText = a.slice(i + 1); }
  }
  if (host === '') throw new ConfigError(`address '${address}' has no host`);
  if (portText === undefined) return { host, port: SPEC_DEFAULT_PORT, portDefaulted: true };
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
    throw new ConfigError(`address '${address}': port '${portText}' is not a number between 1 and 65535`);
  }
  return { host, port: Number(portText), portDefaulted: false };
}

/** host:port as written in messages (IPv6 in brackets). */
export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function defaultPortWarning(addr: ParsedAddress): string {
  return `address has no port, so port ${SPEC_DEFAULT_PORT} is used (the documented default); SQL Server usually listens on ${SQLSERVER_USUAL_PORT}: `
    + `if this is not intended, set address to ${formatAddress(addr.host, SQLSERVER_USUAL_PORT)}`;
}
