// The SQL Server client: an `mssql` connection pool (tedious underneath) configured with encryption on and the
// connector's application name, optionally through an SSH tunnel and with AWS IAM tokens. `connect()` pins one
// pooled tedious connection for a session (temp tables are per session), on which statements run as raw batches
// (never sp_executesql, which would scope #temp tables to one call) and rows are bulk-loaded from async iterables.
import sql from 'mssql';
import { Request, TYPES } from 'tedious';
import type { Connection as TediousConnection } from 'tedious';
import type { DataType } from 'tedious/lib/data-type.js';
import type { Collation } from 'tedious/lib/collation.js';
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
import { parseDate, parseDateTime2, parseTime, scaleDecimal } from './values.ts';

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
export interface BulkColumn {
  type: DataType;
  options: { nullable: boolean; length?: number; scale?: number; precision?: number };
  convert(v: SqlParam, name: string): unknown;
  /** Single-byte/UTF-8 string data: encoded in, and declared with, the staging column's own collation. */
  needsCollation?: boolean;
}

const asIs = (v: SqlParam) => v;
const asString = (v: SqlParam) => (v === null ? null : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : String(v));
function withDelta(p: { date: Date; nanosecondDelta: number }): Date {
  const d = p.date as Date & { nanosecondDelta?: number };
  d.nanosecondDelta = p.nanosecondDelta;
  return d;
}

/** An integer within [min, max] as tedious's integer types take it (a number; a bigint for BIGINT beyond 2^53). */
function integerIn(min: bigint, max: bigint, type: string) {
  return (v: SqlParam, name: string): number | bigint | null => {
    if (v === null) return null;
    let n: bigint;
    if (typeof v === 'bigint') n = v;
    else if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
    else if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) n = BigInt(v.trim());
    else throw new SqlError(`field '${name}': ${String(v)} is not an integer, so it cannot be written to a ${type} column`);
    if (n < min || n > max) throw new SqlError(`field '${name}': ${n} is outside the ${type} range (${min} .. ${max})`);
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  };
}

/**
 * DECIMAL/NUMERIC written exactly. tedious's own Decimal type goes through a double (parseFloat, 2^53), which
 * changes the digits of a DECIMAL(20) value such as 18446744073709551615; this one takes the value already scaled
 * to the column's integer (values.ts scaleDecimal) and writes it as TDS does: a sign byte (1 = positive) and the
 * magnitude little-endian in 4, 8, 12 or 16 bytes by precision. Type info and length come from tedious's Decimal.
 */
export const ExactDecimal: DataType = {
  ...TYPES.Decimal,
  validate(value: unknown): bigint | null {
    if (value === null || value === undefined) return null;
    if (typeof value !== 'bigint') throw new TypeError('ExactDecimal takes the scaled value as a bigint');
    return value;
  },
  *generateParameterData(parameter: { value?: unknown; precision?: number }): Generator<Buffer> {
    const v = parameter.value;
    if (v === null || v === undefined) return;
    const n = v as bigint;
    const p = parameter.precision ?? 18;
    const size = p <= 9 ? 4 : p <= 19 ? 8 : p <= 28 ? 12 : 16;
    const buf = Buffer.alloc(1 + size);
    buf.writeUInt8(n < 0n ? 0 : 1, 0);
    let mag = n < 0n ? -n : n;
    for (let i = 0; i < size; i++) { buf[1 + i] = Number(mag & 0xffn); mag >>= 8n; }
    if (mag !== 0n) throw new RangeError(`decimal magnitude does not fit ${size} bytes (precision ${p})`);
    yield buf;
  },
} as DataType;

/** `(p)` / `(p, s)` of a DDL, e.g. DECIMAL(20, 2) → [20, 2]. */
function typeArgs(ddl: string): [number | undefined, number | undefined] {
  const m = /^\s*[A-Za-z0-9_]+(?:\s+PRECISION)?\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)/i.exec(ddl);
  return [m?.[1] === undefined ? undefined : Number(m[1]), m?.[2] === undefined ? undefined : Number(m[2])];
}

/**
 * Map a staging column's DDL (as the dialect rendered it) to a tedious bulk-load column of exactly that type, with
 * the conversion of its values. Every type the dialect stages (its mapped types, and the user-DDL types in
 * USER_DDL_STAGED_AS_IS) has a case here; any other type is an internal error, never a silent text fallback.
 */
