// The quickstart's parts, exported for examples/quickstart and tests: the deterministic rides CSV, the
// one-file loopback server with Last-Modified/ETag/ranges, and the catalog template `sluice start` fills in.
import { fileURLToPath } from 'node:url';

export { DEFAULT_ROWS, HEADER, ridesCsv, ridesCsvGz } from './rides.ts';
export { serveFile, type ServedFile } from './file-server.ts';

/** The catalog template: `${QUICKSTART_URL}` and `${QUICKSTART_DB}` are filled in by `sluice start`. */
export const QUICKSTART_TEMPLATE = fileURLToPath(new URL('./flow.yaml', import.meta.url));
