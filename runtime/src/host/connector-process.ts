// Host side of the protocol: run a connector as a child process (or a container through docker or
// podman), write requests as JSON lines, read typed responses as an async iterable, collect its
// stderr logs, and surface a failed exit as ConnectorExitError carrying the last stderr line.
import { type ChildProcess, spawn } from 'node:child_process';
import { ConnectorExitError, ProtocolError } from '../errors.ts';
import { MessageWriter, readEnvelopes } from '../protocol/framing.ts';
import type { CaptureRequest, CaptureResponse } from '../protocol/capture.ts';
import type { MaterializeRequest, MaterializeResponse } from '../protocol/materialize.ts';
import { type ConnectorLog, isStatusEvent, parseConnectorLog } from './connector-log.ts';
import { readLines } from '../protocol/framing.ts';

export const CAPTURE_RESPONSES = ['spec', 'discovered', 'validated', 'applied', 'opened', 'captured', 'sourcedSchema', 'checkpoint'] as const;
export const MATERIALIZE_RESPONSES = ['spec', 'validated', 'applied', 'opened', 'acknowledged', 'loaded', 'flushed', 'startedCommit'] as const;

export type Protocol = 'capture' | 'materialize';

/** A connector run as a plain process. */
export interface ProcessTarget {
  command: string;
  args?: string[];
  /** Added to the inherited environment (see `inheritEnv`). */
  env?: Record<string, string>;
  cwd?: string;
}

/** A connector run as a container image with `<engine> run --rm -i`. */
export interface ContainerTarget {
  engine: 'docker' | 'podman' | (string & {});
  image: string;
  /** Passed with `-e NAME` (values travel in the engine's environment, never in argv). */
  env?: Record<string, string>;
  mounts?: { source: string; target: string; readonly?: boolean }[];
  /** Defaults to `host`, so loopback endpoints work from inside the container. */
  network?: string;
  /** Overrides the image's entrypoint arguments. */
  args?: string[];
  /** Extra engine arguments placed before the image. */
  engineArgs?: string[];
}

export type ConnectorTarget = ProcessTarget | ContainerTarget;

export interface ConnectorProcessOptions {
  protocol: Protocol;
  /** Names the connector in errors and logs (e.g. the image or task name). */
  name?: string;
  /** Every parsed stderr line. */
  onLog?: (log: ConnectorLog) => void;
  /** `connectorStatus` events. */
  onStatus?: (message: string, log: ConnectorLog) => void;
  /** Kill the connector (SIGTERM, then SIGKILL after `killGraceMs`) when it runs longer. */
  timeoutMs?: number;
  killGraceMs?: number;
  /** Aborting kills the connector. */
  signal?: AbortSignal;
  /** Inherit process.env (default true); `env` of the target is added on top. */
  inheritEnv?: boolean;
  /** How many log entries to keep (default 1000). */
  keepLogs?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function isContainerTarget(target: ConnectorTarget): target is ContainerTarget {
  return 'image' in target;
}

/** The engine argv for a container target (env values are not in it). */
export function containerArgs(target: ContainerTarget): string[] {
  const args = ['run', '--rm', '-i', '--network', target.network ?? 'host'];
  const env = { FLOW_RUNTIME_CODEC: 'json', ...target.env };
  for (const name of Object.keys(env).sort()) args.push('-e', name);
  for (const m of target.mounts ?? []) {
    args.push('-v', `${m.source}:${m.target}${m.readonly ? ':ro' : ''}`);
  }
  args.push(...(target.engineArgs ?? []), target.image, ...(target.args ?? []));
  return args;
}

type ResponseOf<P extends Protocol> = P extends 'capture' ? CaptureResponse : MaterializeResponse;
type RequestOf<P extends Protocol> = P extends 'capture' ? CaptureRequest : MaterializeRequest;

/** One running connector. Create with `startConnector`. */
export class ConnectorProcess<P extends Protocol = Protocol> {
  readonly name: string;
  readonly child: ChildProcess;
  /** The most recent stderr log entries (bounded). */
  readonly logs: ConnectorLog[] = [];
  private readonly writer: MessageWriter;
  private readonly options: ConnectorProcessOptions;
  private readonly exitPromise: Promise<ExitStatus>;
  private lastLog: ConnectorLog | null = null;
  private stderrDone: Promise<void>;
  private timedOut = false;
  private killedByUs = false;
  private spawnError: Error | null = null;
  private timer: NodeJS.Timeout | null = null;
  private responsesTaken = false;

