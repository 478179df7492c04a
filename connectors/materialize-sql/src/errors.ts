// Error classes of the SQL materialization core. Each has a stable code (see runtime/src/errors.ts).
import { ConfigError, SluiceError } from '@sluice/runtime';
import type { SluiceErrorOptions } from '@sluice/runtime';

/** A statement failed, or a value cannot be written to its column. `number` = the server's error number, if any. */
export class SqlError extends SluiceError {
  readonly number: number | undefined;
  constructor(message: string, options: SluiceErrorOptions & { number?: number; code?: string } = {}) {
    super(options.code ?? 'SQL', message, options);
    this.number = options.number;
  }
}

/** Another instance of this materialization opened after us: our commit was refused, nothing was written. */
export class FencedError extends SqlError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super(message, { ...options, code: 'FENCED' });
  }
}

/** The materialization's bindings, field selection or resource configuration cannot work with this endpoint. */
export class SqlConfigError extends ConfigError {}
