// Every generated statement is parsed with a grammar-based T-SQL parser: datafusion-sqlparser-rs (MsSqlDialect)
// compiled to WASM (@guanmingchiu/sqlparser-ts). Two T-SQL statement forms are outside its grammar; for those
// the statement is checked by its parts instead, and the test names the form:
//  - `ALTER TABLE t ADD c1 <type>, c2 <type>` (several columns in one ADD): each column definition is parsed
//    inside a CREATE TABLE, and a one-column ADD is parsed as a whole.
//  - `ALTER TABLE t ALTER COLUMN c <type> [NULL|NOT NULL]` (T-SQL's type change): the column definition is
//    parsed inside a CREATE TABLE.
// Statements that wrap another one in a literal (`EXEC(N'CREATE SCHEMA …')`) get the inner statement parsed too.
import { init, parse } from '@guanmingchiu/sqlparser-ts';

let ready: Promise<void> | undefined;
export async function grammarReady(): Promise<void> {
  ready ??= init();
  await ready;
}

export type ParseMode = 'whole' | 'alter-add-columns' | 'alter-column';

function parseOne(sql: string): void {
  const stmts = parse(sql, 'mssql') as unknown[];
  if (stmts.length !== 1) throw new Error(`expected exactly one statement, parsed ${stmts.length}:\n${sql}`);
}

/** Split a column list at top-level commas (commas inside parentheses, like DECIMAL(20, 2), stay). */
function splitTopLevel(list: string): string[] {
  const out: string[] = [];
  let depth = 0; let cur = ''; let quote: string | null = null;
  for (const ch of list) {
    if (quote !== null) { cur += ch; if (ch === quote) quote = null; continue; }
    if (ch === '"' || ch === "'" || ch === '[') { quote = ch === '[' ? ']' : ch; cur += ch; continue; }
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) { out.push(cur.trim()); cur = ''; continue; }
    cur += ch;
  }
  if (cur.trim() !== '') out.push(cur.trim());
  return out;
}

/** Parse one generated statement; returns how it was checked. Throws with the parser's message. */
export function assertTsql(sql: string): ParseMode {
  const addMany = /^ALTER TABLE (.+?) ADD\n([\s\S]+);$/.exec(sql);
  if (addMany !== null) {
    const cols = splitTopLevel(addMany[2]!);
    for (const c of cols) {
      parseOne(`CREATE TABLE grammar_check (${c});`);
      parseOne(`ALTER TABLE ${addMany[1]} ADD ${c};`);
    }
    return 'alter-add-columns';
  }
  const alterCol = /^ALTER TABLE (.+?) ALTER COLUMN (.+);$/.exec(sql);
  if (alterCol !== null && !sql.includes('\n')) {
    parseOne(`CREATE TABLE grammar_check (${alterCol[2]});`);
    return 'alter-column';
  }
  parseOne(sql);
  const inner = /EXEC\(N'((?:[^']|'')*)'\);$/.exec(sql);
  if (inner !== null) parseOne(`${inner[1]!.replaceAll("''", "'")};`);
  return 'whole';
}

/** Split a review script into statements: comment lines skipped, a statement ends with a line ending in `;`. */
export function statementsOf(script: string): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  for (const line of script.split('\n')) {
    if (cur.length === 0 && (line.startsWith('--') || line.trim() === '')) continue;
    cur.push(line);
    if (line.endsWith(';')) { out.push(cur.join('\n')); cur = []; }
  }
  if (cur.length > 0) throw new Error(`the script ends with an incomplete statement:\n${cur.join('\n')}`);
  return out;
}
