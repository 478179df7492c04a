// `sluice raw`: run one RPC of a connector against local files and print what it says, like
// `flowctl raw`. How a connector developer runs a connector without a plane or containers. Specs are built
// by the catalog's build code (raw-bindings.ts); sessions run on the runtime's host drivers over the
// plane's connector sessions, with raw's limits (--timeout, --idle-timeout) and its log forwarding.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import {
  type CaptureRequest, type CaptureResponse, type CaptureSpec, ConfigError, type JsonObject, type JsonValue, type MaterializationSpec,
  type MaterializeRequest, type MaterializeResponse, ProtocolError, SluiceError,
} from '@sluice/runtime';
import {
  type ConnectorLog, type ConnectorTarget, type DriverSession, type SourceDocument, lineTextOf, runCaptureDriver, runMaterializeDriver, unaryRpc,
} from '@sluice/runtime/host';
import { captureValidateRequest, materializationValidateRequest } from '../build/build.ts';
import type { EndpointRef } from '../catalog/types.ts';
import { BUILTIN_CONNECTORS, type BuiltinConnector, builtinCommand, builtinConnector } from '../registry.ts';
import { hostSession, type SessionLimits } from '../tasks/host-session.ts';
import { closeAndRecv, Launcher } from '../tasks/launcher.ts';
import type { ConnectorLogEvent, SessionHooks } from '../tasks/session.ts';
import { onStopSignal } from './stop-signals.ts';
import {
  type Fixture, type RawBinding, buildRawCapture, buildRawMaterialization, captureDefOf, materializationDefOf, readBindings,
  readFixture, readObject,
} from './raw-bindings.ts';

export { parseFixtureText } from './raw-bindings.ts';

export const description = 'run one RPC of a connector against local files (spec, discover, validate, apply, capture, materialize)';

export const RAW_USAGE = `usage: sluice raw <connector> <rpc> [options]
       sluice raw <rpc> [options] -- <command> [args...]

<connector> is a built-in connector (${BUILTIN_CONNECTORS.map((c) => c.name).join(', ')}),
or any command after \`--\` that speaks the Flow protocol (JSON codec) on stdin/stdout.
<rpc> is one of: spec, discover, validate, apply, capture, materialize.
Responses are printed to stdout as JSON lines, exactly as the connector wrote them; the
connector's logs go to stderr.

options:
  --config FILE      endpoint configuration (JSON or YAML)
  --bindings FILE    bindings (JSON or YAML; format below)
  --state FILE       connector state for capture / materialize / apply (JSON or YAML; default {})
  --state-out FILE   capture: write the connector state of the last checkpoint to FILE when the
                     capture ends (well or not): what --state takes to resume
  --fixture FILE     materialize input: lines of ["<collection>", <document>] and {"commit": true}
                     transaction separators (a trailing group without a separator is committed too)
  --dry-run          apply: ask the connector only to describe what it would do (dryRun: true)
  --name NAME        task name (default sluice/raw)
  --protocol P       capture | materialize: needed for validate/apply with a command connector
  --timeout SECONDS  kill the connector after this long
  --idle-timeout SECONDS
                     fail (and kill the connector) when it sends no response for this long while
                     sluice awaits one; the error names what was awaited (default 300, 0 = none)
  -h, --help         this help

bindings file: a list (or {bindings: [...]}) of objects:
  resource:      the binding's resource config, e.g. {name: users} or {table: users}
  collection:    collection name (capture target / materialize source; default <name>/<index>)
  key:           collection key as JSON pointers (default ["/id"])
  schema:        the collection's JSON schema (optional; without one, a schema of the key and the
                 selected values typed as the fixture's documents have them)
  fields:        materialize field selection: {values: [name, address/city], document: flow_document}.
                 A field name is its JSON pointer without the leading "/" (address/city =
                 /address/city). keys are the key's fields, values default to [], document to
                 flow_document (null for none).
  backfill:      the binding's backfill counter (default 0)
  resourcePath:  the resource path; given on every binding, the connector's validate is not run
                 (an offline build; apply --dry-run then needs no connection)
  deltaUpdates:  with resourcePath: true for delta updates (else the connector's validate says)
  stateKey:      optional; must be the one derived from the resource path
or a binding in Flow's own form ({resourceConfig, collection: {name, key, projections, ...},
fieldSelection}), as flowctl builds it.

Specs are built as for a catalog (sluice serve): the collection's projections and inference from its
schema, resource paths and constraints from the connector's validate, state keys from the resource
paths, and the field selection from the constraints and \`fields\`.

Keys and values of load/store requests are packed as FoundationDB tuples in field selection order;
object and array values travel as their JSON text (bytes), as Flow does. Within one fixture
transaction, documents with the same key are reduced last-write-wins.`;

