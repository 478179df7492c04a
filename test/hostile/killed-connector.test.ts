// A killed connector (#17.9): when a task's connector dies of a signal sluice did not send, the task's
// failure says so — the signal and the likely sender — instead of the connector's last log line (here
// the info line "warming up", which the campaign saw as the whole failure message). Through the real
// `sluice serve`, with a real connector child that the test kills with SIGKILL.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runTokenCommand } from '../../plane/src/cli/token.ts';
import { freePort, SLOW_CAPTURE, spawnServe, tempDir } from './helpers.ts';
import { until } from '@sluice/runtime/testing';

/** Pids of the processes whose parent is `ppid` and whose command line contains `needle`. */
function children(ppid: number, needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) out.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

test('serve: a connector killed with SIGKILL fails its task with the signal and its likely cause, not its last info line', { timeout: 120_000, skip: process.platform !== 'linux' && 'finds the connector through /proc (Linux only)' }, async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'flow.yaml'), `
collections:
  hostile/events:
    schema: {type: object, properties: {id: {type: integer}}, required: [id]}
    key: [/id]
captures:
  hostile/slow:
    endpoint:
      local:
        command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(SLOW_CAPTURE)}]
        config: {openDelayMs: 600000}
    bindings:
      - resource: {name: events}
        target: hostile/events
`);
  const [port, ingestPort] = [await freePort(), await freePort()];
  const serve = spawnServe(t, ['--catalog', join(dir, 'flow.yaml'), '--port', String(port), '--ingest-port', String(ingestPort), '--data-dir', join(dir, 'data')]);
  await serve.waitFor(/^sluice: ready/m);
  let printed = '';
  assert.equal(await runTokenCommand(['create', '--data-dir', join(dir, 'data')], { out: (s) => { printed += s; }, err: (s) => { printed += s; } }), 0, printed);
  const [, id, secret] = /id: +([0-9a-f]{16})[\s\S]*secret: +(\S+)/.exec(printed) ?? [];
  const api = `http://127.0.0.1:${port}/api/v1`;
  const exchanged = await fetch(`${api}/auth/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token_id: id, secret }) });
  const { access_token: token } = await exchanged.json() as { access_token: string };
  const status = async () => {
    const res = await fetch(`${api}/catalog/status?name=hostile/slow`, { headers: { Authorization: `Bearer ${token}` } });
    return ((await res.json()) as { connector_status?: { message: string }; controller_error?: string }[])[0];
  };
  // The connector has opened its session and logged its info line: that line is now its last.
  await until('the connector to report "warming up"', async () => (await status())?.connector_status?.message === 'warming up', { ms: 60_000, detail: () => serve.stderr() });
  // The capture's session: the one connector process left once the publication's RPCs are done.
  const [pid] = await until('the capture connector process under serve', () => {
    const pids = children(serve.child.pid!, 'slow-capture');
    return pids.length === 1 ? pids : undefined;
  }, { ms: 60_000, detail: () => serve.stderr() });
  process.kill(pid!, 'SIGKILL');
  const [line] = await serve.waitFor(/^.*hostile\/slow: failed once.*$/m);
  assert.match(line, /hostile\/slow: failed once, retrying in [^:]+: hostile\/slow: connector exited on SIGKILL \(killed by a signal — out of memory or `kill -9`\?\); its last log line was "warming up"$/);
  const failed = await until('the status to carry the failure', async () => (await status())?.controller_error, { ms: 30_000 });
  assert.match(failed, /connector exited on SIGKILL \(killed by a signal — out of memory or `kill -9`\?\)/);
  // The task goes on: a new session starts (a new connector process).
  await until('a new connector process after the failure', () => children(serve.child.pid!, 'slow-capture').some((p) => p !== pid), { ms: 60_000, detail: () => serve.stderr() });
  assert.equal(await serve.stop(), 0, serve.stderr());
});
