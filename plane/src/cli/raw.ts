// `sluice raw`: run one RPC of a connector against local files and print what it says, like
// `flowctl raw`. How a connector developer runs a connector without a plane or containers.
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import {
  type CaptureRequest, type CaptureSpec, type CollectionSpec, ConfigError, type Inference, type JsonObject,
  type JsonSchema, type JsonValue, type MaterializationSpec, type Projection, ProtocolError,
  SluiceError, parseDocument, resolvePointer, stringifyDocument,
} from '@sluice/runtime';
import {
  type ConnectorLog, type ConnectorProcess, type ConnectorTarget, type DriverSession, type SourceDocument, lineTextOf,
  runCaptureDriver, runMaterializeDriver, startConnector, unaryRpc,
} from '@sluice/runtime/host';
import { BUILTIN_CONNECTORS, builtinCommand, builtinConnector } from '../registry.ts';

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
  schema:        the collection's JSON schema (optional; projections and their inference come from it,
                 otherwise from the fixture's documents)
  resourcePath:  optional resource path; stateKey, backfill: optional
  fields:        materialize field selection: {keys: [id], values: [name, address/city],
                 document: flow_document}. A field name is its JSON pointer without the leading
                 "/" (address/city = /address/city). keys default to the key's fields, values to [],
                 document to flow_document (null for none).
  deltaUpdates:  materialize: true for delta updates (no loads)

