// Error classes of the runtime. Each failure domain has a subclass with a stable `code`.
// `userFacing` errors are printed as one clear line (no stack) at the entry point; anything else
// is logged in full. Connectors subclass SluiceError for their own domains (HttpError, DecodeError, SqlError).

export interface SluiceErrorOptions {
  cause?: unknown;
  /** Structured details for the JSON log line (never secrets). */
  fields?: Record<string, unknown>;
}

export class SluiceError extends Error {
  readonly code: string;
  readonly fields: Record<string, unknown>;
  /** True when the message alone tells the user what is wrong and what to do. */
  readonly userFacing: boolean;

  constructor(code: string, message: string, options: SluiceErrorOptions & { userFacing?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fields = options.fields ?? {};
    this.userFacing = options.userFacing ?? true;
  }
}

/** Endpoint or resource configuration is invalid, or a prerequisite of the endpoint is missing. */
export class ConfigError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('CONFIG', message, options);
  }
}

/** A peer broke the protocol: wrong variant, bad ordering, malformed frame. */
export class ProtocolError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('PROTOCOL', message, options);
  }
}

/** A connector process failed (host side): carries its exit code and its last stderr line. */
export class ConnectorExitError extends SluiceError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  constructor(message: string, exitCode: number | null, signal: string | null, options: SluiceErrorOptions = {}) {
    super('CONNECTOR_EXIT', message, options);
    this.exitCode = exitCode;
    this.signal = signal;
  }
}
