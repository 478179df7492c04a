// Catalog loading at scale (issue 17.10: 10,000 collections in < 5 s): writes a flow.yaml with N collections
// (each its own inline schema, key and a projection; every tenth a logical partition), one capture and one
// SQLite materialization binding all of them, then times loadCatalog against two peers in the same run:
// the `yaml` library's parse of the file (the parser the loader used alone before) and JSON.parse of the
// same catalog as JSON (the floor: reading the values, nothing else).
//   npx node bench/catalog.ts [--collections 10000]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { loadCatalog } from '../plane/src/catalog/load.ts';

const { values } = parseArgs({ options: { collections: { type: 'string' }, 'load-only': { type: 'boolean' } } });
const N = Number(values.collections ?? 10_000);

function catalogText(n: number): string {
  const lines: string[] = ['collections:'];
  for (let i = 0; i < n; i++) {
    lines.push(
      `  acme/c${i}:`,
      '    schema:',
      '      type: object',
      '      properties:',
      '        id: {type: integer}',
      '        region: {type: string}',
      `        name${i}: {type: string}`,
      '        amount: {type: number, reduce: {strategy: lastWriteWins}}',
      '        tags: {type: array, items: {type: string}}',
      '        address: {type: object, properties: {city: {type: string}, zip: {type: string}}}',
      '      required: [id, region]',
      '      reduce: {strategy: merge}',
      '    key: [/id]',
      '    projections:',
      i % 10 === 0 ? '      region: {location: /region, partition: true}' : '      city: /address/city',
    );
  }
  lines.push('captures:', '  acme/capture:', '    endpoint: {connector: {image: ghcr.io/estuary/source-http-file:dev, config: {url: "http://127.0.0.1/x.csv"}}}', '    bindings:');
  for (let i = 0; i < n; i++) lines.push(`      - {resource: {stream: s${i}}, target: acme/c${i}}`);
  lines.push('materializations:', '  acme/db:', '    endpoint: {sqlite: {path: db.sqlite}}', '    bindings:');
  for (let i = 0; i < n; i++) lines.push(`      - {source: acme/c${i}, resource: {table: t${i}}}`);
  return lines.join('\n') + '\n';
}

const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-catalog-'));
try {
  const file = join(dir, 'flow.yaml');
  const text = catalogText(N);
  writeFileSync(file, text);
  if (values['load-only']) {
    // For profiling: loadCatalog alone (`node --cpu-prof bench/catalog.ts --load-only`).
    const c = process.cpuUsage();
    await loadCatalog(file);
    const u = process.cpuUsage(c);
    console.log(`loadCatalog of ${N} collections: CPU ${((u.user + u.system) / 1e6).toFixed(2)} s, RSS ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
    process.exit(0);
  }
  const cpu = (since: NodeJS.CpuUsage) => { const u = process.cpuUsage(since); return (u.user + u.system) / 1e6; };
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  parseDocument(text).toJS();
  const parseMs = performance.now() - t0;
  const parseCpu = cpu(c0);
  const json = JSON.stringify(parseDocument(text).toJS());
  const tj = performance.now();
  const cj = process.cpuUsage();
  JSON.parse(json);
  const jsonMs = performance.now() - tj;
  const jsonCpu = cpu(cj);
  const rss0 = process.memoryUsage().rss;
  const t1 = performance.now();
  const c1 = process.cpuUsage();
  const catalog = await loadCatalog(file);
  const loadMs = performance.now() - t1;
  const loadCpu = cpu(c1);
  const rss1 = process.memoryUsage().rss;
  if (catalog.collections.size !== N) throw new Error(`loaded ${catalog.collections.size} collections, expected ${N}`);
  console.log(`catalog: ${N} collections + a capture and a materialization of ${N} bindings each (${(text.length / 1e6).toFixed(1)} MB of YAML)`);
  console.log(`  loadCatalog: ${(loadMs / 1000).toFixed(2)} s (CPU ${loadCpu.toFixed(2)} s), RSS ${(rss0 / 1e6).toFixed(0)} → ${(rss1 / 1e6).toFixed(0)} MB`);
  console.log(`  peer: the yaml library's parse alone: ${(parseMs / 1000).toFixed(2)} s (CPU ${parseCpu.toFixed(2)} s); loadCatalog / it = ${(loadMs / parseMs).toFixed(2)}× (CPU ${(loadCpu / parseCpu).toFixed(2)}×)`);
  console.log(`  floor: JSON.parse of the same catalog: ${(jsonMs / 1000).toFixed(2)} s (CPU ${jsonCpu.toFixed(2)} s); loadCatalog / it = ${(loadMs / jsonMs).toFixed(1)}×`);
  console.log(`  load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
