// Endpoint and resource configuration: the JSON Schemas the connector declares in `spec` (exactly the SPEC's
// "SQL-database materialization connector configuration" plus the reference's advanced options), and the
// typed, checked view the rest of the connector uses. The runtime validates a config against these schemas
// (ajv, defaults applied); `parseEndpointConfig` adds the checks a schema cannot express.
import { ConfigError } from '@sluice/runtime';
import type { JsonObject, JsonValue } from '@sluice/runtime';

export const DOCUMENTATION_URL = 'https://go.estuary.dev/materialize-sqlserver';

/** The SPEC: "if only the host is given, the port defaults to 3306". SQL Server itself usually listens on 1433. */
export const SPEC_DEFAULT_PORT = 3306;
export const SQLSERVER_USUAL_PORT = 1433;

export const CONFIG_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://sluice.dev/schemas/materialize-sqlserver/config',
  title: 'SQL Connection',
  type: 'object',
  required: ['address', 'user', 'database', 'credentials'],
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
      description: 'How the connector authenticates: a password, or an AWS IAM role (RDS IAM authentication).',
      order: 6,
      default: { auth_type: 'UserPassword' },
      discriminator: { propertyName: 'auth_type' },
      'x-iam-auth': true,
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
      ],
    },
    networkTunnel: {
      type: 'object',
      title: 'Network Tunnel',
      description: 'Connect to the database through an SSH server (when it is not reachable directly).',
      additionalProperties: false,
      advanced: true,
      order: 7,
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
      order: 8,
      properties: {
        feature_flags: {
          type: 'string',
          title: 'Feature Flags',
          description: 'Comma-separated internal feature flags (name to enable, no_name to disable).',
          order: 0,
        },
      },
    },
  },
} as const satisfies JsonObject;

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

export interface UserPasswordCredentials { auth_type: 'UserPassword'; password: string }
/**
 * The role to assume. The control plane may inject temporary STS credentials beside it
 * (`aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`); they are used instead of assuming the role.
 */
export interface AwsIamCredentials {
  auth_type: 'AWSIAM';
  aws_role_arn: string;
  aws_region: string;
  aws_access_key_id?: string;
  aws_secret_access_key?: string;
  aws_session_token?: string;
}
export type Credentials = UserPasswordCredentials | AwsIamCredentials;

export interface SshForwarding { sshEndpoint: string; privateKey: string }

export interface EndpointConfig {
  address: string;
  user: string;
  database: string;
  schema?: string;
  hardDelete?: boolean;
  credentials: Credentials;
  networkTunnel?: { sshForwarding?: SshForwarding };
  advanced?: { feature_flags?: string };
}

export interface ResourceConfig { table: string; schema?: string; delta_updates?: boolean }

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

const STS_FIELDS = ['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token'] as const;

