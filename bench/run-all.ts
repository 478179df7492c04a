// `npm run bench`: every benchmark, one after another (they measure time, so never in parallel), each in its
// own process on this Node. Each prints its figures and its ratio against a peer measured in the same run; a
// missing peer program is reported by the bench and that comparison skipped. Extra arguments name the benches
// to run (e.g. `npm run bench -- protocol ingest`); BENCH_QUICK=1 passes each its small-size option.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BENCHES: { name: string; quick: string[] }[] = [
  { name: 'protocol', quick: ['--docs', '100000', '--rounds', '1'] },
  { name: 'catalog', quick: ['--collections', '500'] },
  { name: 'ingest', quick: ['--requests', '100'] },
  { name: 'http-file', quick: ['--rows', '20000'] },
  { name: 'materialize-driver', quick: ['--docs', '50000', '--rounds', '1'] },
  { name: 'materialize-sqlite', quick: [] },
  { name: 'materialize-sqlserver', quick: ['5000'] },
  { name: 'startup', quick: ['--runs', '1'] },
];
const QUICK_ENV: Record<string, string> = { BENCH_DOCS: '20000' };

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !BENCHES.some((b) => b.name === w));
if (unknown.length > 0) {
  console.error(`bench: unknown benchmark ${unknown.join(', ')}; the benchmarks are ${BENCHES.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
const quick = process.env.BENCH_QUICK === '1';
const failed: string[] = [];
for (const b of BENCHES.filter((x) => wanted.length === 0 || wanted.includes(x.name))) {
  console.log(`\n=== bench/${b.name}.ts${quick ? ' (quick)' : ''} ===`);
  const file = fileURLToPath(new URL(`./${b.name}.ts`, import.meta.url));
  const r = spawnSync(process.execPath, [file, ...(quick ? b.quick : [])], { stdio: 'inherit', env: { ...process.env, ...(quick ? QUICK_ENV : {}) } });
  if (r.status !== 0) failed.push(`${b.name} (exit ${r.status ?? r.signal})`);
}
if (failed.length > 0) {
  console.error(`\nbench: failed: ${failed.join(', ')}`);
  process.exit(1);
}
