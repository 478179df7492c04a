// The control plane of the local plane: the control store (SQLite under the data dir), the recorder the
// data plane reports to, refresh/access tokens, and the /api/v1 routes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createApiHandler } from '../api/server.ts';
import type { ApiHandler } from '../api/server.ts';
import type { ControlRecorder } from './recorder.ts';
import { ControlStore } from './store.ts';
import { loadSigningKey, TokenService } from './tokens.ts';
import type { CreateTokenOptions, CreatedToken } from './tokens.ts';

export interface ControlPlane {
  /** What tasks, ingest and publications report to. */
  recorder: ControlRecorder;
  /** The store itself (queries for the CLI and tests). */
  store: ControlStore;
  /** Serves paths under /api/v1 and returns true; returns false (doing nothing) for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  tokens: { create(opts?: CreateTokenOptions): Promise<CreatedToken> };
  api: ApiHandler;
  close(): void;
}

export function createControlPlane(opts: { dataDir: string }): ControlPlane {
  const store = new ControlStore(opts.dataDir);
  const tokens = new TokenService(store, loadSigningKey(opts.dataDir));
  const api = createApiHandler(store, tokens);
  return {
    recorder: store,
    store,
    handle: (req, res) => api.handle(req, res),
    tokens: { create: (o) => tokens.create(o) },
    api,
    close: () => store.close(),
  };
}

export { CONTROL_DB, ControlStore } from './store.ts';
export type { LiveSpecRow, PublicationInfo } from './store.ts';
export { publishedSpecsOf } from './publish.ts';
export { summaryOf, statusResponse, chronoDisplay, PENDING_CHECKS_LIMIT } from './status.ts';
export { IdGenerator, normalizeId, idTime } from './ids.ts';
export { upgradeImage, CURRENT_CONNECTOR_VERSIONS } from './upgrade.ts';
export { TokenService, signJwt, verifyJwt, loadSigningKey, ACCESS_TOKEN_SECONDS } from './tokens.ts';
export type { AccessClaims, CreateTokenOptions, CreatedToken } from './tokens.ts';
export { ApiError } from './errors.ts';
export type * from './recorder.ts';
