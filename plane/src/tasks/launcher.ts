// Starting a task's connector from its catalog endpoint: a built-in connector (image ending in
// /source-http-file, /materialize-sqlite, /materialize-sqlserver, or the embedded `sqlite` endpoint)
// runs as a Node process; `local` runs its command; any image runs in a container when a container
// engine (docker or podman) is configured; materialize-sqlite then gets its file's directory mounted.
import { dirname, isAbsolute } from 'node:path';
import {
  ConfigError, ProtocolError, type CaptureRequest, type CaptureResponse, type ConnectorType, type JsonObject,
  type MaterializeRequest, type MaterializeResponse,
} from '@sluice/runtime';
import { isContainerTarget, type ConnectorTarget, type Protocol } from '@sluice/runtime/host';
import type { EndpointRef } from '../catalog/types.ts';
import { BUILTIN_CONNECTORS, builtinCommand, builtinConnector, builtinForImage, isInstalled, type BuiltinConnector } from '../registry.ts';
import { hostSession, SpareConnector, unaryOnSpare, unaryResponse } from './host-session.ts';
import type { ConnectorSession, SessionHooks } from './session.ts';

export interface LauncherOptions {
  /** Runs images in containers with this engine: docker, podman, or the path of a compatible command. */
  containerEngine?: 'docker' | 'podman' | (string & {});
  /**
   * Extra environment for every connector (e.g. LOG_LEVEL). A container gets it through the engine's
   * environment and `-e NAME` (runtime/host containerArgs), so values never appear in a process listing.
   */
  env?: Record<string, string>;
}

export function connectorTypeOf(endpoint: EndpointRef): ConnectorType {
  return endpoint.kind === 'local' ? 'LOCAL' : 'IMAGE';
}

export function endpointConfig(endpoint: EndpointRef): JsonObject {
  return endpoint.kind === 'sqlite' ? { path: endpoint.config.path } : endpoint.config;
}

function processOf(connector: BuiltinConnector, env: Record<string, string>): ConnectorTarget {
  if (!isInstalled(connector)) throw new ConfigError(`built-in connector ${connector.name} is not installed (expected ${connector.bin}); run npm ci`);
  const { command, args } = builtinCommand(connector);
  return { command, args, env };
}

export class Launcher {
  readonly options: LauncherOptions;
  /** Connector processes started ahead of their sessions (prestart), by protocol, task and target. */
  readonly #spares = new Map<string, SpareConnector[]>();
  /** Where a task's unary RPCs go instead (route), by protocol, task and target. */
  readonly #routes = new Map<string, (request: CaptureRequest | MaterializeRequest, variant: string) => Promise<JsonObject>>();
  constructor(options: LauncherOptions = {}) {
    this.options = options;
  }

