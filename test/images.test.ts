// The connector images, built with buildah and run with podman, as CI does on machines without a Docker
// engine or Docker Hub: docker/base/build-base.sh makes the Node base locally (cached), docker/build.sh builds
// the three images (layer cache), then each image answers `spec`, source-http-file captures from a loopback
// fixture server, materialize-sqlserver's SSH tunnel forwards through a real sshd, and materialize-sqlite
// writes a mounted SQLite file; and the local plane (`sluice preview --container-engine podman`) runs a capture
// image as a container. Prints each image's size and every
// build's time. Skips, saying why, without root, buildah, podman or runc, or with SLUICE_SKIP_IMAGE_TESTS=1.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { packTupleBase64 } from '@sluice/runtime';
import type { CaptureResponse, JsonObject, MaterializationSpec, MaterializeRequest, MaterializeResponse } from '@sluice/runtime';
import { runSession, startConnector, unaryRpc } from '../runtime/src/host/index.ts';
import type { ContainerTarget } from '../runtime/src/host/index.ts';
import { sshdUnavailable, startSshd } from '../connectors/materialize-sqlserver/test/sshd.ts';
import type { Sshd } from '../connectors/materialize-sqlserver/test/sshd.ts';
import { nodeFlagsOf } from '@sluice/runtime/launch';
import { until } from '@sluice/runtime/testing';
import { builtinConnector } from '../plane/src/registry.ts';

