// Endpoint and resource configuration: the JSON Schemas the connector declares in `spec` (the SPEC's "SQL-database
// materialization connector configuration" plus every field upstream's materialize-sqlserver accepts), and the
// types derived from them (FromSchema: no interface restates a schema). The runtime validates every request's config
// against these schemas (defaults, unknown keys refused, CONFIG_KEYS_BEYOND_SCHEMA and the resource's `_meta`
// tolerated) before the connector sees it; `resolveEndpointConfig` / `resolveResourceConfig` add the checks a schema
// cannot express. `parseEndpointConfig` / `parseResourceConfig` do both, for a config that did not come through a
// request (tests, tools).
import { ConfigError, ConfigValidator } from '@sluice/runtime';
import type { FromSchema, JsonObject, JsonValue } from '@sluice/runtime';

export const DOCUMENTATION_URL = 'https://go.estuary.dev/materialize-sqlserver';

/** The SPEC: "if only the host is given, the port defaults to 3306". SQL Server itself usually listens on 1433. */
export const SPEC_DEFAULT_PORT = 3306;
export const SQLSERVER_USUAL_PORT = 1433;

export const CONFIG_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.dev/schemas/materialize-sqlserver/config',
  title: 'SQL Connection',
  type: 'object',
  // `credentials` is required unless the legacy top-level `password` is given (checked by parseEndpointConfig).
  required: ['address', 'user', 'database'],
  properties: {
    address: {
      type: 'string',
      title: 'Address',
      description:
        'Host and port of the database, in the form host[:port]. If only the host is given, the port defaults to 3306; '
        + 'SQL Server usually listens on 1433, so give it explicitly (for example db.example.com:1433). '
        + 'Managed cloud instances always use 1433.',
      minLength: 1,
      order: 0,
    },
    user: {
      type: 'string',
      title: 'User',
      description: 'Database user to connect as.',
      minLength: 1,
      order: 1,
    },
    database: {
      type: 'string',
      title: 'Database',
      description: 'Name of the logical database to materialize to.',
      minLength: 1,
      order: 3,
    },
    schema: {
      type: 'string',
      title: 'Database Schema',
      description:
        'Default schema for bound collection tables (unless a binding sets its own) and for the flow_checkpoints_v1 '
        + 'metadata table. When empty, the user\'s default schema is used.',
      order: 4,
    },
    hardDelete: {
      type: 'boolean',
      title: 'Hard Delete',
      description:
        'When enabled, documents deleted at the source delete their rows. Otherwise deletions are stored as rows '
        + 'marked by the _meta/op field (soft delete).',
      default: false,
      order: 5,
    },
    credentials: {
      type: 'object',
      title: 'Authentication',
      description: 'How the connector authenticates: a password, an AWS IAM role (RDS IAM authentication) or an Azure AD (Entra ID) application.',
      order: 6,
      discriminator: { propertyName: 'auth_type' },
      'x-iam-auth': true,
      'x-iam-azure-scope': 'https://database.windows.net/.default',
      oneOf: [
        {
          $id: 'https://sluice.dev/schemas/materialize-sqlserver/config/credentials/UserPassword',
          type: 'object',
          title: 'User Password',
          description: 'Authenticate with the user\'s password.',
          required: ['auth_type', 'password'],
          properties: {
            auth_type: { type: 'string', title: 'Auth Type', description: 'Password authentication.', const: 'UserPassword', default: 'UserPassword', order: 0 },
            password: { type: 'string', title: 'Password', description: 'Password of the database user.', secret: true, order: 1 },
          },
        },
        {
          $id: 'https://sluice.dev/schemas/materialize-sqlserver/config/credentials/AWSIAM',
          type: 'object',
          title: 'AWS IAM',
          description: 'Assume an AWS IAM role and sign in with an RDS IAM authentication token (requires RDS Proxy in front of SQL Server).',
          required: ['auth_type', 'aws_role_arn', 'aws_region'],
          properties: {
            auth_type: { type: 'string', title: 'Auth Type', description: 'AWS IAM authentication.', const: 'AWSIAM', default: 'AWSIAM', order: 0 },
            aws_role_arn: { type: 'string', title: 'AWS Role ARN', description: 'AWS Role which has access to the resource which will be assumed by Flow.', minLength: 1, order: 1 },
            aws_region: { type: 'string', title: 'AWS Region', description: 'AWS Region of your resource.', minLength: 1, order: 2 },
          },
        },
        {
          $id: 'https://sluice.dev/schemas/materialize-sqlserver/config/credentials/AzureIAM',
          type: 'object',
          title: 'Azure IAM',
          description: 'Sign in with an Azure Active Directory access token for this application, which Flow\'s runtime obtains and injects.',
          required: ['auth_type', 'azure_client_id', 'azure_tenant_id'],
          properties: {
            auth_type: { type: 'string', title: 'Auth Type', description: 'Azure IAM authentication.', const: 'AzureIAM', default: 'AzureIAM', order: 0 },
            azure_client_id: { type: 'string', title: 'Azure Client ID', description: 'Azure App Registration Client ID for Azure Active Directory authentication.', minLength: 1, order: 1 },
            azure_tenant_id: { type: 'string', title: 'Azure Tenant ID', description: 'Azure Tenant ID for Azure Active Directory authentication.', minLength: 1, order: 2 },
          },
        },
      ],
    },
    dbt_job_trigger: {
      type: 'object',
      title: 'dbt Cloud Job Trigger',
      description: 'Trigger a dbt Cloud job when new data is available.',
      required: ['job_id', 'account_id', 'api_key'],
      // No additionalProperties: false (upstream has it): the runtime refuses unknown keys itself, and the hidden
      // legacy account_prefix must pass.
      order: 7,
      properties: {
        job_id: { type: 'string', title: 'Job ID', description: 'dbt job ID.', order: 0 },
        account_id: { type: 'string', title: 'Account ID', description: 'dbt account ID.', order: 1 },
        access_url: {
          type: 'string', title: 'Access URL', pattern: '^https://.+$', order: 2,
          description: 'dbt access URL, found in your dbt Cloud Account Settings (for example https://cloud.getdbt.com). See go.estuary.dev/dbt-cloud-trigger.',
        },
        api_key: { type: 'string', title: 'API Key', description: 'dbt API key.', secret: true, order: 3 },
        cause: { type: 'string', title: 'Cause Message', description: 'The \'cause\' message sent with the job trigger. Defaults to \'Estuary Flow\'.', order: 4 },
        mode: {
          type: 'string', title: 'Job Trigger Mode', enum: ['skip', 'replace', 'ignore'], default: 'skip', order: 5,
          description: 'How already-running jobs are treated: \'skip\' (default) does not trigger while a run is in progress; \'replace\' cancels '
            + 'running runs and triggers a new one; \'ignore\' triggers a new run regardless.',
        },
        interval: {
          type: 'string', title: 'Minimum Run Interval', default: '30m', order: 6,
          description: 'Minimum time between dbt job triggers (a Go duration such as 30m or 1h30m). Triggers only follow committed transactions.',
        },
      },
    },
    networkTunnel: {
      type: 'object',
      title: 'Network Tunnel',
      description: 'Connect to the database through an SSH server (when it is not reachable directly).',
      additionalProperties: false,
      advanced: true,
      order: 8,
      properties: {
        sshForwarding: {
          type: 'object',
          title: 'SSH Forwarding',
          description: 'Forward the database connection through an SSH server that accepts key authentication.',
          required: ['sshEndpoint', 'privateKey'],
          additionalProperties: false,
          properties: {
            sshEndpoint: {
              type: 'string',
              title: 'SSH Endpoint',
              description: 'Endpoint of the remote SSH server that supports tunneling, in the form ssh://user@hostname[:port].',
              pattern: '^ssh://.+@.+$',
              order: 0,
            },
            privateKey: {
              type: 'string',
              title: 'SSH Private Key',
              description: 'Private key (OpenSSH or PEM format) to connect to the remote SSH server.',
              secret: true,
              multiline: true,
              order: 1,
            },
          },
        },
      },
    },
    advanced: {
      type: 'object',
      title: 'Advanced Options',
      description: 'Options for advanced users. You should not typically need to modify these.',
      additionalProperties: false,
      advanced: true,
      order: 9,
      properties: {
        no_flow_document: {
          type: 'boolean',
          title: 'Exclude Flow Document',
          description: 'When enabled the root document is not required for standard updates: tables may leave out flow_document, and loads rebuild the document from the root-level columns.',
          default: false,
          order: 0,
        },
        feature_flags: {
          type: 'string',
          title: 'Feature Flags',
          description: 'Comma-separated feature flags (name to enable, no_name to disable), e.g. allow_existing_tables_for_new_bindings. Change only as directed by support.',
          order: 1,
        },
      },
    },
  },
} as const satisfies JsonObject;