function str(obj: JsonObject, key: string, where: string, required: boolean): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (required) throw new ConfigError(`${where}${key} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw new ConfigError(`${where}${key} must be a string, got ${JSON.stringify(v)}`);
  if (required && v.trim() === '') throw new ConfigError(`${where}${key} must not be empty`);
  return v;
}

function allowOnly(obj: JsonObject, allowed: readonly string[], where: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new ConfigError(`${where || 'endpoint config'}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}; allowed: ${allowed.join(', ')}`);
  }
}

/**
 * Check an endpoint config (after schema validation, or raw: every check the schema makes that matters here is
 * repeated so a config from any source gets the same clear errors). Unknown fields are rejected.
 */
export function parseEndpointConfig(raw: JsonValue): EndpointConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError('endpoint config must be an object');
  allowOnly(raw, Object.keys(CONFIG_SCHEMA.properties), '');
  const address = str(raw, 'address', '', true)!;
  const user = str(raw, 'user', '', true)!;
  const database = str(raw, 'database', '', true)!;
  const schema = str(raw, 'schema', '', false);
  const hardDelete = raw.hardDelete;
  if (hardDelete !== undefined && typeof hardDelete !== 'boolean') throw new ConfigError(`hardDelete must be true or false, got ${JSON.stringify(hardDelete)}`);

  const c = raw.credentials;
  if (c === undefined || c === null || typeof c !== 'object' || Array.isArray(c)) {
    throw new ConfigError('credentials is required: {auth_type: UserPassword, password} or {auth_type: AWSIAM, aws_role_arn, aws_region}');
  }
  let credentials: Credentials;
  const authType = c.auth_type ?? 'UserPassword';
  if (authType === 'UserPassword') {
    allowOnly(c, ['auth_type', 'password'], 'credentials');
    credentials = { auth_type: 'UserPassword', password: str(c, 'password', 'credentials.', true)! };
  } else if (authType === 'AWSIAM') {
    allowOnly(c, ['auth_type', 'aws_role_arn', 'aws_region', ...STS_FIELDS], 'credentials');
    const iam: AwsIamCredentials = {
      auth_type: 'AWSIAM',
      aws_role_arn: str(c, 'aws_role_arn', 'credentials.', true)!,
      aws_region: str(c, 'aws_region', 'credentials.', true)!,
    };
    for (const k of STS_FIELDS) {
      const v = str(c, k, 'credentials.', false);
      if (v !== undefined && v !== '') iam[k] = v;
    }
    if ((iam.aws_access_key_id === undefined) !== (iam.aws_secret_access_key === undefined)) {
      throw new ConfigError('credentials: injected STS credentials need both aws_access_key_id and aws_secret_access_key');
    }
    credentials = iam;
  } else {
    throw new ConfigError(`credentials.auth_type must be UserPassword or AWSIAM, got ${JSON.stringify(authType)}`);
  }

  const out: EndpointConfig = { address, user, database, credentials, hardDelete: hardDelete === true };
  if (schema !== undefined && schema !== '') out.schema = schema;

  const nt = raw.networkTunnel;
  if (nt !== undefined && nt !== null) {
    if (typeof nt !== 'object' || Array.isArray(nt)) throw new ConfigError('networkTunnel must be an object');
    allowOnly(nt, ['sshForwarding'], 'networkTunnel');
    const ssh = nt.sshForwarding;
    if (ssh !== undefined && ssh !== null) {
      if (typeof ssh !== 'object' || Array.isArray(ssh)) throw new ConfigError('networkTunnel.sshForwarding must be an object');
      allowOnly(ssh, ['sshEndpoint', 'privateKey'], 'networkTunnel.sshForwarding');
      const sshEndpoint = str(ssh, 'sshEndpoint', 'networkTunnel.sshForwarding.', true)!;
      if (!/^ssh:\/\/.+@.+$/.test(sshEndpoint)) {
        throw new ConfigError(`networkTunnel.sshForwarding.sshEndpoint must look like ssh://user@host[:port], got '${sshEndpoint}'`);
      }
      out.networkTunnel = { sshForwarding: { sshEndpoint, privateKey: str(ssh, 'privateKey', 'networkTunnel.sshForwarding.', true)! } };
    }
  }

  const adv = raw.advanced;
  if (adv !== undefined && adv !== null) {
    if (typeof adv !== 'object' || Array.isArray(adv)) throw new ConfigError('advanced must be an object');
    if (Object.hasOwn(adv, 'no_flow_document')) throw new ConfigError(NO_FLOW_DOCUMENT_ERROR);
    allowOnly(adv, ['feature_flags'], 'advanced');
    const flags = str(adv, 'feature_flags', 'advanced.', false);
    parseFeatureFlags(flags);
    out.advanced = {};
    if (flags !== undefined) out.advanced.feature_flags = flags;
  }
  return out;
}

/** Upstream's `advanced.no_flow_document` is not offered: tables always hold the root document, which loads read. */
export const NO_FLOW_DOCUMENT_ERROR = 'advanced.no_flow_document is not supported by this connector: standard-updates tables always '
  + 'store the root document (flow_document) and loads read it back, so documents are never rebuilt from columns; '
  + 'remove advanced.no_flow_document from the endpoint config (to keep the table narrow, exclude value fields instead, '
  + 'or use delta_updates, which needs no document)';

export function parseResourceConfig(raw: JsonValue, where = 'resource config'): ResourceConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${where} must be an object`);
  allowOnly(raw, Object.keys(RESOURCE_SCHEMA.properties), where);
  const table = str(raw, 'table', `${where}: `, true)!;
  const schema = str(raw, 'schema', `${where}: `, false);
  const delta = raw.delta_updates;
  if (delta !== undefined && typeof delta !== 'boolean') throw new ConfigError(`${where}: delta_updates must be true or false, got ${JSON.stringify(delta)}`);
  const out: ResourceConfig = { table, delta_updates: delta === true };
  if (schema !== undefined && schema !== '') out.schema = schema;
  return out;
}

/** Resource path: [schema, table] with the binding's schema, else the endpoint schema; [table] when neither is set. */
export function resourcePath(resource: ResourceConfig, endpoint: Pick<EndpointConfig, 'schema'>): string[] {
  const schema = resource.schema ?? endpoint.schema;
  return schema === undefined ? [resource.table] : [schema, resource.table];
}
