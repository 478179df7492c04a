// Benchmark: the plane's materialization thread per journal document, without the connector or the journals —
// the runtime's materialize driver (pack, combine, load/store lines) over journal chunks of rides documents
// (bench/rides.ts's columns, as source-http-file writes them, with `_meta`), answered by a connector in this
// process that reads nothing but the protocol's own requests. The peers, in the same run on the same bytes: the
// driver given the documents as text (its parse path: parseDocument, then packing from the value — what every
// document took before it packed from bytes, issue 16), and JSON.parse of every line alone.
//   npx node bench/materialize-driver.ts [--docs N] [--rounds R]
// Prints CPU per document for a delta-updates and a standard binding, and the ratios to the peers; and the same with
// keys and values sent as JSON (jsonKeys: what the plane sends its built-in connectors) against the packed form.
import { runMaterializeDriver, type DriverSession } from '@sluice/runtime/host';
import type { MaterializationSpec, MaterializeRequest, MaterializeResponse } from '@sluice/runtime';
import { RIDES_COLUMNS } from './rides.ts';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const DOCS = Number(arg('--docs') ?? process.env['BENCH_DOCS'] ?? 500_000);
const ROUNDS = Number(arg('--rounds') ?? 3);
const TXN = 20_000;
const CITIES = ['Lisbon', 'Osaka', 'São Paulo', 'Zürich', 'New York, NY', 'Nairobi', 'Reykjavík', 'Chennai'];

/** Journal chunks of TXN documents each: the rides rows as JSON lines, `_meta` last with a v1 UUID. */
function chunks(): Buffer[] {
  const out: Buffer[] = [];
  for (let from = 0; from < DOCS; from += TXN) {
    const lines: string[] = [];
    for (let i = from; i < Math.min(DOCS, from + TXN); i++) {
      const h = ((i * 2654435761) >>> 0).toString(16).padStart(8, '0');
      const start = 1_700_000_000_000 + i * 37_000;
      const row: Record<string, unknown> = {
        ride_id: `${h}-${i}`, vehicle_id: `${h}-4a1f-9c2e-${String(i).padStart(12, '0')}`, rider_email: `rider${i % 99991}@example.com`,
        city: CITIES[i % CITIES.length], started_at: new Date(start).toISOString().slice(0, 19) + 'Z', ended_at: new Date(start + 900_000).toISOString().slice(0, 19) + 'Z',
        distance_km: String((i % 997) / 10), fare: String((i % 5000) / 100), tip: String(i % 7), member: i % 3 === 0 ? 'true' : 'false',
        device: i % 2 ? 'android-14.2' : 'ios-17.5.1', note: i % 11 === 0 ? 'late, but "fine"' : 'ok',
        // One commit's documents: one millisecond, consecutive clocks.
        _meta: { file: 'rides.csv.gz', offset: i, uuid: `${(0x83e99d60 + i).toString(16).padStart(8, '0')}-e935-11f1-8000-c9e947e380c5` },
      };
      lines.push(JSON.stringify(row));
    }
    out.push(Buffer.from(`${lines.join('\n')}\n`));
  }
  return out;
}

function spec(delta: boolean): MaterializationSpec {
  const projections = [...RIDES_COLUMNS.map((c) => ({ field: c, ptr: `/${c}` })),
    { field: 'flow_published_at', ptr: '/_meta/uuid', inference: { string: { format: 'date-time' } } }, { field: 'flow_document', ptr: '' }];
  return {
    name: 'bench/to-x', connectorType: 'LOCAL', config: {},
    bindings: [{
      resourceConfig: { table: 'rides' }, resourcePath: ['rides'], journalReadSuffix: 'materialize/bench/to-x/rides',
      collection: { name: 'bench/rides', key: ['/ride_id'], projections },
      fieldSelection: { keys: ['ride_id'], values: [...RIDES_COLUMNS.filter((c) => c !== 'ride_id'), 'flow_published_at'], document: 'flow_document' },
      ...(delta ? { deltaUpdates: true } : {}),
    }],
  } as unknown as MaterializationSpec;
}