/**
 * Keys upstream accepts that its schema hides: the legacy top-level `password` (configs from before `credentials`)
 * and dbt's legacy `account_prefix` (the access URL was https://<prefix>.us1.dbt.com). Flow's runtime also injects
 * IAM tokens into `credentials` (tolerated by the runtime's validator for `x-iam-auth`).
 */
export const CONFIG_KEYS_BEYOND_SCHEMA: Readonly<Record<string, readonly string[]>> = { '': ['password'], '/dbt_job_trigger': ['account_prefix'] };

export const RESOURCE_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.dev/schemas/materialize-sqlserver/table-config',
  title: 'SQL Table',
  type: 'object',
  required: ['table'],
  properties: {
    table: {
      type: 'string',
      title: 'Table',
      description: 'Name of the database table. The connector creates it unless it created it before.',
      minLength: 1,
      'x-collection-name': true,
      order: 0,
    },
    schema: {
      type: 'string',
      title: 'Alternative Schema',
      description: 'Alternative schema for this table (optional); defaults to the endpoint schema.',
      'x-schema-name': true,
      order: 1,
    },
    delta_updates: {
      type: 'boolean',
      title: 'Delta Update',
      description: 'Should updates to this table be done via delta updates. Default is false.',
      default: false,
      'x-delta-updates': true,
      order: 2,
    },
  },
} as const satisfies JsonObject;