const run = promisify(execFile);
const ROOT = new URL('../', import.meta.url).pathname;
const REGISTRY = 'localhost/sluice-test';
const MAX_BYTES = 250e6;
/** Bounds each test (a hung container would otherwise hold the suite until its own timeout). */
const TEST_TIMEOUT = 180_000;
const IMAGES = [
  { name: 'source-http-file', protocol: 'capture', version: 'v1' },
  { name: 'materialize-sqlserver', protocol: 'materialize', version: 'v2' },
  { name: 'materialize-sqlite', protocol: 'materialize', version: 'v1' },
] as const;
type ImageName = (typeof IMAGES)[number]['name'];

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd} || test -x /usr/sbin/${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function skipReason(): string | undefined {
  if (process.env['SLUICE_SKIP_IMAGE_TESTS'] === '1') return 'SLUICE_SKIP_IMAGE_TESTS=1';
  if (process.platform !== 'linux') return `images are built on Linux only (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'not root: buildah, podman (rootful) and debootstrap need root here';
  const missing = ['buildah', 'podman', 'runc', 'debootstrap'].filter((c) => !has(c));
  if (missing.length > 0) return `${missing.join(', ')} not installed (apt-get install buildah podman runc debootstrap)`;
  return undefined;
}

const skip = skipReason();
if (skip !== undefined) console.log(`# container images: skipped: ${skip}`);
// Podman and buildah on this kind of machine need cgroupfs, runc and no default ulimits (docker/containers.conf).
process.env['CONTAINERS_CONF'] ??= join(ROOT, 'docker/containers.conf');

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;
const imageRef = (name: ImageName, tag = 'dev') => `${REGISTRY}/${name}:${tag}`;
const target = (name: ImageName, extra: Partial<ContainerTarget> = {}): ContainerTarget => ({ engine: 'podman', image: imageRef(name), ...extra });

async function inspect(ref: string): Promise<{ Size: number; Config: { Labels?: Record<string, string>; User?: string; Entrypoint?: string[]; Env?: string[] } }> {
  const { stdout } = await run('podman', ['image', 'inspect', ref], { maxBuffer: 1 << 24 });
  const [info] = JSON.parse(stdout) as { Size: number; Config: { Labels?: Record<string, string>; User?: string; Entrypoint?: string[] } }[];
  assert.ok(info, `podman image inspect ${ref} returned nothing`);
  return info;
}

/** `podman run` a shell command in the image (entrypoint replaced). */
async function shell(name: ImageName, script: string): Promise<string> {
  const { stdout } = await run('podman', ['run', '--rm', '--network', 'none', '--entrypoint', 'sh', imageRef(name), '-c', script]);
  return stdout;
}

/** Tags docker/build.sh reported, by image name (without tag). */
const builtTags = new Map<string, string[]>();

/**
 * Bounds what repeated runs leave behind: drops this test's older sha tags (each would pin a superseded image),
 * and when image storage passes SLUICE_IMAGE_STORE_MB (default 4000) prunes dangling images — which also drops
 * the layer cache, so the next run reinstalls the npm dependencies (~1 minute more).
 */
async function tidy(): Promise<void> {
  const keep = new Set([...builtTags].flatMap(([image, tags]) => tags.map((t) => `${image}:${t}`)));
  const { stdout } = await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}']);
  const stale = stdout.split('\n').filter((ref) => ref.startsWith(`${REGISTRY}/`) && !keep.has(ref));
  if (stale.length > 0) await run('podman', ['rmi', ...stale]).catch(() => undefined);
  const { stdout: root } = await run('podman', ['info', '--format', '{{.Store.GraphRoot}}']);
  const { stdout: du } = await run('du', ['-sm', root.trim()]);
  const mb = Number(du.split('\t')[0]);
  const limit = Number(process.env['SLUICE_IMAGE_STORE_MB'] ?? 4000);
  if (mb > limit) {
    await run('podman', ['image', 'prune', '-f']);
    console.log(`# image storage was ${mb} MB (> ${limit}): pruned dangling images`);
  }
}

describe('container images (buildah build, podman run)', { skip: skip ?? false, timeout: 12 * 60_000 }, () => {
  before(async () => {
    let start = process.hrtime.bigint();
    const base = await run(join(ROOT, 'docker/base/build-base.sh'), [], { cwd: ROOT, maxBuffer: 1 << 26 });
    console.log(`# base images: ${seconds(start).toFixed(1)}s (${base.stderr.trim().split('\n').join('; ')})`);
    start = process.hrtime.bigint();
    const built = await run(join(ROOT, 'docker/build.sh'), ['--engine', 'buildah', '--local-base', '--registry', REGISTRY], { cwd: ROOT, maxBuffer: 1 << 26 })
      .catch((err: Error & { stderr?: string }) => {
        throw new Error(`docker/build.sh failed: ${err.message}\n${(err.stderr ?? '').split('\n').slice(-40).join('\n')}`);
      });
    for (const line of built.stdout.trim().split('\n')) {
      const [, image, bytes, secs, ...tags] = line.split(' ');
      builtTags.set(String(image), tags);
      console.log(`# ${image}: ${(Number(bytes) / 1e6).toFixed(1)} MB, built in ${secs}s, tags ${tags.join(' ')}`);
    }
    console.log(`# all images: ${seconds(start).toFixed(1)}s`);
    await tidy();
  }, { timeout: 10 * 60_000 });

  for (const image of IMAGES) {
    test(`${image.name}: tags, labels, non-root user, entrypoint, size < 250 MB`, { timeout: TEST_TIMEOUT }, async () => {
      const reported = builtTags.get(`${REGISTRY}/${image.name}`) ?? [];
      assert.equal(reported.length, 3, `docker/build.sh reported tags ${JSON.stringify(reported)}`);
      assert.deepEqual(reported.slice(0, 2), ['dev', image.version]);
      const sha = reported[2]!.replace(/-dirty$/, '');
      assert.match(sha, /^[0-9a-f]{7,}$/, `the third tag is not a git short sha: ${reported[2]}`);
      execFileSync('git', ['cat-file', '-e', `${sha}^{commit}`], { cwd: ROOT }); // a real commit
      const { stdout: tags } = await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}', `${REGISTRY}/${image.name}`]);
      for (const tag of reported) assert.ok(tags.split('\n').includes(imageRef(image.name, tag)), `missing tag :${tag} in\n${tags}`);
      const info = await inspect(imageRef(image.name));
      assert.equal(info.Config.Labels?.['FLOW_RUNTIME_PROTOCOL'], image.protocol);
      assert.equal(info.Config.Labels?.['FLOW_RUNTIME_CODEC'], 'json');
      assert.equal(info.Config.Labels?.['org.opencontainers.image.version'], image.version);
      // The entrypoint runs the bin with the Node flags its package.json declares (e.g. source-http-file's heap limits).
      const binFile = builtinConnector(image.name)!.bin;
      const bin = `/app/${binFile.slice(ROOT.length)}`;
      assert.deepEqual(info.Config.Entrypoint, ['/app/entrypoint']);
      const exec = (await shell(image.name, 'cat /app/entrypoint')).split('\n').find((l) => l.startsWith('exec '));
      assert.equal(exec, `exec ${['/usr/local/bin/node', ...nodeFlagsOf(binFile), bin].map((w) => `'${w}'`).join(' ')} "$@"`);
      assert.ok((info.Config.Env ?? []).includes('NODE_COMPILE_CACHE=/app/.node-compile-cache'), `NODE_COMPILE_CACHE is not set: ${JSON.stringify(info.Config.Env)}`);
      // The compile cache was filled at build time (the image's start skips TypeScript stripping).
      assert.match(await shell(image.name, 'find /app/.node-compile-cache -type f | wc -l'), /^[1-9]\d*\s*$/);
      // Config validators were precompiled at build time into a root-owned directory the runtime user cannot write.
      assert.ok((info.Config.Env ?? []).includes('SLUICE_VALIDATOR_CACHE=/app/.sluice-validators'), `SLUICE_VALIDATOR_CACHE is not set: ${JSON.stringify(info.Config.Env)}`);
      assert.match(await shell(image.name, 'stat -c "%u %a" /app/.sluice-validators; find /app/.sluice-validators -name "*.cjs" | wc -l'), /^0 755\n[1-9]\d*\s*$/);
      assert.equal(info.Config.User, '1000:1000');
      assert.equal((await shell(image.name, 'id -u; node --version')).trim().split('\n').join(' ').replace(/\.\d+\.\d+$/, ''), '1000 v24');
      console.log(`# ${image.name}: ${(info.Size / 1e6).toFixed(1)} MB`);
      assert.ok(info.Size < MAX_BYTES, `${image.name} is ${(info.Size / 1e6).toFixed(1)} MB; the target is < 250 MB`);
    });

    test(`${image.name}: production dependencies only, sources outside node_modules`, { timeout: TEST_TIMEOUT }, async () => {
      const out = await shell(image.name, [
        'cd /app',
        'for p in typescript eslint turbo node @types/node; do test -e node_modules/$p && echo "dev dependency $p"; done',
        'test -e /usr/local/bin/npm && echo "npm is in the runtime image"',
        'find -P node_modules -name "*.ts" -type f | head -3',
        `readlink -f node_modules/@sluice/runtime node_modules/@sluice/${image.name}`,
      ].join('; ') + '; true');
      assert.equal(out.trim(), `/app/runtime\n/app/connectors/${image.name}`);
    });

    test(`${image.name}: spec answers`, { timeout: TEST_TIMEOUT }, async () => {
      const res = await unaryRpc(target(image.name), { spec: { connectorType: 'IMAGE' } }, { protocol: image.protocol, timeoutMs: 60_000 });
      const spec = (res as { spec?: JsonObject }).spec;
      assert.ok(spec, `expected a spec response, got ${JSON.stringify(res)}`);
      assert.equal(typeof spec['protocol'], 'number');
      assert.equal((spec['configSchema'] as JsonObject)['type'], 'object');
      assert.equal((spec['resourceConfigSchema'] as JsonObject)['type'], 'object');
      assert.match(String(spec['documentationUrl']), /^https?:\/\//);
    });
  }

  describe('source-http-file captures from a loopback server', () => {
    let server: Server;
    let url = '';
    const csv = 'id,name\n1,alpha\n2,beta\n3,"gamma, delta"\n';
    let slowStarted: () => void = () => undefined;
    const slowGet = new Promise<void>((resolve) => { slowStarted = resolve; });
    before(async () => {
      server = createServer((req, res) => {
        res.setHeader('Last-Modified', 'Tue, 05 Mar 2024 10:00:00 GMT');
        res.setHeader('Content-Type', 'text/csv');
        if (req.url === '/slow.csv') {
          // A file that never finishes: a row every 100 ms until the client goes away.
          res.setHeader('Content-Length', 1e9);
          if (req.method === 'HEAD') return void res.end();
          res.write('id,name\n');
          slowStarted();
          let n = 0;
          const timer = setInterval(() => res.write(`${n++},row\n`), 100);
          res.on('close', () => clearInterval(timer));
          return;
        }
        res.setHeader('Content-Length', Buffer.byteLength(csv));
        res.end(req.method === 'HEAD' ? undefined : csv);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/people.csv`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    test('open → documents and a checkpoint, exit 0', { timeout: TEST_TIMEOUT }, async () => {
      const responses: CaptureResponse[] = await runSession(target('source-http-file'), [{
        open: {
          capture: {
            name: 'acmeCo/http',
            connectorType: 'IMAGE',
            config: { url },
            bindings: [{ resourceConfig: { stream: 'people' }, resourcePath: ['people'], collection: { name: 'acmeCo/people', key: ['/_meta/file', '/_meta/offset'] }, stateKey: 'people' }],
          },
          state: {},
        },
      } as never], { protocol: 'capture', timeoutMs: 60_000 });
      assert.deepEqual(responses[0], { opened: {} });
      const docs = responses.flatMap((r) => ('captured' in r ? [r.captured.doc] : []));
      assert.deepEqual(docs, [
        { id: '1', name: 'alpha', _meta: { file: 'people.csv', offset: 0 } },
        { id: '2', name: 'beta', _meta: { file: 'people.csv', offset: 1 } },
        { id: '3', name: 'gamma, delta', _meta: { file: 'people.csv', offset: 2 } },
      ]);
      assert.ok(responses.some((r) => 'checkpoint' in r), 'no checkpoint');
    });

    test('SIGTERM to `podman run` stops the connector in the container cleanly; the container is removed', { timeout: TEST_TIMEOUT }, async () => {
      const name = `sluice-test-sigterm-${process.pid}`;
      const proc = startConnector(target('source-http-file', { engineArgs: ['--name', name] }), { protocol: 'capture', timeoutMs: 60_000 });
      await proc.send({
        open: {
          capture: {
            name: 'acmeCo/slow',
            config: { url: url.replace('people.csv', 'slow.csv') },
            bindings: [{ resourceConfig: { stream: 'slow' }, resourcePath: ['slow'], collection: { name: 'acmeCo/slow', key: ['/_meta/file', '/_meta/offset'] }, stateKey: 'slow' }],
          },
          state: {},
        },
      } as never);
      const responses = proc.responses();
      const first = await responses.next();
      assert.deepEqual(first.value, { opened: {} });
      await slowGet; // the download is under way
      // Keep reading stdout while it stops (the child's 'close' waits for its output to be consumed).
      const rest = (async () => { for await (const _ of responses) { /* the final checkpoint */ } })();
      const status = await proc.kill(20_000);
      await rest;
      assert.deepEqual(status, { code: 0, signal: null }, `podman run ended with ${JSON.stringify(status)}; logs: ${JSON.stringify(proc.logs.slice(-3))}`);
      assert.ok(proc.logs.some((l) => /SIGTERM/.test(l.msg)), `the connector did not log the SIGTERM: ${JSON.stringify(proc.logs.slice(-3))}`);
      const exists = await run('podman', ['container', 'exists', name]).then(() => true, () => false);
      assert.equal(exists, false, `container ${name} is still there`);
    });
  });

  test('a container that cannot act on SIGTERM (PID 1 spinning in synchronous code) is removed once kill()\'s grace period ends', { timeout: TEST_TIMEOUT }, async () => {
    // The CLI forwards SIGTERM, which the kernel keeps from a PID 1 without a handler; the SIGKILL after the grace
    // ends the CLI only, and podman's conmon kept the container spinning: it is removed by its cidfile's id.
    const name = `sluice-test-stubborn-${process.pid}`;
    const proc = startConnector(target('source-http-file', { engineArgs: ['--name', name, '--entrypoint', 'node'], args: ['-e', 'console.error("spinning"); for (;;);'] }), { protocol: 'capture' });
    try {
      await until('the container to spin', () => proc.logs.some((l) => l.msg === 'spinning'), { ms: 60_000, detail: () => JSON.stringify(proc.logs) });
      const status = await proc.kill(2000);
      assert.deepEqual(status, { code: null, signal: 'SIGKILL' }, 'the CLI was killed after the grace period');
      const exists = await run('podman', ['container', 'exists', name]).then(() => true, () => false);
      assert.equal(exists, false, `container ${name} is still there`);
    } finally {
      await run('podman', ['rm', '-f', '--time', '0', name]).catch(() => undefined);
    }
  });

  test('materialize-sqlserver: its drivers run in the image (validate against a closed port; IAM modules load)', { timeout: TEST_TIMEOUT }, async () => {
    const probe = createNetServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const config = { address: `127.0.0.1:${port}`, database: 'flow', user: 'sa', credentials: { auth_type: 'UserPassword', password: 'x' } };
    await assert.rejects(
      unaryRpc(target('materialize-sqlserver'), { validate: { name: 'acmeCo/sqlserver', connectorType: 'IMAGE', config, bindings: [] } }, { protocol: 'materialize', timeoutMs: 60_000 }),
      (err: Error) => /connection to 127\.0\.0\.1:\d+ was refused/.test(err.message) || assert.fail(`unexpected error: ${err.message}`),
    );
    const { stdout } = await run('podman', ['run', '--rm', '--network', 'none', '-w', '/app/connectors/materialize-sqlserver', '--entrypoint', 'node',
      imageRef('materialize-sqlserver'), '--input-type=module', '-e',
      "const s = await import('@aws-sdk/rds-signer'); const t = await import('@aws-sdk/client-sts'); console.log(typeof s.Signer, typeof t.STSClient)"]);
    assert.equal(stdout.trim(), 'function function');
  });

  describe('materialize-sqlserver: SSH tunnels work inside the image (pure-JS ssh2, no openssh-client)', () => {
    const noSshd = skip === undefined ? sshdUnavailable() : undefined;
    if (noSshd !== undefined) console.log(`# materialize-sqlserver SSH tunnel in the image: skipped: ${noSshd}`);
    let sshd: Sshd | undefined;
    let echo: Server | undefined;
    before(async () => {
      if (noSshd !== undefined) return;
      sshd = await startSshd();
      echo = createNetServer((socket) => socket.pipe(socket));
      await new Promise<void>((resolve) => echo!.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      await sshd?.stop();
      await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
    });

    test('the connector\'s tunnel forwards a TCP connection through a real sshd', { skip: noSshd ?? false, timeout: TEST_TIMEOUT }, async () => {
      const script = `
        import { connect } from 'node:net';
        import { openTunnel } from '/app/connectors/materialize-sqlserver/src/tunnel.ts';
        const t = await openTunnel({ sshEndpoint: process.env.SSH_ENDPOINT, privateKey: process.env.SSH_KEY, targetHost: '127.0.0.1', targetPort: Number(process.env.TARGET_PORT) });
        const reply = await new Promise((resolve, reject) => {
          const want = 'ping through the tunnel';
          const s = connect(t.localPort, t.localHost, () => s.write(want));
          let got = '';
          s.on('data', (d) => { got += d; if (got.length >= want.length) { s.destroy(); resolve(got); } });
          s.on('error', reject);
          s.on('close', () => resolve(got));
        });
        await t.close();
        console.log(reply);`;
      const { stdout } = await run('podman', [
        'run', '--rm', '--network', 'host', '-e', 'SSH_ENDPOINT', '-e', 'SSH_KEY', '-e', 'TARGET_PORT',
        '--entrypoint', '/usr/local/bin/node', imageRef('materialize-sqlserver'), '--input-type=module', '-e', script,
      ], {
        env: {
          ...process.env,
          SSH_ENDPOINT: `ssh://${sshd!.user}@127.0.0.1:${sshd!.port}`,
          SSH_KEY: sshd!.privateKey,
          TARGET_PORT: String((echo!.address() as AddressInfo).port),
        },
        timeout: 60_000,
      });
      assert.equal(stdout.trim(), 'ping through the tunnel');
      assert.equal((await shell('materialize-sqlserver', 'command -v ssh || echo none')).trim(), 'none');
    });
  });

  describe('the local plane runs connector images as podman containers', () => {
    // Names that are not built-in connectors: without a container engine the plane refuses them, so a
    // successful run proves the container path ran.
    const captureImage = `${REGISTRY}/http-file-in-a-container:dev`;
    // Ends in /materialize-sqlite so the plane mounts the directory of its `path`; that the container ran is
    // proven by the file's owner (the image runs as uid 1000, this test as root).
    const sqliteImage = `${REGISTRY}/in-a-container/materialize-sqlite:dev`;
    const dir = skip === undefined ? mkdtempSync(join(tmpdir(), 'sluice-image-plane-')) : '';
    let server: Server;
    let url = '';
    before(async () => {
      await run('podman', ['tag', imageRef('source-http-file'), captureImage]);
      await run('podman', ['tag', imageRef('materialize-sqlite'), sqliteImage]);
      server = createServer((req, res) => {
        const body = 'id,name\n1,alpha\n2,beta\n';
        res.setHeader('Last-Modified', 'Tue, 05 Mar 2024 10:00:00 GMT');
        res.setHeader('Content-Length', Buffer.byteLength(body));
        res.end(req.method === 'HEAD' ? undefined : body);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/people.csv`;
      const collection = [
        'collections:',
        '  acmeCo/people:',
        '    schema: {type: object, properties: {id: {type: string}, name: {type: string}}, required: [id]}',
        '    key: [/id]',
      ];
      writeFileSync(join(dir, 'capture.flow.yaml'), [...collection,
        'captures:',
        '  acmeCo/source-people:',
        `    endpoint: {connector: {image: "${captureImage}", config: {url: "${url}"}}}`,
        '    bindings: [{resource: {stream: people}, target: acmeCo/people}]', ''].join('\n'));
      writeFileSync(join(dir, 'sqlite.flow.yaml'), [...collection,
        'materializations:',
        '  acmeCo/to-sqlite:',
        `    endpoint: {connector: {image: "${sqliteImage}", config: {path: "${join(dir, 'out.db')}"}}}`,
        '    bindings: [{source: acmeCo/people, resource: {table: people}}]', ''].join('\n'));
      writeFileSync(join(dir, 'fixture.jsonl'), '["acmeCo/people",{"id":"1","name":"alpha"}]\n{"commit":true}\n');
    });
    after(async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      if (dir) rmSync(dir, { recursive: true, force: true });
      // `podman untag IMAGE` alone would drop every name of the image: name the one to drop.
      await run('podman', ['untag', captureImage, captureImage]).catch(() => undefined);
      await run('podman', ['untag', sqliteImage, sqliteImage]).catch(() => undefined);
    });

    const sluice = (args: string[]) => run(process.execPath, [join(ROOT, 'plane/bin/sluice.js'), ...args], { cwd: ROOT, timeout: 120_000 });

    test('sluice preview --container-engine podman: a capture image\'s documents', { timeout: TEST_TIMEOUT }, async () => {
      const { stdout } = await sluice(['preview', '--catalog', join(dir, 'capture.flow.yaml'), '--container-engine', 'podman', '--timeout', '60']);
      const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as [string, JsonObject]);
      assert.deepEqual(lines.map(([c, d]) => [c, d['id'], d['name'], (d['_meta'] as JsonObject)['file']]), [
        ['acmeCo/people', '1', 'alpha', 'people.csv'],
        ['acmeCo/people', '2', 'beta', 'people.csv'],
      ]);
      // The same catalog without an engine: the plane will not run a non-built-in image as a process.
      const refused = await sluice(['preview', '--catalog', join(dir, 'capture.flow.yaml')]).then(() => '', (err: { stderr?: string }) => err.stderr ?? '');
      assert.match(refused, /is not a built-in connector .*--container-engine/);
    });

    test('sluice preview --container-engine podman: materialize-sqlite keeps its file between apply and open', {
      timeout: TEST_TIMEOUT,
    }, async () => {
      chownSync(dir, 1000, 1000);
      await sluice(['preview', '--catalog', join(dir, 'sqlite.flow.yaml'), '--fixture', join(dir, 'fixture.jsonl'), '--container-engine', 'podman', '--timeout', '60']);
      assert.equal(statSync(join(dir, 'out.db')).uid, 1000, 'out.db was written by the container (uid 1000)');
      const db = new DatabaseSync(join(dir, 'out.db'), { readOnly: true });
      try {
        assert.deepEqual(db.prepare('SELECT id, name FROM people').all().map((r) => ({ ...r })), [{ id: '1', name: 'alpha' }]);
      } finally {
        db.close();
      }
    });
  });

  describe('materialize-sqlite writes to a mounted file', () => {
    const dir = skip === undefined ? mkdtempSync(join(tmpdir(), 'sluice-image-sqlite-')) : '';
    after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

    const spec: MaterializationSpec = {
      name: 'acmeCo/sqlite',
      connectorType: 'IMAGE',
      config: { path: '/data/out.db' },
      bindings: [{
        resourceConfig: { table: 'people' },
        resourcePath: ['people'],
        collection: {
          name: 'acmeCo/people',
          key: ['/id'],
          projections: [
            { field: 'flow_document', inference: { types: ['object'], exists: 'MUST' } },
            { field: 'id', ptr: '/id', isPrimaryKey: true, inference: { types: ['integer'], exists: 'MUST' } },
            { field: 'name', ptr: '/name', inference: { types: ['string'], exists: 'MUST' } },
          ],
        },
        fieldSelection: { keys: ['id'], values: ['name'], document: 'flow_document' },
      }],
    } as MaterializationSpec;

    test('apply, then one transaction: rows in the host file', { timeout: TEST_TIMEOUT }, async () => {
      chownSync(dir, 1000, 1000); // the image runs as uid 1000
      const mounted = target('materialize-sqlite', { mounts: [{ source: dir, target: '/data' }] });
      const applied = await unaryRpc(mounted, { apply: { materialization: spec, version: 'v1' } }, { protocol: 'materialize', timeoutMs: 60_000 });
      assert.ok('applied' in applied, JSON.stringify(applied));
      const docs = [{ id: 1, name: 'alpha' }, { id: 2, name: 'beta' }];
      const requests: MaterializeRequest[] = [
        { open: { materialization: spec, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 } as never, state: {} } },
        { acknowledge: {} },
        { flush: {} },
        ...docs.map((doc): MaterializeRequest => ({ store: { keyPacked: packTupleBase64([doc.id]), valuesPacked: packTupleBase64([doc.name]), doc } })),
        { startCommit: { runtimeCheckpoint: {} } },
        { acknowledge: {} },
      ];
      const responses: MaterializeResponse[] = await runSession(mounted, requests, { protocol: 'materialize', timeoutMs: 60_000 });
      assert.deepEqual(responses.map((r) => Object.keys(r)[0]), ['opened', 'acknowledged', 'flushed', 'startedCommit', 'acknowledged']);
      const db = new DatabaseSync(join(dir, 'out.db'), { readOnly: true });
      try {
        const rows = db.prepare('SELECT id, name, flow_document FROM people ORDER BY id').all();
        assert.deepEqual(rows.map((r) => ({ id: r['id'], name: r['name'], doc: JSON.parse(String(r['flow_document'])) })),
          docs.map((d) => ({ id: d.id, name: d.name, doc: d })));
      } finally {
        db.close();
      }
    });
  });
});
