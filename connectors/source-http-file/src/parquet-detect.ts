// Whether a file is Parquet and may be read as one — the checks every capture and discover makes, kept apart
// from parquet-capture.ts so that the connector loads the Parquet reader (hyparquet and the decoder thread,
// ~30 modules) only for a Parquet file: a CSV capture's spec, validate, apply and open never load it (issue 16).
import { ConfigError } from './errors.ts';
import type { EndpointConfig } from './schema.ts';

const PAR1 = [0x50, 0x41, 0x52, 0x31];

/** The body starts with Parquet's magic `PAR1`. */
export function hasParquetMagic(head: Uint8Array | undefined): boolean {
  return head !== undefined && head.length >= 4 && PAR1.every((b, i) => head[i] === b);
}

/**
 * Why the file is Parquet before reading it (explicit format, a `.parquet` name, the Content-Type), or null.
 * Magic detection (`PAR1`) happens on the body's first bytes, when the format is auto.
 */
export function parquetBy(config: EndpointConfig, names: string[], contentType: string | null): string | null {
  const format = config.parser?.format?.type;
  if (format === 'parquet') return 'the configured format';
  if (format !== undefined && format !== 'auto') return null;
  // The last known extension decides (as formats.ts): `a.parquet.csv` is CSV.
  for (const name of names) {
    const exts = name.toLowerCase().split('.').slice(1);
    for (let i = exts.length - 1; i >= 0; i--) {
      const e = exts[i] as string;
      if (e === 'parquet') return `the name '${name}'`;
      if (['csv', 'tsv', 'json', 'jsonl', 'ndjson', 'avro', 'xls', 'xlsx', 'xlsm', 'xml', 'ods'].includes(e)) return null;
    }
  }
  const essence = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (essence === 'application/vnd.apache.parquet' || essence === 'application/x-parquet') return `the Content-Type '${essence}'`;
  return null;
}

/** Refuses an outer compression: Parquet compresses its own pages and is read by position. */
export function checkParquetCompression(config: EndpointConfig, names: string[], contentEncoding: string | null): void {
  const c = config.parser?.compression;
  if (c && c !== 'none') throw new ConfigError(`parser.compression is '${c}', but a Parquet file cannot have an outer compression: Parquet compresses its own pages, so serve the .parquet file itself and set compression to None or Auto`);
  const compressed = names.find((n) => /\.(gz|gzip|zst|zstd|zip|bz2)$/i.test(n));
  if (compressed) throw new ConfigError(`'${compressed}' is a compressed Parquet file, which cannot be read by position: Parquet compresses its own pages, so serve the .parquet file itself`);
  if (contentEncoding && !/^\s*identity\s*$/i.test(contentEncoding)) throw new ConfigError(`the server sends the Parquet file with Content-Encoding '${contentEncoding}', which cannot be read by byte ranges; serve it without a Content-Encoding`);
}
