// The endpoint and resource JSON Schemas, written once as typed literals. The TypeScript types of
// the configuration are derived from them (the runtime's FromSchema); schemas/source-http-file.*.json are
// generated from these literals and checked for drift by test/schema.test.ts.
// Shapes follow SPEC.md "HTTP-file capture connector configuration" and, for titles, descriptions
// and value lists, the upstream connector (shared/reference/http-file.md §1).

import type { FromSchema } from '@sluice/runtime';

export type { FromSchema };

const constOption = <V extends string | null>(title: string, value: V) => ({ title, const: value, default: value }) as const;

/** WHATWG encoding names offered in the UI (any other WHATWG label is accepted too). */
export const ENCODING_NAMES = [
  'UTF-8', 'UTF-16LE', 'UTF-16BE', 'IBM866', 'ISO-8859-2', 'ISO-8859-3', 'ISO-8859-4', 'ISO-8859-5', 'ISO-8859-6',
  'ISO-8859-7', 'ISO-8859-8', 'ISO-8859-8-I', 'ISO-8859-10', 'ISO-8859-13', 'ISO-8859-14', 'ISO-8859-15', 'ISO-8859-16',
  'KOI8-R', 'KOI8-U', 'macintosh', 'windows-874', 'windows-1250', 'windows-1251', 'windows-1252', 'windows-1253',
  'windows-1254', 'windows-1255', 'windows-1256', 'windows-1257', 'windows-1258', 'x-mac-cyrillic', 'GBK', 'gb18030',
  'Big5', 'EUC-JP', 'ISO-2022-JP', 'Shift_JIS', 'EUC-KR',
] as const;

const csvConfigSchema = {
  type: 'object',
  title: 'CSV Options',
  description: 'How the CSV file is laid out; every option left unset is detected automatically.',
  properties: {
    delimiter: {
      title: 'Delimiter',
      description: 'The delimiter that separates values within each row. Only single-byte delimiters are supported.',
      default: null,
      order: 0,
      oneOf: [
        constOption('Comma (",")', ','),
        constOption('Pipe ("|")', '|'),
        constOption('Space (0x20)', ' '),
        constOption('Semicolon (";")', ';'),
        constOption('Tab (0x09)', '\t'),
        constOption('Vertical Tab (0x0B)', '\u000b'),
        constOption('Unit Separator (0x1F)', '\u001f'),
        constOption('SOH (0x01)', '\u0001'),
        constOption('Auto', null),
      ],
    },
    encoding: {
      title: 'Encoding',
      description: 'The character encoding of the source file. If unspecified, then the parser will make a best-effort guess based on peeking at a small portion of the beginning of the file. If known, it is best to specify. Encodings are specified by their WHATWG label.',
      default: null,
      order: 1,
      // anyOf, not oneOf: a canonical name is also a label, and any WHATWG label is accepted in any case
      // (`latin1`, `utf8`, `ISO-8859-1`); the connector resolves it and refuses unknown ones.
      anyOf: [
        ...ENCODING_NAMES.map((name) => constOption(name, name)),
        { title: 'Other WHATWG label', description: 'Any WHATWG encoding label, case-insensitive, e.g. latin1 or utf8.', type: 'string', minLength: 1 },
        constOption('Auto', null),
      ],
    },
    errorThreshold: {
      title: 'Error Threshold',
      description: 'Allows a percentage of errors to be ignored without failing the entire parsing process. When this limit is exceeded, parsing halts.',
      type: 'integer',
      minimum: 0,
      maximum: 100,
      default: 0,
      order: 2,
    },
    escape: {
      title: 'Escape Character',
      description: 'The escape character, used to escape quotes within fields.',
      default: null,
      order: 3,
      oneOf: [constOption('Backslash (\\)', '\\'), constOption('Disable Escapes', ''), constOption('Auto', null)],
    },
    headers: {
      title: 'Headers',
      description: "Manually specified headers, which can be used in cases where the file itself doesn't contain a header row. If specified, then the parser will assume that the first row is data, not column names, and the column names given here will be used. The column names will be matched with the columns in the file by the order in which they appear here.",
      type: 'array',
      items: { type: 'string', title: 'Column Name', description: 'Name of one column, in file order.' },
      default: [],
      order: 4,
    },
    lineEnding: {
      title: 'Line Ending',
      description: 'The value that terminates a line. Only single-byte values are supported, with the exception of "\\r\\n" (CRLF), which will accept lines terminated by either a carriage return, a newline, or both.',
      default: null,
      order: 5,
      oneOf: [
        constOption('CRLF ("\\r\\n") (Windows)', '\r\n'),
        constOption('CR ("\\r")', '\r'),
        constOption('LF ("\\n")', '\n'),
        constOption('Record Separator (0x1E)', '\u001e'),
        constOption('Auto', null),
      ],
    },
    quote: {
      title: 'Quote Character',
      description: 'The character used to quote fields.',
      default: null,
      order: 6,
      oneOf: [
        constOption('Double Quote (")', '"'),
        constOption("Single Quote (')", "'"),
        constOption('Disable Quoting', ''),
        constOption('Auto', null),
      ],
    },
    skipLines: {
      title: 'Skip Lines',
      description: 'Skip a number of lines at the beginning of the file before parsing begins. This is useful for skipping over metadata that is sometimes added to the top of files.',
      type: 'integer',
      minimum: 0,
      default: 0,
      order: 7,
    },
  },
} as const;

