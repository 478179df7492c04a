// Turning the loaded catalog into the protocol specs tasks are opened with: run each connector's
// validate, compute resource paths, state keys and (for materializations) field selections from the
// constraints and the catalog's `fields`, then apply. Errors name the task, binding and field.
import {
  SluiceError, type CaptureBindingSpec, type CaptureSpec, type CaptureValidateRequest, type CollectionSpec, type Constraint, type JsonObject,
  type LabelSelector, type MaterializationBindingSpec, type MaterializationSpec, type MaterializeValidateRequest,
} from '@sluice/runtime';
import type { BuiltCapture, BuiltMaterialization, CaptureDef, Catalog, MaterializationDef, PartitionSelectorDef } from '../catalog/types.ts';
import { encodePartitionValue } from '../journals/names.ts';
import { timestampTicks } from '@sluice/runtime';
import { connectorTypeOf, endpointConfig, type Launcher } from '../tasks/launcher.ts';
import { PARTITION_LABEL_PREFIX } from '../tasks/materialize.ts';
import { selectFields } from './field-selection.ts';

export class BuildError extends SluiceError {
  readonly errors: string[];
  constructor(errors: string[]) {
    super('BUILD', errors.length === 1 ? errors[0]! : `${errors.length} problems:\n - ${errors.join('\n - ')}`);
    this.errors = errors;
  }
}

/** Flow's stateKey: the resource path components percent-encoded, joined; `.v<N>` after a backfill. */
export function stateKeyOf(resourcePath: string[], backfill: number): string {
  const base = resourcePath.map((c) => encodeURIComponent(c)).join('%2F');
  return backfill > 0 ? `${base}.v${backfill}` : base;
}

export function partitionSelectorOf(sel: PartitionSelectorDef): { include?: LabelSelector; exclude?: LabelSelector } {
  const labels = (m: PartitionSelectorDef['include']) => Object.entries(m).flatMap(([field, values]) =>
    values.map((v) => ({ name: `${PARTITION_LABEL_PREFIX}${field}`, value: encodePartitionValue(v) })));
  const out: { include?: LabelSelector; exclude?: LabelSelector } = {};
  const inc = labels(sel.include);
  const exc = labels(sel.exclude);
  if (inc.length) out.include = { labels: inc };
  if (exc.length) out.exclude = { labels: exc };
  return out;
}

export interface BuildOptions {
  launcher: Launcher;
  /** Build id (the publication's), sent as `version`. */
  version: string;
  /** Run the connector's apply (false for dry builds). */
  apply: boolean;
  /** The previously applied spec, if any. */
  last?: CaptureSpec | MaterializationSpec;
}

export async function buildCapture(catalog: Catalog, def: CaptureDef, opts: BuildOptions): Promise<BuiltCapture & { actionDescription: string }> {
  const errors: string[] = [];
  const active = def.bindings.filter((b) => !b.disable);
  const collections = active.map((b, i) => {
    const c = catalog.collections.get(b.target);
    if (c === undefined) errors.push(`capture "${def.name}" binding ${i}: target collection "${b.target}" is not defined in the catalog`);
    return c?.spec;
  });
  if (errors.length) throw new BuildError(errors);
  const validated = await opts.launcher.unary(def.endpoint, def.name, 'capture', captureValidateRequest(def, collections as CollectionSpec[]), 'validated');
  const spec = captureSpecOf(def, collections as CollectionSpec[], (validated.bindings ?? []) as ValidatedCaptureBinding[]);
  const built = { def, spec, actionDescription: '' };
  if (opts.apply) built.actionDescription = await applyCapture(built, opts);
  return built;
}

/** The Validate request of a capture's active bindings (`collections`: their target collections, in order). */
export function captureValidateRequest(def: CaptureDef, collections: CollectionSpec[]): { validate: CaptureValidateRequest } {
  const active = def.bindings.filter((b) => !b.disable);
  return {
    validate: {
      name: def.name, connectorType: connectorTypeOf(def.endpoint), config: endpointConfig(def.endpoint),
      bindings: active.map((b, i) => ({ resourceConfig: b.resource, collection: collections[i]!, ...(b.backfill ? { backfill: b.backfill } : {}) })),
    },
  };
}

