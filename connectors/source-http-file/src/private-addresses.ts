// HTTP_FILE_BLOCK_PRIVATE_ADDRESSES: the addresses refused (loopback, private, shared, link-local, unspecified,
// unique-local) and a DNS lookup that fails for them. Moved out of http.ts (a pure move).
import { createRequire } from 'node:module';
import type * as Dns from 'node:dns';
import type * as Net from 'node:net';
import type { LookupFunction } from 'node:net';

// Loaded with require: an ESM import of node:http builds its ESM facade, which reads every export and
// so loads undici (fetch, WebSocket) too — ~45 ms of start-up this connector never uses.
const require = createRequire(import.meta.url);
const dns = require('node:dns') as typeof Dns;
const net = require('node:net') as typeof Net;

/** Addresses refused with blockPrivateAddresses: loopback, private, shared (CGNAT), link-local, unspecified, unique-local. */
const PRIVATE = new net.BlockList();
for (const [a, p] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) PRIVATE.addSubnet(a, p, 'ipv4');
for (const [a, p] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) PRIVATE.addSubnet(a, p, 'ipv6');

/** True for an address blockPrivateAddresses refuses (IPv4-mapped IPv6 addresses are checked as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1] as string, 'ipv4');
  const family = net.isIP(address);
  if (family === 0) return false;
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export function privateAddressError(host: string, address: string): Error {
  return Object.assign(new Error(`refusing to connect to ${host} (${address}): loopback and private addresses are blocked (HTTP_FILE_BLOCK_PRIVATE_ADDRESSES is set)`), { code: 'ERR_PRIVATE_ADDRESS' });
}

/** A dns lookup that fails for private addresses (Node calls it with `all: true` when it races address families). */
export const lookupPublicOnly: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) { callback(err, '', 4); return; }
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) { callback(privateAddressError(hostname, bad.address) as NodeJS.ErrnoException, '', 4); return; }
    if (options.all) (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
    else callback(null, (addresses[0] as { address: string }).address, (addresses[0] as { family: number }).family);
  });
};
