// A parsed YAML or JSON file that remembers where every value came from, so a JSON pointer into the
// parsed value maps back to a line and column of the file (for catalog error messages).
import { readFile } from 'node:fs/promises';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document, Node as YamlNode } from 'yaml';
import type { JsonValue } from '@sluice/runtime';
import { CatalogError } from './errors.ts';

export interface Position { line: number; column: number }

export class SourceFile {
  readonly path: string;
  readonly value: JsonValue;
  readonly #doc: Document;
  readonly #lines: LineCounter;

  private constructor(path: string, value: JsonValue, doc: Document, lines: LineCounter) {
    this.path = path;
    this.value = value;
    this.#doc = doc;
    this.#lines = lines;
  }

  static parse(path: string, text: string): SourceFile {
    const lines = new LineCounter();
    // JSON is YAML 1.2, so one parser serves both and gives positions for both.
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
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
    return new SourceFile(path, value, doc, lines);
  }

  static async read(path: string, from?: { file: string; pointer: string }): Promise<SourceFile> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message;
      if (from) {
        throw new CatalogError([{ file: from.file, line: 0, column: 0, pointer: from.pointer, message: `cannot read ${path}: ${reason}; check the path (relative paths are resolved from the directory of ${from.file})` }]);
      }
      throw new CatalogError([{ file: path, line: 0, column: 0, pointer: '', message: `cannot read catalog: ${reason}` }]);
    }
    return SourceFile.parse(path, text);
  }

  /** Position of the value at `pointer`; for a missing member, the nearest existing parent. `key` points at the member's key. */
  locate(pointer: string, key = false): Position {
    const segments = pointer === '' ? [] : pointer.slice(1).split('/').map(unescapePointer);
    let node: unknown = this.#doc.contents;
    let keyNode: unknown = null;
    for (const seg of segments) {
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

export function unescapePointer(seg: string): string {
  return seg.replace(/~1/g, '/').replace(/~0/g, '~');
}

export function escapePointer(seg: string): string {
  return seg.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function pointerOf(...segments: (string | number)[]): string {
  return segments.map((s) => '/' + escapePointer(String(s))).join('');
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