Keys and values of load/store requests are packed as FoundationDB tuples in that field order;
object and array values travel as their JSON text (bytes), as Flow does. Within one fixture
transaction, documents with the same key are reduced last-write-wins.`;

const RPCS = ['spec', 'discover', 'validate', 'apply', 'capture', 'materialize'] as const;
type Rpc = (typeof RPCS)[number];

class UsageError extends SluiceError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

export interface BindingDef {
  resource?: JsonObject;
  collection?: string;
  source?: string;
  key?: string[];
  schema?: JsonObject;
  resourcePath?: string[];
  stateKey?: string;
  backfill?: number;
  fields?: { keys?: string[]; values?: string[]; document?: string | null };
  deltaUpdates?: boolean;
  /** A binding in Flow's own spec form (CaptureSpec/MaterializationSpec binding), used as given. */
  flow?: JsonObject;
}

/** How errors name a binding: its resource path, else its resource config. */
function bindingName(b: JsonObject, i: number): string {
  const path = b['resourcePath'];
  if (Array.isArray(path) && path.length > 0) return `binding ${i} (${path.join('/')})`;
  const resource = b['resourceConfig'] ?? b['resource'];
  return resource === undefined ? `binding ${i}` : `binding ${i} (${JSON.stringify(resource)})`;
}

/** A binding of Flow's spec JSON: `resourceConfig` and a `collection` spec object. */
function isFlowBinding(b: JsonObject): boolean {
  return isObject(b) && isObject(b['resourceConfig']) && isObject(b['collection']);
}

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: Io = {
  out: (l) => process.stdout.write(l + '\n'),
  err: (l) => process.stderr.write(l + '\n'),
};

async function readStructured(file: string, flag: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the ${flag} file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseYaml(text) as unknown;
  } catch (err) {
    throw new ConfigError(`the ${flag} file ${file} is not valid JSON or YAML: ${(err as Error).message.split('\n')[0]}`);
  }
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function readObject(file: string | undefined, flag: string): Promise<JsonObject> {
  if (file === undefined) return {};
  const value = await readStructured(file, flag);
  if (value === null || value === undefined) return {};
  if (!isObject(value)) throw new ConfigError(`the ${flag} file ${file} must hold an object`);
  return value;
}

async function readBindings(file: string | undefined): Promise<BindingDef[]> {
  if (file === undefined) return [];
  const value = await readStructured(file, '--bindings');
  // A list, {bindings: [...]}, or a whole CaptureSpec/MaterializationSpec (its bindings are used).
  const list = isObject(value) && Array.isArray(value['bindings']) ? value['bindings'] : value;
  if (!Array.isArray(list)) throw new ConfigError(`the --bindings file ${file} must hold a list of bindings, {bindings: [...]}, or a Flow CaptureSpec/MaterializationSpec`);
  return list.map((b, i) => {
    if (!isObject(b)) throw new ConfigError(`--bindings ${file}: binding ${i} must be an object`);
    const check = (cond: boolean, what: string): void => {
      if (!cond) throw new ConfigError(`--bindings ${file}: ${bindingName(b, i)}: ${what}`);
    };
    if (isFlowBinding(b)) {
      // Flow's own form, as `flowctl` builds it: resourceConfig, collection (with projections), fieldSelection.
      const c = b['collection'] as JsonObject;
      check(typeof c['name'] === 'string' && c['name'] !== '', '"collection.name" must be the collection\'s name');
      check(Array.isArray(c['key']) && c['key'].length > 0 && c['key'].every((k) => typeof k === 'string' && k.startsWith('/')), '"collection.key" must be a non-empty list of JSON pointers like "/id"');
      check(c['projections'] === undefined || Array.isArray(c['projections']), '"collection.projections" must be a list of projections');
      check(b['fieldSelection'] === undefined || isObject(b['fieldSelection']), '"fieldSelection" must be an object {keys, values, document}');
      check(b['resourcePath'] === undefined || (Array.isArray(b['resourcePath']) && b['resourcePath'].every((x) => typeof x === 'string')), '"resourcePath" must be a list of strings');
      return { flow: b, resource: b['resourceConfig'] as JsonObject, collection: c['name'] as string };
    }
    check(b['collection'] === undefined || typeof b['collection'] === 'string', '"collection" must be a collection name; a collection spec object belongs in Flow\'s binding form, with "resourceConfig"');
    check(b['resource'] === undefined || isObject(b['resource']), '"resource" must be an object');
    check(b['key'] === undefined || (Array.isArray(b['key']) && b['key'].length > 0 && b['key'].every((k) => typeof k === 'string' && k.startsWith('/'))), '"key" must be a non-empty list of JSON pointers like "/id"');
    check(b['schema'] === undefined || isObject(b['schema']), '"schema" must be a JSON schema object');
    check(b['fields'] === undefined || isObject(b['fields']), '"fields" must be an object {keys, values, document}');
    return b as unknown as BindingDef;
  });
}

interface Fixture {
  /** Each document with its exact text (integers beyond ±2^53 kept) and its value. */
  transactions: { collection: string; doc: JsonObject; text: string; line: number }[][];
}

export function parseFixtureText(text: string, file: string): Fixture {
  const transactions: Fixture['transactions'] = [];
  let current: Fixture['transactions'][number] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = parseDocument(line);
    } catch (err) {
      throw new ConfigError(`--fixture ${file}:${i + 1}: not valid JSON (${(err as Error).message})`);
    }
    if (isObject(value) && value['commit'] === true) {
      transactions.push(current);
      current = [];
    } else if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && isObject(value[1])) {
      current.push({ collection: value[0], doc: value[1], text: stringifyDocument(value[1]), line: i + 1 });
    } else {
      throw new ConfigError(`--fixture ${file}:${i + 1}: expected ["<collection>", {document}] or {"commit": true}`);
    }
  });
  if (current.length > 0) transactions.push(current);
  return { transactions };
}

const fieldOf = (ptr: string): string => ptr.slice(1);
const ptrOf = (field: string): string => `/${field}`;

/** Inference for a location from a JSON schema (types, format, exists). */
function inferFromSchema(schema: JsonObject, ptr: string, isKey: boolean): Inference {
  let node: JsonValue | undefined = schema;
  let must = true;
  for (const token of ptr.slice(1).split('/')) {
    if (!isObject(node)) {
      node = undefined;
      break;
    }
    const required: JsonValue[] = Array.isArray(node['required']) ? node['required'] : [];
    if (!required.includes(token)) must = false;
    const props: JsonValue | undefined = node['properties'];
    node = isObject(props) ? props[token] : undefined;
  }
  const inference: Inference = { exists: must || isKey ? 'MUST' : 'MAY' };
  if (isObject(node)) {
    const t = node['type'];
    const types = (Array.isArray(t) ? t : typeof t === 'string' ? [t] : []).filter((x): x is string => typeof x === 'string');
    if (types.length > 0) inference.types = [...types].sort();
    if (typeof node['format'] === 'string') inference.string = { format: node['format'] };
  }
  return inference;
}

function typeOf(v: JsonValue | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Inference for a location from sample documents. */
function inferFromDocs(docs: JsonObject[], ptr: string, isKey: boolean): Inference {
  const types = new Set<string>();
  let always = docs.length > 0;
  for (const doc of docs) {
    const t = typeOf(resolvePointer(doc, ptr));
    if (t === undefined) always = false;
    else types.add(t);
  }
  if (types.has('integer') && types.has('number')) types.delete('integer');
  const out: Inference = { exists: always || isKey ? 'MUST' : 'MAY' };
  if (types.size > 0) out.types = [...types].sort();
  return out;
}

interface ResolvedBinding {
  def: BindingDef;
  collection: CollectionSpec;
  keyFields: string[];
  valueFields: string[];
  document: string | undefined;
}

function resolveBinding(def: BindingDef, index: number, task: string, docs: JsonObject[]): ResolvedBinding {
  if (def.flow !== undefined) {
    const collection = def.flow['collection'] as unknown as CollectionSpec;
    const selection = (def.flow['fieldSelection'] ?? {}) as { keys?: string[]; values?: string[]; document?: string };
    return {
      def,
      collection: { uuidPtr: '/_meta/uuid', ...collection },
      keyFields: selection.keys ?? (collection.key ?? []).map(fieldOf),
      valueFields: selection.values ?? [],
      document: selection.document === '' ? undefined : selection.document,
    };
  }
  const key = def.key ?? ['/id'];
  const keyFields = def.fields?.keys ?? key.map(fieldOf);
  const valueFields = def.fields?.values ?? [];
  const document = def.fields?.document === null ? undefined : (def.fields?.document ?? 'flow_document');
  const name = def.collection ?? def.source ?? `${task}/${index}`;
  const fields = new Set<string>([...keyFields, ...valueFields]);
  if (def.schema && isObject(def.schema['properties'])) for (const p of Object.keys(def.schema['properties'])) fields.add(p);
  const projections: Projection[] = [...fields].map((field) => {
    const ptr = ptrOf(field);
    const isKey = key.includes(ptr);
    const inference = def.schema ? inferFromSchema(def.schema, ptr, isKey) : inferFromDocs(docs, ptr, isKey);
    return { ptr, field, ...(isKey ? { isPrimaryKey: true } : {}), inference };
  });
  if (document !== undefined) projections.push({ field: document, inference: { types: ['object'], exists: 'MUST' } });
  projections.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  const writeSchema: JsonSchema = def.schema ?? { type: 'object', required: key.map(fieldOf) };
  return {
    def,
    collection: { name, key, writeSchema, uuidPtr: '/_meta/uuid', projections },
    keyFields,
    valueFields,
    document,
  };
}

function captureSpec(task: string, connectorType: string, config: JsonObject, bindings: ResolvedBinding[]): CaptureSpec {
  return {
    name: task,
    connectorType,
    config,
    bindings: bindings.map((b) => (b.def.flow !== undefined ? { ...b.def.flow, collection: b.collection } as unknown as NonNullable<CaptureSpec['bindings']>[number] : {
      resourceConfig: b.def.resource ?? {},
      ...(b.def.resourcePath ? { resourcePath: b.def.resourcePath } : {}),
      collection: b.collection,
      ...(b.def.backfill ? { backfill: b.def.backfill } : {}),
      ...(b.def.stateKey ? { stateKey: b.def.stateKey } : {}),
    })),
  };
}

function materializationSpec(task: string, connectorType: string, config: JsonObject, bindings: ResolvedBinding[]): MaterializationSpec {
  return {
    name: task,
    connectorType,
    config,
    bindings: bindings.map((b) => (b.def.flow !== undefined ? {
      resourcePath: [String(Object.values(b.def.resource ?? {}).find((v) => typeof v === 'string') ?? b.collection.name)],
      stateKey: b.collection.name,
      fieldSelection: { keys: b.keyFields, values: b.valueFields, ...(b.document ? { document: b.document } : {}) },
      ...b.def.flow,
      collection: b.collection,
    } as unknown as NonNullable<MaterializationSpec['bindings']>[number] : {
      resourceConfig: b.def.resource ?? {},
      resourcePath: b.def.resourcePath ?? [String(Object.values(b.def.resource ?? {}).find((v) => typeof v === 'string') ?? b.collection.name)],
      collection: b.collection,
      fieldSelection: { keys: b.keyFields, values: b.valueFields, ...(b.document ? { document: b.document } : {}) },
      ...(b.def.deltaUpdates ? { deltaUpdates: true } : {}),
      ...(b.def.backfill ? { backfill: b.def.backfill } : {}),
      stateKey: b.def.stateKey ?? b.collection.name,
    })),
  };
}

interface Options {
  rpc: Rpc;
  target: ConnectorTarget;
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
    rpc, target, protocol, connectorType, dryRun: values['dry-run'] === true, name: values.name ?? 'sluice/raw',
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

function forwardLog(io: Io): (log: ConnectorLog) => void {
  return (log) => io.err(JSON.stringify({ level: log.level, msg: log.msg, fields: log.fields }));
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
  const defs = await readBindings(o.bindings);
  const state = await readObject(o.state, '--state');
  const fixture = o.fixture ? parseFixtureText(await readFile(o.fixture, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new ConfigError(`cannot read the --fixture file ${o.fixture}: ${err.code ?? err.message}`);
  }), o.fixture) : undefined;
  const docs = fixture ? fixture.transactions.flat() : [];
  const bindings = defs.map((d, i) => resolveBinding(d, i, o.name, docs.filter((x) => x.collection === (d.collection ?? d.source)).map((x) => x.doc)));
  const base = {
    onLog: forwardLog(io),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.idleTimeoutMs !== undefined ? { idleTimeoutMs: o.idleTimeoutMs } : {}),
  };
  const print = (r: object): void => io.out(JSON.stringify(r));

  if (o.rpc === 'spec') {
    print(await unaryRpc(o.target, { spec: { connectorType: o.connectorType, config } } as CaptureRequest, { ...base, protocol: o.protocol ?? 'capture' }));
    return;
  }
  if (o.protocol === 'capture') {
    switch (o.rpc) {
      case 'discover':
        print(await unaryRpc(o.target, { discover: { connectorType: o.connectorType, config } }, { ...base, protocol: 'capture' }));
        return;
      case 'validate':
        print(await unaryRpc(o.target, {
          validate: { name: o.name, connectorType: o.connectorType, config, bindings: bindings.map((b) => ({ resourceConfig: b.def.resource ?? {}, collection: b.collection, ...(b.def.backfill ? { backfill: b.def.backfill } : {}) })) },
        }, { ...base, protocol: 'capture' }));
        return;
      case 'apply':
        print(await unaryRpc(o.target, { apply: { capture: captureSpec(o.name, o.connectorType, config, bindings), version: 'raw', ...(o.dryRun ? { dryRun: true } : {}) } }, { ...base, protocol: 'capture' }));
        return;
      case 'capture':
        await runCapture(o, io, captureSpec(o.name, o.connectorType, config, bindings), state, base);
        return;
      default:
        throw new UsageError(`${o.rpc} is not a capture rpc`);
    }
  }
  const spec = materializationSpec(o.name, o.connectorType, config, bindings);
  switch (o.rpc) {
    case 'validate':
      print(await unaryRpc(o.target, {
        validate: { name: o.name, connectorType: o.connectorType, config, bindings: bindings.map((b) => ({ resourceConfig: b.def.resource ?? {}, collection: b.collection, fieldConfig: {}, ...(b.def.backfill ? { backfill: b.def.backfill } : {}) })) },
      }, { ...base, protocol: 'materialize' }));
      return;
    case 'apply':
      print(await unaryRpc(o.target, { apply: { materialization: spec, version: 'raw', state, ...(o.dryRun ? { dryRun: true } : {}) } }, { ...base, protocol: 'materialize' }));
      return;
    case 'materialize':
      await runMaterialize(o, io, spec, bindings, state, fixture!, base);
      return;
    default:
      throw new UsageError(`${o.rpc} is not a materialize rpc`);
  }
}

/** The runtime's drivers over one connector process; close() fails if the connector writes after its last expected response. */
function driverSession<Req, Res>(proc: ConnectorProcess<'capture' | 'materialize'>): DriverSession<Req, Res> {
  const responses = proc.responses()[Symbol.asyncIterator]();
  return {
    send: (request) => proc.send(request as never),
    sendLine: (line) => proc.sendLine(line),
    async recv() {
      const r = await responses.next();
      return r.done ? undefined : (r.value as Res);
    },
    async close() {
      proc.endInput();
      const extra = await responses.next();
      if (!extra.done) throw new ProtocolError(`the connector wrote "${Object.keys(extra.value)[0]}" after the last acknowledged`);
    },
    kill: () => void proc.kill(),
    get awaiting() { return proc.awaiting; },
    set awaiting(what: string) { proc.awaiting = what; },
  };
}

async function runCapture(o: Options, io: Io, capture: CaptureSpec, state: JsonObject, base: object): Promise<void> {
  const proc = startConnector(o.target, { ...base, protocol: 'capture' });
  const onSignal = (): void => void proc.kill();
  process.once('SIGINT', onSignal);
  let documents = 0;
  let checkpoints = 0;
  let current: JsonValue = state;
  try {
    // stdin stays open until the connector exits, as the runtime does; EOF would mean "stop".
    proc.awaiting = '"opened"';
    await runCaptureDriver({
      name: o.name, spec: capture, version: 'raw', state, session: driverSession(proc),
      onResponse: (response) => {
        proc.awaiting = 'documents, a checkpoint or the end of the capture';
        io.out(lineTextOf(response));
      },
      onDocument: () => { documents++; },
      onCheckpoint: (_update, next) => {
        checkpoints++;
        current = next;
      },
    });
    io.err(JSON.stringify({ level: 'info', msg: 'sluice raw capture: the connector exited', fields: { documents, checkpoints, state: current } }));
  } finally {
    process.off('SIGINT', onSignal);
    proc.endInput();
    // The state of the last checkpoint, whether the connector ended well or not (what a resumed run opens with).
    if (o.stateOut !== undefined) await writeFile(o.stateOut, JSON.stringify(current, null, 2) + '\n');
  }
}

async function runMaterialize(
  o: Options, io: Io, spec: MaterializationSpec, bindings: ResolvedBinding[], state: JsonObject, fixture: Fixture, base: object,
): Promise<void> {
  const bySource = new Map<string, number[]>();
  bindings.forEach((b, i) => bySource.set(b.collection.name, [...(bySource.get(b.collection.name) ?? []), i]));
  if (bindings.length === 0) throw new ConfigError('materialize needs --bindings: which collections go to which resources');
  for (const txn of fixture.transactions) {
    for (const d of txn) {
      if (!bySource.has(d.collection)) {
        throw new ConfigError(`--fixture ${o.fixture}:${d.line}: collection ${JSON.stringify(d.collection)} is not the source of any binding (sources: ${[...bySource.keys()].join(', ')})`);
      }
    }
  }
  const proc = startConnector(o.target, { ...base, protocol: 'materialize' });
  let next = 0;
  let offset = 0;
  try {
    await runMaterializeDriver({
      name: o.name, spec, version: 'raw', session: driverSession(proc), state, checkpoint: {}, maxKeys: bindings.map(() => undefined),
      onResponse: (response) => io.out(lineTextOf(response)),
      nextTransaction: async () => {
        const txn = fixture.transactions[next++];
        if (txn === undefined) {
          proc.awaiting = '"acknowledged"';
          return undefined;
        }
        proc.awaiting = 'the transaction\'s responses';
        const docs: SourceDocument[] = [];
        for (const d of txn) {
          for (const binding of bySource.get(d.collection)!) docs.push({ binding, text: d.text });
          offset++;
        }
        return { docs, checkpoint: { sources: { [`fixture;${o.fixture}`]: { readThrough: String(offset) } } } };
      },
    });
  } catch (err) {
    proc.endInput();
    // If the connector failed, its exit error explains more than the protocol symptom.
    const status = await proc.kill(2000);
    if (status.code !== 0 && status.code !== null) await proc.wait();
    throw err;
  }
}
