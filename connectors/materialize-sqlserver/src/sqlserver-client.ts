// The SQL Server client: an `mssql` connection pool (tedious underneath) configured with encryption on and the
// connector's application name, optionally through an SSH tunnel and with AWS IAM tokens. `connect()` pins one
// pooled tedious connection for a session (temp tables are per session), on which statements run as raw batches
// (never sp_executesql, which would scope #temp tables to one call) and rows are bulk-loaded from async iterables.
import sql from 'mssql';
import { Request, TYPES } from 'tedious';
import type { Connection as TediousConnection } from 'tedious';
import type { DataType } from 'tedious/lib/data-type.js';
import type { BulkTarget, Client, Connection, PreparedStatement, SqlParam, SqlRow } from '@sluice/materialize-sql';
import { SqlError } from '@sluice/materialize-sql';
import type { Logger } from '@sluice/runtime';
import { defaultPortWarning, parseAddress } from './address.ts';
import type { EndpointConfig } from './config.ts';
import { connectError, statementError } from './errors.ts';
import type { ConnectTarget } from './errors.ts';
import { azureAccessToken, iamCredentials, rdsAuthToken, TokenSource } from './iam.ts';
import type { AssumeRole } from './iam.ts';
import { openTunnel } from './tunnel.ts';
import type { Tunnel } from './tunnel.ts';
import { ddlBaseType } from './sqlserver-dialect.ts';
import { parseDate, parseDateTime2, parseTime } from './values.ts';

export const APP_NAME = 'Flow Materialization Connector';

export interface ClientOptions {
  log?: Logger;
  /** Login timeout (ms); the prerequisite check uses 20 s. */
  connectTimeoutMs?: number;
  /** Pool size: two pinned sessions (load, store) plus one for Apply/fence. */
  maxConnections?: number;
  /** For tests: role assumption without STS. */
  assumeRole?: AssumeRole;
}

/** How one bulk-loaded column is declared to the driver and how its values are converted. */
interface BulkColumn {
  type: DataType;
  options: { nullable: boolean; length?: number; scale?: number; precision?: number };
  convert(v: SqlParam, name: string): unknown;
}

const asIs = (v: SqlParam) => v;
const asString = (v: SqlParam) => (v === null ? null : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : String(v));
function withDelta(p: { date: Date; nanosecondDelta: number }): Date {
  const d = p.date as Date & { nanosecondDelta?: number };
  d.nanosecondDelta = p.nanosecondDelta;
  return d;
}

/** Map a column's DDL (as the dialect rendered it) to a tedious bulk-load column. */
export function bulkColumn(ddl: string, nullable: boolean): BulkColumn {
  const { type, length } = ddlBaseType(ddl);
  switch (type) {
    case 'bigint': return { type: TYPES.BigInt, options: { nullable }, convert: asIs };
    case 'bit': case 'boolean': return { type: TYPES.Bit, options: { nullable }, convert: asIs };
    case 'float': return { type: TYPES.Float, options: { nullable }, convert: asIs };
    case 'datetime2':
      return { type: TYPES.DateTime2, options: { nullable, scale: 7 }, convert: (v, n) => (v === null ? null : withDelta(parseDateTime2(String(v), n))) };
    case 'time':
      return { type: TYPES.Time, options: { nullable, scale: 7 }, convert: (v, n) => (v === null ? null : withDelta(parseTime(String(v), n))) };
    case 'date':
      return { type: TYPES.Date, options: { nullable }, convert: (v, n) => (v === null ? null : parseDate(String(v), n)) };
    case 'varbinary': case 'binary':
      return { type: TYPES.VarBinary, options: { nullable, length: length === -1 || length === null ? Infinity : length }, convert: (v) => (v === null ? null : Buffer.from(v as Uint8Array)) };
    case 'varchar': case 'nvarchar': case 'char': case 'nchar':
      // Sent as UTF-16 whatever the column: the server converts into a UTF-8 varchar column without loss,
      // whereas tedious would encode varchar data in the database's default code page.
      return { type: TYPES.NVarChar, options: { nullable, length: length === -1 || length === null || length > 4000 ? Infinity : length }, convert: asString };
    default:
      // User DDL (DECIMAL(20), …): send text and let the server convert.
      return { type: TYPES.NVarChar, options: { nullable, length: Infinity }, convert: (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'boolean' ? (v ? '1' : '0') : asString(v)) };
  }
}

/** A statement parameter's tedious type, from its JS value. */
function paramType(v: SqlParam): DataType {
  if (v === null) return TYPES.NVarChar;
  if (typeof v === 'boolean') return TYPES.Bit;
  if (typeof v === 'bigint') return TYPES.BigInt;
  if (typeof v === 'number') return Number.isInteger(v) ? TYPES.BigInt : TYPES.Float;
  if (v instanceof Uint8Array) return TYPES.VarBinary;
  return TYPES.NVarChar;
}