/** What a capture connector's Validate says of a binding. */
export interface ValidatedCaptureBinding { resourcePath?: string[] }

/** The capture spec from the connector's validated bindings: resource paths, and state keys from them (Flow's rule). */
export function captureSpecOf(def: CaptureDef, collections: CollectionSpec[], validated: ValidatedCaptureBinding[]): CaptureSpec {
  const active = def.bindings.filter((b) => !b.disable);
  if (validated.length !== active.length) throw new BuildError([`capture "${def.name}": connector validated ${validated.length} binding(s) but the capture has ${active.length}`]);
  const bindings: CaptureBindingSpec[] = active.map((b, i) => {
    const resourcePath = validated[i]?.resourcePath ?? [];
    const spec: CaptureBindingSpec = { resourceConfig: b.resource, resourcePath, collection: collections[i]!, stateKey: stateKeyOf(resourcePath, b.backfill) };
    if (b.backfill) spec.backfill = b.backfill;
    return spec;
  });
  return { name: def.name, connectorType: connectorTypeOf(def.endpoint), config: endpointConfig(def.endpoint), bindings, intervalSeconds: def.intervalSeconds };
}

/** Runs the connector's apply for a built capture; returns its action description. */
export async function applyCapture(built: BuiltCapture, opts: Pick<BuildOptions, 'launcher' | 'version' | 'last'>): Promise<string> {
  const { def, spec } = built;
  const applied = await opts.launcher.unary(def.endpoint, def.name, 'capture', {
    apply: { capture: spec, version: opts.version, ...(opts.last ? { lastCapture: opts.last as CaptureSpec } : {}) },
  }, 'applied');
  return String(applied.actionDescription ?? '');
}

/** What a materialization build did about incompatible schema changes (Flow's onIncompatibleSchemaChange). */
export interface IncompatibleOutcome {
  /** One line per binding acted on, e.g. `binding 0 (acme/things): backfilled (backfill 1 → 2): field "n" …`. */
  notes: string[];
  /** Set when the action was disableTask: the materialization must not run (the reason). */
  disabledTask?: string;
}

