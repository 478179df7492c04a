// Refresh tokens and access tokens. A refresh token is an Id and a random secret; only a salted scrypt
// hash of the secret is stored. Exchanging it gives an HS256 JWT valid for one hour, signed with a key
// made on first start and kept in the data dir. Single-use refresh tokens (the default) rotate: each
// exchange replaces the secret and returns the new one. Multi-use tokens (for scrapers) keep theirs and
// slide their validity forward.
import { createHmac, randomBytes, randomUUID, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiError } from './errors.ts';
import type { ControlStore } from './store.ts';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number }) => Promise<Buffer>;
const SCRYPT = { N: 16384, r: 8, p: 1 };
export const ACCESS_TOKEN_SECONDS = 3600;
/** Leeway when checking `exp`, as the reference's JWT library does by default. */
export const EXP_LEEWAY_SECONDS = 60;
export const DEFAULT_VALID_FOR_SECONDS = 90 * 24 * 3600;

export interface AccessClaims {
  sub: string;
  role: string;
  aud: string;
  iat: number;
  exp: number;
  /** Catalog name prefixes this token may read ("" = everything). */
  prefixes: string[];
}

export interface CreateTokenOptions {
  subject?: string;
  prefixes?: string[];
  multiUse?: boolean;
  validForSeconds?: number;
  detail?: string;
}

export interface CreatedToken {
  id: string;
  secret: string;
  /** The user-facing form: standard base64 of {"id","secret"} (usable directly as a bearer by multi-use tokens). */
  token: string;
}

/** Loads the JWT signing key from the data dir, creating it (32 random bytes, mode 0600) on first start. */
export function loadSigningKey(dataDir: string): Buffer {
  const path = join(dataDir, 'jwt-signing-key');
  try {
    writeFileSync(path, randomBytes(32).toString('hex') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'hex');
  if (key.length < 32) throw new Error(`JWT signing key ${path} is shorter than 32 bytes; delete it to generate a new one`);
  return key;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export function signJwt(key: Buffer, claims: object): string {
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify(claims));
  const sig = createHmac('sha256', key).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

const bad = (why: string) => new ApiError(401, `failed to parse authorization token: ${why}`);

/** Verifies an HS256 JWT; every failure is a 401 saying what is wrong. */
export function verifyJwt(key: Buffer, token: string, now: Date = new Date()): AccessClaims {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) throw bad('malformed JWT (expected three base64url parts separated by ".")');
  const [head, body, sig] = parts as [string, string, string];
  let header: { alg?: unknown };
  let claims: Partial<AccessClaims>;
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: unknown };
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<AccessClaims>;
  } catch {
    throw bad('malformed JWT (header or claims are not JSON)');
  }
  if (header.alg !== 'HS256') throw bad(`unsupported algorithm ${JSON.stringify(header.alg)}; tokens are signed with HS256`);
  const expected = createHmac('sha256', key).update(`${head}.${body}`).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw bad('invalid signature (the token was altered or was not issued by this server)');
  }
  if (typeof claims.exp !== 'number' || typeof claims.sub !== 'string' || typeof claims.iat !== 'number') throw bad('missing exp, iat or sub claim');
  const nowS = Math.floor(now.getTime() / 1000);
  if (claims.exp + EXP_LEEWAY_SECONDS < nowS) {
    throw bad(`token expired at ${new Date(claims.exp * 1000).toISOString()}; get a new one from POST /api/v1/auth/token`);
  }
  return {
    sub: claims.sub, role: String(claims.role ?? ''), aud: String(claims.aud ?? ''), iat: claims.iat, exp: claims.exp,
    prefixes: Array.isArray(claims.prefixes) ? claims.prefixes.filter((p): p is string => typeof p === 'string') : [],
  };
}

async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

