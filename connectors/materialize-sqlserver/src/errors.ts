// Turn driver failures into messages that say what is wrong and what to do. Connection problems (DNS,
// timeouts, refused connections, failed logins, a missing database) become ConfigErrors: they are the user's
// to fix. Statement failures become SqlErrors carrying the server's error number.
import { ConfigError } from '@sluice/runtime';
import { SqlError } from '@sluice/materialize-sql';
import { formatAddress } from './address.ts';
import { SPEC_DEFAULT_PORT, SQLSERVER_USUAL_PORT } from './config.ts';

export interface ConnectTarget {
  host: string;
  port: number;
  portDefaulted: boolean;
  user: string;
  database: string;
  /** Set when connecting through an SSH tunnel (the host/port above are then the database's, seen from the SSH server). */
  viaTunnel?: string;
}

interface DriverError {
  message?: string;
  code?: string;
  number?: number;
  cause?: unknown;
  originalError?: unknown;
  errors?: unknown[];
}

function chain(err: unknown): DriverError[] {
  const out: DriverError[] = [];
  let cur: unknown = err;
  for (let i = 0; i < 6 && cur !== null && typeof cur === 'object'; i++) {
    const e = cur as DriverError;
    out.push(e);
    if (Array.isArray(e.errors)) for (const inner of e.errors) if (inner !== null && typeof inner === 'object') out.push(inner as DriverError);
    cur = e.originalError ?? e.cause;
  }
  return out;
}

const anyCode = (errs: DriverError[], ...codes: string[]) => errs.some((e) => e.code !== undefined && codes.includes(e.code));
const anyMessage = (errs: DriverError[], re: RegExp) => errs.some((e) => typeof e.message === 'string' && re.test(e.message));
const serverNumber = (errs: DriverError[]) => errs.find((e) => typeof e.number === 'number')?.number;

/** A connection (login) failure, explained. */
export function connectError(err: unknown, t: ConnectTarget): Error {
  const errs = chain(err);
  const where = formatAddress(t.host, t.port);
  const tunnel = t.viaTunnel === undefined ? '' : ` (through the SSH tunnel via ${t.viaTunnel})`;
  const first = errs.find((e) => typeof e.message === 'string')?.message ?? String(err);
  if (anyCode(errs, 'ENOTFOUND', 'EAI_AGAIN') || anyMessage(errs, /getaddrinfo|ENOTFOUND|EAI_AGAIN/)) {
    return new ConfigError(`host at address '${t.host}' cannot be found${tunnel}: check the address`, { cause: err });
  }
  if (anyCode(errs, 'ECONNREFUSED') || anyMessage(errs, /ECONNREFUSED|connection refused/i)) {
    const hint = t.portDefaulted
      ? `; the address has no port, so ${SPEC_DEFAULT_PORT} was used, but SQL Server usually listens on ${SQLSERVER_USUAL_PORT}: try address ${formatAddress(t.host, SQLSERVER_USUAL_PORT)}`
      : ': check that SQL Server is running, listens for TCP connections on that port, and that a firewall allows the connection';
    return new ConfigError(`connection to ${where} was refused${tunnel}${hint}`, { cause: err });
  }
  if (anyCode(errs, 'ETIMEOUT', 'ETIMEDOUT') || anyMessage(errs, /timeout|timed out/i)) {
    return new ConfigError(`connection to ${where} timed out${tunnel} (incorrect host or port, or a firewall dropping the connection?)`, { cause: err });
  }
  const cannotOpen = errs.find((e) => typeof e.message === 'string' && /Cannot open database/i.test(e.message));
  if (cannotOpen !== undefined || serverNumber(errs) === 4060) {
    return new ConfigError(`${cannotOpen?.message ?? first} — database '${t.database}' does not exist on ${where} or user '${t.user}' may not use it: check the database name and the user's access`, { cause: err });
  }
  if (anyCode(errs, 'ELOGIN') || anyMessage(errs, /Login failed/i)) {
    return new ConfigError(`${first.replace(/\.$/, '')}: check the user and its password (or the IAM role and that RDS Proxy IAM authentication is enabled)`, { cause: err });
  }
  if (anyCode(errs, 'ESOCKET') || anyMessage(errs, /ECONNRESET|socket hang up|EHOSTUNREACH|ENETUNREACH/)) {
    return new ConfigError(`could not connect to ${where}${tunnel}: ${first}`, { cause: err });
  }
  return new ConfigError(`could not connect to SQL Server at ${where}${tunnel}: ${first}`, { cause: err });
}

/** A failed statement, with the server's error number and a hint for the usual permission problems. */
export function statementError(err: unknown, sql: string, t: Pick<ConnectTarget, 'user' | 'database'>): SqlError {
  const errs = chain(err);
  const number = serverNumber(errs);
  const msg = errs.find((e) => typeof e.message === 'string')?.message ?? String(err);
  const head = sql.length > 200 ? `${sql.slice(0, 200)}…` : sql;
  if (number === 262 || /permission denied/i.test(msg)) {
    return new SqlError(`${msg} — user '${t.user}' lacks a permission in database '${t.database}' (the documented setup is GRANT CONTROL ON DATABASE::${t.database} TO ${t.user}); statement: ${head}`, { cause: err, ...(number === undefined ? {} : { number }) });
  }
  return new SqlError(`${msg} (SQL Server error ${number ?? 'unknown'}); statement: ${head}`, { cause: err, ...(number === undefined ? {} : { number }) });
}

/** The prerequisite check for the permission to create tables, as a user-facing error. */
export function missingCreateTableError(t: Pick<ConnectTarget, 'user' | 'database'>): ConfigError {
  return new ConfigError(`user '${t.user}' has no CREATE TABLE permission in database '${t.database}': grant it, e.g. GRANT CONTROL ON DATABASE::${t.database} TO ${t.user}`);
}
