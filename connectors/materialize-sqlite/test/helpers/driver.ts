// A stand-in for the Flow runtime: spawns the real connector bin and speaks the materialize protocol to it
// (keyPacked/valuesPacked FoundationDB tuples, exists/delete flags, runtime checkpoints), keeping its own
// model of the expected reduction.
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { packTupleBase64 } from '@sluice/runtime';
import type { JsonObject, JsonValue, MaterializationSpec, TupleValue } from '@sluice/runtime';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'materialize-sqlite.js');

export class ConnectorProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly #lines: AsyncIterator<string>;
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [BIN], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (d: string) => { this.stderr += d; });
    this.child.stdin.on('error', () => undefined);
    this.#lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  send(msg: JsonObject): void {
    this.child.stdin.write(`${JSON.stringify(msg)}\n`);
  }

  /** The next response line; throws if the process ended first. */
  async read(): Promise<JsonObject> {
    return JSON.parse(await this.readText()) as JsonObject;
  }

  /** The next response line as its text (JSON.parse would round integers beyond 2^53). */
  async readText(): Promise<string> {
    const r = await this.#lines.next();
    if (r.done === true) {
      const code = await this.exited;
      throw new Error(`connector exited (${code}) before responding; stderr:\n${this.stderr}`);
    }
    return r.value;
  }

  async expect(variant: string): Promise<JsonObject> {
    const msg = await this.read();
    if (!(variant in msg)) throw new Error(`expected ${variant}, got ${JSON.stringify(msg).slice(0, 300)}; stderr:\n${this.stderr}`);
    return msg[variant] as JsonObject;
  }

  /** startCommit → startedCommit, then acknowledge → acknowledged: one transaction's end, as the runtime drives it. */
  async commitAndAcknowledge(runtimeCheckpoint: JsonObject): Promise<void> {
    this.send({ startCommit: { runtimeCheckpoint } });
    await this.expect('startedCommit');
    this.send({ acknowledge: {} });
    await this.expect('acknowledged');
  }

  /** Close stdin and wait for exit. */
  async end(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }

  kill(): Promise<number | null> {
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** The last stderr line's message (what the user sees). */
  lastError(): string {
    const lines = this.stderr.trim().split('\n');
    const last = lines[lines.length - 1] ?? '';
    try { return String((JSON.parse(last) as { msg?: string }).msg ?? last); } catch { return last; }
  }
}

/** One unary RPC: send one request, read one response, wait for exit 0. */
export async function unary(request: JsonObject): Promise<JsonObject> {
  const p = new ConnectorProcess();
  p.send(request);
  p.child.stdin.end();
  const line = await p.read().catch((err: unknown) => ({ error: String(err) }) as JsonObject);
  const code = await p.exited;
  if (code !== 0) throw new Error(`connector exited ${code}: ${p.lastError()}\n${p.stderr}`);
  return line;
}

/** A document for a binding; `_meta.op === 'd'` marks a deletion. */
export interface FixtureDoc { binding: number; doc: JsonObject }

export interface BindingModel {
  /** Key pointers → field values extraction, in fieldSelection order. */
  keys: ((doc: JsonObject) => TupleValue)[];
  values: ((doc: JsonObject) => TupleValue)[];
  delta: boolean;
  /** Whether the document field is selected (sent as `doc`). */
  document: boolean;
}

const enc = new TextEncoder();
/** Pack a JSON field value as Flow does: objects/arrays as bytes of their JSON text. */
export function tupleOf(v: JsonValue | undefined): TupleValue {
  if (v === undefined) return null;
  if (v !== null && typeof v === 'object') return enc.encode(JSON.stringify(v));
  return v;
}

export function field(ptr: string): (doc: JsonObject) => TupleValue {
  const parts = ptr.split('/').slice(1);
  return (doc) => {
    let v: JsonValue | undefined = doc;
    for (const p of parts) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? v[p] : undefined;
    return tupleOf(v);
  };
}

export interface Txn { docs: FixtureDoc[] }

export function checkpointOf(n: number): JsonObject {
  return { sources: { 'acmeCo/source/pivot=00;materialize/acmeCo/mat/t': { readThrough: String(n) } } };
}

