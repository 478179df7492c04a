// Config errors that name the mistake. One helper for every connector (through ConfigValidator) and for the
// plane's catalog validation:
// - unknown keys are refused at every level, with the nearest allowed name ("did you mean 'delimiter'?"),
//   even where the schema leaves additionalProperties open (upstream's Go connectors decode strictly, so a
//   config with an unknown key never worked there either). Keys of every branch of a oneOf/anyOf are
//   allowed at its level (Go decodes them into one struct), and the IAM tokens Flow's runtime injects into
//   an object annotated `x-iam-auth` are allowed there;
// - oneOf/anyOf errors are reduced to the branch selected by the discriminator (`discriminator.propertyName`,
//   or a property every branch pins with `const`); an unknown discriminator value is listed against the
//   allowed ones; a oneOf of constants reads as an enum; without a discriminator, the one branch whose type
//   fits the value is kept.
// Messages name JSON pointers and schema facts, never a configuration value (values may be secrets), except a
// discriminator value, which is a selector.
import type { ErrorObject } from 'ajv';
import type { JsonObject, JsonSchema, JsonValue } from '../protocol/specs.ts';
import { escapePointerToken, resolvePointer, unescapePointerToken } from '../protocol/json-pointer.ts';

/** One problem: where (a JSON pointer into the value) and what. `key` when it is about the member's name. */
export interface ConfigProblem {
  pointer: string;
  message: string;
  key: boolean;
}

/** Keys Flow's runtime injects into a `credentials` object annotated `x-iam-auth` (go/auth/iam IAMTokens). */
export const IAM_INJECTED_KEYS: readonly string[] = [
  'aws_access_key_id', 'aws_secret_access_key', 'aws_session_token', 'gcp_access_token', 'azure_access_token',
];