/** What the endpoint schema admits (with defaults applied). */
export type EndpointConfigInput = FromSchema<typeof CONFIG_SCHEMA>;
type CredentialsInput = NonNullable<EndpointConfigInput['credentials']>;
export type UserPasswordCredentials = Extract<CredentialsInput, { auth_type: 'UserPassword' }>;
/** Flow's runtime may inject temporary STS credentials beside the role; they are used instead of assuming it. */
export type AwsIamCredentials = Extract<CredentialsInput, { auth_type: 'AWSIAM' }> & Partial<Record<'aws_access_key_id' | 'aws_secret_access_key' | 'aws_session_token', string>>;
/** Flow's runtime injects the access token it obtained for the application (scope x-iam-azure-scope). */
export type AzureIamCredentials = Extract<CredentialsInput, { auth_type: 'AzureIAM' }> & { azure_access_token?: string };
export type Credentials = UserPasswordCredentials | AwsIamCredentials | AzureIamCredentials;
export type DbtJobTrigger = NonNullable<EndpointConfigInput['dbt_job_trigger']> & { account_prefix?: string };
export type SshForwarding = NonNullable<NonNullable<EndpointConfigInput['networkTunnel']>['sshForwarding']>;

/** A checked endpoint config: the schema's type, with the credentials resolved (the legacy `password` folded in). */
export type EndpointConfig = Omit<EndpointConfigInput, 'credentials' | 'dbt_job_trigger'> & { credentials: Credentials; dbt_job_trigger?: DbtJobTrigger };