  constructor(target: ConnectorTarget, options: ConnectorProcessOptions) {
    this.options = options;
    const inherit = options.inheritEnv ?? true;
    const baseEnv: Record<string, string | undefined> = inherit ? { ...process.env } : { PATH: process.env['PATH'] };
    if (isContainerTarget(target)) {
      this.name = options.name ?? target.image;
      const env = { ...baseEnv, FLOW_RUNTIME_CODEC: 'json', ...target.env };
      this.child = spawn(target.engine, containerArgs(target), { env, stdio: ['pipe', 'pipe', 'pipe'] });
    } else {
      this.name = options.name ?? [target.command, ...(target.args ?? [])].join(' ');
      this.child = spawn(target.command, target.args ?? [], {
        env: { ...baseEnv, ...target.env }, stdio: ['pipe', 'pipe', 'pipe'], ...(target.cwd ? { cwd: target.cwd } : {}),
      });
    }
    // A connector may exit without reading all of stdin; that is its exit status's story, not EPIPE's.
    this.child.stdin!.on('error', () => undefined);
    this.writer = new MessageWriter(this.child.stdin!);
    this.exitPromise = new Promise<ExitStatus>((resolve) => {
      this.child.once('error', (err) => {
        this.spawnError = err;
        // No process: end the output streams so readers finish and see the spawn error.
        this.child.stdout?.destroy();
        this.child.stderr?.destroy();
        resolve({ code: null, signal: null });
      });
      this.child.once('close', (code, signal) => resolve({ code, signal }));
    });
    this.exitPromise.then(() => this.clearTimer());
    this.stderrDone = this.pumpStderr();
    if (options.timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        void this.kill();
      }, options.timeoutMs);
      this.timer.unref();
    }
    if (options.signal) {
      if (options.signal.aborted) void this.kill();
      else options.signal.addEventListener('abort', () => void this.kill(), { once: true });
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async pumpStderr(): Promise<void> {
    const keep = this.options.keepLogs ?? 1000;
    try {
      for await (const line of readLines(this.child.stderr!, { name: `${this.name} stderr` })) {
        const log = parseConnectorLog(line.text);
        this.lastLog = log;
        this.logs.push(log);
        if (this.logs.length > keep) this.logs.shift();
        this.options.onLog?.(log);
        if (isStatusEvent(log)) this.options.onStatus?.(log.msg, log);
      }
    } catch {
      // A partial last stderr line is still a log line; readLines rejects it, so keep what we have.
    }
  }

  /** Writes one request line (resolves when the pipe has room again). */
  send(request: RequestOf<P>): Promise<void> {
    return this.writer.write(request).catch((err: unknown) => {
      throw new ProtocolError(`${this.name}: cannot write to the connector's stdin: ${(err as Error).message}`, { cause: err });
    });
  }

  /** Closes the connector's stdin (end of input). */
  endInput(): void {
    this.child.stdin!.end();
  }

  /**
   * Responses until the connector closes stdout; then waits for its exit and throws
   * ConnectorExitError if it failed. Malformed output is a ProtocolError.
   */
  async *responses(): AsyncGenerator<ResponseOf<P>> {
    if (this.responsesTaken) throw new Error('responses() may be iterated only once');
    this.responsesTaken = true;
    const variants = this.options.protocol === 'capture' ? CAPTURE_RESPONSES : MATERIALIZE_RESPONSES;
    try {
      for await (const envelope of readEnvelopes(this.child.stdout!, variants, 'response', { name: `${this.name} stdout` })) {
        yield { [envelope.variant]: envelope.body } as unknown as ResponseOf<P>;
      }
    } catch (err) {
      // If the connector failed, its own error explains the broken output better.
      const status = await this.exitPromise;
      if (status.code !== 0) await this.wait();
      throw err;
    }
    await this.wait();
  }

  /** Resolves with the exit status when it is 0; otherwise rejects with ConnectorExitError. */
  async wait(): Promise<ExitStatus> {
    const status = await this.exitPromise;
    await this.stderrDone;
    if (this.spawnError) {
      throw new ConnectorExitError(`${this.name}: cannot start the connector: ${this.spawnError.message}`, null, null, { cause: this.spawnError });
    }
    if (this.timedOut) {
      throw new ConnectorExitError(`${this.name}: timed out after ${this.options.timeoutMs} ms and was killed`, status.code, status.signal, { fields: this.exitFields() });
    }
    if (status.code === 0) return status;
    if (this.killedByUs && status.code === null) {
      throw new ConnectorExitError(`${this.name}: killed with ${status.signal}`, status.code, status.signal, { fields: this.exitFields() });
    }
    const last = this.lastLog?.msg;
    const how = status.code === null ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
    const message = last ? last : `${this.name} ${how} without an error message`;
    throw new ConnectorExitError(message, status.code, status.signal, { fields: this.exitFields() });
  }

  private exitFields(): Record<string, unknown> {
    return { connector: this.name, ...(this.lastLog ? { lastLog: this.lastLog } : {}) };
  }

  /** SIGTERM, then SIGKILL after the grace period; resolves when it has exited. */
  async kill(graceMs = this.options.killGraceMs ?? 5000): Promise<ExitStatus> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.killedByUs = true;
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      timer.unref();
      const status = await this.exitPromise;
      clearTimeout(timer);
      return status;
    }
    return this.exitPromise;
  }
}

