// A catalog file against the catalog's JSON Schema (catalog-schema.ts): the compiled validator, and ajv's
// errors turned into problems an author can act on (file, pointer, what to do). Used by the loader (load.ts).
import { closestName, pointerOf } from '@sluice/runtime';
import type { JsonObject, JsonValue } from '@sluice/runtime';
import { compiledValidator } from './ajv.ts';
import type { ErrorObject, ValidateFunction } from './ajv.ts';
import { catalogSchema, NAME_PATTERN } from './catalog-schema.ts';
import type { CatalogFile } from './catalog-schema.ts';
import { escapeControls } from './errors.ts';

// The schema's Name: components that are `.` or `..` would be path traversal wherever a name becomes a path
// (journal names, data-dir files, connector resources).
const NAME_RULE = "one or more components of Unicode letters, numbers, '-', '_' or '.' (a component may not be '.' or '..'), separated by '/', with no empty component and no leading or trailing '/'";
export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

let validateCatalogFile: ValidateFunction<CatalogFile> | undefined;
export function catalogValidator(): ValidateFunction<CatalogFile> {
  // validateSchema off: the catalog schema is ours, checked against the meta-schema by a test
  // (catalog-schema.test.ts); checking it here compiled the 2020-12 meta-schema at every start (~75 ms).
  // Its compiled code is kept between starts (compiledValidator): compiling it took ~75 ms of every start.
  validateCatalogFile ??= compiledValidator<CatalogFile>('catalog', catalogSchema, { verbose: true, validateSchema: false });
  return validateCatalogFile;
}

export interface SchemaProblem { pointer: string; message: string; key: boolean }

/**
 * A value as a JSON string literal with every control, bidi and line/paragraph separator character escaped, so a
 * hostile name cannot rewrite a terminal or log line when it is echoed.
 */
export function quoted(value: unknown): string {
  return escapeControls(JSON.stringify(value) ?? String(value));
}

/** Turns ajv errors against catalog.schema.json into messages an author can act on. */
export function schemaProblems(errors: ErrorObject[]): SchemaProblem[] {
  let errs = [...errors];
  // anyOf: when exactly one branch fits the value's type, report that branch's errors; else one summary.
  for (const a of errors.filter((x) => x.keyword === 'anyOf')) {
    const branches = ((a.parentSchema as JsonObject | undefined)?.anyOf as JsonObject[] | undefined) ?? [];
    const inBranch = (x: ErrorObject, i: number) => x.schemaPath.startsWith(`${a.schemaPath}/${i}/`);
    const viable = branches.map((_, i) => i).filter((i) => !errs.some((x) => inBranch(x, i) && x.instancePath === a.instancePath && x.keyword === 'type'));
    if (viable.length === 1) {
      errs = errs.filter((x) => x !== a && !branches.some((_, i) => i !== viable[0] && inBranch(x, i)));
    } else {
      errs = errs.filter((x) => !branches.some((_, i) => inBranch(x, i)));
    }
  }
  const out: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const e of errs) {
    let p: SchemaProblem;
    const propertyName = (e as ErrorObject & { propertyName?: string }).propertyName;
    if (e.keyword === 'propertyNames') continue; // reported through the name's own error
    if (propertyName !== undefined) {
      p = { pointer: `${e.instancePath}${pointerOf(propertyName)}`, key: true, message: `${quoted(propertyName)} is not a valid catalog name: names are ${NAME_RULE}` };
    } else if (e.keyword === 'required') {
      p = { pointer: e.instancePath, key: false, message: `missing required property "${String(e.params.missingProperty)}"` };
    } else if (e.keyword === 'additionalProperties') {
      const allowed = Object.keys(((e.parentSchema as JsonObject | undefined)?.properties as JsonObject | undefined) ?? {});
      const name = String(e.params.additionalProperty);
      const near = closestName(name, allowed);
      p = { pointer: `${e.instancePath}${pointerOf(name)}`, key: true, message: `unknown property ${quoted(name)}; ${near !== undefined ? `did you mean "${near}"? (expected one of: ${allowed.join(', ')})` : `expected one of: ${allowed.join(', ')}`}` };
    } else if (e.keyword === 'enum') {
      const allowed = (e.params.allowedValues as JsonValue[] | undefined) ?? [];
      const near = typeof e.data === 'string' ? closestName(e.data, allowed.filter((x): x is string => typeof x === 'string')) : undefined;
      p = { pointer: e.instancePath, key: false, message: `${quoted(e.data)} is not one of ${allowed.map((x) => quoted(x)).join(', ')}${near !== undefined ? `; did you mean "${near}"?` : ''}` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'Catalog name') {
      p = { pointer: e.instancePath, key: false, message: `${quoted(e.data)} is not a valid catalog name: names are ${NAME_RULE}` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'JSON pointer') {
      p = { pointer: e.instancePath, key: false, message: `${JSON.stringify(e.data)} is not a JSON pointer; write locations like /id or /address/city` };
    } else if (e.keyword === 'pattern' && (e.parentSchema as JsonObject | undefined)?.title === 'Interval') {
      p = { pointer: e.instancePath, key: false, message: `${JSON.stringify(e.data)} is not a duration; write e.g. 30s, 5m, 1h or 1h30m` };
    } else if (e.keyword === 'anyOf') {
      const branches = ((e.parentSchema as JsonObject | undefined)?.anyOf as JsonObject[] | undefined) ?? [];
      const kinds = branches.map((b) => (b.title as string | undefined) ?? (Array.isArray(b.type) ? b.type.join(' or ') : String(b.type ?? 'value')));
      p = { pointer: e.instancePath, key: false, message: `must be ${[...new Set(kinds)].join(', or ')}` };
    } else if (e.keyword === 'maxProperties' || e.keyword === 'minProperties') {
      const allowed = Object.keys(((e.parentSchema as JsonObject | undefined)?.properties as JsonObject | undefined) ?? {});
      p = { pointer: e.instancePath, key: false, message: `must have exactly one of: ${allowed.join(', ')}` };
    } else if (e.keyword === 'const' && e.instancePath.endsWith('/protobuf')) {
      p = { pointer: e.instancePath, key: false, message: 'only the JSON codec is supported; remove "protobuf"' };
    } else {
      p = { pointer: e.instancePath, key: false, message: e.message ?? e.keyword };
    }
    const id = `${p.pointer}\u0000${p.message}`;
    if (!seen.has(id)) { seen.add(id); out.push(p); }
  }
  return out;
}
