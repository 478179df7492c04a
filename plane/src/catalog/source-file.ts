// A parsed YAML or JSON file that remembers where every value came from, so a JSON pointer into the
// parsed value maps back to a line and column of the file (for catalog error messages).
//
// Speed (issue 17.10: 10,000 collections in < 5 s): the `yaml` library, which gives positions, parses at
// ~2–4 µs a byte; js-yaml at ~0.4. Values come from js-yaml with a schema that resolves scalars exactly as
// YAML 1.2's core schema does (as `yaml` does: no `1_000` numbers, no timestamps, no merge keys), and the
// positioned document is built only when a position is asked for (an error). Anything js-yaml refuses (syntax
// errors, duplicate keys) and any text that may hold aliases (YAML bombs: `yaml` counts alias expansions,
// js-yaml would share nodes that later copies expand) goes through `yaml`, whose messages are the ones shown.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import jsYaml from 'js-yaml';
import { parsePointer } from '@sluice/runtime';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import type { JsonValue } from '@sluice/runtime';
import { CatalogError } from './errors.ts';

export interface Position { line: number; column: number }

/** Catalog, schema, config and document files larger than this are refused (a catalog is not a data file). */
export const MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024;

// YAML 1.2 core schema scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution), as `yaml` resolves them.
const CORE_SCHEMA = jsYaml.FAILSAFE_SCHEMA.extend({
  implicit: [
    new jsYaml.Type('tag:yaml.org,2002:null', {
      kind: 'scalar',
      resolve: (s: string) => s === '' || s === '~' || s === 'null' || s === 'Null' || s === 'NULL',
      construct: () => null,
      predicate: (v: unknown) => v === null,
    }),
    new jsYaml.Type('tag:yaml.org,2002:bool', {
      kind: 'scalar',
      resolve: (s: string) => /^(true|True|TRUE|false|False|FALSE)$/.test(s),
      construct: (s: string) => s === 'true' || s === 'True' || s === 'TRUE',
      predicate: (v: unknown) => typeof v === 'boolean',
    }),
    new jsYaml.Type('tag:yaml.org,2002:int', {
      kind: 'scalar',
      resolve: (s: string) => /^([-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/.test(s),
      construct: (s: string) => s.startsWith('0o') ? parseInt(s.slice(2), 8) : s.startsWith('0x') ? parseInt(s.slice(2), 16) : Number(s),
      predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
    }),
    new jsYaml.Type('tag:yaml.org,2002:float', {
      kind: 'scalar',
      resolve: (s: string) => /^([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$/.test(s),
      construct: (s: string) => {
        const m = /^([-+]?)\.(inf|Inf|INF)$/.exec(s);
        if (m) return m[1] === '-' ? -Infinity : Infinity;
        if (/^\.(nan|NaN|NAN)$/.test(s)) return NaN;
        return Number(s);
      },
      predicate: (v: unknown) => typeof v === 'number',
    }),
  ],
});

// `yaml` (72 CommonJS modules, ~50 ms of every plane start) loads only when a position is asked for or the text
// may hold aliases: a catalog that js-yaml parses never needs it.
let yamlModule: typeof Yaml | undefined;
const yaml = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml);

/** Text that may contain a YAML alias (`*name`) or anchor: parsed by `yaml`, which bounds alias expansion. */
const MAY_ALIAS = /(^|[\s,[{:-])[*&][^\s,\]}]/m;

export class SourceFile {
  readonly path: string;
  readonly value: JsonValue;
  readonly #text: string;
  #doc: Document | undefined;
  #lines: LineCounter | undefined;

  private constructor(path: string, value: JsonValue, text: string, doc?: Document, lines?: LineCounter) {
    this.path = path;
    this.value = value;
    this.#text = text;
    this.#doc = doc;
    this.#lines = lines;
  }

  static parse(path: string, text: string): SourceFile {
    if (!MAY_ALIAS.test(text)) {
      try {
        const value = jsYaml.load(text, { schema: CORE_SCHEMA, filename: path });
        return new SourceFile(path, (value ?? null) as JsonValue, text);
      } catch {
        // Reported below with `yaml`'s message and position.
      }
    }
    const { doc, lines } = positioned(text);
    if (doc.errors.length > 0) {
      throw new CatalogError(doc.errors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        return { file: path, line: pos.line, column: pos.col, pointer: '', message: `${firstLine(e.message)}; fix the YAML syntax` };
      }));
    }
    let value: JsonValue;
    try {
      value = (doc.toJS({ maxAliasCount: 1000 }) ?? null) as JsonValue;
    } catch (err) {
      throw new CatalogError([{ file: path, line: 1, column: 1, pointer: '', message: `cannot read YAML: ${(err as Error).message}` }]);
    }
    return new SourceFile(path, value, text, doc, lines);
  }

  /**
   * Reads a catalog (or schema, config, documents) file: a regular file of at most MAX_SOURCE_FILE_BYTES.
   * Devices (`/dev/zero`), FIFOs and directories are refused without reading them (a FIFO is opened
   * non-blocking, so a missing writer cannot hang the load).
   */
  static async read(path: string, from?: { file: string; pointer: string }): Promise<SourceFile> {
    return SourceFile.parse(path, await readSourceText(path, from));
  }

  /** Position of the value at `pointer`; for a missing member, the nearest existing parent. `key` points at the member's key. */
  locate(pointer: string, key = false): Position {
    if (this.#doc === undefined || this.#lines === undefined) {
      const { doc, lines } = positioned(this.#text);
      this.#doc = doc;
      this.#lines = lines;
    }
    const segments = parsePointer(pointer);
    let node: unknown = this.#doc.contents;
    let keyNode: unknown = null;
    for (const seg of segments) {
      const { isMap, isPair, isScalar, isSeq } = yaml();
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && (isScalar(p.key) ? String(p.key.value) : String(p.key)) === seg);
        if (!pair) break;
        keyNode = pair.key;
        node = pair.value;
      } else if (isSeq(node)) {
        const item = node.items[Number(seg)];
        if (item === undefined) break;
        keyNode = null;
        node = item;
      } else {
        break;
      }
    }
    const target = (key && keyNode ? keyNode : node) as YamlNode | null;
    const offset = target?.range?.[0] ?? 0;
    const pos = this.#lines.linePos(offset);
    return { line: pos.line, column: pos.col };
  }
}

