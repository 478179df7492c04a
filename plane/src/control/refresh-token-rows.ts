// What the control store holds of refresh tokens (table refresh_tokens): their hashed secrets, grants and use
// counts. tokens.ts issues and exchanges them; only hashes are stored.
import type { DatabaseSync } from 'node:sqlite';
import type { Row } from './live-spec.ts';

export interface RefreshTokenRow {
  id: string;
  hash: string;
  subject: string;
  role: string;
  prefixes: string[];
  multiUse: boolean;
  validForSeconds: number;
  uses: number;
  createdAt: string;
  updatedAt: string;
  detail: string;
}

export function insertToken(db: DatabaseSync, t: RefreshTokenRow): void {
  db.prepare(`INSERT INTO refresh_tokens (id, hash, subject, role, prefixes_json, multi_use, valid_for_seconds, uses, created_at, updated_at, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(t.id, t.hash, t.subject, t.role, JSON.stringify(t.prefixes), t.multiUse ? 1 : 0, t.validForSeconds, t.uses, t.createdAt, t.updatedAt, t.detail);
}

export function getToken(db: DatabaseSync, id: string): RefreshTokenRow | undefined {
  const r = db.prepare('SELECT * FROM refresh_tokens WHERE id = ?').get(id) as Row | undefined;
  if (!r) return undefined;
  return {
    id: String(r.id), hash: String(r.hash), subject: String(r.subject), role: String(r.role),
    prefixes: JSON.parse(String(r.prefixes_json)) as string[], multiUse: r.multi_use === 1, validForSeconds: Number(r.valid_for_seconds),
    uses: Number(r.uses), createdAt: String(r.created_at), updatedAt: String(r.updated_at), detail: String(r.detail),
  };
}

/** Compare-and-set of a token's hash (so a refresh token is used once even under concurrent exchanges). */
export function useToken(db: DatabaseSync, id: string, expectedHash: string, newHash: string, now: Date): boolean {
  const res = db.prepare('UPDATE refresh_tokens SET hash = ?, uses = uses + 1, updated_at = ? WHERE id = ? AND hash = ?')
    .run(newHash, now.toISOString(), id, expectedHash);
  return Number(res.changes) === 1;
}
