// RFC 7396 JSON merge patch, and applying a connector state update (flow-protocol.md §2.4).
import type { ConnectorState, JsonObject, JsonValue } from './specs.ts';

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Returns `target` with `patch` applied per RFC 7396: objects merge recursively, `null` deletes a key,
 * anything else replaces. Inputs are not modified.
 */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** Applies a checkpoint's `{updated, mergePatch}` to the current connector state. */
export function applyStateUpdate(current: JsonValue, update: ConnectorState | undefined): JsonValue {
  if (update === undefined || update.updated === undefined) return current;
  return update.mergePatch ? mergePatch(current, update.updated) : update.updated;
}