export function readThroughOf(cp: JsonValue | undefined): number {
  const src = ((cp as JsonObject | undefined)?.sources ?? {}) as JsonObject;
  const s = Object.values(src)[0] as JsonObject | undefined;
  return s === undefined ? 0 : Number(s.readThrough);
}

/**
 * Drives transactions through one connector process. `reduce(prev, doc)` combines a loaded (or earlier
 * in-transaction) document with the next one — the runtime's reduction. `onStep` is called before every
 * message the runtime sends; returning true kills the process there (crash tests).
 */
export class Runtime {
  readonly models: BindingModel[];
  readonly reduce: (binding: number, prev: JsonObject | undefined, next: JsonObject) => JsonObject;
  /** Keys the runtime knows it stored (for `exists` without a load: delta never loads). */
  constructor(models: BindingModel[], reduce: (binding: number, prev: JsonObject | undefined, next: JsonObject) => JsonObject) {
    this.models = models;
    this.reduce = reduce;
  }

  async open(p: ConnectorProcess, spec: MaterializationSpec): Promise<JsonObject> {
    p.send({ open: { materialization: spec as unknown as JsonObject, version: 'v1', range: { keyEnd: 4294967295, rClockEnd: 4294967295 }, state: {} } });
    return p.expect('opened');
  }

  /**
   * Run one transaction; returns normally when `startedCommit` was received.
   * `step` is called with a label before each write; if it returns true the process is killed and
   * 'killed' is returned.
   */
  async txn(p: ConnectorProcess, txn: Txn, checkpoint: JsonObject, step: (label: string) => boolean = () => false): Promise<'committed' | 'killed'> {
    const kill = async (label: string) => { if (step(label)) { await p.kill(); return true; } return false; };
    if (await kill('acknowledge')) return 'killed';
    p.send({ acknowledge: {} });
    await p.expect('acknowledged');
    // Reduce the transaction's documents per binding and key (last position wins the order).
    const groups = new Map<string, { binding: number; key: TupleValue[]; docs: JsonObject[] }>();
    for (const d of txn.docs) {
      const m = this.models[d.binding]!;
      const key = m.keys.map((f) => f(d.doc));
      const id = m.delta ? `${d.binding}:${groups.size}` : `${d.binding}:${packTupleBase64(key)}`;
      let g = groups.get(id);
      if (g === undefined) groups.set(id, (g = { binding: d.binding, key, docs: [] }));
      g.docs.push(d.doc);
    }
    for (const g of groups.values()) {
      if (this.models[g.binding]!.delta) continue;
      if (await kill('load')) return 'killed';
      p.send({ load: { ...(g.binding === 0 ? {} : { binding: g.binding }), keyPacked: packTupleBase64(g.key) } });
    }
    if (await kill('flush')) return 'killed';
    p.send({ flush: {} });
    const loaded = new Map<string, JsonObject>();
    while (true) {
      const msg = await p.read();
      if ('flushed' in msg) break;
      const l = msg.loaded as { binding?: number; doc: JsonObject } | undefined;
      if (l === undefined) throw new Error(`expected loaded or flushed, got ${JSON.stringify(msg)}`);
      const b = l.binding ?? 0;
      const key = this.models[b]!.keys.map((f) => f(l.doc));
      loaded.set(`${b}:${packTupleBase64(key)}`, l.doc);
    }
    for (const [id, g] of groups) {
      const m = this.models[g.binding]!;
      const prev = m.delta ? undefined : loaded.get(id);
      let doc: JsonObject | undefined = prev;
      for (const d of g.docs) doc = this.reduce(g.binding, doc, d);
      const del = (doc!._meta as JsonObject | undefined)?.op === 'd';
      if (await kill('store')) return 'killed';
      const store: JsonObject = {
        keyPacked: packTupleBase64(g.key),
        valuesPacked: packTupleBase64(m.values.map((f) => f(doc!))),
      };
      if (g.binding !== 0) store.binding = g.binding;
      if (m.document) store.doc = doc!;
      if (prev !== undefined) store.exists = true;
      if (del) store.delete = true;
      p.send({ store });
    }
    if (await kill('startCommit')) return 'killed';
    p.send({ startCommit: { runtimeCheckpoint: checkpoint } });
    if (await kill('awaitStartedCommit')) return 'killed';
    await p.expect('startedCommit');
    return 'committed';
  }
}