const formatSchema = {
  title: 'Format',
  description: "Determines how to parse the contents. The default, 'Auto', will try to determine the format automatically based on the file extension or MIME type, if available.",
  type: 'object',
  default: { type: 'auto' },
  required: ['type'],
  discriminator: { propertyName: 'type' },
  order: 1,
  oneOf: [
    {
      title: 'Auto',
      description: 'Attempt to determine the format automatically, based on the file extension or associated content-type.',
      type: 'object',
      properties: { type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'auto', default: 'auto' } },
      required: ['type'],
    },
    {
      title: 'Avro',
      description: 'Avro object container files, as defined by the [avro spec](https://avro.apache.org/docs/current/spec.html#Object+Container+Files)',
      type: 'object',
      properties: { type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'avro', default: 'avro' } },
      required: ['type'],
    },
    {
      title: 'JSON',
      description: 'JSON objects separated by whitespace, typically a single newline. This format works for JSONL (a.k.a. JSON-newline), but also for any stream of JSON objects, as long as they have at least one character of whitespace between them.',
      type: 'object',
      properties: { type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'json', default: 'json' } },
      required: ['type'],
    },
    {
      title: 'CSV',
      description: 'Character Separated Values, such as comma-separated, tab-separated, etc.',
      type: 'object',
      properties: {
        type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'csv', default: 'csv' },
        config: csvConfigSchema,
      },
      required: ['type'],
    },
    {
      title: 'Protobuf',
      description: 'Parses a single protobuf message, using the given .proto file in the configuration.',
      type: 'object',
      properties: {
        type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'protobuf', default: 'protobuf' },
        config: {
          type: 'object',
          title: 'Protobuf Options',
          description: 'The message type and the .proto source that defines it.',
          properties: {
            message: {
              type: 'string',
              title: 'Message',
              description: 'The name of the protobuf Message to deserialize as. Must be defined within the given proto file.',
              order: 0,
            },
            protoFile: {
              type: 'string',
              title: 'Your .proto file',
              description: 'The contents of the .proto that defines the message type to deserialize.',
              multiline: true,
              order: 1,
            },
          },
          required: ['message', 'protoFile'],
        },
      },
      required: ['config', 'type'],
    },
    {
      title: 'W3C Extended Log',
      description: 'A W3C Extended Log file, as defined by the working group draft at: https://www.w3.org/TR/WD-logfile.html',
      type: 'object',
      properties: { type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'w3cExtendedLog', default: 'w3cExtendedLog' } },
      required: ['type'],
    },
    {
      title: 'Parquet',
      description: 'Apache Parquet files. Read with HTTP range requests when the server supports them (the footer, then one row group at a time), else from a temporary copy. Every codec (snappy, gzip, zstd, brotli, lz4) and nested columns; INT64 values keep every digit, timestamps become RFC 3339, decimals are numbers when a double holds them exactly and strings otherwise.',
      type: 'object',
      properties: { type: { type: 'string', title: 'Type', description: 'Format selector.', const: 'parquet', default: 'parquet' } },
      required: ['type'],
    },
  ],
} as const;

const parserSchema = {
  title: 'Parser Configuration',
  description: 'Configures how files are parsed',
  type: 'object',
  advanced: true,
  order: 2,
  properties: {
    compression: {
      title: 'Compression',
      description: "Determines how to decompress the contents. The default, 'Auto', will try to determine the compression automatically.",
      default: null,
      order: 0,
      oneOf: [
        constOption('GZip', 'gzip'),
        constOption('Zip Archive', 'zip'),
        constOption('Zstandard', 'zstd'),
        constOption('None', 'none'),
        constOption('Auto', null),
      ],
    },
    format: formatSchema,
    defaultOffset: {
      title: 'Default Timezone Offset',
      description: 'The default timezone to use when parsing timestamps that do not have a timezone. Timezones must be specified as an +/-HH:MM offset, defaults to +00:00.',
      type: 'string',
      pattern: '^[+-][0-9]{2}:[0-9]{2}$',
      default: '+00:00',
      order: 2,
    },
  },
} as const;

