// `sluice token create`: makes a refresh token for the control-plane API and prints how to use it.
// Usage: sluice token create [--data-dir DIR] [--prefix P]... [--multi-use] [--valid-for 90d] [--subject S] [--detail TEXT]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseInterval } from '../catalog/load.ts';
import { CONTROL_DB, createControlPlane } from '../control/index.ts';

export const description = 'create a refresh token for the control-plane API (token create)';

export const TOKEN_USAGE = `usage: sluice token create [--data-dir DIR] [--prefix PREFIX]... [--multi-use] [--valid-for 90d] [--subject NAME] [--detail TEXT] [--port 8675] [--init]

Creates a refresh token for the control-plane API of \`sluice serve\` / \`sluice start\` (same --data-dir).
  --data-dir DIR   the plane's data dir (default $SLUICE_DATA_DIR, else ./data); it must hold the plane's state
  --prefix P       catalog name prefix the token may read (repeatable; default: everything)
  --multi-use      keep the secret on exchange (for Prometheus scrapers); default: single-use, rotating
  --valid-for D    how long the refresh token stays valid since its last use (default 90d; units s, m, h, d)
  --subject NAME   the access tokens' \`sub\` claim (default: the refresh token's id)
  --detail TEXT    a note stored with the token
  --port N         the API port shown in the printed curl command (default 8675)
  --init           create the plane's state in a dir that has none yet (before its first \`serve\`)
  -h, --help       this help
`;

export async function runTokenCommand(argv: string[], io: { out: (s: string) => void; err: (s: string) => void } = {
  out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s),
}): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'create') {
    if (sub === '--help' || sub === '-h') {
      io.out(TOKEN_USAGE);
      return 0;
    }
    io.err(sub === undefined ? TOKEN_USAGE : `sluice token: unknown subcommand "${sub}"\n${TOKEN_USAGE}`);
    return 2;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        'data-dir': { type: 'string' }, prefix: { type: 'string', multiple: true }, 'multi-use': { type: 'boolean' },
        'valid-for': { type: 'string' }, subject: { type: 'string' }, detail: { type: 'string' }, port: { type: 'string' },
        init: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`sluice token create: ${(err as Error).message}\n${TOKEN_USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(TOKEN_USAGE);
    return 0;
  }
  let validForSeconds: number | undefined;
  if (values['valid-for'] !== undefined) {
    const v = values['valid-for'];
    const m = /^([0-9]+)d$/.exec(v);
    validForSeconds = m ? Number(m[1]) * 86400 : /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/.test(v) ? parseInterval(v) : NaN;
    if (!(validForSeconds > 0)) {
      io.err(`sluice token create: --valid-for ${JSON.stringify(v)} is not a duration; write e.g. 12h, 30d\n`);
      return 2;
    }
  }
  const dataDir = values['data-dir'] ?? process.env.SLUICE_DATA_DIR ?? './data';
  // A mistyped --data-dir would otherwise get a fresh control store nobody serves, and a token no API accepts.
  if (!existsSync(join(dataDir, CONTROL_DB)) && values.init !== true) {
    io.err(`sluice token create: ${dataDir} holds no plane state (no ${CONTROL_DB}): pass the --data-dir your plane runs with ` +
      `(serve prints it as "data:"; the default is ./data), or --init to create the state there\n`);
    return 1;
  }
  const cp = createControlPlane({ dataDir });
  try {
    const opts: Parameters<typeof cp.tokens.create>[0] = { multiUse: values['multi-use'] === true };
    if (values.prefix) opts.prefixes = values.prefix;
    if (validForSeconds !== undefined) opts.validForSeconds = validForSeconds;
    if (values.subject !== undefined) opts.subject = values.subject;
    if (values.detail !== undefined) opts.detail = values.detail;
    const t = await cp.tokens.create(opts);
    const base = `http://localhost:${values.port ?? '8675'}`;
    io.out(`refresh token created in ${dataDir}
  id:     ${t.id}
  secret: ${t.secret}
  token:  ${t.token}
The secret is shown once; only its hash is stored.${opts.multiUse ? '' : ' It is single-use: each exchange returns a new secret.'}

Get an access token (valid 1 hour):
  curl -s -X POST ${base}/api/v1/auth/token -H 'Content-Type: application/json' \\
    -d '{"grant_type":"refresh_token","refresh_token_id":"${t.id}","secret":"${t.secret}"}'
`);
    return 0;
  } finally {
    cp.close();
  }
}
