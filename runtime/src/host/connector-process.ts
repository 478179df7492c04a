// Host side of the protocol: run a connector as a child process (or a container through docker or
// podman), write requests as JSON lines, read typed responses as an async iterable, collect its
// stderr logs, and surface a failed exit as ConnectorExitError carrying the last stderr line.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ConnectorExitError, ProtocolError } from '../errors.ts';
import { type Envelope, parseEnvelope, rawBodyMemberText } from '../protocol/envelope.ts';
import { MessageWriter } from '../protocol/message-writer.ts';
import type { CaptureRequest, CaptureResponse } from '../protocol/capture.ts';
import type { MaterializeRequest, MaterializeResponse } from '../protocol/materialize.ts';
import { type ConnectorLog, isStatusEvent, parseConnectorLog } from './connector-log.ts';
import { exitSignal, oomKillCount, signalExitMessage } from './exit-cause.ts';
import { chunkIterator, LineSplitter, lineText, readLines } from '../protocol/line-reader.ts';
import { GROUPS, groupAlive, signalGroup, trackGroup, untrackGroup, wrappedCommand } from './process-group.ts';
import type { CapturedResponse } from '../protocol/capture.ts';
import { CapturedBytes, type CapturedShape, capturedLineShape, type LineParser, type OutputFailure } from './captured-bytes.ts';

export const CAPTURE_RESPONSES = ['spec', 'discovered', 'validated', 'applied', 'opened', 'captured', 'sourcedSchema', 'checkpoint'] as const;
export const MATERIALIZE_RESPONSES = ['spec', 'validated', 'applied', 'opened', 'acknowledged', 'loaded', 'flushed', 'startedCommit'] as const;

export type Protocol = 'capture' | 'materialize';

/**
 * On a `captured` or `loaded` body: the document's JSON text exactly as the connector wrote it (the
 * parsed `doc` rounds integers beyond ±2^53; parse this text with parseDocument to keep them).
 */
export const DOC_TEXT: unique symbol = Symbol('sluice.docText');
/** On every response object: its line as the connector wrote it (what `sluice raw` prints). */
export const LINE_TEXT: unique symbol = Symbol('sluice.lineText');

// Flow's runtime decodes connector output strictly (unknown fields are an error), so a connector bug that
// Flow would stop is stopped here too. The fields each response may carry, and those of the nested
// messages the host reads (flow-protocol.md §2.2, §3.2).
const STATE_FIELDS = ['updated', 'mergePatch'];
const RESPONSE_FIELDS: Record<Protocol, Record<string, readonly string[]>> = {
  capture: {
    spec: ['protocol', 'configSchema', 'resourceConfigSchema', 'documentationUrl', 'oauth2', 'resourcePathPointers'],
    discovered: ['bindings'],
    validated: ['bindings'],
    applied: ['actionDescription', 'state'],
    opened: ['explicitAcknowledgements'],
    captured: ['binding', 'doc'],
    sourcedSchema: ['binding', 'documentSchema'],
    checkpoint: ['state'],
  },
  materialize: {
    spec: ['protocol', 'configSchema', 'resourceConfigSchema', 'documentationUrl', 'oauth2'],
    validated: ['bindings'],
    applied: ['actionDescription', 'state'],
    opened: ['runtimeCheckpoint', 'disableLoadOptimization'],
    acknowledged: ['state'],
    loaded: ['binding', 'doc'],
    flushed: ['state'],
    startedCommit: ['state'],
  },
};
const NESTED_FIELDS: Record<string, readonly string[]> = {
  'capture.discovered.bindings': ['recommendedName', 'resourceConfig', 'documentSchema', 'key', 'disable', 'resourcePath'],
  'capture.validated.bindings': ['resourcePath'],
  'materialize.validated.bindings': ['resourcePath', 'constraints', 'projectionConstraints', 'deltaUpdates', 'serPolicy', 'caseInsensitiveFields'],
};
// By protocol, then variant: looked up per response (a `captured` per document), so no key is built for it.
const FIELD_SETS = Object.fromEntries(Object.entries(RESPONSE_FIELDS).map(([p, vs]) => [p, new Map(Object.entries(vs).map(([v, fs]) => [v, new Set(fs)]))])) as Record<Protocol, Map<string, Set<string>>>;