function positioned(text: string): { doc: Document; lines: LineCounter } {
  const { LineCounter, parseDocument } = yaml();
  const lines = new LineCounter();
  // JSON is YAML 1.2, so one parser serves both and gives positions for both.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  return { doc, lines };
}

/** The text of a source file, refusing what is not a regular file under the size limit; CatalogError otherwise. */
export async function readSourceText(path: string, from?: { file: string; pointer: string }): Promise<string> {
  const fail = (reason: string): never => {
    if (from) {
      throw new CatalogError([{ file: from.file, line: 0, column: 0, pointer: from.pointer, message: `cannot read ${path}: ${reason}` }]);
    }
    throw new CatalogError([{ file: path, line: 0, column: 0, pointer: '', message: `cannot read catalog: ${reason}` }]);
  };
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'it is a directory, not a file' : (err as Error).message;
    return fail(from ? `${reason}; check the path (relative paths are resolved from the directory of ${from.file})` : reason);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) {
      const kind = st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : st.isDirectory() ? 'a directory' : st.isSocket() ? 'a socket' : 'not a regular file';
      return fail(`it is ${kind}; only regular files can be read (imports, schemas, configs and documents)`);
    }
    if (st.size > MAX_SOURCE_FILE_BYTES) {
      return fail(`it is ${st.size} bytes; files of more than ${MAX_SOURCE_FILE_BYTES} bytes (64 MiB) are refused`);
    }
    // Read at most one byte past the limit: a file that grows after the check is refused too.
    const buf = Buffer.allocUnsafe(Math.min(st.size, MAX_SOURCE_FILE_BYTES) + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n === buf.length) return fail('it grew while being read; try again once it is written');
    }
    return buf.toString('utf8', 0, n);
  } finally {
    await handle.close();
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
