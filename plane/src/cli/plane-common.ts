// Shared by the local-plane commands (serve, preview, test, start): argument parsing with one clear
// usage error, and the exit convention (user-facing errors: one line, exit 1; usage: exit 2).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SluiceError } from '@sluice/runtime';

/** A mistake on the command line or in what it names (missing file, busy port): one line, no stack. */
export class UsageError extends SluiceError {
  /** 2 for a malformed command line, 1 for a well-formed one that cannot run. */
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super('USAGE', message);
    this.exitCode = exitCode;
  }
}

/** `--help`: the usage goes to stdout and the command exits 0. */
export class HelpRequested extends SluiceError {
  constructor(usage: string) {
    super('HELP', usage);
  }
}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: T, usage: string) {
  // The usage text is the command's --help: a flag it does not mention is a bug here, not the user's.
  const undocumented = Object.keys(options).filter((name) => !usage.includes(`--${name}`));
  if (undocumented.length > 0) throw new Error(`internal: the usage text does not document ${undocumented.map((n) => `--${n}`).join(', ')}`);
  if (argv.includes('--help') || argv.includes('-h')) throw new HelpRequested(usage);
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${usage}`);
  }
}

/** Runs a command body; prints the error as the last stderr line and returns the exit code. */
export async function runCommand(body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(`${err.message}\n`);
      return 0;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`sluice: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof SluiceError && err.userFacing) {
      process.stderr.write(`sluice: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`sluice: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  }
}

export function positiveInt(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return n;
}
