/**
 * Waiting on the informer caches' change events instead of polling them: a waiter subscribes to the
 * changes of the objects it is waiting for, reads the cache, and sleeps until the next such change (or
 * its deadline). The approval wait (approval-wait.ts) and the binding of a new pod's token to its
 * session (authenticate.ts) wait this way, so an answer follows the informer's event at once.
 */
import type { ObjectCache } from "../kube/runtime/informer.ts";

/** A subscription to some cache's changes: calls `changed` on each one; returns what unsubscribes. */
export type CacheWatch = (changed: () => void) => () => void;

/** The changes in `cache` of the objects `concerns` picks. */
export function watchOf<T>(
  cache: Pick<ObjectCache<T>, "onChange">,
  concerns: (object: T) => boolean,
): CacheWatch {
  return (changed) =>
    cache.onChange((object) => {
      if (concerns(object)) changed();
    });
}

/** What a waiter waits on: see {@link changesOf}. */
export interface CacheChanges {
  /**
   * Resolves at the first change since the previous `next` (at once if one came in between), after
   * `ms`, or when the signal aborts.
   */
  next(ms: number): Promise<void>;
  /** Removes the subscriptions. */
  close(): void;
}

/**
 * The changes `watches` report, as something to wait for. Subscribe before the first read of the
 * cache, so no change between that read and the wait is missed.
 */
export function changesOf(watches: readonly CacheWatch[], signal?: AbortSignal): CacheChanges {
  let changed = false;
  let wake: (() => void) | undefined;
  const unsubscribes = watches.map((watch) =>
    watch(() => {
      changed = true;
      wake?.();
    }),
  );
  const next = (ms: number) =>
    new Promise<void>((resolve) => {
      if (changed || signal?.aborted) {
        changed = false;
        return resolve();
      }
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        wake = undefined;
        changed = false;
        resolve();
      }
      wake = done;
      signal?.addEventListener("abort", done, { once: true });
    });
  return {
    next,
    close: () => {
      for (const unsubscribe of unsubscribes) unsubscribe();
    },
  };
}
