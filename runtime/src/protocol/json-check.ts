// A JSON grammar check that builds no values: is a text exactly one JSON object (RFC 8259, as JSON.parse reads
// it)? For a member that is only passed on as text (a store's `doc`, written to the destination as it came),
// JSON.parse would build every string and object just to throw them away: ~1.2 µs for a 330-byte document
// of 13 strings and a nested `_meta`, against ~0.4 µs for this check (one native regular-expression run).
//
// The expression is JSON's grammar unrolled to a fixed nesting depth (regular expressions cannot count
// brackets): an object whose values may be objects or arrays, theirs too, down to DEPTH levels of containers.
// A deeper text, or anything the expression rejects, answers false — the caller then parses it (JSON.parse
// gives the verdict and the error). So true always means JSON.parse would accept the text and return an object;
// false means nothing. Strings follow JSON.parse: any UTF-16 code unit but `"`, `\` and U+0000–U+001F, and the
// escapes \" \\ \/ \b \f \n \r \t \uXXXX; numbers, true, false, null; whitespace is space, tab, CR, LF.
// The grammar is LL(1) (each repetition starts with a character nothing else can), so the expression runs in
// linear time and fails fast; equivalence with JSON.parse is tested in json-check.test.ts.

const WS = '[ \\t\\n\\r]*';
// Unrolled: runs of plain characters, each escape followed by another run (no backtracking per character).
const STRING = '"[^"\\\\\\u0000-\\u001f]*(?:\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\\\\u0000-\\u001f]*)*"';
const NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
const SCALAR = `(?:${STRING}|${NUMBER}|true|false|null)`;
/** Levels of containers the expression follows (the object itself counts): `{"a":{"b":[1]}}` is 3. */
export const JSON_CHECK_DEPTH = 3;

function containers(value: string): { object: string; array: string } {
  const member = `${STRING}${WS}:${WS}${value}${WS}`;
  return {
    object: `\\{${WS}(?:${member}(?:,${WS}${member})*)?\\}`,
    array: `\\[${WS}(?:${value}${WS}(?:,${WS}${value}${WS})*)?\\]`,
  };
}

function objectExpression(depth: number): RegExp {
  let value = SCALAR;
  let object = '';
  for (let d = 1; d <= depth; d++) {
    const c = containers(value);
    object = c.object;
    value = `(?:${SCALAR}|${c.object}|${c.array})`;
  }
  return new RegExp(`^${WS}${object}${WS}$`);
}

const OBJECT = objectExpression(JSON_CHECK_DEPTH);

/**
 * True when `text` is one JSON object that JSON.parse accepts (nested at most JSON_CHECK_DEPTH levels);
 * false when it is not, or is deeper, or too large for the expression's backtracking stack: parse it then.
 */
export function isJsonObjectText(text: string): boolean {
  try {
    return OBJECT.test(text);
  } catch {
    // A RegExp stack overflow on a huge object: no verdict.
    return false;
  }
}