function rowOf(columns: { value: unknown; metadata: { colName: string } }[]): SqlRow {
  const row: SqlRow = {};
  for (const c of columns) row[c.metadata.colName] = c.value;
  return row;
}

/** One pinned session. Calls are sequential (the transactor never overlaps them on one connection). */
export class SqlServerConnection implements Connection {
  private readonly conn: TediousConnection;
  private readonly release: (conn: TediousConnection) => void;
  private readonly target: Pick<ConnectTarget, 'user' | 'database'>;
  private inTx = false;
  private closed = false;

  constructor(conn: TediousConnection, release: (conn: TediousConnection) => void, target: Pick<ConnectTarget, 'user' | 'database'>) {
    this.conn = conn;
    this.release = release;
    this.target = target;
  }

  private run(text: string, params: readonly SqlParam[] | undefined, onRow?: (row: SqlRow, req: Request) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = new Request(text, (err, rowCount) => {
        if (err) reject(statementError(err, text, this.target));
        else resolve(rowCount ?? 0);
      });
      if (onRow !== undefined) req.on('row', (cols) => onRow(rowOf(cols as never), req));
      if (params === undefined || params.length === 0) {
        this.conn.execSqlBatch(req); // a raw batch: #temp tables created here outlive it
      } else {
        params.forEach((p, i) => req.addParameter(`p${i + 1}`, paramType(p), p instanceof Uint8Array ? Buffer.from(p) : p));
        this.conn.execSql(req);
      }
    });
  }

  exec(text: string, params?: readonly SqlParam[]): Promise<number> {
    return this.run(text, params);
  }

  async query(text: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    const rows: SqlRow[] = [];
    await this.run(text, params, (row) => rows.push(row));
    return rows;
  }

  /** Rows as they arrive; the request is paused while the consumer lags (bounded buffer). */
  async *queryRows(text: string, params?: readonly SqlParam[]): AsyncIterable<SqlRow> {
    const buffer: SqlRow[] = [];
    let done = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    let request: Request | undefined;
    let paused = false;
    const notify = () => { const w = wake; wake = undefined; w?.(); };
    this.run(text, params, (row, req) => {
      request = req;
      buffer.push(row);
      if (buffer.length >= 1000 && !paused) { paused = true; req.pause(); }
      notify();
    }).then(() => { done = true; notify(); }, (err: unknown) => { failure = err; done = true; notify(); });
    while (true) {
      if (buffer.length > 0) {
        yield buffer.shift()!;
        if (paused && buffer.length < 100) { paused = false; request?.resume(); }
        continue;
      }
      if (done) break;
      await new Promise<void>((r) => { wake = r; });
    }
    if (failure !== undefined) throw failure;
  }

  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    const cols = target.columns.map((c) => ({ ...c, bulk: bulkColumn(c.ddl, true) }));
    let conversionError: unknown;
    const converted = async function* (): AsyncIterable<unknown[]> {
      try {
        for await (const row of rows) {
          if (row.length !== cols.length) throw new SqlError(`bulk insert into ${target.name}: a row has ${row.length} values for ${cols.length} columns`);
          yield row.map((v, i) => cols[i]!.bulk.convert(v, cols[i]!.name));
        }
      } catch (err) {
        conversionError = err;
        throw err;
      }
    };
    return new Promise((resolve, reject) => {
      const bulk = this.conn.newBulkLoad(target.name, { keepNulls: true }, (err, rowCount) => {
        if (conversionError !== undefined) reject(conversionError);
        else if (err) reject(statementError(err, `INSERT BULK ${target.name}`, this.target));
        else resolve(rowCount ?? 0);
      });
      // tedious writes `[name]` without escaping; doubling `]` makes the bracketed name exact.
      for (const c of cols) bulk.addColumn(c.name.replaceAll(']', ']]'), c.bulk.type, c.bulk.options);
      this.conn.execBulkLoad(bulk, converted());
    });
  }

  prepare(): PreparedStatement {
    throw new SqlError('the SQL Server connector stages rows with bulk loads; prepared per-row statements are not used');
  }

  async begin(): Promise<void> {
    await this.exec('BEGIN TRANSACTION;');
    this.inTx = true;
  }

  async commit(): Promise<void> {
    await this.exec('COMMIT TRANSACTION;');
    this.inTx = false;
  }

  async rollback(): Promise<void> {
    this.inTx = false;
    await this.exec('IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      if (this.inTx) await this.rollback();
    } catch { /* reset below discards the transaction anyway */ }
    // Back in the pool the session must not carry our temp tables or settings: reset it (or drop it).
    const failed = await new Promise<Error | undefined>((resolve) => {
      try { this.conn.reset((err) => resolve(err ?? undefined)); } catch (err) { resolve(err as Error); }
    });
    if (failed !== undefined) this.conn.close();
    this.release(this.conn);
  }
}

