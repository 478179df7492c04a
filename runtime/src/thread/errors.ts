// Errors across a thread boundary. postMessage clones an Error as a plain Error (its class and its own
// properties — a SqlError's `number`, a DecodeError's `line` — are lost), so the worker side sends it as data
// and the host side rebuilds it: the same class (the connector names its classes) with the same message, so
// the entry point reports it exactly as it would on one thread.

/** An error as data: name, message, stack, its cause (name and message) and its own cloneable properties. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  cause?: { name: string; message: string };
  /** Own enumerable properties that survive structured cloning (`code`, `number`, `line`, `fields`, …). */
  props: Record<string, unknown>;
}

export function serializeError(err: unknown): SerializedError {
  if (err === null || typeof err !== 'object') return { name: 'Error', message: String(err), props: {} };
  const e = err as { name?: unknown; message?: unknown; stack?: unknown; cause?: unknown };
  const out: SerializedError = {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(err),
    props: {},
  };
  if (typeof e.stack === 'string') out.stack = e.stack;
  if (e.cause instanceof Error) out.cause = { name: e.cause.name, message: e.cause.message };
  for (const [k, v] of Object.entries(err)) {
    if (k === 'name' || k === 'message' || k === 'stack' || k === 'cause' || v === undefined || typeof v === 'function') continue;
    if (v === null || typeof v !== 'object') {
      out.props[k] = v;
      continue;
    }
    // A property that cannot be cloned (a socket, a class instance with functions) stays behind.
    try {
      out.props[k] = structuredClone(v);
    } catch { /* not cloneable */ }
  }
  return out;
}

/**
 * The error `e` as the host side throws it: what `construct` makes of it (the connector's own classes, by
 * name), else an Error with the same name, message, cause and properties. The stack is the thread's.
 */
export function rebuildError(e: SerializedError, construct?: (e: SerializedError) => Error | undefined): Error {
  let err = construct?.(e);
  if (err === undefined) {
    err = new Error(e.message, e.cause === undefined ? undefined : { cause: Object.assign(new Error(e.cause.message), { name: e.cause.name }) });
    Object.assign(err, e.props);
    err.name = e.name;
  }
  if (e.stack !== undefined) err.stack = e.stack;
  return err;
}