function unknownField(fields: Set<string> | readonly string[], value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const has = Array.isArray(fields) ? (k: string) => fields.includes(k) : (k: string) => (fields as Set<string>).has(k);
  for (const k in value) if (!has(k)) return k;
  return undefined;
}

/** Throws ProtocolError naming an unknown field of a response (its body, state, or listed bindings). */
export function checkResponseFields(protocol: Protocol, variant: string, body: JsonObjectLike, where: string): void {
  const allowed = FIELD_SETS[protocol].get(variant);
  if (allowed === undefined) return;
  const fail = (field: string, of: string, expected: readonly string[] | Set<string>): never => {
    throw new ProtocolError(`${where}: ${of} has an unknown field "${field}" (known: ${[...expected].join(', ')}); Flow's runtime rejects it`);
  };
  // The hot case (a `captured` or `loaded` body): its own keys against the set, nothing else to check.
  for (const k in body) if (!allowed.has(k)) fail(k, `"${variant}"`, allowed);
  const state = body['state'];
  if (state !== undefined) {
    const s = unknownField(STATE_FIELDS, state);
    if (s !== undefined) fail(s, `"${variant}.state"`, STATE_FIELDS);
  }
  const bindings = body['bindings'];
  if (bindings === undefined) return;
  const nested = NESTED_FIELDS[`${protocol}.${variant}.bindings`];
  if (nested !== undefined && Array.isArray(bindings)) {
    bindings.forEach((b, i) => {
      const f = unknownField(nested, b);
      if (f !== undefined) fail(f, `"${variant}.bindings[${i}]"`, nested);
    });
  }
}

type JsonObjectLike = Record<string, unknown>;

/** The connector's own text of a `captured`/`loaded` body's document (serialised from `doc` if unknown). */
export function docTextOf(body: object): string {
  if (body instanceof CapturedBytes) return docTextOf(body.parsed());
  const text = (body as { [DOC_TEXT]?: string })[DOC_TEXT];
  return text ?? JSON.stringify((body as { doc?: unknown }).doc ?? null);
}

/** The line a response was read from (serialised if unknown). */
export function lineTextOf(response: object): string {
  return (response as { [LINE_TEXT]?: string })[LINE_TEXT] ?? JSON.stringify(response);
}

/** A `captured` response whose document is bytes (ConnectorProcessOptions.capturedBytes). */
class CapturedLine {
  readonly captured: CapturedBytes;
  constructor(captured: CapturedBytes) {
    this.captured = captured;
  }

  get [LINE_TEXT](): string {
    return this.captured.lineTextValue;
  }
}

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
  /**
   * While `responses()` waits for the next response: kill the connector when none comes for this long,
   * failing with an error that names what was awaited (`ConnectorProcess.awaiting`). Default: no limit
   * (a capture may rightly be silent for hours); `sluice raw` sets one.
   */
  idleTimeoutMs?: number;
  /**
   * After the connector closes its stdout, how long to wait for it to exit before killing it (default
   * 30 s). Its stderr closing is bounded the same way (a grandchild may hold the pipe open).
   */
  exitTimeoutMs?: number;
  /**
   * A capture's `captured` lines of the runtime's own shape come out with a CapturedBytes body (the
   * document's bytes in the output chunk, parsed only when asked: see captured-bytes.ts); other lines are
   * parsed as usual. For a consumer that reads the bytes (the plane's capture task).
   */
  capturedBytes?: boolean;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function isContainerTarget(target: ConnectorTarget): target is ContainerTarget {
  return 'image' in target;
}

/**
 * The engine argv for a container target (env values are not in it); with `cidfile`, the engine writes the
 * container's id there (`--cidfile`, docker and podman alike).
 */