export async function buildMaterialization(catalog: Catalog, def: MaterializationDef, opts: BuildOptions): Promise<BuiltMaterialization & { actionDescription: string; incompatible: IncompatibleOutcome }> {
  const errors: string[] = [];
  // Checked before the connector runs; validateAndSelect reads the collections again for the bindings it builds.
  def.bindings.filter((b) => !b.disable).forEach((b, i) => {
    const c = catalog.collections.get(b.source);
    if (c === undefined) errors.push(`materialization "${def.name}" binding ${i}: source collection "${b.source}" is not defined in the catalog`);
    for (const field of [...Object.keys(b.partitions.include), ...Object.keys(b.partitions.exclude)]) {
      if (c && !(c.spec.partitionFields ?? []).includes(field)) errors.push(`materialization "${def.name}" binding ${i}: partition selector names "${field}", which is not a logical partition of "${b.source}"`);
    }
    const ticks: Partial<Record<'notBefore' | 'notAfter', bigint>> = {};
    for (const side of ['notBefore', 'notAfter'] as const) {
      const v = b[side];
      if (v === undefined) continue;
      try {
        ticks[side] = timestampTicks(v);
      } catch {
        errors.push(`materialization "${def.name}" binding ${i}: source.${side} ${JSON.stringify(v)} is not an RFC 3339 date-time (e.g. 2024-06-01T00:00:00Z)`);
      }
    }
    if (ticks.notBefore !== undefined && ticks.notAfter !== undefined && ticks.notBefore > ticks.notAfter) {
      errors.push(`materialization "${def.name}" binding ${i}: source.notBefore (${b.notBefore}) is after source.notAfter (${b.notAfter}), so no document could be materialized; swap or widen them`);
    }
  });
  if (errors.length) throw new BuildError(errors);
  // Backfills this plane made on its own (onIncompatibleSchemaChange: backfill) carry over to later builds
  // while it runs: a binding never goes back to a state key it left.
  let current: MaterializationDef = {
    ...def,
    bindings: def.bindings.map((b) => {
      const prior = opts.last?.bindings?.find((lb) => JSON.stringify(lb.resourceConfig) === JSON.stringify(b.resource));
      return prior?.backfill !== undefined && prior.backfill > b.backfill ? { ...b, backfill: prior.backfill } : b;
    }),
  };
  const incompatible: IncompatibleOutcome = { notes: [] };
  for (let round = 0; ; round++) {
    const attempt = await validateAndSelect(current, collectionsOf(catalog, current), opts);
    if (attempt.incompatible.length === 0 || round > 0) {
      if (attempt.errors.length) throw new BuildError(attempt.errors);
      const spec = materializationSpecOf(def, attempt.bindings);
      const built = { def: current, spec, actionDescription: '', incompatible };
      if (opts.apply) built.actionDescription = await applyMaterialization(built, opts);
      return built;
    }
    // Flow's meaning: the binding's action, else the materialization's, else backfill.
    const next = current.bindings.map((b) => ({ ...b }));
    const abort: string[] = [];
    for (const inc of attempt.incompatible) {
      const b = next[inc.index]!;
      const action = b.onIncompatibleSchemaChange ?? def.onIncompatibleSchemaChange ?? 'backfill';
      const what = `binding ${inc.index} (${b.source}): ${inc.reasons.join('; ')}`;
      if (action === 'abort') abort.push(`${what} (onIncompatibleSchemaChange: abort)`);
      else if (action === 'disableTask') incompatible.disabledTask = `${what} (onIncompatibleSchemaChange: disableTask)`;
      else if (action === 'disableBinding') {
        b.disable = true;
        incompatible.notes.push(`${what}: binding disabled (onIncompatibleSchemaChange: disableBinding)`);
      } else {
        b.backfill += 1;
        incompatible.notes.push(`${what}: backfilled, backfill ${b.backfill - 1} → ${b.backfill} (onIncompatibleSchemaChange: backfill; raise the binding's backfill in the catalog to ${b.backfill} to keep it across restarts of the plane)`);
      }
    }
    const other = attempt.errors.filter((e) => !attempt.incompatible.some((inc) => inc.errors.includes(e)));
    if (abort.length || other.length) {
      throw new BuildError([...other, ...abort.map((a) => `materialization "${def.name}" ${a}: increment the binding's backfill to re-create it, or choose another onIncompatibleSchemaChange`)]);
    }
    if (incompatible.disabledTask !== undefined) {
      return { def, spec: materializationSpecOf(def, []), actionDescription: '', incompatible };
    }
    current = { ...current, bindings: next };
  }
}

/** The materialization spec with its built bindings. */
export function materializationSpecOf(def: MaterializationDef, bindings: MaterializationBindingSpec[]): MaterializationSpec {
  return { name: def.name, connectorType: connectorTypeOf(def.endpoint), config: endpointConfig(def.endpoint), bindings };
}

function collectionsOf(catalog: Catalog, def: MaterializationDef) {
  return def.bindings.filter((b) => !b.disable).map((b) => catalog.collections.get(b.source)!);
}

interface Incompatible { index: number; reasons: string[]; errors: string[] }

/** Runs the connector's validate and field selection for `def`'s active bindings. */
async function validateAndSelect(def: MaterializationDef, collections: ReturnType<typeof collectionsOf>, opts: BuildOptions): Promise<MaterializationSelection> {
  const specs = collections.map((c) => c.spec);
  const validated = await opts.launcher.unary(def.endpoint, def.name, 'materialize', materializationValidateRequest(def, specs, opts.last as MaterializationSpec | undefined), 'validated');
  return materializationBindingsOf(def, specs, (validated.bindings ?? []) as ValidatedMaterializationBinding[]);
}

/** The Validate request of a materialization's active bindings (`collections`: their source collections, in order). */
export function materializationValidateRequest(def: MaterializationDef, collections: CollectionSpec[], last?: MaterializationSpec): { validate: MaterializeValidateRequest } {
  const active = def.bindings.filter((b) => !b.disable);
  return {
    validate: {
      name: def.name, connectorType: connectorTypeOf(def.endpoint), config: endpointConfig(def.endpoint),
      bindings: active.map((b, i) => {
        const fieldConfig: JsonObject = {};
        for (const [f, v] of Object.entries(b.fields.include)) if (v !== null && typeof v === 'object' && Object.keys(v).length) fieldConfig[f] = v;
        return { resourceConfig: b.resource, collection: collections[i]!, ...(Object.keys(fieldConfig).length ? { fieldConfig } : {}), ...(b.backfill ? { backfill: b.backfill } : {}) };
      }),
      ...(last ? { lastMaterialization: last } : {}),
    },
  };
}

