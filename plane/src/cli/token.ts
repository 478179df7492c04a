// `sluice token create`: makes a refresh token for the control-plane API and prints how to use it.
// Usage: sluice token create [--data-dir DIR] [--prefix P]... [--multi-use] [--valid-for 90d] [--subject S] [--detail TEXT]
import { parseArgs } from 'node:util';
import { parseInterval } from '../catalog/load.ts';
import { createControlPlane } from '../control/index.ts';

export const description = 'create a refresh token for the control-plane API (token create)';

export const TOKEN_USAGE = `usage: sluice token create [--data-dir DIR] [--prefix PREFIX]... [--multi-use] [--valid-for 90d] [--subject NAME] [--detail TEXT]

Creates a refresh token for the control-plane API of \`sluice serve\` (same --data-dir).
  --prefix     catalog name prefix the token may read (repeatable; default: everything)
  --multi-use  keep the secret on exchange (for Prometheus scrapers); default: single-use, rotating
  --valid-for  how long the refresh token stays valid since its last use (default 90d; units s, m, h, d)
`;

export async function runTokenCommand(argv: string[], io: { out: (s: string) => void; err: (s: string) => void } = {
  out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s),
}): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'create') {
    io.err(sub === undefined || sub === '--help' || sub === '-h' ? TOKEN_USAGE : `sluice token: unknown subcommand "${sub}"\n${TOKEN_USAGE}`);
    return sub === '--help' || sub === '-h' ? 0 : 2;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        'data-dir': { type: 'string' }, prefix: { type: 'string', multiple: true }, 'multi-use': { type: 'boolean' },
        'valid-for': { type: 'string' }, subject: { type: 'string' }, detail: { type: 'string' }, port: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`sluice token create: ${(err as Error).message}\n${TOKEN_USAGE}`);
    return 2;
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
