// The collation every string column gets, chosen once per endpoint from what the server offers
// (`sys.fn_helpcollations()` names like `Latin1_General_%_BIN%`): BIN2 over BIN, UTF-8 over not, the newest
// version first. On 2019+ that is Latin1_General_100_BIN2_UTF8 (strings as varchar, UTF-8); on 2017
// Latin1_General_100_BIN2 (strings as nvarchar, UTF-16).

export const COLLATIONS_QUERY = `SELECT name FROM sys.fn_helpcollations() WHERE name LIKE N'Latin1_General_%BIN%';`;

export const FALLBACK_COLLATION = 'Latin1_General_100_BIN2_UTF8';

function rank(name: string): [number, number, number, number] {
  const bin2 = /_BIN2(_|$)/i.test(name) ? 1 : 0;
  const utf8 = /_UTF8$/i.test(name) ? 1 : 0;
  const version = Number(/^Latin1_General_(\d+)_/i.exec(name)?.[1] ?? 0);
  const plain = /^Latin1_General_(\d+_)?BIN2?(_UTF8)?$/i.test(name) ? 1 : 0; // no _CI/_SC/_KS… modifiers
  return [plain, bin2, utf8, version];
}

/** The best binary collation among `names`, or undefined when the server offers none. */
export function chooseCollation(names: readonly string[]): string | undefined {
  const candidates = names.filter((n) => /^Latin1_General_/i.test(n) && /_BIN2?(_|$)/i.test(n));
  candidates.sort((a, b) => {
    const ra = rank(a); const rb = rank(b);
    for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return rb[i]! - ra[i]!;
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return candidates[0];
}

/** UTF-8 collations store Unicode in varchar; otherwise strings need nvarchar. */
export function stringBaseType(collation: string): 'varchar' | 'nvarchar' {
  return /UTF8/i.test(collation) ? 'varchar' : 'nvarchar';
}