/** What a materialization connector's Validate says of a binding. */
export interface ValidatedMaterializationBinding { resourcePath?: string[]; constraints?: Record<string, Constraint>; deltaUpdates?: boolean; caseInsensitiveFields?: boolean }

export interface MaterializationSelection { bindings: MaterializationBindingSpec[]; errors: string[]; incompatible: Incompatible[] }

/** The binding specs from the connector's validated bindings: resource paths, state keys and field selections. */
export function materializationBindingsOf(def: MaterializationDef, collections: CollectionSpec[], vb: ValidatedMaterializationBinding[]): MaterializationSelection {
  const errors: string[] = [];
  const incompatible: Incompatible[] = [];
  const activeIndex = def.bindings.flatMap((b, i) => (b.disable ? [] : [i]));
  const active = activeIndex.map((i) => def.bindings[i]!);
  if (vb.length !== active.length) throw new BuildError([`materialization "${def.name}": connector validated ${vb.length} binding(s) but the materialization has ${active.length}`]);
  const bindings: MaterializationBindingSpec[] = active.map((b, i) => {
    const v = vb[i]!;
    const collection = collections[i]!;
    const deltaUpdates = v.deltaUpdates === true;
    const { selection, errors: fieldErrors } = selectFields({
      where: `materialization "${def.name}" binding ${i} (${b.source})`,
      collection, fields: b.fields, constraints: v.constraints ?? {}, deltaUpdates, caseInsensitive: v.caseInsensitiveFields === true,
    });
    errors.push(...fieldErrors);
    // A field the endpoint can no longer take (a connector says this of fields it already holds, e.g. a column
    // whose type changed), unless the author excluded it: an incompatible schema change, as in Flow.
    const unsatisfiable = Object.entries(v.constraints ?? {})
      .filter(([f, c]) => (c.type === 'UNSATISFIABLE' || c.type === 'INCOMPATIBLE') && !b.fields.exclude.includes(f))
      .map(([f]) => f);
    const onlyThose = fieldErrors.every((e) => unsatisfiable.some((f) => e.includes(`field "${f}" is incompatible`)));
    if (unsatisfiable.length > 0 && onlyThose) {
      incompatible.push({
        index: activeIndex[i]!,
        reasons: unsatisfiable.map((f) => `field "${f}" is incompatible with the destination: ${v.constraints?.[f]?.reason ?? 'unsatisfiable'}`),
        errors: fieldErrors,
      });
    }
    const resourcePath = v.resourcePath ?? [];
    const stateKey = stateKeyOf(resourcePath, b.backfill);
    const spec: MaterializationBindingSpec = {
      resourceConfig: b.resource, resourcePath, collection, fieldSelection: selection,
      journalReadSuffix: `materialize/${def.name}/${stateKey}`, stateKey,
    };
    const sel = partitionSelectorOf(b.partitions);
    if (sel.include || sel.exclude) spec.partitionSelector = sel;
    if (deltaUpdates) spec.deltaUpdates = true;
    if (b.backfill) spec.backfill = b.backfill;
    if (b.notBefore !== undefined) spec.notBefore = b.notBefore;
    if (b.notAfter !== undefined) spec.notAfter = b.notAfter;
    return spec;
  });
  return { bindings, errors, incompatible };
}

/** Runs the connector's apply for a built materialization; returns its action description. */
export async function applyMaterialization(built: BuiltMaterialization, opts: Pick<BuildOptions, 'launcher' | 'version' | 'last'>): Promise<string> {
  const { def, spec } = built;
  const applied = await opts.launcher.unary(def.endpoint, def.name, 'materialize', {
    apply: { materialization: spec, version: opts.version, ...(opts.last ? { lastMaterialization: opts.last as MaterializationSpec } : {}) },
  }, 'applied');
  return String(applied.actionDescription ?? '');
}
