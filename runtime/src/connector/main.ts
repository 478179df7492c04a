// The entry point a connector's bin calls: `await runCaptureMain(connector)`.
// Decides, once, how a failure is reported: user-facing errors as one error line; anything else in
// full first, then a one-line summary — the last stderr line is what the user sees. Exit 1 on
// failure, 0 on success; SIGTERM/SIGINT end the session cleanly.
// A broken stdout or stderr (EPIPE: the runtime that started us is gone) ends the process at once,
// without logging: Node revives process.stdout/stderr after each error, so logging a pipe error to a
// broken stderr would raise another one, forever (an orphan spinning at 100% CPU, holding its locks).
import { SluiceError } from '../errors.ts';
import { JsonLogger } from '../log.ts';
import { serveCapture } from './capture.ts';
import { serveMaterialize } from './materialize.ts';
import type { ServeOptions } from './session.ts';
import type { CaptureConnector, Logger, MaterializeConnector } from './types.ts';

export interface MainOptions extends ServeOptions {
  /** Called with the exit code; defaults to flushing stdout/stderr then process.exit. */
  exit?: (code: number) => void;
  /** Install SIGTERM/SIGINT handlers (default true). */
  handleSignals?: boolean;
  /**
   * Ends the process at once, without flushing (a broken stdout/stderr, a failure while reporting a
   * failure). Defaults to process.exit; defaults to `exit` when only that is given (tests).
   */
  exitNow?: (code: number) => void;
  /** Most this long is spent flushing stdout/stderr before exiting (default 10 s). */
  exitFlushTimeoutMs?: number;
}

export const PROTO_CODEC_ERROR =
  'FLOW_RUNTIME_CODEC=proto is not supported: this connector speaks only the JSON codec; run it with FLOW_RUNTIME_CODEC=json (or unset it)';

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Logs a failure so that the last line is one clear sentence. */
export function reportFailure(log: Logger, err: unknown): void {
  if (err instanceof SluiceError && err.userFacing) {
    log.error(oneLine(err.message), { code: err.code, ...err.fields });
    return;
  }
  const error = err instanceof Error ? err : new Error(String(err));
  const causes: string[] = [];
  for (let c: unknown = error.cause; c !== undefined && causes.length < 5; c = (c as { cause?: unknown }).cause) {
    causes.push(c instanceof Error ? `${c.name}: ${c.message}` : String(c));
  }
  log.error('internal error', {
    error: `${error.name}: ${error.message}`,
    ...(error.stack ? { stack: error.stack } : {}),
    ...(causes.length ? { causes } : {}),
  });
  log.error(oneLine(`${error.message || error.name} (internal error; see the previous log line for details)`));
}

function flushStream(stream: NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean }): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  return new Promise<void>((resolve) => {
    try {
      stream.write('', () => resolve());
    } catch {
      resolve();
    }
  });
}

/** Flushes stdout/stderr (bounded: a peer that stops reading cannot keep us alive), then exits. */
async function defaultExit(code: number, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  await Promise.race([Promise.all([flushStream(process.stdout), flushStream(process.stderr)]), timeout]);
  clearTimeout(timer);
  process.exit(code);
}

/** Runs `serve` with the entry-point policy; returns the exit code it passed to `exit`. */
export async function runMain(serve: (options: ServeOptions) => Promise<void>, options: MainOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  const log: Logger = options.log ?? new JsonLogger({ ...(options.stderr ? { stream: options.stderr } : {}), env });
  const exit = options.exit ?? ((code: number) => void defaultExit(code, options.exitFlushTimeoutMs ?? 10_000));
  const exitNow = options.exitNow ?? options.exit ?? ((code: number) => process.exit(code));
  let code = 0;
  if ((env['FLOW_RUNTIME_CODEC'] ?? '').trim().toLowerCase() === 'proto') {
    log.error(PROTO_CODEC_ERROR);
    exit(1);
    return 1;
  }
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    log.info(`received ${signal}; stopping`);
    controller.abort();
  };
  const handleSignals = options.handleSignals ?? true;
  // `quiet`: nothing more is logged (the process is on its way out); `ended`: exitNow was called;
  // `stdioBroken`: our stdout or stderr failed (only errors of those streams count: an EPIPE or
  // ECONNRESET of the connector's own sockets is an ordinary failure, reported as usual).
  let quiet = false;
  let ended = false;
  let stdioBroken = false;
  const die = (exitCode: number): void => {
    quiet = true;
    if (ended) return;
    ended = true;
    exitNow(exitCode);
  };
  const onUncaught = (err: unknown): void => {
    // A failure while a failure is being reported, or with stdout/stderr gone: logging could only fail again.
    if (quiet || stdioBroken) {
      die(1);
      return;
    }
    quiet = true;
    try {
      reportFailure(log, err);
    } catch {
      // stderr is unusable; the exit code still says it failed
    }
    exit(1);
  };
  // Our stdout/stderr have nobody reading them (EPIPE): the runtime that started us is gone.
  const onStdioError = (): void => {
    stdioBroken = true;
    die(1);
  };
  const stdio = [
    ...(options.output === undefined ? [process.stdout] : []),
    ...(options.stderr === undefined && options.log === undefined ? [process.stderr] : []),
  ];
  if (handleSignals) {
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    // Left installed after the session: a broken pipe while flushing before exit ends it too.
    for (const stream of stdio) stream.on('error', onStdioError);
  }
  if (options.signal) {
    if (options.signal.aborted) controller.abort();
    else options.signal.addEventListener('abort', () => controller.abort(), { once: true });
  }
  try {
    await serve({ ...options, env, log, signal: controller.signal });
  } catch (err) {
    code = 1;
    if (quiet || stdioBroken) {
      die(1);
      return 1;
    }
    try {
      reportFailure(log, err);
    } catch {
      // stderr is unusable; the exit code still says it failed
    }
  } finally {
    if (handleSignals) {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
    }
  }
  if (ended || quiet) return code;
  quiet = true;
  exit(code);
  return code;
}

/** For a capture connector's bin: `await runCaptureMain(connector)`. */
export function runCaptureMain<Config, Resource>(connector: CaptureConnector<Config, Resource>, options: MainOptions = {}): Promise<number> {
  return runMain((o) => serveCapture(connector, o), options);
}

/** For a materialization connector's bin: `await runMaterializeMain(connector)`. */
export function runMaterializeMain<Config, Resource>(connector: MaterializeConnector<Config, Resource>, options: MainOptions = {}): Promise<number> {
  return runMain((o) => serveMaterialize(connector, o), options);
}
