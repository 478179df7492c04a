// The CLI's last word on an error no command caught: a user-facing SluiceError is its one-line message (what,
// where, what to do); anything else is a bug or an environment failure and keeps its stack for the report.
import { SluiceError } from '@sluice/runtime';

/** Writes the error as the last stderr line and returns the exit code. */
export function reportCliError(err: unknown): number {
  if (err instanceof SluiceError && err.userFacing) {
    process.stderr.write(`sluice: ${err.message}\n`);
    return 1;
  }
  process.stderr.write(`sluice: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}