  #spareKey(target: ConnectorTarget, protocol: Protocol, task: string): string {
    return JSON.stringify([protocol, task, target]);
  }

  /**
   * Starts `count` processes of a task's connector now, for its next sessions to take (a publication's
   * validate and apply, then the task's own session). A connector process is a whole Node start (~0.3 s of
   * CPU, most of it before it reads its request): started together, they load while the plane loads the
   * catalog, records the publication and waits on the other RPCs, instead of one after another — the
   * publication's rounds were the largest part of `serve`'s time to ready (issue 16). A process taken by
   * `unary` serves the task's next RPCs too (validate, apply, then a capture's session). Only built-in
   * connectors run as processes are started ahead:
   * a `local` command is the user's own program, and a container is left to start when it has work.
   */
  prestart(endpoint: EndpointRef, task: string, protocol: Protocol, count: number): void {
    if (count <= 0 || !this.prestartable(endpoint)) return;
    const target = this.target(endpoint, task);
    const key = this.#spareKey(target, protocol, task);
    const list = this.#spares.get(key) ?? [];
    for (let i = 0; i < count; i++) list.push(new SpareConnector(target, protocol, task));
    this.#spares.set(key, list);
  }

  /** True when the endpoint's connector may be started ahead of its session: a built-in run as a process. */
  prestartable(endpoint: EndpointRef): boolean {
    if (endpoint.kind === 'local') return false;
    try {
      return !isContainerTarget(this.target(endpoint, ''));
    } catch {
      return false; // the session that needs it reports the problem
    }
  }

  /**
   * True when the endpoint runs one of this repo's connectors as a process (the `sqlite` endpoint, or an image
   * that names a built-in with no container engine): its runtime reads `key`/`values` as JSON exactly as it reads
   * the packed tuples, so the materialize driver may send that cheaper form (MaterializeDriverOptions.jsonKeys).
   * A `local` command and a container may be anything (upstream's images read only the packed fields).
   */
  runsBuiltin(endpoint: EndpointRef): boolean {
    if (endpoint.kind === 'sqlite') return true;
    if (endpoint.kind === 'local' || this.options.containerEngine !== undefined) return false;
    return builtinForImage(endpoint.image) !== undefined;
  }

  #takeSpare(target: ConnectorTarget, protocol: Protocol, task: string): SpareConnector | undefined {
    const key = this.#spareKey(target, protocol, task);
    const list = this.#spares.get(key);
    const spare = list?.shift();
    if (list !== undefined && list.length === 0) this.#spares.delete(key);
    return spare;
  }

  /**
   * A unary RPC of a task's connector: the response's `variant` member. With a process started ahead for the
   * task (prestart: the plane's publications), the request goes to it and the process is kept, first in line,
   * for the task's next RPC: our connectors, like upstream's boilerplates, serve a task's validate, apply and
   * open one after another on one stream, so a new task costs one Node start instead of three (each ~0.3 s of
   * CPU). The publication releases what it did not use (releaseSpares). Without one, a fresh process serves
   * exactly this RPC, its stdin then closed, as Flow's runtime runs every RPC.
   */
  async unary(endpoint: EndpointRef, task: string, protocol: Protocol, request: CaptureRequest | MaterializeRequest, variant: string): Promise<JsonObject> {
    const target = this.target(endpoint, task);
    const route = this.#routes.get(this.#spareKey(target, protocol, task));
    if (route !== undefined) return route(request, variant);
    const spare = this.#takeSpare(target, protocol, task);
    if (spare === undefined) {
      return protocol === 'capture'
        ? unary(this.capture(endpoint, task), request as CaptureRequest, variant, task)
        : unary(this.materialize(endpoint, task), request as MaterializeRequest, variant, task);
    }
    const value = await unaryOnSpare(spare, target, protocol, task, request, variant);
    const key = this.#spareKey(target, protocol, task);
    this.#spares.set(key, [spare, ...(this.#spares.get(key) ?? [])]);
    return value;
  }

  /**
   * Sends the task's unary RPCs to `serve` until releaseSpares (the end of the publication): a materialization
   * whose session thread is started ahead has its validate and apply answered by that thread's connector
   * (tasks/materialize.ts unaryInPrepared), the same process that then serves the session.
   */
  route(endpoint: EndpointRef, task: string, protocol: Protocol, serve: (request: CaptureRequest | MaterializeRequest, variant: string) => Promise<JsonObject>): void {
    this.#routes.set(this.#spareKey(this.target(endpoint, task), protocol, task), serve);
  }

  /** How many prestarted processes wait for a session. */
  spareCount(): number {
    let n = 0;
    for (const list of this.#spares.values()) n += list.length;
    return n;
  }

  /** Stops the prestarted processes nobody took (a failed build, an apply that was not needed); they read no request. */
  async releaseSpares(): Promise<void> {
    const spares = [...this.#spares.values()].flat();
    this.#spares.clear();
    this.#routes.clear();
    await Promise.all(spares.map((s) => s.proc.kill(2000).catch(() => undefined)));
  }

  /** How the endpoint's connector runs: a built-in bin, a local command, or a container image. */
  target(endpoint: EndpointRef, task: string): ConnectorTarget {
    const env = { ...this.options.env };
    if (endpoint.kind === 'sqlite') return processOf(builtinConnector('materialize-sqlite')!, env);
    if (endpoint.kind === 'local') {
      const [command, ...args] = endpoint.command;
      if (command === undefined) throw new ConfigError(`${task}: endpoint.local.command is empty`);
      return { command, args, env: { ...env, ...endpoint.env } };
    }
    const engine = this.options.containerEngine;
    if (engine !== undefined) {
      const target: ConnectorTarget = { engine, image: endpoint.image, env };
      // materialize-sqlite writes the file at config.path: mount its directory (same path inside), so
      // the tables apply creates are there when open runs in the next container.
      const path = endpoint.config.path;
      if (builtinForImage(endpoint.image)?.name === 'materialize-sqlite' && typeof path === 'string' && isAbsolute(path) && dirname(path) !== dirname(dirname(path))) {
        target.mounts = [{ source: dirname(path), target: dirname(path) }];
      }
      return target;
    }
    const builtin = builtinForImage(endpoint.image);
    if (builtin === undefined) {
      throw new ConfigError(`${task}: image ${endpoint.image} is not a built-in connector (${BUILTIN_CONNECTORS.map((c) => c.name).join(', ')}); run with --container-engine docker|podman to run it in a container`);
    }
    return processOf(builtin, env);
  }

  capture(endpoint: EndpointRef, task: string, hooks: SessionHooks = {}): ConnectorSession<CaptureRequest, CaptureResponse> {
    const target = this.target(endpoint, task);
    return hostSession(target, 'capture', task, hooks, { capturedBytes: true }, this.#takeSpare(target, 'capture', task));
  }

  materialize(endpoint: EndpointRef, task: string, hooks: SessionHooks = {}): ConnectorSession<MaterializeRequest, MaterializeResponse> {
    const target = this.target(endpoint, task);
    return hostSession(target, 'materialize', task, hooks, {}, this.#takeSpare(target, 'materialize', task));
  }
}

/**
 * Closes the connector's stdin and reads its next response (undefined once it has none), then waits for its
 * exit. A failed read waits for the exit too, then throws: the exit's cause is known by then.
 */
export async function closeAndRecv<Req, Res>(session: ConnectorSession<Req, Res>): Promise<Res | undefined> {
  const closing = session.close();
  let res: Res | undefined;
  try {
    res = await session.recv();
  } catch (err) {
    await closing.catch(() => undefined);
    throw err;
  }
  await closing;
  return res;
}

/** A unary RPC: one request, stdin closed, exactly one response of `variant`, clean exit. */
export async function unary<Req, Res>(session: ConnectorSession<Req, Res>, request: Req, variant: string, task: string): Promise<JsonObject> {
  await session.send(request);
  const res = await closeAndRecv(session);
  const extra = await session.recv().catch(() => undefined);
  if (res !== undefined && extra !== undefined) throw new ProtocolError(`${task}: rpc is expected to be unary, but the connector sent more than one response`);
  return unaryResponse(res as object | undefined, variant, task);
}
