// The per-binding capture state, in upstream's shape and with upstream's sweep rules (estuary/connectors
// filesource: `bindingStateV1.<stateKey>` = {minBound, maxBound, maxMod, path, records, complete}), so
// that Sluice's image and upstream's can replace each other on a live task:
// - upstream decodes strictly (unknown fields refused) and then requires maxBound > minBound,
//   maxMod > minBound, maxBound > maxMod, and records = 0 with complete = false when path is "";
// - a sweep starts by setting maxBound to the horizon (now + 2 s, whole seconds) unless a crashed sweep
//   left one; the file is skipped when state.path > path, when it is the completed state.path, when its
//   modification time is ≤ minBound (unchanged) or ≥ maxBound (newer than the sweep); otherwise maxMod
//   is raised to it, path set, records counted, complete set at its end (records back to 0);
// - a finished sweep leaves {minBound: <maxMod>, path: "", records: 0, complete: false} (maxBound and
//   maxMod null, i.e. removed by the merge patch).
// Sluice's resume extras (etag, byteOffset, csv, parquet) exist only while a file is mid-transfer: every
// checkpoint that completes a file or a sweep removes them (merge-patch null). Sluice's own earlier
// states (path = the URL, minBound = maxMod once complete) are read too and rewritten at the sweep's end.
import { ConfigError } from './errors.ts';
import type { CsvResume } from './csv.ts';
import type { ParquetPosition } from './parquet-capture.ts';

export const ZERO_TIME = '0001-01-01T00:00:00Z';
/** Upstream's TimeHorizonDelta for this connector. */
export const HORIZON_DELTA_MS = 2000;

/** Upstream's fields (times as RFC 3339 strings, null = absent). */
export interface SweepState {
  minBound: string;
  maxBound: string | null;
  maxMod: string | null;
  path: string;
  records: number;
  complete: boolean;
}

/** Sluice's extras, present only while a file is mid-transfer. */
export interface ResumeExtras {
  /** ETag of the version being read. */
  etag: string | null;
  /** Raw byte offset where record `records` starts (uncompressed UTF-8 CSV/JSON only), or null. */
  byteOffset: number | null;
  /** CSV header names and dialect, needed to parse from byteOffset. */
  csv: CsvResume | null;
  /** Parquet: the row group and row where record `records` is. */
  parquet: ParquetPosition | null;
}

export type BindingState = SweepState & ResumeExtras;

const EXTRAS_NONE: ResumeExtras = { etag: null, byteOffset: null, csv: null, parquet: null };

/** A time as Go's encoding/json writes a time.Time (RFC 3339, fraction without trailing zeros). */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d*?)0+Z$/, (_m, digits: string) => (digits ? `.${digits}Z` : 'Z'));
}

/** The sweep's horizon: now + 2 s, rounded to the nearest second, as upstream. */
export function horizonOf(nowMs: number): number {
  return Math.round((nowMs + HORIZON_DELTA_MS) / 1000) * 1000;
}

function timeOf(value: string, field: string, key: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new ConfigError(`the capture state of binding '${key}' is invalid: ${field} '${value}' is not an RFC 3339 time; reset the binding's state (or fix it)`);
  return ms;
}

/** Milliseconds of a state time (null for null). */
export function msOf(value: string | null, field = 'time', key = ''): number | null {
  return value === null ? null : timeOf(value, field, key);
}

/**
 * Reads one binding's state as upstream would (its types and Validate rules), also accepting Sluice's
 * earlier shape. `url` is the configured URL without credentials and query, `name` the file name:
 * an earlier Sluice state of the same URL becomes a state of that file name.
 */
