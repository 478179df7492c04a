// Error classes of source-http-file. One base for the package, one subclass per failure domain,
// each with a stable code. ConfigError (bad configuration or a missing server prerequisite) comes
// from the runtime so that its entry point prints it as one clear line. Imported from the runtime's
// errors module alone: the parser thread (worker.ts) loads this file, and the runtime's index costs it ~36 MB.
import { ConfigError, SluiceError } from '@sluice/runtime/errors';
import type { SluiceErrorOptions } from '@sluice/runtime/errors';

export { ConfigError };

/** Base of every error raised by this connector (besides ConfigError). */
export class HttpFileError extends SluiceError {
  constructor(code: string, message: string, options: SluiceErrorOptions = {}) {
    super(code, message, options);
  }
}

/** The server answered with a status we cannot use, after any retries. */
export class HttpError extends HttpFileError {
  readonly status: number;
  /** The first 500 bytes of the response body, as text. */
  readonly body: string;
  constructor(message: string, status: number, body: string, options: SluiceErrorOptions = {}) {
    super('HTTP', message, options);
    this.status = status;
    this.body = body;
  }
}

/** The connection could not be made or broke (DNS, refused, TLS, timeout, dropped) after any retries. */
export class NetworkError extends HttpFileError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('NETWORK', message, options);
  }
}

/** The file's bytes could not be decompressed, decoded or parsed. */
export class DecodeError extends HttpFileError {
  /** 1-based line (text formats) or null. */
  readonly line: number | null;
  /** 0-based byte offset in the stream the failing stage reads, or null. */
  readonly byteOffset: number | null;
  constructor(message: string, where: { line?: number | null; byteOffset?: number | null } = {}, options: SluiceErrorOptions = {}) {
    super('DECODE', message, options);
    this.line = where.line ?? null;
    this.byteOffset = where.byteOffset ?? null;
  }
}

/** Too many malformed CSV rows for the configured errorThreshold. */
export class ErrorThresholdError extends DecodeError {}
