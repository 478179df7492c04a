// Generated fixtures: Avro container files (every codec), protobuf messages, compressed files.
import { deflateRawSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { createRequire } from 'node:module';
import avro from 'avsc';
import { zipSync } from 'fflate';

const require = createRequire(import.meta.url);
const snappy = require('snappyjs') as { compress(b: Uint8Array): Uint8Array };

export const AVRO_SCHEMA = {
  type: 'record', name: 'Ride', namespace: 'acme', fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: ['null', 'string'] },
    { name: 'either', type: ['int', 'string'] },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 6, scale: 2 } },
    { name: 'raw', type: 'bytes' },
    { name: 'ratio', type: 'double' },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['BIKE', 'SCOOTER'] } },
    { name: 'tags', type: { type: 'map', values: 'int' } },
    { name: 'stops', type: { type: 'array', items: 'string' } },
  ],
};

export function avroRecord(i: number): Record<string, unknown> {
  return {
    id: i, name: i % 2 ? `n${i}` : null, either: i % 3 ? i : `s${i}`, at: 1_600_000_000_000 + i, day: 18_000 + i,
    price: Buffer.from([0, i % 256]), raw: Buffer.from(`r${i}`), ratio: i === 1 ? Number.NaN : i / 4, kind: i % 2 ? 'BIKE' : 'SCOOTER',
    tags: { t: i }, stops: [`a${i}`],
  };
}

export function expectedAvroDoc(i: number): Record<string, unknown> {
  const at = new Date(1_600_000_000_000 + i);
  const ms = at.getUTCMilliseconds();
  return {
    id: i, name: i % 2 ? `n${i}` : null, either: i % 3 ? i : `s${i}`,
    at: `${at.toISOString().slice(0, 19)}${ms ? `.${String(ms).padStart(3, '0').replace(/0+$/, '')}` : ''}Z`,
    day: new Date((18_000 + i) * 86_400_000).toISOString().slice(0, 10), price: [0, i % 256], raw: Buffer.from(`r${i}`).toString('base64'),
    ratio: i === 1 ? 'NaN' : i / 4, kind: i % 2 ? 'BIKE' : 'SCOOTER', tags: { t: i }, stops: [`a${i}`],
  };
}

function zigzag(n: number): Buffer {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  const out: number[] = [];
  while (z >= 0x80) { out.push((z & 0x7f) | 0x80); z = Math.floor(z / 128); }
  out.push(z);
  return Buffer.from(out);
}

function avroBytes(s: string | Buffer): Buffer {
  const b = Buffer.from(s);
  return Buffer.concat([zigzag(b.length), b]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) c = (CRC_TABLE[(c ^ x) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const CODEC_IMPL: Record<string, (b: Buffer) => Buffer> = {
  null: (b) => b,
  deflate: (b) => deflateRawSync(b),
  zstandard: (b) => zstdCompressSync(b),
  snappy: (b) => {
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(b));
    return Buffer.concat([Buffer.from(snappy.compress(b)), crc]);
  },
};

/** An Avro object container file written by hand (so every codec is covered), `perBlock` records a block. */
export function avroFile(count: number, codec = 'null', perBlock = 3): Buffer {
  const type = avro.Type.forSchema(AVRO_SCHEMA as any, { wrapUnions: 'auto' });
  const sync = Buffer.from('0123456789abcdef');
  const meta = Buffer.concat([zigzag(2), avroBytes('avro.schema'), avroBytes(JSON.stringify(AVRO_SCHEMA)), avroBytes('avro.codec'), avroBytes(codec), zigzag(0)]);
  const parts: Buffer[] = [Buffer.from('Obj\x01', 'latin1'), meta, sync];
  for (let start = 0; start < count; start += perBlock) {
    const n = Math.min(perBlock, count - start);
    const data = Buffer.concat(Array.from({ length: n }, (_, k) => type.toBuffer(avroRecord(start + k))));
    const compressed = (CODEC_IMPL[codec] as (b: Buffer) => Buffer)(data);
    parts.push(zigzag(n), zigzag(compressed.length), compressed, sync);
  }
  return Buffer.concat(parts);
}

export const PROTO = `
syntax = "proto3";
package transit_realtime;
message FeedEntity { string id = 1; int64 timestamp = 2; VehicleKind kind = 3; bytes blob = 4; string route_id = 5; }
enum VehicleKind { BUS = 0; TRAM = 1; }
message FeedMessage { repeated FeedEntity entity = 1; uint64 header_time = 2; }
`;

export { gzipSync, zstdCompressSync, zipSync };

// A CloudFront-style log written for these tests: a #Version line, #Fields, one tab-separated row.
export const W3C_LOG = '#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query time-taken\n' +
  '2024-03-05\t08:15:02\tams1\t2211\t192.0.2.10\tGET\tfiles.example.test\t/a.csv\t404\t-\tcurl/8.5.0\t-\t0.031\n';

// Japanese prefecture names as CSV (header: two columns), for Shift_JIS detection; encode with iconv-lite.
export const JAPANESE_CSV = '県名,県庁所在地\n山形県,山形市\n北海道,札幌市\n東京都,新宿区\n大阪府,大阪市\n沖縄県,那覇市\n福岡県,福岡市\n静岡県,静岡市\n宮城県,仙台市\n愛知県,名古屋市\n';
