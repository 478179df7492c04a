// AWS IAM authentication: an RDS IAM auth token (a SigV4-presigned `rds-db:connect` URL, valid 15 minutes) for
// the database user, signed with credentials for `aws_role_arn`. The control plane may inject temporary STS
// credentials into the config (aws_access_key_id / aws_secret_access_key / aws_session_token); they are used as
// they are. Otherwise the role is assumed here through STS with the ambient AWS credentials.
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { Signer } from '@aws-sdk/rds-signer';
import { ConfigError } from '@sluice/runtime';
import type { AwsIamCredentials, AzureIamCredentials } from './config.ts';

export interface AwsCredentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string; expiration?: Date }

/** Assumes a role; injectable so tests need no network. */
export type AssumeRole = (roleArn: string, region: string) => Promise<AwsCredentials>;

export const stsAssumeRole: AssumeRole = async (roleArn, region) => {
  const sts = new STSClient({ region });
  try {
    const out = await sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'sluice-materialize-sqlserver', DurationSeconds: 3600 }));
    const c = out.Credentials;
    if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined) throw new Error('STS returned no credentials');
    const creds: AwsCredentials = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey };
    if (c.SessionToken !== undefined) creds.sessionToken = c.SessionToken;
    if (c.Expiration !== undefined) creds.expiration = c.Expiration;
    return creds;
  } catch (err) {
    throw new ConfigError(`could not assume AWS role '${roleArn}' in ${region}: ${(err as Error).message} — check the role's trust policy and the ambient AWS credentials`, { cause: err });
  } finally {
    sts.destroy();
  }
};

/** The credentials to sign with: injected STS credentials when present, else a freshly assumed role. */
export async function iamCredentials(cfg: AwsIamCredentials, assumeRole: AssumeRole = stsAssumeRole): Promise<AwsCredentials> {
  if (cfg.aws_access_key_id !== undefined && cfg.aws_secret_access_key !== undefined) {
    const c: AwsCredentials = { accessKeyId: cfg.aws_access_key_id, secretAccessKey: cfg.aws_secret_access_key };
    if (cfg.aws_session_token !== undefined) c.sessionToken = cfg.aws_session_token;
    return c;
  }
  return assumeRole(cfg.aws_role_arn, cfg.aws_region);
}

/** An RDS IAM auth token for `user` at the database's real host:port (not the tunnel's local end). */
export async function rdsAuthToken(opts: { host: string; port: number; user: string; region: string; credentials: AwsCredentials }): Promise<string> {
  const signer = new Signer({ hostname: opts.host, port: opts.port, username: opts.user, region: opts.region, credentials: opts.credentials });
  return signer.getAuthToken();
}

/** The Azure AD access token Flow's runtime injected for AzureIAM (upstream connects with it as it is). */
export function azureAccessToken(cfg: AzureIamCredentials): string {
  const token = cfg.azure_access_token;
  if (token === undefined || token === '') {
    throw new ConfigError(`credentials: AzureIAM needs an access token for application ${cfg.azure_client_id} (tenant ${cfg.azure_tenant_id}); `
      + 'Flow\'s runtime injects it as credentials.azure_access_token. Outside Flow, set credentials.azure_access_token to a token for the scope '
      + 'https://database.windows.net/.default (e.g. az account get-access-token --resource https://database.windows.net/), or use UserPassword');
  }
  return token;
}

/** Tokens live 15 minutes; a connection made with one stays valid, so refresh well before expiry for new ones. */
export class TokenSource {
  private token: string | undefined;
  private madeAt = 0;
  private readonly make: () => Promise<string>;
  private readonly now: () => number;
  constructor(make: () => Promise<string>, now: () => number = Date.now) {
    this.make = make;
    this.now = now;
  }
  async get(): Promise<string> {
    if (this.token === undefined || this.now() - this.madeAt > 10 * 60_000) {
      this.token = await this.make();
      this.madeAt = this.now();
    }
    return this.token;
  }
}
