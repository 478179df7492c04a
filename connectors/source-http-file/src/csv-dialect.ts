// CSV dialect detection (reference §4.5): the quote and delimiter that tokenize a sample into the most
// consistent field counts, each candidate tried with the CSV tokenizer (csv-core.ts) and a sink that only
// counts fields.
import { CsvCore, skipUnquoted } from './csv-core.ts';
import type { CsvSink } from './csv-core.ts';

/** Field counts per row (dialect detection needs no values). */
class FieldCounter implements CsvSink {
  readonly #ends: Uint8Array;
  counts: number[] = [];
  constructor(core: CsvCore) {
    this.#ends = core.ends;
  }
  rowStart(): void {}
  unquoted(src: Uint8Array, a: number, n: number): number {
    return skipUnquoted(this.#ends, src, a, n);
  }
  quoted(): void {}
  rowEnd(fields: number): boolean {
    this.counts.push(fields);
    return true;
  }
  rowAbort(): void {}
}

const QUOTE_CANDIDATES = ['"', "'", ''];
const DELIMITER_CANDIDATES = [',', '|', '\t', ';'];

interface Scored { quote: string; delimiter: string; good: number; mean: number; cv: number }

/** Picks quote and delimiter from a sample (UTF-8 bytes or text); configured values pin their dimension. */
export function detectDialect(sample: Uint8Array | string, complete: boolean, pinned: { quote?: string | null; delimiter?: string | null; escape: string; lineEnding: 'crlf' | string; headerCount?: number }): { quote: string; delimiter: string } {
  const bytes = typeof sample === 'string' ? Buffer.from(sample, 'utf8') : sample;
  const quotes = pinned.quote !== null && pinned.quote !== undefined ? [pinned.quote] : QUOTE_CANDIDATES;
  const delimiters = pinned.delimiter !== null && pinned.delimiter !== undefined ? [pinned.delimiter] : DELIMITER_CANDIDATES;
  let best: Scored | null = null;
  for (const quote of quotes) {
    for (const delimiter of delimiters) {
      const core = new CsvCore({ delimiter, quote, escape: pinned.escape, lineEnding: pinned.lineEnding });
      const counter = new FieldCounter(core);
      let counts: number[];
      try {
        core.push(bytes, counter);
        if (complete) core.end(counter);
        counts = counter.counts;
      } catch {
        counts = [];
      }
      const headerCount = pinned.headerCount ?? counts[0] ?? 0;
      const scores = counts.map((f) => (f > headerCount ? 0 : f - 1));
      const good = scores.filter((x) => x > 0).length;
      const mean = scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0;
      const sd = scores.length ? Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / scores.length) : 0;
      const cand: Scored = { quote, delimiter, good, mean, cv: mean > 0 ? sd / mean : Infinity };
      if (best === null || better(cand, best)) best = cand;
    }
  }
  return { quote: best?.quote ?? '"', delimiter: best?.delimiter ?? ',' };
}

function quoteRank(q: string): number {
  return q === '"' ? 2 : q === "'" ? 1 : 0;
}

/** True when `a` should replace the current best `b` (later candidates win remaining ties). */
function better(a: Scored, b: Scored): boolean {
  if (a.good !== b.good) return a.good > b.good;
  if (a.mean === 0 || b.mean === 0) {
    if (a.mean !== b.mean) return a.mean > b.mean;
  } else if (a.cv !== b.cv) return a.cv < b.cv;
  if (a.quote !== b.quote) return quoteRank(a.quote) > quoteRank(b.quote);
  return true;
}