async function secretMatches(secret: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64');
  const got = await scrypt(secret, Buffer.from(salt, 'base64'), want.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(got, want);
}

export class TokenService {
  readonly #store: ControlStore;
  readonly #key: Buffer;

  constructor(store: ControlStore, key: Buffer) {
    this.#store = store;
    this.#key = key;
  }

  async create(opts: CreateTokenOptions = {}): Promise<CreatedToken> {
    const id = this.#store.ids.next();
    const secret = randomUUID();
    const now = new Date().toISOString();
    this.#store.insertToken({
      id, hash: await hashSecret(secret), subject: opts.subject ?? 'local-user', role: 'authenticated',
      prefixes: opts.prefixes ?? [''], multiUse: opts.multiUse ?? false,
      validForSeconds: opts.validForSeconds ?? DEFAULT_VALID_FOR_SECONDS, uses: 0, createdAt: now, updatedAt: now,
      detail: opts.detail ?? 'Created by sluice token create',
    });
    return { id, secret, token: Buffer.from(JSON.stringify({ id, secret })).toString('base64') };
  }

  /** Exchanges a refresh token for an access token (rotating a single-use token's secret). */
  async exchange(id: string, secret: string, now: Date = new Date()): Promise<{ access_token: string; refresh_token?: { id: string; secret: string } }> {
    const row = this.#store.getToken(id);
    if (!row) throw new ApiError(401, `failed to exchange refresh token: unknown refresh token id "${id}"; create one with \`sluice token create\``);
    if (!(await secretMatches(secret, row.hash))) {
      throw new ApiError(401, `failed to exchange refresh token: invalid secret for refresh token "${id}"${row.multiUse ? '' : ' (single-use tokens rotate: use the secret returned by the last exchange)'}`);
    }
    if (Date.parse(row.updatedAt) + row.validForSeconds * 1000 < now.getTime()) {
      throw new ApiError(401, `failed to exchange refresh token: refresh token "${id}" has expired; create a new one with \`sluice token create\``);
    }
    let rotated: { id: string; secret: string } | undefined;
    let newHash = row.hash;
    if (!row.multiUse) {
      rotated = { id, secret: randomUUID() };
      newHash = await hashSecret(rotated.secret);
    }
    // Compare-and-set on the hash we verified: a secret is honoured once, even by concurrent exchanges.
    if (!this.#store.useToken(id, row.hash, newHash, now)) {
      throw new ApiError(401, `failed to exchange refresh token: refresh token "${id}" was already used; use the secret returned by the last exchange`);
    }
    const iat = Math.floor(now.getTime() / 1000);
    const claims: AccessClaims = { sub: row.subject, role: row.role, aud: 'authenticated', iat, exp: iat + ACCESS_TOKEN_SECONDS, prefixes: row.prefixes };
    const access_token = signJwt(this.#key, claims);
    return rotated ? { access_token, refresh_token: rotated } : { access_token };
  }

  /** Authenticates an Authorization header value: `Bearer <JWT>`, or `Bearer <base64 multi-use refresh token>`. */
  async authenticate(header: string | undefined, now: Date = new Date()): Promise<AccessClaims> {
    if (header === undefined || header === '') {
      throw new ApiError(401, 'This is an authenticated API but the request is missing a required Authorization: Bearer token; get one from POST /api/v1/auth/token');
    }
    const m = /^Bearer +(\S+)\s*$/i.exec(header);
    if (!m) throw new ApiError(401, 'malformed Authorization header: expected "Bearer <token>"');
    const token = m[1]!;
    if (!token.includes('.')) {
      // A refresh token sent directly (Prometheus scrapers do this): exchange it in-process.
      let ref: { id?: unknown; secret?: unknown };
      try {
        ref = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { id?: unknown; secret?: unknown };
      } catch {
        throw bad('malformed token (neither a JWT nor a base64 refresh token)');
      }
      if (typeof ref.id !== 'string' || typeof ref.secret !== 'string') throw bad('malformed refresh token (expected base64 of {"id","secret"})');
      const row = this.#store.getToken(ref.id);
      if (row && !row.multiUse) {
        throw new ApiError(401, `refresh token "${ref.id}" is single-use and cannot be sent as a bearer token; exchange it at POST /api/v1/auth/token, or create a multi-use token (sluice token create --multi-use)`);
      }
      const { access_token } = await this.exchange(ref.id, ref.secret, now);
      return verifyJwt(this.#key, access_token, now);
    }
    return verifyJwt(this.#key, token, now);
  }
}

/** Whether `claims` may read the catalog name (or prefix) `name`: some granted prefix is a string prefix of it. */
export function mayRead(claims: AccessClaims, name: string): boolean {
  return claims.prefixes.some((p) => name.startsWith(p));
}
