// Tests wait for events, not the clock: `until` polls a condition (a row count, a message seen, a file written)
// and returns as soon as it holds. Its deadline is a safety net that names what was awaited, generous because a
// loaded machine is slow — never a timing assertion.

export interface UntilOptions {
  /** The safety net: fail after this long (default 120 s). */
  ms?: number;
  /** Between polls (default 20 ms). */
  intervalMs?: number;
  /** Added to the failure, e.g. a child's stderr so far. */
  detail?: () => string;
}

/**
 * Polls `check` until it returns something other than undefined, null or false, and returns that. An error
 * `check` throws fails the wait at once (an assertion inside it is checked on every poll).
 */
export async function until<T>(what: string, check: () => T | Promise<T>, options: UntilOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const ms = options.ms ?? 120_000;
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== null && v !== false) return v as Exclude<T, undefined | null | false>;
    if (Date.now() > deadline) {
      const detail = options.detail?.() ?? '';
      throw new Error(`timed out after ${ms / 1000} s waiting for ${what}${detail ? `\n${detail}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 20));
  }
}

/**
 * Waits for an event (`promise`) and returns its value; the deadline is the same safety net as `until`'s,
 * naming what was awaited. `onTimeout` runs before the failure is thrown (e.g. to kill a stuck process).
 */
export async function within<T>(what: string, promise: Promise<T>, options: Omit<UntilOptions, 'intervalMs'> & { onTimeout?: () => void } = {}): Promise<T> {
  const ms = options.ms ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const detail = options.detail?.() ?? '';
      options.onTimeout?.();
      reject(new Error(`timed out after ${ms / 1000} s waiting for ${what}${detail ? `\n${detail}` : ''}`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