/** The mssql pool configuration (credentials are added by the caller). */
export function buildPoolConfig(cfg: EndpointConfig, server: string, port: number, opts: Pick<ClientOptions, 'connectTimeoutMs' | 'maxConnections'> = {}): sql.config {
  return {
    server,
    port,
    database: cfg.database,
    connectionTimeout: opts.connectTimeoutMs ?? 20_000,
    requestTimeout: 0, // MERGEs of large transactions run as long as they need
    pool: { min: 0, max: opts.maxConnections ?? 4, idleTimeoutMillis: 60_000 },
    options: {
      encrypt: true, // always TLS; the certificate is not verified (as upstream: no option to change either)
      trustServerCertificate: true,
      appName: APP_NAME,
      enableArithAbort: true,
      // The generated SQL relies on both (quoted identifiers; nullable columns written without NULL).
      enableQuotedIdentifier: true,
      enableAnsiNullDefault: true,
      useUTC: true,
    },
  };
}

export class SqlServerClient implements Client {
  readonly config: EndpointConfig;
  private readonly opts: ClientOptions;
  private pool: sql.ConnectionPool | undefined;
  private opening: Promise<sql.ConnectionPool> | undefined;
  private tunnel: Tunnel | undefined;
  private tokens: TokenSource | undefined;
  readonly target: ConnectTarget;

  constructor(config: EndpointConfig, opts: ClientOptions = {}) {
    this.config = config;
    this.opts = opts;
    const addr = parseAddress(config.address);
    this.target = { host: addr.host, port: addr.port, portDefaulted: addr.portDefaulted, user: config.user, database: config.database };
    if (addr.portDefaulted) opts.log?.warn(defaultPortWarning(addr));
  }

  private async open(): Promise<sql.ConnectionPool> {
    const cfg = this.config;
    let server = this.target.host;
    let port = this.target.port;
    const ssh = cfg.networkTunnel?.sshForwarding;
    if (ssh !== undefined) {
      const t: Parameters<typeof openTunnel>[0] = { sshEndpoint: ssh.sshEndpoint, privateKey: ssh.privateKey, targetHost: server, targetPort: port };
      if (this.opts.log !== undefined) t.log = this.opts.log;
      this.tunnel = await openTunnel(t);
      this.target.viaTunnel = this.tunnel.description;
      server = this.tunnel.localHost;
      port = this.tunnel.localPort;
    }
    const poolConfig = buildPoolConfig(cfg, server, port, this.opts);
    const creds = cfg.credentials;
    if (creds.auth_type === 'UserPassword') {
      poolConfig.user = cfg.user;
      poolConfig.password = creds.password;
    } else if (creds.auth_type === 'AWSIAM') {
      // The token is signed for the database's real address, even through a tunnel.
      const { host, port: realPort } = this.target;
      this.tokens = new TokenSource(async () => rdsAuthToken({
        host, port: realPort, user: cfg.user, region: creds.aws_region, credentials: await iamCredentials(creds, this.opts.assumeRole),
      }));
      poolConfig.authentication = { type: 'azure-active-directory-access-token', options: { token: await this.tokens.get() } };
    } else {
      // Flow's runtime obtains the Azure AD token for the application (x-iam-azure-scope) and injects it into the
      // config; each new connection presents the current one (a restarted connector gets a fresh token).
      this.tokens = new TokenSource(async () => azureAccessToken(creds));
      poolConfig.authentication = { type: 'azure-active-directory-access-token', options: { token: await this.tokens.get() } };
    }
    const pool = new sql.ConnectionPool(poolConfig);
    pool.on('error', (err: Error) => this.opts.log?.warn('SQL Server pool error', { error: err.message }));
    try {
      await pool.connect();
    } catch (err) {
      await pool.close().catch(() => undefined);
      await this.tunnel?.close();
      this.tunnel = undefined;
      throw connectError(err, this.target);
    }
    return pool;
  }

  private async getPool(): Promise<sql.ConnectionPool> {
    if (this.pool !== undefined) return this.pool;
    this.opening ??= this.open().then((p) => { this.pool = p; return p; }, (err: unknown) => { this.opening = undefined; throw err; });
    return this.opening;
  }

  async connect(): Promise<SqlServerConnection> {
    const pool = await this.getPool();
    if (this.tokens !== undefined) {
      const auth = (pool as unknown as { config: sql.config }).config.authentication as { options: { token: string } };
      auth.options.token = await this.tokens.get();
    }
    const p = pool as unknown as { acquire(requester: unknown): Promise<TediousConnection>; release(c: TediousConnection): void };
    let conn: TediousConnection;
    try {
      conn = await p.acquire(this);
    } catch (err) {
      throw connectError(err, this.target);
    }
    const c = new SqlServerConnection(conn, (tc) => p.release(tc), this.target);
    await c.exec('SET XACT_ABORT ON;'); // any error aborts the whole transaction: nothing partial is committed
    return c;
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    this.opening = undefined;
    await pool?.close().catch(() => undefined);
    await this.tunnel?.close();
    this.tunnel = undefined;
  }
}