const RPCS = ['spec', 'discover', 'validate', 'apply', 'capture', 'materialize'] as const;
type Rpc = (typeof RPCS)[number];

class UsageError extends SluiceError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: Io = {
  out: (l) => process.stdout.write(l + '\n'),
  err: (l) => process.stderr.write(l + '\n'),
};

interface Options {
  rpc: Rpc;
  target: ConnectorTarget;
  /** The built-in connector named on the command line (else a command after `--`). */
  builtin?: BuiltinConnector;
  protocol: 'capture' | 'materialize' | undefined;
  connectorType: string;
  config?: string;
  bindings?: string;
  state?: string;
  stateOut?: string;
  fixture?: string;
  dryRun: boolean;
  name: string;
  timeoutMs?: number;
  idleTimeoutMs?: number;
}

function parseCommandLine(argv: string[]): Options | 'help' {
  const dash = argv.indexOf('--');
  const before = dash === -1 ? argv : argv.slice(0, dash);
  const command = dash === -1 ? [] : argv.slice(dash + 1);
  let parsed;
  try {
    parsed = parseArgs({
      args: before,
      allowPositionals: true,
      options: {
        config: { type: 'string' }, bindings: { type: 'string' }, state: { type: 'string' }, 'state-out': { type: 'string' }, fixture: { type: 'string' },
        'dry-run': { type: 'boolean' }, name: { type: 'string' }, protocol: { type: 'string' }, timeout: { type: 'string' }, 'idle-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    const unknown = /^Unknown option '([^']+)'/.exec((err as Error).message);
    throw new UsageError(unknown ? `unknown option ${unknown[1]}` : (err as Error).message.split('. ')[0]!);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  let rpcText: string | undefined;
  let target: ConnectorTarget;
  let protocol: Options['protocol'];
  let connectorType: string;
  let builtinConnectorOf: BuiltinConnector | undefined;
  if (dash !== -1) {
    if (command.length === 0) throw new UsageError('nothing after `--`: give the connector command');
    if (positionals.length !== 1) throw new UsageError(`with \`-- <command>\`, give exactly one <rpc> before it (got ${positionals.length ? positionals.join(' ') : 'none'})`);
    rpcText = positionals[0];
    target = { command: command[0]!, args: command.slice(1) };
    connectorType = 'LOCAL';
  } else {
    if (positionals.length !== 2) throw new UsageError(`expected <connector> <rpc>${positionals.length ? `, got ${positionals.join(' ')}` : ''}`);
    const builtin = builtinConnector(positionals[0]!);
    if (!builtin) {
      throw new UsageError(`unknown connector ${JSON.stringify(positionals[0])}: use one of ${BUILTIN_CONNECTORS.map((c) => c.name).join(', ')}, or \`-- <command> [args...]\``);
    }
    rpcText = positionals[1];
    target = builtinCommand(builtin);
    protocol = builtin.protocol;
    builtinConnectorOf = builtin;
    connectorType = 'IMAGE';
  }
  if (!(RPCS as readonly string[]).includes(rpcText ?? '')) {
    throw new UsageError(`unknown rpc ${JSON.stringify(rpcText)}: use one of ${RPCS.join(', ')}`);
  }
  const rpc = rpcText as Rpc;
  if (values.protocol !== undefined) {
    if (values.protocol !== 'capture' && values.protocol !== 'materialize') throw new UsageError(`--protocol must be capture or materialize, got ${JSON.stringify(values.protocol)}`);
    if (protocol !== undefined && protocol !== values.protocol) throw new UsageError(`--protocol ${values.protocol} does not match ${positionals[0]}, which is a ${protocol} connector`);
    protocol = values.protocol;
  }
  const implied = rpc === 'discover' || rpc === 'capture' ? 'capture' : rpc === 'materialize' ? 'materialize' : undefined;
  if (implied && protocol && implied !== protocol) throw new UsageError(`${rpc} is a ${implied} rpc, but the connector is a ${protocol} connector`);
  protocol ??= implied;
  if (protocol === undefined && rpc !== 'spec') throw new UsageError(`${rpc}: say whether the command is a capture or a materialization with --protocol capture|materialize`);
  if (rpc === 'materialize' && values.fixture === undefined) throw new UsageError('materialize needs --fixture FILE');
  if (values['dry-run'] && rpc !== 'apply') throw new UsageError('--dry-run applies only to apply');
  if (values['state-out'] !== undefined && rpc !== 'capture') throw new UsageError('--state-out applies only to capture');
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    const seconds = Number(values.timeout);
    if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
    timeoutMs = Math.round(seconds * 1000);
  }
  let idleTimeoutMs: number | undefined = DEFAULT_IDLE_TIMEOUT_MS;
  if (values['idle-timeout'] !== undefined) {
    const seconds = Number(values['idle-timeout']);
    if (!Number.isFinite(seconds) || seconds < 0) throw new UsageError(`--idle-timeout must be a number of seconds (0 for none), got ${JSON.stringify(values['idle-timeout'])}`);
    idleTimeoutMs = seconds === 0 ? undefined : Math.round(seconds * 1000);
  }
  return {
    rpc, target, protocol, connectorType, ...(builtinConnectorOf ? { builtin: builtinConnectorOf } : {}), dryRun: values['dry-run'] === true, name: values.name ?? 'sluice/raw',
    ...(values.config !== undefined ? { config: values.config } : {}),
    ...(values.bindings !== undefined ? { bindings: values.bindings } : {}),
    ...(values.state !== undefined ? { state: values.state } : {}),
    ...(values['state-out'] !== undefined ? { stateOut: values['state-out'] } : {}),
    ...(values.fixture !== undefined ? { fixture: values.fixture } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}),
  };
}

/** `sluice raw` never waits forever for a connector that has gone quiet. */
const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** The connector's stderr log lines, as JSON lines on raw's stderr. */
function forwardLog(io: Io): (log: ConnectorLogEvent) => void {
  return (log) => io.err(JSON.stringify({ level: log.level, msg: log.message, fields: log.fields }));
}

/** The plane's launcher, with raw's limits and log forwarding on every session (the build's RPCs too). */
class RawLauncher extends Launcher {
  readonly #hooks: SessionHooks;
  readonly #limits: SessionLimits;
  constructor(hooks: SessionHooks, limits: SessionLimits) {
    super();
    this.#hooks = hooks;
    this.#limits = limits;
  }

  override capture(endpoint: EndpointRef, task: string): ReturnType<Launcher['capture']> {
    return hostSession(this.target(endpoint, task), 'capture', task, this.#hooks, this.#limits);
  }

  override materialize(endpoint: EndpointRef, task: string): ReturnType<Launcher['materialize']> {
    return hostSession(this.target(endpoint, task), 'materialize', task, this.#hooks, this.#limits);
  }
}

/** The command line's connector as a catalog endpoint: a built-in connector's image, or a local command. */
function endpointOf(o: Options, config: JsonObject): EndpointRef {
  if (o.builtin !== undefined) return { kind: 'connector', image: o.builtin.image, config };
  const target = o.target as { command: string; args?: string[] };
  return { kind: 'local', command: [target.command, ...(target.args ?? [])], config, env: {} };
}

export async function rawCommand(argv: string[], io: Io = defaultIo): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseCommandLine(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`sluice raw: ${err.message}\n\n${RAW_USAGE}`);
      return 2;
    }
    throw err;
  }
  if (options === 'help') {
    io.out(RAW_USAGE);
    return 0;
  }
  try {
    await runRaw(options, io);
    return 0;
  } catch (err) {
    if (err instanceof SluiceError && err.userFacing) {
      io.err(`sluice raw: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

async function runRaw(o: Options, io: Io): Promise<void> {
  const config = await readObject(o.config, '--config');
  const fixture = o.fixture !== undefined ? await readFixture(o.fixture) : undefined;
  const bindings = await readBindings(o.bindings, o.name, fixture ? fixture.transactions.flat() : []);
  const state = await readObject(o.state, '--state');
  const limits: SessionLimits = {
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.idleTimeoutMs !== undefined ? { idleTimeoutMs: o.idleTimeoutMs } : {}),
  };
  const hooks: SessionHooks = { onLog: forwardLog(io) };
  const launcher = new RawLauncher(hooks, limits);
  // A unary RPC whose response is printed; the build's own RPCs (validate) are not.
  const base = {
    ...limits,
    onLog: (log: ConnectorLog) => io.err(JSON.stringify({ level: log.level, msg: log.msg, fields: log.fields })),
  };
  const print = (r: object): void => io.out(JSON.stringify(r));

  if (o.rpc === 'spec') {
    print(await unaryRpc(o.target, { spec: { connectorType: o.connectorType, config } } as CaptureRequest, { ...base, protocol: o.protocol ?? 'capture' }));
    return;
  }
  const endpoint = endpointOf(o, config);
  const collections = bindings.map((b) => b.collection);
  if (o.protocol === 'capture') {
    const def = captureDefOf(o.name, endpoint, bindings);
    switch (o.rpc) {
      case 'discover':
        print(await unaryRpc(o.target, { discover: { connectorType: o.connectorType, config } }, { ...base, protocol: 'capture' }));
        return;
      case 'validate':
        print(await unaryRpc(o.target, captureValidateRequest(def, collections), { ...base, protocol: 'capture' }));
        return;
      case 'apply': {
        const capture = await buildRawCapture(def, bindings, launcher);
        print(await unaryRpc(o.target, { apply: { capture, version: 'raw', ...(o.dryRun ? { dryRun: true } : {}) } }, { ...base, protocol: 'capture' }));
        return;
      }
      case 'capture':
        await runCapture(o, io, launcher.capture(endpoint, o.name), await buildRawCapture(def, bindings, launcher), state);
        return;
      default:
        throw new UsageError(`${o.rpc} is not a capture rpc`);
    }
  }
  const def = materializationDefOf(o.name, endpoint, bindings);
  switch (o.rpc) {
    case 'validate':
      print(await unaryRpc(o.target, materializationValidateRequest(def, collections), { ...base, protocol: 'materialize' }));
      return;
    case 'apply': {
      const materialization = await buildRawMaterialization(def, bindings, launcher);
      print(await unaryRpc(o.target, { apply: { materialization, version: 'raw', state, ...(o.dryRun ? { dryRun: true } : {}) } }, { ...base, protocol: 'materialize' }));
      return;
    }
    case 'materialize': {
      const bySource = routeFixture(o, bindings, fixture!);
      const spec = await buildRawMaterialization(def, bindings, launcher);
      await runMaterialize(o, io, strictClose(launcher.materialize(endpoint, o.name)), spec, bySource, state, fixture!);
      return;
    }
    default:
      throw new UsageError(`${o.rpc} is not a materialize rpc`);
  }
}

async function runCapture(o: Options, io: Io, session: DriverSession<CaptureRequest, CaptureResponse>, capture: CaptureSpec, state: JsonObject): Promise<void> {
  // A stop signal ends the capture (its connector is killed); what it checkpointed is still reported and the
  // state written. A second signal forces the stop (stop-signals.ts).
  const giveBack = onStopSignal(() => session.kill());
  let documents = 0;
  let checkpoints = 0;
  let current: JsonValue = state;
  try {
    // stdin stays open until the connector exits, as the runtime does; EOF would mean "stop".
    session.awaiting = '"opened"';
    await runCaptureDriver({
      name: o.name, spec: capture, version: 'raw', state, session,
      onResponse: (response) => {
        session.awaiting = 'documents, a checkpoint or the end of the capture';
        io.out(lineTextOf(response));
      },
      onDocument: () => { documents++; },
      onCheckpoint: (_update, next) => {
        checkpoints++;
        current = next;
      },
    });
    io.err(JSON.stringify({ level: 'info', msg: 'sluice raw capture: the connector exited', fields: { documents, checkpoints, state: current } }));
  } catch (err) {
    session.kill();
    throw err;
  } finally {
    giveBack();
    await session.close().catch(() => undefined);
    // The state of the last checkpoint, whether the connector ended well or not (what a resumed run opens with).
    if (o.stateOut !== undefined) await writeFile(o.stateOut, JSON.stringify(current, null, 2) + '\n');
  }
}

/** The bindings each fixture collection feeds; a document of a collection no binding reads is an error. */
function routeFixture(o: Options, bindings: RawBinding[], fixture: Fixture): Map<string, number[]> {
  if (bindings.length === 0) throw new ConfigError('materialize needs --bindings: which collections go to which resources');
  const bySource = new Map<string, number[]>();
  bindings.forEach((b, i) => bySource.set(b.collection.name, [...(bySource.get(b.collection.name) ?? []), i]));
  for (const txn of fixture.transactions) {
    for (const d of txn) {
      if (!bySource.has(d.collection)) {
        throw new ConfigError(`--fixture ${o.fixture}:${d.line}: collection ${JSON.stringify(d.collection)} is not the source of any binding (sources: ${[...bySource.keys()].join(', ')})`);
      }
    }
  }
  return bySource;
}

/** A session whose close() fails when the connector writes after its last expected response. */
function strictClose<Req, Res>(inner: DriverSession<Req, Res>): DriverSession<Req, Res> {
  return {
    send: (request) => inner.send(request),
    sendLine: (line) => inner.sendLine(line),
    recv: () => inner.recv(),
    kill: () => inner.kill(),
    get awaiting(): string { return inner.awaiting ?? 'a response'; },
    set awaiting(what: string) { inner.awaiting = what; },
    async close() {
      const extra = await closeAndRecv(inner);
      if (extra !== undefined) throw new ProtocolError(`the connector wrote "${Object.keys(extra as object)[0]}" after the last acknowledged`);
    },
  };
}

async function runMaterialize(
  o: Options, io: Io, session: DriverSession<MaterializeRequest, MaterializeResponse>, spec: MaterializationSpec,
  bySource: Map<string, number[]>, state: JsonObject, fixture: Fixture,
): Promise<void> {
  let next = 0;
  let offset = 0;
  try {
    await runMaterializeDriver({
      name: o.name, spec, version: 'raw', session, state, checkpoint: {}, maxKeys: (spec.bindings ?? []).map(() => undefined),
      onResponse: (response) => io.out(lineTextOf(response)),
      nextTransaction: async () => {
        const txn = fixture.transactions[next++];
        if (txn === undefined) {
          session.awaiting = '"acknowledged"';
          return undefined;
        }
        session.awaiting = 'the transaction\'s responses';
        const docs: SourceDocument[] = [];
        for (const d of txn) {
          for (const binding of bySource.get(d.collection)!) docs.push({ binding, text: d.text });
          offset++;
        }
        return { docs, checkpoint: { sources: { [`fixture;${o.fixture}`]: { readThrough: String(offset) } } } };
      },
    });
  } catch (err) {
    session.kill();
    throw err;
  }
}