export type ResourceConfig = FromSchema<typeof RESOURCE_SCHEMA>;

/** Feature flags: `advanced.feature_flags` over these defaults. */
export const DEFAULT_FEATURE_FLAGS: Readonly<Record<string, boolean>> = Object.freeze({
  datetime_keys_as_string: true,
  native_binary_column_type: true,
  retain_existing_data_on_backfill: false,
  allow_existing_tables_for_new_bindings: false,
  always_drop_tables_on_backfill: false,
});

/** Parse `a, no_b` into {a: true, b: false} over the defaults. Unknown flags are kept (they are internal). */
export function parseFeatureFlags(raw: string | undefined): Record<string, boolean> {
  const out: Record<string, boolean> = { ...DEFAULT_FEATURE_FLAGS };
  for (const part of (raw ?? '').split(',')) {
    const flag = part.trim();
    if (flag === '') continue;
    if (!/^[a-z0-9_]+$/.test(flag)) {
      throw new ConfigError(`advanced.feature_flags: '${flag}' is not a flag name (lower-case letters, digits and _; prefix no_ to disable)`);
    }
    if (flag.startsWith('no_')) out[flag.slice(3)] = false;
    else out[flag] = true;
  }
  return out;
}

let endpointValidator: ConfigValidator | undefined;
let resourceValidator: ConfigValidator | undefined;

