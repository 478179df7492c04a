// Spawns the real sluice CLI.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
export const TEST_CAPTURE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-capture.js', import.meta.url));
export const TEST_MATERIALIZE = fileURLToPath(new URL('../../../runtime/bin/sluice-test-materialize.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  lines: string[];
  stderrLines: string[];
}

export function sluice(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE, ...args], {
      cwd: options.cwd ?? process.cwd(), env: { ...process.env, LOG_LEVEL: 'info', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d; });
    child.stderr.on('data', (d: Buffer) => { stderr += d; });
    // A guard against a hung child, not a speed limit: generous, since a loaded machine starts Node slowly.
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const split = (s: string) => s.split('\n').filter((l) => l !== '');
      resolve({ code, stdout, stderr, lines: split(stdout), stderrLines: split(stderr) });
    });
  });
}