/**
 * Parser options upstream accepts but leaves out of its schema (flow crates/parser: `schemars(skip)`), so
 * they are not in the spec either; checkConfig checks their types against this schema. What they do (as the
 * upstream connector does, see docs/architecture.md): addRecordOffset — where the record offset goes
 * (default /_meta/offset); addValues — constant values added to every document (/_meta/file is always
 * the file name); contentType / contentEncoding — used when the response has no such header; filename
 * — the name used for format and compression detection instead of the URL's last path segment.
 */
export const hiddenParserOptionsSchema = {
  type: 'object',
  properties: {
    addRecordOffset: { type: 'string', description: 'JSON pointer of the record offset in each document.' },
    addValues: { type: 'object', description: 'Values added to each document, by JSON pointer.' },
    filename: { type: 'string', description: 'File name used for format and compression detection.' },
    contentType: { type: 'string', description: 'Content type used when the response has none.' },
    contentEncoding: { type: 'string', description: 'Content encoding used when the response has none.' },
  },
} as const;

export const configSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'HTTP File Source',
  type: 'object',
  required: ['url'],
  properties: {
    url: {
      type: 'string',
      title: 'HTTP File URL',
      description: 'The HTTP URL of the source file to capture.',
      order: 0,
    },
    credentials: {
      title: 'Credentials',
      description: 'User credentials, if required to access the data at the HTTP URL.',
      type: 'object',
      order: 1,
      oneOf: [
        {
          title: 'Basic Authentication',
          type: 'object',
          properties: {
            user: { type: 'string', title: 'Username', description: 'Username, if required to access the HTTP endpoint.', secret: true, order: 0 },
            password: { type: 'string', title: 'Password', description: 'Password, if required to access the HTTP endpoint.', secret: true, order: 1 },
          },
        },
      ],
    },
    parser: parserSchema,
    headers: {
      title: 'Headers',
      description: 'Additional HTTP headers sent with every request for the file.',
      type: 'object',
      order: 3,
      properties: {
        items: {
          title: 'Additional HTTP Headers',
          description: 'Additional HTTP headers when requesting the file. These are uncommon.',
          type: 'array',
          items: {
            type: 'object',
            title: 'Header',
            description: 'One HTTP header.',
            properties: {
              key: { type: 'string', title: 'Header Key', description: 'Name of the header.', order: 0 },
              value: { type: 'string', title: 'Header Value', description: 'Value of the header (stored encrypted).', secret: true, order: 1 },
            },
          },
        },
        followRedirects: {
          title: 'Send Headers and Credentials on Redirects to Other Origins',
          description: "Off (the default): when the server redirects to another scheme, host or port, the additional headers and the credentials are not sent there. On: they are sent to every redirect target, which hands these secrets to whatever server the redirect names. Upstream's connector has no such setting.",
          type: 'boolean',
          default: false,
        },
      },
    },
  },
} as const;

export const resourceSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://github.com/estuary/connectors/filesource/resource',
  title: 'Resource Spec',
  type: 'object',
  properties: {
    stream: {
      type: 'string',
      title: 'Stream to capture from',
      description: 'Name of the dataset: the binding for the file.',
      minLength: 1,
      'x-collection-name': true,
    },
  },
  required: ['stream'],
} as const;

type SchemaEndpointConfig = FromSchema<typeof configSchema>;
/** The parser config: the spec's options and the hidden ones upstream accepts too. */
export type ParserConfig = NonNullable<SchemaEndpointConfig['parser']> & FromSchema<typeof hiddenParserOptionsSchema>;
export type EndpointConfig = Omit<SchemaEndpointConfig, 'parser'> & { parser?: ParserConfig };
export type FormatConfig = NonNullable<ParserConfig['format']>;
export type CsvConfig = NonNullable<Extract<FormatConfig, { type: 'csv' }>['config']>;
export type ProtobufConfig = Extract<FormatConfig, { type: 'protobuf' }>['config'];
export type Compression = NonNullable<ParserConfig['compression']>;
export type ResourceConfig = FromSchema<typeof resourceSchema>;
