// Reducing connector state updates ({updated, mergePatch}) onto the committed state (RFC 7396).
import type { ConnectorState, JsonObject, JsonValue } from '@sluice/runtime';

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export function applyState(current: JsonValue, update: ConnectorState | undefined): JsonValue {
  if (update?.updated === undefined) return current;
  return update.mergePatch ? mergePatch(current, update.updated) : update.updated;
}