export function readState(raw: unknown, key: string, file: { name: string; url: string }): BindingState {
  const fresh: BindingState = { minBound: ZERO_TIME, maxBound: null, maxMod: null, path: '', records: 0, complete: false, ...EXTRAS_NONE };
  if (raw === undefined || raw === null) return fresh;
  const bad = (what: string): never => { throw new ConfigError(`the capture state of binding '${key}' is invalid: ${what}; reset the binding's state (or fix it)`); };
  if (typeof raw !== 'object' || Array.isArray(raw)) return bad(`expected an object, got ${JSON.stringify(raw)}`);
  const r = raw as Record<string, unknown>;
  const str = (f: string): string | null => {
    const v = r[f];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') return bad(`${f} must be a string, got ${JSON.stringify(v)}`);
    return v;
  };
  const s: BindingState = { ...fresh };
  s.minBound = str('minBound') ?? ZERO_TIME;
  s.maxBound = str('maxBound');
  s.maxMod = str('maxMod');
  s.path = str('path') ?? '';
  if (r['records'] !== undefined && r['records'] !== null) {
    if (typeof r['records'] !== 'number' || !Number.isSafeInteger(r['records'])) return bad(`records must be an integer, got ${JSON.stringify(r['records'])}`);
    s.records = r['records'];
  }
  if (r['complete'] !== undefined && r['complete'] !== null) {
    if (typeof r['complete'] !== 'boolean') return bad(`complete must be a boolean, got ${JSON.stringify(r['complete'])}`);
    s.complete = r['complete'];
  }
  s.etag = str('etag');
  if (typeof r['byteOffset'] === 'number' && Number.isSafeInteger(r['byteOffset']) && r['byteOffset'] > 0) s.byteOffset = r['byteOffset'];
  if (r['csv'] && typeof r['csv'] === 'object' && !Array.isArray(r['csv'])) s.csv = r['csv'] as CsvResume;
  if (r['parquet'] && typeof r['parquet'] === 'object' && !Array.isArray(r['parquet'])) s.parquet = r['parquet'] as ParquetPosition;
  const minBound = timeOf(s.minBound, 'minBound', key);
  const maxMod = msOf(s.maxMod, 'maxMod', key);
  const maxBound = msOf(s.maxBound, 'maxBound', key);

  // Sluice's earlier shape: path is the URL, and a complete file has minBound = maxMod.
  if (s.path.includes('://')) {
    let same = false;
    try {
      const u = new URL(s.path);
      u.search = '';
      u.hash = '';
      same = u.toString() === file.url;
    } catch {
      // not a URL after all: a different file
    }
    if (s.complete || !same) {
      // Done with (or no longer configured): what a finished sweep leaves, minBound from the last complete capture.
      const done = s.complete && maxMod !== null ? Math.max(maxMod, minBound) : minBound;
      return { ...fresh, minBound: formatTime(done) };
    }
    return { ...s, path: file.name, maxBound: null, ...(maxMod !== null && maxMod <= minBound ? { maxMod: null } : {}) };
  }

  // Upstream's Validate.
  if (maxBound !== null && !(maxBound > minBound)) bad('expected maxBound > minBound');
  if (maxMod !== null && !(maxMod > minBound)) bad('expected maxMod > minBound');
  if (maxMod !== null && maxBound !== null && !(maxBound > maxMod)) bad('expected maxBound > maxMod');
  if (s.path === '') {
    if (s.records !== 0) bad('expected records == 0 if path is empty');
    if (s.complete) bad('expected !complete if path is empty');
  } else if (s.records < 0) bad('expected records >= 0');
  return s;
}

/** Why upstream's rules skip the file in this sweep, or null to capture it. */
export function skipReason(s: BindingState, name: string, modMs: number, size: number | null): string | null {
  if (Buffer.compare(Buffer.from(s.path), Buffer.from(name)) > 0) return `the state's file '${s.path}' sorts after '${name}' (a sweep over another file was interrupted); the next sweep captures it`;
  if (s.path === name && s.complete) return 'it was captured completely in this sweep';
  const minBound = Date.parse(s.minBound);
  if (!(modMs > minBound)) return `the file is unchanged since the last capture (Last-Modified ${formatTime(modMs)} is not after ${s.minBound})`;
  if (s.maxBound !== null && !(Date.parse(s.maxBound) > modMs)) return `its Last-Modified ${formatTime(modMs)} is not before this sweep's bound ${s.maxBound}; a later sweep captures it`;
  if (size === 0) return 'the file is empty (Content-Length: 0)';
  return null;
}

/** The checkpoint patch of a file being captured: the whole upstream state plus the extras. */
export function midFilePatch(s: SweepState, extras: ResumeExtras): BindingState {
  // A file without a name (a URL ending in "/") cannot have records in a state upstream accepts.
  return { ...s, records: s.path === '' ? 0 : s.records, complete: false, ...extras };
}

/** The checkpoint patch of a completed file: records back to 0, the extras removed. */
export function fileDonePatch(s: SweepState): BindingState {
  return { ...s, records: 0, complete: true, ...EXTRAS_NONE };
}

/** The state a finished sweep leaves (and the patch that writes it, removing everything else). */
export function sweepDonePatch(s: SweepState): BindingState {
  return { minBound: s.maxMod ?? s.minBound, maxBound: null, maxMod: null, path: '', records: 0, complete: false, ...EXTRAS_NONE };
}

/** True when applying `patch` (merge patch, nulls remove) to `raw` changes nothing. */
export function patchChanges(raw: unknown, patch: BindingState): boolean {
  const current = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null ? k in current && current[k] !== null : JSON.stringify(current[k]) !== JSON.stringify(v)) return true;
  }
  return Object.keys(current).some((k) => !(k in patch));
}
