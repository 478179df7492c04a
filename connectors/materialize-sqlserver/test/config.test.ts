// Endpoint/resource configuration: the schemas (as files under schemas/, checked for drift), validation through
// the runtime's validator, the checks beyond the schema, feature flags, the address and its default port.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, ConfigValidator } from '@sluice/runtime';
import type { JsonObject } from '@sluice/runtime';
import {
  CONFIG_SCHEMA, RESOURCE_SCHEMA, parseEndpointConfig, parseFeatureFlags, parseGoDuration, parseResourceConfig, resourcePath,
} from '../src/config.ts';
import { defaultPortWarning, parseAddress } from '../src/address.ts';
import { createSqlServerConnector } from '../src/connector.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const base: JsonObject = { address: 'db:1433', user: 'flow', database: 'analytics', credentials: { auth_type: 'UserPassword', password: 's3cret' } };

describe('schemas', () => {
  for (const [file, schema] of [['materialize-sqlserver.config.schema.json', CONFIG_SCHEMA], ['materialize-sqlserver.resource.schema.json', RESOURCE_SCHEMA]] as const) {
    it(`schemas/${file} is generated from the code (UPDATE_SNAPSHOTS=1 rewrites it)`, () => {
      const path = join(ROOT, 'schemas', file);
      const text = `${JSON.stringify(schema, null, 2)}\n`;
      if (process.env.UPDATE_SNAPSHOTS === '1' || !existsSync(path)) writeFileSync(path, text);
      assert.equal(readFileSync(path, 'utf8'), text, `${file} is stale: rerun with UPDATE_SNAPSHOTS=1`);
    });
  }

  it('the spec response carries both schemas and the documentation URL', () => {
    const c = createSqlServerConnector();
    assert.equal(c.configSchema, CONFIG_SCHEMA);
    assert.equal(c.resourceConfigSchema, RESOURCE_SCHEMA);
    assert.equal(c.documentationUrl, 'https://go.estuary.dev/materialize-sqlserver');
  });

  it('has the SPEC fields and every field upstream\'s config accepts, secrets marked', () => {
    assert.deepEqual(Object.keys(CONFIG_SCHEMA.properties), ['address', 'user', 'database', 'schema', 'hardDelete', 'credentials', 'dbt_job_trigger', 'networkTunnel', 'advanced']);
    assert.deepEqual(CONFIG_SCHEMA.required, ['address', 'user', 'database']);
    const [pw, aws, azure] = CONFIG_SCHEMA.properties.credentials.oneOf;
    assert.equal(pw.properties.auth_type.const, 'UserPassword');
    assert.equal(pw.properties.password.secret, true);
    assert.deepEqual(pw.required, ['auth_type', 'password']);
    assert.equal(aws.properties.auth_type.const, 'AWSIAM');
    assert.deepEqual(aws.required, ['auth_type', 'aws_role_arn', 'aws_region']);
    assert.equal(azure.properties.auth_type.const, 'AzureIAM');
    assert.deepEqual(azure.required, ['auth_type', 'azure_client_id', 'azure_tenant_id']);
    assert.equal(CONFIG_SCHEMA.properties.credentials['x-iam-azure-scope'], 'https://database.windows.net/.default');
    assert.deepEqual(Object.keys(CONFIG_SCHEMA.properties.dbt_job_trigger.properties), ['job_id', 'account_id', 'access_url', 'api_key', 'cause', 'mode', 'interval']);
    assert.equal(CONFIG_SCHEMA.properties.dbt_job_trigger.properties.api_key.secret, true);
    assert.deepEqual(CONFIG_SCHEMA.properties.dbt_job_trigger.properties.mode.enum, ['skip', 'replace', 'ignore']);
    assert.deepEqual(Object.keys(CONFIG_SCHEMA.properties.advanced.properties), ['no_flow_document', 'feature_flags']);
    assert.equal(CONFIG_SCHEMA.properties.networkTunnel.properties.sshForwarding.properties.privateKey.secret, true);
    assert.match(CONFIG_SCHEMA.properties.address.description, /defaults to 3306; SQL Server usually listens on 1433/);
    assert.deepEqual(Object.keys(RESOURCE_SCHEMA.properties), ['table', 'schema', 'delta_updates']);
    assert.deepEqual(RESOURCE_SCHEMA.required, ['table']);
    assert.equal(RESOURCE_SCHEMA.properties.table['x-collection-name'], true);
    assert.equal(RESOURCE_SCHEMA.properties.schema['x-schema-name'], true);
    assert.equal(RESOURCE_SCHEMA.properties.delta_updates['x-delta-updates'], true);
  });

  it('compile in the runtime validator, which applies defaults and reports missing fields', () => {
    const v = new ConfigValidator(CONFIG_SCHEMA, 'endpoint config');
    const out = v.validate<JsonObject>(base, 'endpoint config');
    assert.equal(out.hardDelete, false);
    assert.throws(() => v.validate({ address: 'db' }, 'endpoint config'), (err: Error) => err instanceof ConfigError && /user/.test(err.message) && /database/.test(err.message));
    assert.throws(() => v.validate({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/x' } }, 'endpoint config'), ConfigError);
    assert.throws(() => v.validate({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'host', privateKey: 'k' } } }, 'endpoint config'), ConfigError);
    const r = new ConfigValidator(RESOURCE_SCHEMA, 'resource config');
    assert.deepEqual(r.validate({ table: 't' }, 'resource config'), { table: 't', delta_updates: false });
  });
});

describe('parseEndpointConfig', () => {
  it('rejects an unknown field, naming it and the allowed ones', () => {
    assert.throws(() => parseEndpointConfig({ ...base, hostname: 'x' }), {
      message: 'Invalid endpoint config (1 problem): /hostname is not an allowed property; allowed: address, user, database, schema, hardDelete, credentials, dbt_job_trigger, networkTunnel, advanced, password',
    });
  });
  it('rejects an empty password, a missing credentials object and an incomplete AzureIAM', () => {
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'UserPassword', password: ' ' } }), { message: 'credentials.password must not be empty' });
    const { credentials: _c, ...noCredentials } = base;
    assert.throws(() => parseEndpointConfig(noCredentials), {
      message: 'endpoint config: credentials is required: {auth_type: UserPassword, password}, {auth_type: AWSIAM, aws_role_arn, aws_region} or {auth_type: AzureIAM, azure_client_id, azure_tenant_id}',
    });
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'AzureIAM' } }), {
      message: 'Invalid endpoint config (2 problems): /credentials/azure_client_id is required; /credentials/azure_tenant_id is required',
    });
  });
  it('accepts the legacy top-level password (configs from before credentials) as UserPassword, and keeps it only there', () => {
    const { credentials: _c, ...legacy } = base;
    const c = parseEndpointConfig({ ...legacy, password: 'old-secret' });
    assert.deepEqual(c.credentials, { auth_type: 'UserPassword', password: 'old-secret' });
    assert.equal('password' in c, false);
  });
  it('accepts AzureIAM with the runtime-injected access token', () => {
    const c = parseEndpointConfig({ ...base, credentials: { auth_type: 'AzureIAM', azure_client_id: 'app', azure_tenant_id: 'tenant', azure_access_token: 'eyJ0' } });
    assert.deepEqual(c.credentials, { auth_type: 'AzureIAM', azure_client_id: 'app', azure_tenant_id: 'tenant', azure_access_token: 'eyJ0' });
  });
  it('accepts AWS IAM with injected STS credentials, and requires both key halves', () => {
    const c = parseEndpointConfig({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/r', aws_region: 'us-east-1', aws_access_key_id: 'AKIA', aws_secret_access_key: 'sk', aws_session_token: 'st' } });
    assert.deepEqual(c.credentials, { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/r', aws_region: 'us-east-1', aws_access_key_id: 'AKIA', aws_secret_access_key: 'sk', aws_session_token: 'st' });
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'a', aws_region: 'r', aws_access_key_id: 'AKIA' } }), {
      message: 'credentials: injected STS credentials need both aws_access_key_id and aws_secret_access_key',
    });
  });
  it('dbt_job_trigger: defaults (mode skip, interval 30m), an https access URL, a Go duration, and the hidden legacy account_prefix', () => {
    const dbt = { job_id: '12', account_id: '34', api_key: 'key', access_url: 'https://cloud.getdbt.com' };
    assert.deepEqual(parseEndpointConfig({ ...base, dbt_job_trigger: dbt }).dbt_job_trigger, { ...dbt, mode: 'skip', interval: '30m' });
    assert.throws(() => parseEndpointConfig({ ...base, dbt_job_trigger: { ...dbt, access_url: 'http://cloud.getdbt.com' } }), /\/dbt_job_trigger\/access_url/);
    assert.throws(() => parseEndpointConfig({ ...base, dbt_job_trigger: { ...dbt, mode: 'sometimes' } }), /\/dbt_job_trigger\/mode/);
    assert.throws(() => parseEndpointConfig({ ...base, dbt_job_trigger: { ...dbt, interval: '5 minutes' } }), {
      message: "dbt_job_trigger.interval: '5 minutes' is not a duration: write a number and a unit (h, m, s, ms), e.g. 30m or 1h30m",
    });
    const legacy = parseEndpointConfig({ ...base, dbt_job_trigger: { job_id: '12', account_id: '34', api_key: 'key', account_prefix: 'ab123' } }).dbt_job_trigger;
    assert.equal(legacy?.account_prefix, 'ab123');
    assert.deepEqual([parseGoDuration('30m'), parseGoDuration('1h30m'), parseGoDuration('1.5s'), parseGoDuration('0'), parseGoDuration('250ms')], [1_800_000, 5_400_000, 1500, 0, 250]);
  });
  it('checks the SSH endpoint and keeps the tunnel', () => {
    assert.throws(() => parseEndpointConfig({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'bastion:22', privateKey: 'k' } } }), /\/networkTunnel\/sshForwarding\/sshEndpoint/);
    const c = parseEndpointConfig({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'ssh://u@bastion', privateKey: 'k' } } });
    assert.deepEqual(c.networkTunnel, { sshForwarding: { sshEndpoint: 'ssh://u@bastion', privateKey: 'k' } });
  });
  it('advanced.no_flow_document: false and true are accepted (default false)', () => {
    assert.equal(parseEndpointConfig({ ...base, advanced: {} }).advanced?.no_flow_document, false);
    assert.equal(parseEndpointConfig({ ...base, advanced: { no_flow_document: true } }).advanced?.no_flow_document, true);
  });
  it('parses advanced options and feature flags', () => {
    assert.throws(() => parseEndpointConfig({ ...base, advanced: { feature_flags: 'ok, Bad Flag' } }), {
      message: "advanced.feature_flags: 'Bad Flag' is not a flag name (lower-case letters, digits and _; prefix no_ to disable)",
    });
    const c = parseEndpointConfig({ ...base, hardDelete: true, schema: 'sales', advanced: { feature_flags: 'no_datetime_keys_as_string,allow_existing_tables_for_new_bindings' } });
    assert.equal(c.hardDelete, true);
    assert.equal(c.schema, 'sales');
    assert.deepEqual(c.advanced, { no_flow_document: false, feature_flags: 'no_datetime_keys_as_string,allow_existing_tables_for_new_bindings' });
    assert.deepEqual(parseFeatureFlags(c.advanced?.feature_flags), {
      datetime_keys_as_string: false, native_binary_column_type: true, retain_existing_data_on_backfill: false,
      allow_existing_tables_for_new_bindings: true, always_drop_tables_on_backfill: false,
    });
  });
});

