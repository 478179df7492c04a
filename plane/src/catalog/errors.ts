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

export function formatProblem(p: CatalogProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  return `${where}: ${p.pointer === '' ? '(document root)' : p.pointer}: ${p.message}`;
}

export class CatalogError extends SluiceError {
  readonly problems: CatalogProblem[];
  constructor(problems: CatalogProblem[], options: { cause?: unknown } = {}) {
    const head = problems.length === 1 ? 'catalog error' : `${problems.length} catalog errors`;
    super('CATALOG', `${head}:\n${problems.map((p) => '  ' + formatProblem(p)).join('\n')}`, { ...options, fields: { problems } });
    this.problems = problems;
  }
}
