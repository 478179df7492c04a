// A connector session over a child process speaking the JSON codec: one request per stdin line, one
// response per stdout line, JSON log lines on stderr. A non-zero exit fails the session with the
// connector's last stderr message, as Flow's runtime reports it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ConnectorExitError, ProtocolError, type JsonObject } from '@sluice/runtime';
import type { ConnectorLogEvent, ConnectorSession, SessionHooks } from './session.ts';

export interface ProcessCommand {
  command: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Names the connector in errors (task name or image). */
  name: string;
}

export function spawnSession<Req, Res>(cmd: ProcessCommand, hooks: SessionHooks = {}): ConnectorSession<Req, Res> {
  const [file, ...args] = cmd.command;
  if (file === undefined) throw new ProtocolError(`${cmd.name}: empty connector command`);
  const child: ChildProcess = spawn(file, args, {
    cwd: cmd.cwd,
    env: { ...process.env, ...cmd.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const responses: Res[] = [];
  let waiter: (() => void) | null = null;
  let lastError = '';
  let stdoutDone = false;
  let failure: Error | null = null;
  const wake = () => {
    const w = waiter;
    waiter = null;
    w?.();
  };

  const exited = new Promise<void>((resolve) => {
    child.on('error', (err) => {
      failure ??= new ConnectorExitError(`${cmd.name}: cannot start connector ${JSON.stringify(file)}: ${err.message}`, null, null, { cause: err });
      stdoutDone = true;
      wake();
      resolve();
    });
    child.on('close', (code, signal) => {
      if (code !== 0 && failure === null) {
        const detail = lastError || (signal ? `killed by ${signal}` : `exit code ${String(code)}`);
        failure = new ConnectorExitError(`${cmd.name}: connector failed: ${detail}`, code, signal);
      }
      stdoutDone = true;
      wake();
      resolve();
    });
  });

  const out = createInterface({ input: child.stdout!, crlfDelay: Infinity });
  out.on('line', (line) => {
    if (line.trim() === '') return;
    try {
      responses.push(JSON.parse(line) as Res);
    } catch {
      failure ??= new ProtocolError(`${cmd.name}: connector wrote a line that is not JSON: ${line.slice(0, 200)}`);
      child.kill('SIGKILL');
    }
    wake();
  });
  const err = createInterface({ input: child.stderr!, crlfDelay: Infinity });
  err.on('line', (line) => {
    if (line.trim() === '') return;
    const event = parseLogLine(line);
    if (event.level === 'error' || event.level === 'fatal' || event.level === 'panic' || !line.startsWith('{')) lastError = event.message;
    hooks.onLog?.(event);
  });
  child.stdin!.on('error', () => undefined);

  return {
    send(request) {
      return new Promise<void>((resolve, reject) => {
        if (failure) return reject(failure);
        if (child.stdin!.destroyed || child.stdin!.writableEnded) return reject(new ProtocolError(`${cmd.name}: connector stdin is closed`));
        const ok = child.stdin!.write(JSON.stringify(request) + '\n');
        if (ok) resolve();
        else child.stdin!.once('drain', resolve);
      });
    },
    async recv() {
      while (true) {
        if (responses.length > 0) return responses.shift();
        if (failure) throw failure;
        if (stdoutDone) {
          await exited;
          if (failure) throw failure;
          return undefined;
        }
        await new Promise<void>((r) => { waiter = r; });
      }
    },
    async close() {
      child.stdin!.end();
      await exited;
      if (failure) throw failure;
    },
    kill() {
      child.kill('SIGKILL');
    },
  };
}

export function parseLogLine(line: string): ConnectorLogEvent {
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    if (o !== null && typeof o === 'object' && !Array.isArray(o)) {
      const { level, lvl, msg, message, ts, time, timestamp, fields, ...rest } = o;
      const when = ts ?? time ?? timestamp;
      return {
        level: String(level ?? lvl ?? 'info').toLowerCase(),
        message: String(msg ?? message ?? ''),
        fields: { ...(rest as JsonObject), ...((fields ?? {}) as JsonObject) },
        ts: typeof when === 'string' ? new Date(when) : new Date(),
      };
    }
  } catch {
    // not JSON: kept as text below
  }
  return { level: /error|failed|panic|timeout|unable|unrecognized/i.test(line) ? 'error' : 'warn', message: line, fields: {}, ts: new Date() };
}
