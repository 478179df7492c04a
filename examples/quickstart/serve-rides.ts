// Serves the quickstart's rides file on http://127.0.0.1:8090/rides.csv.gz (or --port N) until Ctrl-C, so
// examples/quickstart/flow.yaml can be run by hand with `sluice serve` — the pieces `sluice start` runs for you.
// Usage (in the repository): npx node examples/quickstart/serve-rides.ts [--port 8090] [--rows 50000]
import { parseArgs } from 'node:util';
import { DEFAULT_ROWS, ridesCsvGz, serveFile } from '@sluice/plane/quickstart';

const { values } = parseArgs({ options: { port: { type: 'string', default: '8090' }, rows: { type: 'string', default: String(DEFAULT_ROWS) } } });
const file = await serveFile({
  body: ridesCsvGz(Number(values.rows)), path: '/rides.csv.gz', contentType: 'application/gzip',
  lastModified: new Date(Date.UTC(2024, 4, 31, 23, 59, 59)), port: Number(values.port),
});
process.stdout.write(`serving ${values.rows} rides at ${file.url} (Ctrl-C to stop)\n`);
const stop = () => { void file.close().then(() => process.exit(0)); };
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
