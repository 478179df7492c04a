// Catalog errors: every problem found while loading a catalog, each with file, line, JSON pointer and
// what to do. Reported together in one error so the author fixes them in one pass.
import { SluiceError } from '@sluice/runtime';

export interface CatalogProblem {
  file: string;
  /** 1-based; 0 when unknown. */
  line: number;
  column: number;
  /** JSON pointer of the offending value within `file`. */
  pointer: string;
  message: string;
}

/**
 * `s` with control characters (C0, DEL, C1), bidi controls and line/paragraph separators written as `\uXXXX`, so
 * text from a catalog (a hostile name, a pointer made of one) cannot rewrite a terminal or a log line.
 */
export function escapeControls(s: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function formatProblem(p: CatalogProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  return escapeControls(`${where}: ${p.pointer === '' ? '(document root)' : p.pointer}: ${p.message}`);
}

export class CatalogError extends SluiceError {
  readonly problems: CatalogProblem[];
  constructor(problems: CatalogProblem[], options: { cause?: unknown } = {}) {
    const head = problems.length === 1 ? 'catalog error' : `${problems.length} catalog errors`;
    super('CATALOG', `${head}:\n${problems.map((p) => '  ' + formatProblem(p)).join('\n')}`, { ...options, fields: { problems } });
    this.problems = problems;
  }
}
