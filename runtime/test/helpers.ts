// Test helpers: drive serve* with arrays of request lines and collect exactly what was written.
import { Writable } from 'node:stream';
import type { LogSink } from '../src/log.ts';
import type { ServeOptions } from '../src/connector/session.ts';

export class Collector extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.text += chunk.toString();
    cb();
  }
  /** Complete lines written so far (without newlines). */
  get lines(): string[] {
    const parts = this.text.split('\n');
    parts.pop();
    return parts;
  }
}

export class LogCollector implements LogSink {
  raw: string[] = [];
  write(line: string): boolean {
    this.raw.push(line);
    return true;
  }
  get entries(): { level: string; msg: string; fields: Record<string, unknown> }[] {
    return this.raw.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }
}

export function linesOf(requests: readonly (string | object)[]): string[] {
  return requests.map((r) => (typeof r === 'string' ? r : JSON.stringify(r)) + '\n');
}

export interface Served {
  out: string[];
  logs: LogCollector;
  error: Error | undefined;
}

/** Runs serve with these request lines; never throws — the error is returned. */
export async function serve<C>(
  fn: (connector: C, options: ServeOptions) => Promise<void>,
  connector: C,
  requests: readonly (string | object)[],
  options: Omit<ServeOptions, 'input' | 'output' | 'stderr'> = {},
): Promise<Served> {
  const output = new Collector();
  const logs = new LogCollector();
  let error: Error | undefined;
  try {
    await fn(connector, { input: linesOf(requests), output, stderr: logs, env: {}, ...options });
  } catch (err) {
    error = err as Error;
  }
  return { out: output.lines, logs, error };
}