/** A Go duration (time.ParseDuration: e.g. 30m, 1h30m, 1.5h, 300ms) in milliseconds. */
export function parseGoDuration(text: string): number {
  const m = /^([-+]?)((?:\d*\.?\d*(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (text === '0') return 0;
  if (m === null) throw new ConfigError(`'${text}' is not a duration: write a number and a unit (h, m, s, ms), e.g. 30m or 1h30m`);
  const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const part of m[2]!.matchAll(/(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)/g)) {
    if (part[1] === '' || part[1] === '.') throw new ConfigError(`'${text}' is not a duration: a unit needs a number before it, e.g. 30m`);
    total += Number(part[1]) * unitMs[part[2]!]!;
  }
  return m[1] === '-' ? -total : total;
}

/**
 * Check an endpoint config: the schema (through the runtime's validator: defaults, every problem in one line, unknown
 * keys refused), then resolveEndpointConfig.
 */
export function parseEndpointConfig(raw: JsonValue): EndpointConfig {
  endpointValidator ??= new ConfigValidator(CONFIG_SCHEMA, 'endpoint config', false, { tolerate: CONFIG_KEYS_BEYOND_SCHEMA });
  return resolveEndpointConfig(endpointValidator.validate<EndpointConfigInput>(raw, 'endpoint config'));
}

/**
 * What a schema cannot say, on a config valid against CONFIG_SCHEMA (the runtime's validator has checked a request's
 * config, the keys beyond the schema kept): credentials or the legacy top-level password, injected IAM tokens,
 * feature flag names, the dbt interval. Returns the checked config with `credentials` resolved.
 */
export function resolveEndpointConfig(input: EndpointConfigInput): EndpointConfig {
  // The keys beyond the schema (legacy password, injected IAM tokens, dbt's account_prefix), which its type omits.
  const rawObj = input as unknown as JsonObject;
  const legacyPassword = rawObj.password;
  if (legacyPassword !== undefined && typeof legacyPassword !== 'string') throw new ConfigError('endpoint config: password (the legacy top-level password) must be a string');

  let credentials: Credentials;
  const c = input.credentials;
  if (c === undefined) {
    if (legacyPassword === undefined || legacyPassword === '') {
      throw new ConfigError('endpoint config: credentials is required: {auth_type: UserPassword, password}, {auth_type: AWSIAM, aws_role_arn, aws_region} or {auth_type: AzureIAM, azure_client_id, azure_tenant_id}');
    }
    credentials = { auth_type: 'UserPassword', password: legacyPassword };
  } else if (c.auth_type === 'UserPassword') {
    if (c.password.trim() === '') throw new ConfigError('credentials.password must not be empty');
    credentials = { auth_type: 'UserPassword', password: c.password };
  } else if (c.auth_type === 'AWSIAM') {
    const injected = rawObj.credentials as JsonObject;
    const iam: AwsIamCredentials = { auth_type: 'AWSIAM', aws_role_arn: c.aws_role_arn, aws_region: c.aws_region };
    for (const k of ['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token'] as const) {
      const v = injected[k];
      if (v !== undefined && typeof v !== 'string') throw new ConfigError(`credentials.${k} must be a string`);
      if (v !== undefined && v !== '') iam[k] = v;
    }
    if ((iam.aws_access_key_id === undefined) !== (iam.aws_secret_access_key === undefined)) {
      throw new ConfigError('credentials: injected STS credentials need both aws_access_key_id and aws_secret_access_key');
    }
    credentials = iam;
  } else {
    const token = (rawObj.credentials as JsonObject).azure_access_token;
    if (token !== undefined && typeof token !== 'string') throw new ConfigError('credentials.azure_access_token must be a string');
    credentials = { auth_type: 'AzureIAM', azure_client_id: c.azure_client_id, azure_tenant_id: c.azure_tenant_id, ...(token === undefined || token === '' ? {} : { azure_access_token: token }) };
  }

  parseFeatureFlags(input.advanced?.feature_flags);
  const { credentials: _c, dbt_job_trigger: dbtInput, ...rest } = input;
  delete (rest as { password?: unknown }).password; // the legacy password now lives in `credentials` only
  const out: EndpointConfig = { ...rest, credentials };
  if (dbtInput !== undefined) {
    const prefix = ((rawObj.dbt_job_trigger as JsonObject).account_prefix);
    if (prefix !== undefined && typeof prefix !== 'string') throw new ConfigError('dbt_job_trigger.account_prefix must be a string');
    if (dbtInput.interval !== undefined) {
      try { parseGoDuration(dbtInput.interval); } catch (err) { throw new ConfigError(`dbt_job_trigger.interval: ${(err as Error).message}`); }
    }
    out.dbt_job_trigger = { ...dbtInput, ...(prefix === undefined || prefix === '' ? {} : { account_prefix: prefix }) };
  }
  if (out.schema === '') delete out.schema;
  return out;
}

/** Check a resource config: the schema (unknown keys refused), then resolveResourceConfig. */
export function parseResourceConfig(raw: JsonValue, where = 'resource config'): ResourceConfig {
  resourceValidator ??= new ConfigValidator(RESOURCE_SCHEMA, 'resource config');
  return resolveResourceConfig(resourceValidator.validate<ResourceConfig>(raw, where), where);
}

/**
 * What a schema cannot say, on a resource config valid against RESOURCE_SCHEMA (a request's, checked by the runtime,
 * which keeps the `_meta` Flow's control plane writes): a blank table, an empty schema meaning none.
 */
export function resolveResourceConfig(r: ResourceConfig, where = 'resource config'): ResourceConfig {
  if (r.table.trim() === '') throw new ConfigError(`${where}: table must not be empty`);
  if (r.schema === '') {
    const { schema: _s, ...rest } = r;
    return rest;
  }
  return r;
}

/** Resource path: [schema, table] with the binding's schema, else the endpoint schema; [table] when neither is set. */
export function resourcePath(resource: ResourceConfig, endpoint: Pick<EndpointConfig, 'schema'>): string[] {
  const schema = resource.schema ?? endpoint.schema;
  return schema === undefined ? [resource.table] : [schema, resource.table];
}
