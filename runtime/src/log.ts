// JSON logs on stderr (flow-protocol.md §1.5): one object per line, `{"level","msg","fields"}`.
// LOG_LEVEL sets verbosity (default info). `status()` emits a connectorStatus event.
import type { Logger } from './connector/types.ts';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

/** Parses a LOG_LEVEL value (any case; `warning`, `fatal`, `panic` accepted). Undefined if unknown. */
export function parseLogLevel(value: string | undefined): LogLevel | undefined {
  switch (value?.trim().toLowerCase()) {
    case 'trace': return 'trace';
    case 'debug': return 'debug';
    case 'info': return 'info';
    case 'warn': case 'warning': return 'warn';
    case 'error': case 'fatal': case 'panic': return 'error';
    default: return undefined;
  }
}

/** Where log lines go: anything with a synchronous-looking `write(string)`. */
export interface LogSink { write(line: string): unknown }

export interface LoggerOptions {
  /** Defaults to process.stderr. */
  stream?: LogSink;
  /** Defaults to LOG_LEVEL from `env`, else info. */
  level?: LogLevel;
  env?: Record<string, string | undefined>;
  fields?: Record<string, unknown>;
}

/** JSON.stringify replacer: BigInt as string, Errors as {message, code?}, typed arrays as base64. */
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) {
    const out: Record<string, unknown> = { message: value.message };
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) out['code'] = code;
    return out;
  }
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}

export class JsonLogger implements Logger {
  readonly level: LogLevel;
  private readonly sink: LogSink;
  private readonly fields: Record<string, unknown>;

  constructor(options: LoggerOptions = {}) {
    const env = options.env ?? process.env;
    this.sink = options.stream ?? process.stderr;
    this.fields = options.fields ?? {};
    const fromEnv = parseLogLevel(env['LOG_LEVEL']);
    this.level = options.level ?? fromEnv ?? 'info';
    if (options.level === undefined && env['LOG_LEVEL'] !== undefined && env['LOG_LEVEL'] !== '' && fromEnv === undefined) {
      this.emit('warn', 'LOG_LEVEL is not a known level; using info', { LOG_LEVEL: env['LOG_LEVEL'] });
    }
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.level];
  }

  trace(msg: string, fields?: Record<string, unknown>): void {
    if (this.enabled('trace')) this.emit('trace', msg, fields);
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    if (this.enabled('debug')) this.emit('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    if (this.enabled('info')) this.emit('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    if (this.enabled('warn')) this.emit('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.emit('error', msg, fields);
  }
  /** Always emitted, whatever the level: the message becomes the task's user-visible status. */
  status(msg: string, fields?: Record<string, unknown>): void {
    this.emit('info', msg, { ...fields, eventType: 'connectorStatus' });
  }
  child(fields: Record<string, unknown>): JsonLogger {
    return new JsonLogger({ stream: this.sink, level: this.level, env: {}, fields: { ...this.fields, ...fields } });
  }

  private emit(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    const all = fields === undefined ? this.fields : { ...this.fields, ...fields };
    let line: string;
    try {
      line = JSON.stringify({ level, msg, fields: all }, replacer);
    } catch (err) {
      line = JSON.stringify({ level, msg, fields: { unserializableFields: String(err) } });
    }
    try {
      this.sink.write(line + '\n');
    } catch {
      // A log line must never fail the caller (a closed stderr reports itself on the stream).
    }
  }
}

export function createLogger(options: LoggerOptions = {}): JsonLogger {
  return new JsonLogger(options);
}