export function bulkColumn(ddl: string, nullable: boolean): BulkColumn {
  const { type, length } = ddlBaseType(ddl);
  const [arg1, arg2] = typeArgs(ddl);
  // The declared size is the staging column's: MAX (-1) as tedious's Infinity, no size as T-SQL's default of 1.
  const sized = (max: number) => (length === -1 ? Infinity : length === null ? 1 : length > max ? Infinity : length);
  switch (type) {
    case 'bigint': return { type: TYPES.BigInt, options: { nullable }, convert: integerIn(-(2n ** 63n), 2n ** 63n - 1n, 'BIGINT') };
    case 'int': return { type: TYPES.Int, options: { nullable }, convert: integerIn(-(2n ** 31n), 2n ** 31n - 1n, 'INT') };
    case 'smallint': return { type: TYPES.SmallInt, options: { nullable }, convert: integerIn(-32768n, 32767n, 'SMALLINT') };
    case 'tinyint': return { type: TYPES.TinyInt, options: { nullable }, convert: integerIn(0n, 255n, 'TINYINT') };
    case 'bit': case 'boolean': return { type: TYPES.Bit, options: { nullable }, convert: asIs };
    case 'float': return { type: TYPES.Float, options: { nullable }, convert: asIs };
    case 'real': return { type: TYPES.Real, options: { nullable }, convert: asIs };
    case 'decimal': case 'numeric': {
      const precision = arg1 ?? 18;
      const scale = arg2 ?? 0;
      return {
        type: ExactDecimal, options: { nullable, precision, scale },
        convert: (v, n) => (v === null ? null : scaleDecimal(typeof v === 'string' ? v : String(v), precision, scale, n)),
      };
    }
    case 'datetime2':
      return { type: TYPES.DateTime2, options: { nullable, scale: arg1 ?? 7 }, convert: (v, n) => (v === null ? null : withDelta(parseDateTime2(String(v), n))) };
    case 'time':
      return { type: TYPES.Time, options: { nullable, scale: arg1 ?? 7 }, convert: (v, n) => (v === null ? null : withDelta(parseTime(String(v), n))) };
    case 'date':
      return { type: TYPES.Date, options: { nullable }, convert: (v, n) => (v === null ? null : parseDate(String(v), n)) };
    case 'datetime':
      return { type: TYPES.DateTime, options: { nullable }, convert: (v, n) => (v === null ? null : parseDateTime2(String(v), n).date) };
    case 'smalldatetime':
      return { type: TYPES.SmallDateTime, options: { nullable }, convert: (v, n) => (v === null ? null : parseDateTime2(String(v), n).date) };
    case 'uniqueidentifier':
      return { type: TYPES.UniqueIdentifier, options: { nullable }, convert: (v) => (v === null ? null : String(v)) };
    case 'varbinary':
      return { type: TYPES.VarBinary, options: { nullable, length: sized(8000) }, convert: (v) => (v === null ? null : Buffer.from(v as Uint8Array)) };
    case 'varchar':
      // UTF-8 (or code-page) data in the column's own collation, which the client learns from the server.
      return { type: TYPES.VarChar, options: { nullable, length: sized(8000) }, convert: asString, needsCollation: true };
    case 'nvarchar':
      return { type: TYPES.NVarChar, options: { nullable, length: sized(4000) }, convert: asString };
    default:
      throw new SqlError(`internal error: a staging column of type ${ddl} has no bulk-load encoding (the dialect stages only types bulkColumn encodes)`);
  }
}

/** What the server reports of one column of a staging table (`SELECT TOP 0 *`). */
interface StagedColumnMetadata { colName: string; collation?: Collation | undefined }

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
  /** Per staging table (and column set) of this session: the collation of each column, by lower-cased name. */
  private readonly stagedCollations = new Map<string, Map<string, Collation | undefined>>();

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

  /**
   * The collation of each character column of a staging table, as the server reports it (`SELECT TOP 0 *`, once
   * per table and session): varchar data must be encoded in, and declared with, the column's own collation (a
   * UTF-8 collation for the connector's columns), not the database default tedious would use.
   */
  private async collations(target: BulkTarget): Promise<Map<string, Collation | undefined>> {
    const cacheKey = `${target.identifier}\u0000${target.columns.map((c) => `${c.name}\u0000${c.ddl}`).join('\u0000')}`;
    const known = this.stagedCollations.get(cacheKey);
    if (known !== undefined) return known;
    let meta: StagedColumnMetadata[] = [];
    const text = `SELECT TOP 0 * FROM ${target.identifier};`;
    await new Promise<void>((resolve, reject) => {
      const req = new Request(text, (err) => (err ? reject(statementError(err, text, this.target)) : resolve()));
      req.on('columnMetadata', (cols) => { meta = (Array.isArray(cols) ? cols : Object.values(cols)) as StagedColumnMetadata[]; });
      this.conn.execSqlBatch(req);
    });
    const byName = new Map<string, Collation | undefined>();
    for (const m of meta) byName.set(m.colName.toLowerCase(), m.collation);
    this.stagedCollations.set(cacheKey, byName);
    return byName;
  }

  async bulkInsert(target: BulkTarget, rows: AsyncIterable<readonly SqlParam[]> | Iterable<readonly SqlParam[]>): Promise<number> {
    const cols = target.columns.map((c) => ({ ...c, bulk: bulkColumn(c.ddl, true) }));
    let collations: Map<string, Collation | undefined> | undefined;
    if (cols.some((c) => c.bulk.needsCollation === true)) collations = await this.collations(target);
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
      for (const c of cols) {
        bulk.addColumn(c.name.replaceAll(']', ']]'), c.bulk.type, c.bulk.options);
        if (c.bulk.needsCollation !== true) continue;
        const collation = collations?.get(c.name.toLowerCase());
        if (collation === undefined) {
          reject(new SqlError(`internal error: the server reported no collation for character column ${c.name} of ${target.name}`));
          return;
        }
        // The column's collation drives both the bytes (tedious encodes with its code page: UTF-8 for _UTF8
        // collations) and the collation declared in the bulk load's column metadata.
        bulk.columns[bulk.columns.length - 1]!.collation = collation;
      }
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
