import { setTimeout as sleep } from "node:timers/promises";
import { HarnessError } from "./errors.ts";

/** Options of {@link eventually}. */
export type EventuallyOptions = {
  /** Pause between attempts, in milliseconds (default 250). */
  intervalMs?: number;
  /** Checked before every attempt; a returned error ends the wait at once (e.g. a process died). */
  abortIf?: () => Error | undefined;
};

/**
 * The one polling helper of the harness and the tests: calls `check` until it returns a value other
 * than `undefined`, and returns that value. An error thrown by `check` counts as "not yet" (the API
 * is eventually consistent) and the last one is reported on timeout. Throws a `timeout` HarnessError
 * naming `what` after `timeoutMs`, or the error `abortIf` returns.
 */
export async function eventually<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined> | T | undefined,
  options: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const intervalMs = options.intervalMs ?? 250;
  let lastError: unknown;
  for (;;) {
    const aborted = options.abortIf?.();
    if (aborted) throw aborted;
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const last = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new HarnessError("timeout", `timed out after ${timeoutMs} ms waiting for ${what}${last}`, {
        cause: lastError,
      });
    }
    await sleep(intervalMs);
  }
}
