import { setTimeout as sleep } from "node:timers/promises";
import { HarnessError } from "./errors.ts";

/** Options of {@link pollUntil}. */
export type PollOptions = {
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Pause between attempts, in milliseconds (default 250). */
  intervalMs?: number;
  /** Checked before every attempt; a returned error ends the wait at once (e.g. a process died). */
  abortIf?: () => Error | undefined;
};

/**
 * Calls `check` until it returns a value other than `undefined`, and returns that value. Errors thrown
 * by `check` count as "not yet" and the last one is reported on timeout. Throws a `timeout`
 * HarnessError naming `description`, or the error returned by `abortIf`.
 */
export async function pollUntil<T>(
  description: string,
  check: () => Promise<T | undefined> | T | undefined,
  options: PollOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
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
      throw new HarnessError(
        "timeout",
        `timed out after ${options.timeoutMs} ms waiting for ${description}${last}`,
        { cause: lastError },
      );
    }
    await sleep(intervalMs);
  }
}