export interface ExplainOptions {
  /**
   * Keys accepted beyond the schema, by the JSON pointer of the object that holds them (e.g. `'/parser'`):
   * fields the connector reads that its (upstream-identical) schema does not list.
   */
  tolerate?: Readonly<Record<string, readonly string[]>>;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isSchema(v: unknown): v is JsonSchema {
  return typeof v === 'boolean' || isObject(v);
}

/** Damerau–Levenshtein (optimal string alignment) distance, case-insensitive. */
function distance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate nearest to `word` when it is near enough to be a likely misspelling; else undefined. */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = distance(word, c);
    const limit = Math.max(1, Math.floor(Math.max(word.length, c.length) / 4));
    // A name is not a misspelling of one it shares nothing with (`y` is not a typo of `x`).
    if (d <= limit && d < Math.min(word.length, c.length) && d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/** `; did you mean 'x'?` or `; allowed: a, b` (or nothing when nothing is allowed). */
export function suggestion(word: string, allowed: readonly string[], quote = "'"): string {
  const near = closestName(word, allowed);
  if (near !== undefined) return `; did you mean ${quote}${near}${quote}?`;
  return allowed.length > 0 ? `; allowed: ${allowed.join(', ')}` : '';
}

function decodeSchemaPath(path: string): string {
  // ajv's schemaPath is a URI fragment: "#/properties/a%20b/oneOf/0".
  const p = path.startsWith('#') ? path.slice(1) : path;
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

/** The sub-schema at an ajv schemaPath (local to `root`), or undefined. */
export function schemaAt(root: JsonSchema, schemaPath: string): JsonValue | undefined {
  return resolvePointer(root, decodeSchemaPath(schemaPath));
}

function deref(root: JsonSchema, s: JsonValue | undefined, depth = 0): JsonValue | undefined {
  if (isObject(s) && typeof s.$ref === 'string' && s.$ref.startsWith('#') && depth < 16) {
    return deref(root, resolvePointer(root, decodeSchemaPath(s.$ref)), depth + 1);
  }
  return s;
}

/** The values a branch pins `prop` to (`const`, or `enum`), or undefined when it does not pin it. */
function pinned(root: JsonSchema, branch: JsonValue | undefined, prop: string): JsonValue[] | undefined {
  const b = deref(root, branch);
  if (!isObject(b) || !isObject(b.properties)) return undefined;
  const p = deref(root, b.properties[prop]);
  if (!isObject(p)) return undefined;
  if ('const' in p) return [p.const!];
  if (Array.isArray(p.enum)) return p.enum;
  return undefined;
}

/** The discriminating property of a oneOf/anyOf node, if any. */
function discriminatorOf(root: JsonSchema, node: JsonObject, branches: readonly JsonValue[]): string | undefined {
  const d = node.discriminator;
  if (isObject(d) && typeof d.propertyName === 'string') return d.propertyName;
  const first = deref(root, branches[0]);
  if (branches.length < 2 || !isObject(first) || !isObject(first.properties)) return undefined;
  return Object.keys(first.properties).find((prop) => branches.every((b) => pinned(root, b, prop) !== undefined));
}

function jsonType(v: JsonValue | undefined): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeFits(root: JsonSchema, branch: JsonValue | undefined, v: JsonValue | undefined): boolean {
  const b = deref(root, branch);
  if (!isObject(b)) return b !== false;
  if ('const' in b) return JSON.stringify(b.const) === JSON.stringify(v);
  if (Array.isArray(b.enum)) return b.enum.some((e) => JSON.stringify(e) === JSON.stringify(v));
  const t = b.type;
  if (t === undefined) return true;
  const types = Array.isArray(t) ? t : [t];
  const vt = jsonType(v);
  return types.some((x) => x === vt || (x === 'number' && vt === 'integer'));
}

function branchLabel(root: JsonSchema, branch: JsonValue | undefined): string {
  const b = deref(root, branch);
  if (!isObject(b)) return String(b);
  if (typeof b.title === 'string') return b.title;
  if ('const' in b) return JSON.stringify(b.const);
  if (b.type !== undefined) return Array.isArray(b.type) ? b.type.join(' or ') : String(b.type);
  return 'a value';
}

function at(pointer: string): string {
  return pointer === '' ? '(root)' : pointer;
}

/** Which branches of a oneOf/anyOf apply to `value`: the discriminated one(s), else those whose type fits. */
function selectBranches(root: JsonSchema, node: JsonObject, branches: readonly JsonValue[], value: JsonValue | undefined): number[] {
  const all = branches.map((_, i) => i);
  const d = discriminatorOf(root, node, branches);
  if (d !== undefined && isObject(value) && value[d] !== undefined) {
    const tag = JSON.stringify(value[d]);
    const hit = all.filter((i) => (pinned(root, branches[i], d) ?? []).some((x) => JSON.stringify(x) === tag));
    return hit.length > 0 ? hit : all;
  }
  const fit = all.filter((i) => typeFits(root, branches[i], value));
  return fit.length > 0 ? fit : all;
}

/**
 * Reduces ajv errors (allErrors) from validating `data` against `root`: each failed oneOf/anyOf keeps the
 * errors of the branch its discriminator (or the value's type) selects, or becomes one line listing what is
 * allowed. Returns the remaining errors plus problems that replaced union errors.
 */
export function reduceUnionErrors(root: JsonSchema, data: JsonValue | undefined, errors: readonly ErrorObject[]): { errors: ErrorObject[]; problems: ConfigProblem[] } {
  let errs = [...errors];
  const problems: ConfigProblem[] = [];
  const unions = errs.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf')
    .sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const u of unions) {
    if (!errs.includes(u)) continue; // inside a branch an outer union already dropped
    const node = schemaAt(root, u.schemaPath.slice(0, -(u.keyword.length + 1)));
    const branches = isObject(node) && Array.isArray(node[u.keyword]) ? node[u.keyword] as JsonValue[] : undefined;
    if (!isObject(node) || branches === undefined) continue;
    const inBranch = (e: ErrorObject, i: number) => e.schemaPath.startsWith(`${u.schemaPath}/${i}/`);
    const branchErrors = (i: number) => errs.filter((e) => inBranch(e, i));
    const failing = branches.map((_, i) => i).filter((i) => branchErrors(i).length > 0);
    if (failing.length < branches.length) continue; // some branch passed: "must match exactly one" stands as is
    const value = resolvePointer(data, u.instancePath);
    const dropAll = () => { errs = errs.filter((e) => e !== u && !branches.some((_, i) => inBranch(e, i))); };
    const keep = (i: number) => { errs = errs.filter((e) => e !== u && !branches.some((_, j) => j !== i && inBranch(e, j))); };

    const d = discriminatorOf(root, node, branches);
    if (d !== undefined && isObject(value)) {
      const allowed = branches.flatMap((b) => pinned(root, b, d) ?? []);
      const tag = value[d];
      if (tag === undefined) {
        dropAll();
        problems.push({ pointer: `${u.instancePath}/${escapePointerToken(d)}`, key: false, message: `is required; one of ${allowed.map((x) => JSON.stringify(x)).join(', ')}` });
        continue;
      }
      const hit = branches.map((_, i) => i).filter((i) => (pinned(root, branches[i], d) ?? []).some((x) => JSON.stringify(x) === JSON.stringify(tag)));
      if (hit.length === 1) {
        keep(hit[0]!);
        continue;
      }
      dropAll();
      const noun = u.instancePath === '' ? d : unescapePointerToken(u.instancePath.split('/').pop() ?? d);
      const shown = typeof tag === 'string' && tag.length <= 40 ? JSON.stringify(tag) : `(a ${jsonType(tag)})`;
      const names = allowed.map((x) => JSON.stringify(x));
      const near = typeof tag === 'string' ? closestName(tag, allowed.filter((x): x is string => typeof x === 'string')) : undefined;
      problems.push({
        pointer: `${u.instancePath}/${escapePointerToken(d)}`, key: false,
        message: `${shown} is not a known ${noun}; allowed: ${names.join(', ')}${near !== undefined ? ` (did you mean ${JSON.stringify(near)}?)` : ''}`,
      });
      continue;
    }
    // A union of constants is an enum.
    const consts = branches.map((b) => deref(root, b));
    if (consts.every((b) => isObject(b) && 'const' in b)) {
      dropAll();
      const allowed = consts.map((b) => (b as JsonObject).const!);
      const near = typeof value === 'string' ? closestName(value, allowed.filter((x): x is string => typeof x === 'string')) : undefined;
      problems.push({ pointer: u.instancePath, key: false, message: `must be one of ${allowed.map((x) => JSON.stringify(x)).join(', ')}${near !== undefined ? ` (did you mean ${JSON.stringify(near)}?)` : ''}` });
      continue;
    }
    const fit = selectBranches(root, node, branches, value);
    if (fit.length === 1) {
      keep(fit[0]!);
      continue;
    }
    dropAll();
    const labels = [...new Set(branches.map((b) => branchLabel(root, b)))];
    problems.push({ pointer: u.instancePath, key: false, message: `must be ${u.keyword === 'oneOf' ? 'exactly one' : 'one'} of: ${labels.join('; ')}` });
  }
  return { errors: errs, problems };
}

interface Merged {
  props: Map<string, JsonValue[]>;
  /** Keys allowed without a schema to check under them (other union branches, injected keys). */
  alsoAllowed: Set<string>;
  patterns: RegExp[];
  extra: JsonValue[];
  items: JsonValue[];
  closed: boolean;
  open: boolean;
}

function mergeInto(root: JsonSchema, s: JsonValue | undefined, value: JsonValue | undefined, m: Merged, depth: number): void {
  if (depth > 32 || s === undefined) return;
  if (s === true) {
    m.open = true;
    return;
  }
  if (!isObject(s)) return;
  if (typeof s.$ref === 'string') {
    const target = s.$ref.startsWith('#') ? resolvePointer(root, decodeSchemaPath(s.$ref)) : undefined;
    if (target === undefined) m.open = true; // a remote reference: nothing known to check against
    else mergeInto(root, target, value, m, depth + 1);
  }
  if (isObject(s.properties)) {
    m.closed = true;
    for (const [k, v] of Object.entries(s.properties)) {
      const list = m.props.get(k);
      if (list) list.push(v);
      else m.props.set(k, [v]);
    }
  }
  if (isObject(s.patternProperties)) {
    m.closed = true;
    for (const [p, v] of Object.entries(s.patternProperties)) {
      try {
        m.patterns.push(new RegExp(p, 'u'));
        m.extra.push(v);
      } catch {
        m.open = true;
      }
    }
  }
  if ('additionalProperties' in s) {
    const ap = s.additionalProperties;
    if (ap === false) m.closed = true;
    else {
      m.open = true;
      if (isObject(ap)) m.extra.push(ap);
    }
  }
  if ('unevaluatedProperties' in s && s.unevaluatedProperties !== false) m.open = true;
  if (s['x-iam-auth'] === true) for (const k of IAM_INJECTED_KEYS) m.alsoAllowed.add(k);
  if (isSchema(s.items)) m.items.push(s.items);
  for (const kw of ['items', 'prefixItems']) {
    const list = s[kw];
    if (Array.isArray(list)) m.items.push(...list);
  }
  if (isSchema(s.additionalItems)) m.items.push(s.additionalItems);
  for (const kw of ['allOf']) {
    const list = s[kw];
    if (Array.isArray(list)) for (const b of list) mergeInto(root, b, value, m, depth + 1);
  }
  for (const kw of ['if', 'then', 'else']) mergeInto(root, s[kw], value, m, depth + 1);
  if (isObject(s.dependentSchemas)) for (const b of Object.values(s.dependentSchemas)) mergeInto(root, b, value, m, depth + 1);
  for (const kw of ['oneOf', 'anyOf']) {
    const list = s[kw];
    if (!Array.isArray(list)) continue;
    const picked = selectBranches(root, s, list, value);
    list.forEach((b, i) => {
      if (picked.includes(i)) {
        mergeInto(root, b, value, m, depth + 1);
      } else {
        const other: Merged = { props: new Map(), alsoAllowed: new Set(), patterns: [], extra: [], items: [], closed: false, open: false };
        mergeInto(root, b, value, other, depth + 1);
        for (const k of other.props.keys()) m.alsoAllowed.add(k);
      }
    });
  }
}

/** Unknown keys in `value` at every level, per `schema` (see the file comment for what counts as known). */
export function unknownKeyProblems(root: JsonSchema, value: JsonValue | undefined, options: ExplainOptions = {}): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  const visit = (schemas: JsonValue[], v: JsonValue | undefined, pointer: string, depth: number): void => {
    if (depth > 64 || schemas.length === 0) return;
    const m: Merged = { props: new Map(), alsoAllowed: new Set(), patterns: [], extra: [], items: [], closed: false, open: false };
    for (const s of schemas) mergeInto(root, s, v, m, 0);
    if (isObject(v)) {
      const tolerated = options.tolerate?.[pointer] ?? [];
      const allowed = [...m.props.keys(), ...m.alsoAllowed, ...tolerated];
      for (const [k, child] of Object.entries(v)) {
        const cp = `${pointer}/${escapePointerToken(k)}`;
        const own = m.props.get(k);
        if (own) {
          visit(own, child, cp, depth + 1);
          continue;
        }
        const byPattern = m.patterns.some((re) => re.test(k));
        if (m.open || byPattern) {
          visit(m.extra, child, cp, depth + 1);
          continue;
        }
        if (!m.closed || m.alsoAllowed.has(k) || tolerated.includes(k)) continue;
        out.push({ pointer: cp, key: true, message: `is not an allowed property${suggestion(k, allowed)}` });
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => visit(m.items, item, `${pointer}/${i}`, depth + 1));
    }
  };
  visit([root], value, '', 0);
  return out;
}

function describeError(e: ErrorObject): ConfigProblem {
  const p = e.instancePath;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { pointer: `${p}/${escapePointerToken(String(params['missingProperty']))}`, key: false, message: 'is required' };
    case 'additionalProperties':
      return { pointer: `${p}/${escapePointerToken(String(params['additionalProperty']))}`, key: true, message: 'is not an allowed property' };
    case 'unevaluatedProperties':
      return { pointer: `${p}/${escapePointerToken(String(params['unevaluatedProperty']))}`, key: true, message: 'is not an allowed property' };
    case 'type':
      return { pointer: p, key: false, message: `must be of type ${Array.isArray(params['type']) ? (params['type'] as string[]).join(' or ') : String(params['type'])}` };
    case 'enum': {
      const allowed = params['allowedValues'] as unknown[];
      return { pointer: p, key: false, message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` };
    }
    case 'const':
      return { pointer: p, key: false, message: `must be ${JSON.stringify(params['allowedValue'])}` };
    default:
      // ajv messages name schema constraints (limits, patterns, formats), never the value.
      return { pointer: p, key: false, message: e.message ?? `fails "${e.keyword}"` };
  }
}

/**
 * Every problem of `value` (already validated against `root`, giving `errors`): union errors reduced, unknown
 * keys with suggestions, in order and without duplicates. A missing required property that an unknown key
 * is a misspelling of is reported once, as the misspelling.
 */
export function explainConfig(root: JsonSchema, value: JsonValue | undefined, errors: readonly ErrorObject[], options: ExplainOptions = {}): ConfigProblem[] {
  const reduced = reduceUnionErrors(root, value, errors);
  const unknown = unknownKeyProblems(root, value, options);
  const ajvProblems = reduced.errors
    .filter((e) => e.keyword !== 'additionalProperties' && e.keyword !== 'unevaluatedProperties') // reported by unknownKeyProblems
    .map(describeError);
  const misspelt = new Set<string>();
  for (const u of unknown) {
    const near = /did you mean '(.*)'\?$/.exec(u.message)?.[1];
    if (near !== undefined) misspelt.add(`${u.pointer.slice(0, u.pointer.lastIndexOf('/'))}/${escapePointerToken(near)}`);
  }
  // Unknown keys first: a misspelt key is often why the other problems (a missing property) exist.
  const all = [...unknown, ...ajvProblems.filter((p) => !(p.message === 'is required' && misspelt.has(p.pointer))), ...reduced.problems];
  // ajv's own additionalProperties errors when unknownKeyProblems missed them (e.g. a remote $ref in between).
  for (const e of reduced.errors) {
    if (e.keyword !== 'additionalProperties' && e.keyword !== 'unevaluatedProperties') continue;
    const p = describeError(e);
    if (!unknown.some((u) => u.pointer === p.pointer)) all.push(p);
  }
  const seen = new Set<string>();
  return all.filter((p) => {
    const id = `${p.pointer}\0${p.message}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** `/pointer message` as connectors print it. */
export function formatConfigProblem(p: ConfigProblem): string {
  return `${at(p.pointer)} ${p.message}`;
}