export function containerArgs(target: ContainerTarget, cidfile?: string): string[] {
  const args = ['run', '--rm', '-i', '--network', target.network ?? 'host'];
  if (cidfile !== undefined) args.push('--cidfile', cidfile);
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
  /** Settles when the process has exited (or could not start), without waiting for its pipes. */
  private readonly exitedPromise: Promise<void>;
  private lastLog: ConnectorLog | null = null;
  private stderrDone: Promise<void>;
  private timedOut = false;
  private killedByUs = false;
  private spawnError: Error | null = null;
  private timer: NodeJS.Timeout | null = null;
  private responsesTaken = false;
  private hung: string | null = null;
  /** Set when the pipes were closed from this side after the process exited (see the constructor). */
  private pipesAbandoned = false;
  private readonly container: boolean;
  /** A container target's: settles once the engine's CLI has exited and its container is gone. */
  private readonly containerGone: Promise<void> | undefined;
  /** The memory cgroup's OOM-kill count when the connector started (undefined: unknown). */
  private readonly oomKillsAtStart = oomKillCount();
  /** ConnectorProcessOptions.capturedBytes; may be set until responses are read (a prestarted process). */
  capturedBytes: boolean;
  /** What the host awaits from the connector (named in idle-timeout errors), e.g. `"flushed"`. */
  awaiting = 'a response';

  constructor(target: ConnectorTarget, options: ConnectorProcessOptions) {
    this.options = options;
    this.capturedBytes = options.capturedBytes === true;
    const inherit = options.inheritEnv ?? true;
    const baseEnv: Record<string, string | undefined> = inherit ? { ...process.env } : { PATH: process.env['PATH'] };
    this.container = isContainerTarget(target);
    // A group of its own (process-group.ts): kill() reaches whatever the connector started, and a terminal's
    // Ctrl-C reaches only the host, which stops its connectors in order.
    if (isContainerTarget(target)) {
      this.name = options.name ?? target.image;
      const env = { ...baseEnv, FLOW_RUNTIME_CODEC: 'json', ...target.env };
      // The engine writes the container's id into a private directory of ours: see removeKilledContainer.
      const cidDir = mkdtempSync(join(tmpdir(), 'sluice-cid-'));
      this.child = spawn(target.engine, containerArgs(target, join(cidDir, 'cid')), { env, stdio: ['pipe', 'pipe', 'pipe'], detached: GROUPS });
      this.containerGone = removeKilledContainer(this.child, target.engine, cidDir, env);
    } else {
      this.name = options.name ?? [target.command, ...(target.args ?? [])].join(' ');
      const env = { ...baseEnv, ...target.env };
      // Killed by the kernel if this thread dies first (setpriv --pdeathsig; process-group.ts).
      const { command, args } = wrappedCommand(target.command, target.args ?? [], env, target.cwd ?? process.cwd());
      this.child = spawn(command, args, {
        env, stdio: ['pipe', 'pipe', 'pipe'], detached: GROUPS, ...(target.cwd ? { cwd: target.cwd } : {}),
      });
    }
    const pid = this.child.pid;
    if (pid !== undefined && GROUPS) {
      trackGroup(pid);
      // Whatever it left in its group when it exited (a daemon, a helper holding its pipes) is stopped with it.
      // It stays tracked until then, so that a host exiting meanwhile kills the rest (killAllGroups).
      this.child.once('exit', () => {
        if (!groupAlive(pid)) return untrackGroup(pid);
        signalGroup(pid, 'SIGTERM');
        setTimeout(() => {
          signalGroup(pid, 'SIGKILL');
          untrackGroup(pid);
        }, this.options.killGraceMs ?? 5000).unref();
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
      // A container is waited for too, when its engine's CLI was killed (removeKilledContainer).
      this.child.once('close', (code, signal) => {
        if (this.containerGone === undefined) resolve({ code, signal });
        else void this.containerGone.then(() => resolve({ code, signal }));
      });
      // 'close' waits for stdout and stderr to end too. A process that exited but whose pipes stay open
      // (a grandchild inherited them) must not keep the host waiting: once nothing is left to read,
      // the pipes are closed from this side.
      this.child.once('exit', () => {
        const check = (): void => {
          const open = [this.child.stdout, this.child.stderr].filter((st) => st && !st.destroyed && !st.readableEnded);
          if (open.length === 0) return;
          if (open.every((st) => st!.readableLength === 0)) {
            this.pipesAbandoned = true;
            for (const st of open) st!.destroy();
            return;
          }
          setTimeout(check, this.exitTimeoutMs).unref();
        };
        setTimeout(check, this.exitTimeoutMs).unref();
      });
    });
    this.exitedPromise = new Promise<void>((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.once('error', () => resolve());
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

  private get exitTimeoutMs(): number {
    return this.options.exitTimeoutMs ?? 30_000;
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
    const written = this.writer.write(request).catch((err: unknown) => {
      if (this.hung !== null) throw new ConnectorExitError(this.hung, null, null, { fields: this.exitFields() });
      throw new ProtocolError(`${this.name}: cannot write to the connector's stdin: ${(err as Error).message}`, { cause: err });
    });
    const ms = this.options.idleTimeoutMs;
    if (ms === undefined || !this.writer.isBlocked) return written;
    // Its stdin is full: the idle timeout bounds how long it may take to read on.
    const variant = Object.keys(request)[0] ?? '?';
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.hung = `${this.name}: read none of its input for ${ms / 1000} s while sluice sent "${variant}"; the connector was killed`;
        void this.kill(2000);
      }, ms);
      written.then(() => {
        clearTimeout(timer);
        resolve();
      }, (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /**
   * Writes one already-serialised request line (ending with `\n`) through the coalescing buffer, as the
   * hot requests (`load`, `store`) go: many lines per pipe write. Ordered with send().
   */
  sendLine(line: string): Promise<void> {
    return this.writer.writeDocumentLine(line).catch((err: unknown) => {
      if (this.hung !== null) throw new ConnectorExitError(this.hung, null, null, { fields: this.exitFields() });
      throw new ProtocolError(`${this.name}: cannot write to the connector's stdin: ${(err as Error).message}`, { cause: err });
    });
  }

  /**
   * Writes already-serialised request lines given as UTF-8 bytes (each ending with `\n`), after the lines
   * sendLine buffered; `written` is called once the pipe is done with the bytes (they may then be reused).
   */
  sendLines(bytes: Uint8Array, written: (err?: Error | null) => void): Promise<void> {
    return this.writer.writeDocumentBytes(bytes, written).catch((err: unknown) => {
      if (this.hung !== null) throw new ConnectorExitError(this.hung, null, null, { fields: this.exitFields() });
      throw new ProtocolError(`${this.name}: cannot write to the connector's stdin: ${(err as Error).message}`, { cause: err });
    });
  }

  /** Closes the connector's stdin (end of input). */
  endInput(): void {
    // Lines still in the coalescing buffer go first.
    if (!this.child.stdin!.writableEnded) this.writer.writeLine('').catch(() => undefined);
    this.child.stdin!.end();
  }

  /**
   * Responses until the connector closes stdout; then waits for its exit and throws
   * ConnectorExitError if it failed. Malformed output is a ProtocolError.
   */
  async *responses(): AsyncGenerator<ResponseOf<P>> {
    for await (const batch of this.responseBatches()) yield* batch;
  }

  /**
   * responses() a chunk of the connector's output at a time: the responses of the lines it completed, in
   * order (never empty). A line that fails is thrown after the lines before it were yielded. Why: a
   * capture writes a `captured` line per document, and an async step per line (the reader, the envelope
   * parser, this generator, the session, the driver each awaited it) cost more than parsing the line.
   */
  async *responseBatches(): AsyncGenerator<ResponseOf<P>[]> {
    if (this.responsesTaken) throw new Error('responses() may be iterated only once');
    this.responsesTaken = true;
    const variants = this.options.protocol === 'capture' ? CAPTURE_RESPONSES : MATERIALIZE_RESPONSES;
    const name = `${this.name} stdout`;
    const splitter = new LineSplitter({ name });
    const chunks = chunkIterator(this.child.stdout!);
    this.#chunks = chunks;
    const capture = this.options.protocol === 'capture';
    const shape: CapturedShape = { binding: 0 };
    const parseLine: LineParser = (text, line) => (this.responseOf(parseEnvelope({ text, line }, variants, 'response', name)) as unknown as { captured: CapturedResponse }).captured;
    const fail: OutputFailure = (err) => this.#outputFailed(err);
    let batch: ResponseOf<P>[] = [];
    const visit = (buf: Buffer, start: number, end: number, line: number): void => {
      // Read per line: a process that served a unary RPC first is given to its session afterwards (plane Launcher.unary).
      if (capture && this.capturedBytes) {
        const docStart = capturedLineShape(buf, start, end, shape);
        if (docStart >= 0) {
          batch.push(new CapturedLine(new CapturedBytes(shape.binding, buf, docStart, end - 2, start, end, line, parseLine, fail)) as unknown as ResponseOf<P>);
          return;
        }
      }
      const text = lineText(buf, start, end);
      if (text !== undefined) batch.push(this.responseOf(parseEnvelope({ text, line }, variants, 'response', name)));
    };
    try {
      while (true) {
        let next: IteratorResult<Uint8Array | string>;
        try {
          next = await this.idle(chunks.next());
        } catch (err) {
          // The process is gone and its stdout was held open by another: that is the end of its output.
          if (this.pipesAbandoned && (err as { code?: unknown }).code === 'ERR_STREAM_PREMATURE_CLOSE') break;
          throw err;
        }
        if (next.done === true) {
          splitter.end();
          break;
        }
        batch = [];
        let failure: { err: unknown } | undefined;
        try {
          splitter.pushSpans(next.value, visit);
        } catch (err) {
          failure = { err };
        }
        if (batch.length > 0) yield batch;
        if (failure !== undefined) throw failure.err;
      }
    } catch (err) {
      return await this.#outputFailed(err);
    }
    // Its output ended: it should be exiting. Bounded, so a connector that lingers cannot hang the host.
    const exited = await this.within(this.exitedPromise, this.exitTimeoutMs);
    if (!exited) {
      await this.kill(2000);
      throw new ConnectorExitError(`${this.name}: closed its output but had not exited ${this.exitTimeoutMs / 1000} s later; it was killed`, null, null, { fields: this.exitFields() });
    }
    await this.wait();
  }

  /** The output being read (responseBatches). */
  #chunks: AsyncIterator<Uint8Array | string> | undefined;

  /**
   * The connector's output broke (`err`: a malformed line, a failed read): stops reading it and rejects with
   * the error that explains it best.
   */
  async #outputFailed(err: unknown): Promise<never> {
    // As a line reader's loop would: stop reading the stream.
    void this.#chunks?.return?.()?.catch(() => undefined);
    if (this.hung !== null) throw new ConnectorExitError(this.hung, null, null, { fields: this.exitFields() });
    // If the connector failed, its own error explains the broken output better. A connector that broke
    // the protocol but keeps running (its output is no longer read) is killed after the grace period
    // rather than waited for: it may never write again, and so never notice.
    if (!(await this.within(this.exitedPromise, this.exitTimeoutMs))) await this.kill(2000);
    const status = await this.exitPromise;
    if (status.code !== 0 && !this.killedByUs) await this.wait();
    throw err;
  }

  /** One response line's envelope as the response object handed out (checked; with its texts attached). */
  private responseOf(envelope: Envelope): ResponseOf<P> {
    checkResponseFields(this.options.protocol, envelope.variant, envelope.body, `${this.name} stdout line ${envelope.line}`);
    const response = { [envelope.variant]: envelope.body };
    if (envelope.text !== undefined) {
      Object.defineProperty(response, LINE_TEXT, { value: envelope.text });
      if (envelope.variant === 'captured' || envelope.variant === 'loaded') {
        const text = envelope.raw?.member === 'doc' ? envelope.raw.text : rawBodyMemberText(envelope.text, envelope.variant, 'doc');
        if (text !== undefined) Object.defineProperty(envelope.body, DOC_TEXT, { value: text });
      }
    }
    return response as unknown as ResponseOf<P>;
  }

  /** Resolves true when `promise` settles within `ms`, false otherwise. */
  private async within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([promise.then(() => true, () => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Applies the idle timeout to one read of the connector's output. */
  private idle<T>(read: Promise<T>): Promise<T> {
    const ms = this.options.idleTimeoutMs;
    if (ms === undefined) return read;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.hung = `${this.name}: no response for ${ms / 1000} s while awaiting ${this.awaiting}; the connector was killed`;
        void this.kill(2000);
      }, ms);
      read.then((v) => {
        clearTimeout(timer);
        resolve(v);
      }, (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Resolves with the exit status when it is 0; otherwise rejects with ConnectorExitError. */
  async wait(): Promise<ExitStatus> {
    const status = await this.exitPromise;
    await this.stderrDone;
    if (this.hung !== null) throw new ConnectorExitError(this.hung, status.code, status.signal, { fields: this.exitFields() });
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
    // Died of a signal it did not get from us: the signal and its likely sender say more than its last
    // log line (often an info line, such as "opened"), which follows as context.
    const signal = exitSignal(status.code, status.signal, this.container);
    if (signal !== null && !this.killedByUs) {
      const before = this.oomKillsAtStart;
      const after = before === undefined ? undefined : oomKillCount();
      const oomKilled = signal === 'SIGKILL' && before !== undefined && after !== undefined && after > before;
      throw new ConnectorExitError(signalExitMessage(this.name, signal, { container: this.container, oomKilled, lastLog: last }), status.code, status.signal, { fields: this.exitFields() });
    }
    const how = status.code === null ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
    const message = last ? last : `${this.name} ${how} without an error message`;
    throw new ConnectorExitError(message, status.code, status.signal, { fields: this.exitFields() });
  }

  private exitFields(): Record<string, unknown> {
    return { connector: this.name, ...(this.lastLog ? { lastLog: this.lastLog } : {}) };
  }

  /** Signals the connector's process group (the connector alone where there are no groups, or it has none). */
  private signal(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined || !signalGroup(pid, signal)) this.child.kill(signal);
  }

  /** SIGTERM to its process group, then SIGKILL after the grace period; resolves when it has exited. */
  async kill(graceMs = this.options.killGraceMs ?? 5000): Promise<ExitStatus> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.killedByUs = true;
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      timer.unref();
      const status = await this.exitPromise;
      clearTimeout(timer);
      return status;
    }
    return this.exitPromise;
  }
}

/**
 * Once the engine's CLI (`<engine> run --rm -i --cidfile <cidDir>/cid`) has exited: when it died of a signal — the
 * SIGKILL after kill()'s grace period, a host's forced stop — removes the container it started (`rm -f` by the id
 * in the cidfile), then deletes `cidDir`. The CLI forwards SIGTERM to the container, but a connector that cannot
 * act on it — busy in synchronous code, or PID 1 without a handler, which the kernel then shields from SIGTERM —
 * outlives the CLI's SIGKILL (podman's conmon keeps it running: measured here with podman 4.3, a container
 * spinning in `node -e 'for(;;);'` ran on), until it next read or wrote, or forever. A CLI that exited by itself
 * had its container removed by `--rm`. Podman gets `--time 0`: its `rm -f` otherwise sends the stop signal and
 * waits 10 s before killing; docker's `rm -f` kills at once.
 */
function removeKilledContainer(child: ChildProcess, engine: string, cidDir: string, env: Record<string, string | undefined>): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      rmSync(cidDir, { recursive: true, force: true });
      resolve();
    };
    child.once('error', done);
    child.once('exit', (_code, signal) => {
      let id = '';
      try {
        if (signal !== null) id = readFileSync(join(cidDir, 'cid'), 'utf8').trim();
      } catch {
        // never created: the engine died before it made the container
      }
      if (!/^[0-9a-f]{12,64}$/i.test(id)) return done();
      const force = basename(engine).includes('podman') ? ['--time', '0'] : [];
      const rm = spawn(engine, ['rm', '-f', ...force, id], { env, stdio: 'ignore' });
      rm.once('error', done);
      rm.once('exit', done);
    });
  });
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
  proc.awaiting = `the answer to "${variant}"`;
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

