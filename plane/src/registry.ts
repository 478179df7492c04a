// The built-in connectors: each is an npm bin in this repo and an image. A catalog image whose name
// ends in /source-http-file, /materialize-sqlserver or /materialize-sqlite runs the built-in bin as a
// process when no container engine is configured.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nodeFlagsOf } from '@sluice/runtime/launch';

export interface BuiltinConnector {
  name: string;
  protocol: 'capture' | 'materialize';
  /** Absolute path of the connector's bin (a .ts file run by the repo's Node). */
  bin: string;
  /** The image this connector is published as. */
  image: string;
  description: string;
}

const root = (p: string): string => fileURLToPath(new URL(`../../${p}`, import.meta.url));

export const BUILTIN_CONNECTORS: readonly BuiltinConnector[] = [
  {
    name: 'source-http-file',
    protocol: 'capture',
    bin: root('connectors/source-http-file/bin/source-http-file.js'),
    image: 'ghcr.io/sluice-dev/source-http-file:dev',
    description: 'capture one file over HTTP(S): CSV, JSON, Avro, Protobuf, W3C; zip/gzip/zstd; any charset',
  },
  {
    name: 'materialize-sqlserver',
    protocol: 'materialize',
    bin: root('connectors/materialize-sqlserver/bin/materialize-sqlserver.js'),
    image: 'ghcr.io/sluice-dev/materialize-sqlserver:v2',
    description: 'materialize collections into SQL Server tables (standard or delta updates)',
  },
  {
    name: 'materialize-sqlite',
    protocol: 'materialize',
    bin: root('connectors/materialize-sqlite/bin/materialize-sqlite.js'),
    image: 'ghcr.io/sluice-dev/materialize-sqlite:v1',
    description: 'materialize collections into an embedded SQLite file',
  },
];

export function builtinConnector(name: string): BuiltinConnector | undefined {
  return BUILTIN_CONNECTORS.find((c) => c.name === name);
}

/** The image's repository name without registry path, tag or digest: `ghcr.io/a/x:v1` → `x`. */
export function imageBaseName(image: string): string {
  const noDigest = image.replace(/@[a-z0-9]+:[0-9a-f]+$/i, '');
  const lastSlash = noDigest.lastIndexOf('/');
  const last = noDigest.slice(lastSlash + 1);
  const colon = last.indexOf(':');
  return colon === -1 ? last : last.slice(0, colon);
}

/**
 * The built-in connector a catalog `connector.image` stands for, when its name ends in
 * `/source-http-file`, `/materialize-sqlserver` or `/materialize-sqlite` (or is that bare name).
 */
export function builtinForImage(image: string): BuiltinConnector | undefined {
  return builtinConnector(imageBaseName(image));
}

/**
 * How to run a built-in connector as a process with the current Node and the Node flags its package declares
 * (`sluice.nodeFlags`, e.g. source-http-file's heap limits): passed here, the bin's launcher need not re-execute.
 */
export function builtinCommand(connector: BuiltinConnector): { command: string; args: string[] } {
  return { command: process.execPath, args: [...nodeFlagsOf(connector.bin), connector.bin] };
}

export function isInstalled(connector: BuiltinConnector): boolean {
  return existsSync(connector.bin);
}