/** Starts a connector. */
export function startConnector<P extends Protocol>(target: ConnectorTarget, options: ConnectorProcessOptions & { protocol: P }): ConnectorProcess<P> {
  return new ConnectorProcess<P>(target, options);
}

/**
 * One unary RPC (spec, discover, validate, apply): writes the request, closes stdin, expects
 * exactly one response and exit 0.
 */
export async function unaryRpc<P extends Protocol>(
  target: ConnectorTarget,
  request: RequestOf<P>,
  options: ConnectorProcessOptions & { protocol: P },
): Promise<ResponseOf<P>> {
  const proc = startConnector(target, options);
  const variant = Object.keys(request)[0] ?? '?';
  await proc.send(request).catch(() => undefined); // a failed write shows up as the exit status
  proc.endInput();
  const responses: ResponseOf<P>[] = [];
  for await (const response of proc.responses()) responses.push(response);
  if (responses.length !== 1) {
    throw new ProtocolError(`${proc.name}: the "${variant}" rpc is expected to be unary, but the connector wrote ${responses.length} responses`);
  }
  return responses[0]!;
}

/** Runs a whole session: writes all requests then closes stdin, collecting every response. */
export async function runSession<P extends Protocol>(
  target: ConnectorTarget,
  requests: Iterable<RequestOf<P>> | AsyncIterable<RequestOf<P>>,
  options: ConnectorProcessOptions & { protocol: P },
): Promise<ResponseOf<P>[]> {
  const proc = startConnector(target, options);
  const writing = (async () => {
    try {
      for await (const r of requests) await proc.send(r);
    } catch {
      // the exit status explains it
    }
    proc.endInput();
  })();
  const out: ResponseOf<P>[] = [];
  try {
    for await (const response of proc.responses()) out.push(response);
  } finally {
    await writing;
  }
  return out;
}