describe('resource config and path', () => {
  it('rejects a missing table', () => {
    assert.throws(() => parseResourceConfig({ schema: 'x' }), { message: 'Invalid resource config (1 problem): /table is required' });
  });
  it('path is [schema, table] with the binding schema, else the endpoint schema, else [table]', () => {
    assert.deepEqual(resourcePath(parseResourceConfig({ table: 't', schema: 'a' }), { schema: 'b' }), ['a', 't']);
    assert.deepEqual(resourcePath(parseResourceConfig({ table: 't' }), { schema: 'b' }), ['b', 't']);
    assert.deepEqual(resourcePath(parseResourceConfig({ table: 't' }), {}), ['t']);
    assert.equal(parseResourceConfig({ table: 't', delta_updates: true }).delta_updates, true);
  });
});

describe('address', () => {
  it('rejects a URL, naming the expected form', () => {
    assert.throws(() => parseAddress('sqlserver://db:1433'), { message: "address 'sqlserver://db:1433' must be host[:port] without a scheme, e.g. db.example.com:1433" });
    assert.throws(() => parseAddress('db:99999'), { message: "address 'db:99999': port '99999' is not a number between 1 and 65535" });
  });
  it('defaults the port to 3306 as the SPEC says, and says so', () => {
    const a = parseAddress('db.example.com');
    assert.deepEqual(a, { host: 'db.example.com', port: 3306, portDefaulted: true });
    assert.equal(defaultPortWarning(a), 'address has no port, so port 3306 is used (the documented default); SQL Server usually listens on 1433: if this is not intended, set address to db.example.com:1433');
  });
  it('parses host:port and IPv6 forms', () => {
    assert.deepEqual(parseAddress('db:1433'), { host: 'db', port: 1433, portDefaulted: false });
    assert.deepEqual(parseAddress('[::1]:1434'), { host: '::1', port: 1434, portDefaulted: false });
    assert.deepEqual(parseAddress('::1'), { host: '::1', port: 3306, portDefaulted: true });
  });
});
