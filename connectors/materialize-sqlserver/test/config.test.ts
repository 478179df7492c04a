// Endpoint/resource configuration: the schemas (as files under schemas/, checked for drift), validation through
// the runtime's validator, the checks beyond the schema, feature flags, the address and its default port.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, ConfigValidator } from '@sluice/runtime';
import type { JsonObject } from '@sluice/runtime';
import {
  CONFIG_SCHEMA, NO_FLOW_DOCUMENT_ERROR, RESOURCE_SCHEMA, parseEndpointConfig, parseFeatureFlags, parseResourceConfig, resourcePath,
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

  it('has exactly the SPEC fields (plus the reference\'s advanced ones), secrets marked', () => {
    assert.deepEqual(Object.keys(CONFIG_SCHEMA.properties), ['address', 'user', 'database', 'schema', 'hardDelete', 'credentials', 'networkTunnel', 'advanced']);
    assert.deepEqual(CONFIG_SCHEMA.required, ['address', 'user', 'database', 'credentials']);
    const [pw, iam] = CONFIG_SCHEMA.properties.credentials.oneOf;
    assert.equal(pw.properties.auth_type.const, 'UserPassword');
    assert.equal(pw.properties.password.secret, true);
    assert.deepEqual(pw.required, ['auth_type', 'password']);
    assert.equal(iam.properties.auth_type.const, 'AWSIAM');
    assert.deepEqual(iam.required, ['auth_type', 'aws_role_arn', 'aws_region']);
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
    assert.throws(() => v.validate({ address: 'db' }, 'endpoint config'), (err: Error) => err instanceof ConfigError && /user/.test(err.message) && /credentials/.test(err.message));
    assert.throws(() => v.validate({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/x' } }, 'endpoint config'), ConfigError);
    assert.throws(() => v.validate({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'host', privateKey: 'k' } } }, 'endpoint config'), ConfigError);
    const r = new ConfigValidator(RESOURCE_SCHEMA, 'resource config');
    assert.deepEqual(r.validate({ table: 't' }, 'resource config'), { table: 't', delta_updates: false });
  });
});

describe('parseEndpointConfig', () => {
  it('rejects an unknown field, naming it and the allowed ones', () => {
    assert.throws(() => parseEndpointConfig({ ...base, hostname: 'x' }), {
      message: "endpoint config: unknown field 'hostname'; allowed: address, user, database, schema, hardDelete, credentials, networkTunnel, advanced",
    });
  });
  it('rejects an empty password and an unknown auth type', () => {
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'UserPassword', password: ' ' } }), { message: 'credentials.password must not be empty' });
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'AzureIAM' } }), { message: 'credentials.auth_type must be UserPassword or AWSIAM, got "AzureIAM"' });
  });
  it('accepts AWS IAM with injected STS credentials, and requires both key halves', () => {
    const c = parseEndpointConfig({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/r', aws_region: 'us-east-1', aws_access_key_id: 'AKIA', aws_secret_access_key: 'sk', aws_session_token: 'st' } });
    assert.deepEqual(c.credentials, { auth_type: 'AWSIAM', aws_role_arn: 'arn:aws:iam::1:role/r', aws_region: 'us-east-1', aws_access_key_id: 'AKIA', aws_secret_access_key: 'sk', aws_session_token: 'st' });
    assert.throws(() => parseEndpointConfig({ ...base, credentials: { auth_type: 'AWSIAM', aws_role_arn: 'a', aws_region: 'r', aws_access_key_id: 'AKIA' } }), {
      message: 'credentials: injected STS credentials need both aws_access_key_id and aws_secret_access_key',
    });
  });
  it('checks the SSH endpoint and keeps the tunnel', () => {
    assert.throws(() => parseEndpointConfig({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'bastion:22', privateKey: 'k' } } }), {
      message: "networkTunnel.sshForwarding.sshEndpoint must look like ssh://user@host[:port], got 'bastion:22'",
    });
    const c = parseEndpointConfig({ ...base, networkTunnel: { sshForwarding: { sshEndpoint: 'ssh://u@bastion', privateKey: 'k' } } });
    assert.deepEqual(c.networkTunnel, { sshForwarding: { sshEndpoint: 'ssh://u@bastion', privateKey: 'k' } });
  });
  it('advanced.no_flow_document is not offered: absent from the schema, and a clear error when set (true or false)', () => {
    assert.ok(!('no_flow_document' in CONFIG_SCHEMA.properties.advanced.properties));
    for (const v of [true, false]) {
      assert.throws(() => parseEndpointConfig({ ...base, advanced: { no_flow_document: v } }), (e: Error) => e instanceof ConfigError && e.message === NO_FLOW_DOCUMENT_ERROR);
    }
    // Through the protocol the runtime's schema validation names the property first.
    const v = new ConfigValidator(CONFIG_SCHEMA, 'endpoint config');
    assert.throws(() => v.validate({ ...base, advanced: { no_flow_document: true } }, 'endpoint config'), (e: Error) => e instanceof ConfigError && /\/advanced\/no_flow_document is not an allowed property/.test(e.message));
    assert.match(NO_FLOW_DOCUMENT_ERROR, /^advanced\.no_flow_document is not supported by this connector: .* remove advanced\.no_flow_document from the endpoint config/);
  });
  it('parses advanced options and feature flags', () => {
    assert.throws(() => parseEndpointConfig({ ...base, advanced: { feature_flags: 'ok, Bad Flag' } }), {
      message: "advanced.feature_flags: 'Bad Flag' is not a flag name (lower-case letters, digits and _; prefix no_ to disable)",
    });
    const c = parseEndpointConfig({ ...base, hardDelete: true, schema: 'sales', advanced: { feature_flags: 'no_datetime_keys_as_string,allow_existing_tables_for_new_bindings' } });
    assert.equal(c.hardDelete, true);
    assert.equal(c.schema, 'sales');
    assert.deepEqual(c.advanced, { feature_flags: 'no_datetime_keys_as_string,allow_existing_tables_for_new_bindings' });
    assert.deepEqual(parseFeatureFlags(c.advanced?.feature_flags), {
      datetime_keys_as_string: false, native_binary_column_type: true, retain_existing_data_on_backfill: false,
      allow_existing_tables_for_new_bindings: true, always_drop_tables_on_backfill: false,
    });
  });
});

describe('resource config and path', () => {
  it('rejects a missing table', () => {
    assert.throws(() => parseResourceConfig({ schema: 'x' }), { message: 'resource config: table is required' });
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
