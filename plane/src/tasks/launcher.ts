// Starting a task's connector from its catalog endpoint: a built-in connector (image ending in
// /source-http-file, /materialize-sqlite, /materialize-sqlserver, or the embedded `sqlite` endpoint)
// runs as a Node process; `local` runs its command; any image runs in a container when a container
// engine (docker or podman) is configured.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  ConfigError, ProtocolError, type CaptureRequest, type CaptureResponse, type ConnectorType, type JsonObject,
  type MaterializeRequest, type MaterializeResponse,
} from '@sluice/runtime';
import type { EndpointRef } from '../catalog/types.ts';
import { spawnSession } from './process-session.ts';
import type { ConnectorSession, SessionHooks } from './session.ts';

export const BUILT_IN_CONNECTORS = ['source-http-file', 'materialize-sqlite', 'materialize-sqlserver'] as const;
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface LauncherOptions {
  containerEngine?: 'docker' | 'podman';
  /** Extra environment for every connector (e.g. LOG_LEVEL). */
  env?: Record<string, string>;
}

/** `ghcr.io/estuary/materialize-sqlite:v1` → `materialize-sqlite`, if built in. */
export function builtInName(image: string): string | undefined {
  const base = image.replace(/@sha256:[0-9a-f]+$/, '').replace(/:[^/:]+$/, '').split('/').pop() ?? '';
  return (BUILT_IN_CONNECTORS as readonly string[]).includes(base) ? base : undefined;
}

export function connectorTypeOf(endpoint: EndpointRef): ConnectorType {
  return endpoint.kind === 'local' ? 'LOCAL' : 'IMAGE';
}

export function endpointConfig(endpoint: EndpointRef): JsonObject {
  return endpoint.kind === 'sqlite' ? { path: endpoint.config.path } : endpoint.config;
}

function builtInCommand(name: string): string[] {
  const bin = `${REPO_ROOT}node_modules/@sluice/${name}/bin/${name}.ts`;
  if (!existsSync(bin)) throw new ConfigError(`built-in connector ${name} is not installed (expected ${bin}); run npm ci`);
  return [process.execPath, bin];
}

export class Launcher {
  readonly options: LauncherOptions;
  constructor(options: LauncherOptions = {}) {
    this.options = options;
  }

  command(endpoint: EndpointRef, task: string): { command: string[]; env: Record<string, string> } {
    const env = { ...this.options.env };
    if (endpoint.kind === 'sqlite') return { command: builtInCommand('materialize-sqlite'), env };
    if (endpoint.kind === 'local') return { command: endpoint.command, env: { ...env, ...endpoint.env } };
    const engine = this.options.containerEngine;
    if (engine !== undefined) {
      const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
      return { command: [engine, 'run', '--rm', '-i', '--network', 'host', '-e', 'FLOW_RUNTIME_CODEC=json', ...envArgs, endpoint.image], env: {} };
    }
    const name = builtInName(endpoint.image);
    if (name === undefined) {
      throw new ConfigError(`${task}: image ${endpoint.image} is not a built-in connector (${BUILT_IN_CONNECTORS.join(', ')}); run with --container-engine docker|podman to run it in a container`);
    }
    return { command: builtInCommand(name), env };
  }

  capture(endpoint: EndpointRef, task: string, hooks: SessionHooks = {}): ConnectorSession<CaptureRequest, CaptureResponse> {
    return spawnSession({ ...this.command(endpoint, task), name: task }, hooks);
  }

  materialize(endpoint: EndpointRef, task: string, hooks: SessionHooks = {}): ConnectorSession<MaterializeRequest, MaterializeResponse> {
    return spawnSession({ ...this.command(endpoint, task), name: task }, hooks);
  }
}

/** A unary RPC: one request, stdin closed, exactly one response of `variant`, clean exit. */
export async function unary<Req, Res>(session: ConnectorSession<Req, Res>, request: Req, variant: string, task: string): Promise<JsonObject> {
  await session.send(request);
  const closing = session.close();
  let res: Res | undefined;
  try {
    res = await session.recv();
  } catch (err) {
    await closing.catch(() => undefined);
    throw err;
  }
  await closing;
  const extra = await session.recv().catch(() => undefined);
  if (res === undefined) throw new ProtocolError(`${task}: connector exited without a "${variant}" response`);
  if (extra !== undefined) throw new ProtocolError(`${task}: rpc is expected to be unary, but the connector sent more than one response`);
  const [got] = Object.keys(res as object);
  if (got !== variant) throw new ProtocolError(`${task}: connector sent "${String(got)}" where "${variant}" was expected`);
  return (res as Record<string, JsonObject>)[variant] ?? {};
}