/** A connector that answers each request at once; store and load lines are counted, not parsed. */
function connector(): { session: DriverSession<MaterializeRequest, MaterializeResponse>; bytes: () => number } {
  const queue: MaterializeResponse[] = [];
  let wake: (() => void) | undefined;
  let bytes = 0;
  const answer = (variant: string) => {
    const r = ({ open: { opened: {} }, acknowledge: { acknowledged: {} }, flush: { flushed: {} }, startCommit: { startedCommit: {} } } as Record<string, unknown>)[variant];
    if (r === undefined) return;
    queue.push(r as MaterializeResponse);
    wake?.();
  };
  const session: DriverSession<MaterializeRequest, MaterializeResponse> = {
    send: async (r) => answer(Object.keys(r)[0]!),
    sendLine: async (line) => { bytes += line.length; },
    sendLines: async (b, written) => {
      bytes += b.length;
      written(null);
    },
    recv: async () => {
      while (queue.length === 0) await new Promise<void>((resolve) => { wake = resolve; });
      return queue.shift();
    },
    close: async () => undefined,
    kill: () => undefined,
  };
  return { session, bytes: () => bytes };
}

async function driver(data: Buffer[], delta: boolean, asText = false, jsonKeys = false): Promise<number> {
  const { session } = connector();
  let next = 0;
  // The parse path's input: each line as a string (decoded before the clock starts).
  const texts = asText ? data.map((d) => d.toString('utf8').split('\n').slice(0, -1)) : [];
  const c0 = process.cpuUsage();
  await runMaterializeDriver({
    name: 'bench/to-x', spec: spec(delta), version: 'bench', session, state: {}, checkpoint: {}, maxKeys: [undefined], jsonKeys,
    nextTransaction: async () => {
      const d = data[next++];
      if (d === undefined) return undefined;
      const checkpoint = { sources: { j: { readThrough: String(next) } } };
      if (asText) return { docs: texts[next - 1]!.map((text) => ({ binding: 0, text })), checkpoint };
      return { chunks: [{ binding: 0, data: d }], checkpoint };
    },
  });
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

function parseAlone(data: Buffer[]): number {
  const c0 = process.cpuUsage();
  let n = 0;
  for (const d of data) {
    let i = 0;
    while (i < d.length) {
      const nl = d.indexOf(10, i);
      if (JSON.parse(d.toString('utf8', i, nl)) !== null) n++;
      i = nl + 1;
    }
  }
  const c = process.cpuUsage(c0);
  if (n !== DOCS) throw new Error(`parsed ${n} of ${DOCS} documents`);
  return (c.user + c.system) / 1000;
}

const data = chunks();
console.log(`materialize driver: ${DOCS.toLocaleString('en-US')} rides documents (${(data.reduce((a, d) => a + d.length, 0) / 1e6).toFixed(0)} MB), ${ROUNDS} round(s), best CPU of each`);
const best = { delta: Infinity, standard: Infinity, parse: Infinity, parsePath: Infinity, deltaJson: Infinity, standardJson: Infinity };
for (let r = 0; r < ROUNDS; r++) {
  best.parse = Math.min(best.parse, parseAlone(data));
  best.parsePath = Math.min(best.parsePath, await driver(data, true, true));
  best.delta = Math.min(best.delta, await driver(data, true));
  best.deltaJson = Math.min(best.deltaJson, await driver(data, true, false, true));
  best.standard = Math.min(best.standard, await driver(data, false));
  best.standardJson = Math.min(best.standardJson, await driver(data, false, false, true));
}
const us = (ms: number) => `${((ms * 1000) / DOCS).toFixed(2)} µs/doc`;
console.log(`  peer: JSON.parse of each line alone           ${best.parse.toFixed(0)} ms  ${us(best.parse)}`);
console.log(`  peer: driver, delta binding, documents parsed  ${best.parsePath.toFixed(0)} ms  ${us(best.parsePath)}`);
for (const k of ['delta', 'standard'] as const) {
  console.log(`  driver, ${k.padEnd(8)} binding, from bytes       ${best[k].toFixed(0)} ms  ${us(best[k])}  ${(best.parsePath / best[k]).toFixed(2)}× faster than the parse path, ${(best[k] / best.parse).toFixed(2)}× JSON.parse alone`);
}
for (const k of ['delta', 'standard'] as const) {
  const j = best[`${k}Json`];
  console.log(`  driver, ${k.padEnd(8)} binding, keys and values as JSON (jsonKeys) ${j.toFixed(0)} ms  ${us(j)}  ${(best[k] / j).toFixed(2)}× the packed form's speed`);
}
