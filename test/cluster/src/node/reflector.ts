import { setTimeout as sleep } from "node:timers/promises";
import { type KubeConfig, type KubernetesObject, Watch } from "@kubernetes/client-node";
import type { Logger } from "pino";

/** Receives the objects a {@link Reflector} follows. */
export type ReflectorHandler<T> = {
  /** An object was added or changed (or seen again on a relist). */
  upsert(obj: T): void;
  /** An object is gone from the API server. */
  remove(uid: string): void;
  /** A list has been handed over in full: the handler now knows every object that exists. */
  synced?(): void;
};

/** What a {@link Reflector} lists and watches. */
export type ReflectorOptions<T> = {
  /** The kind, for log lines (`pod`, `namespace`, `NetworkPolicy`). */
  kind: string;
  /** The collection's path, e.g. `/api/v1/pods`. */
  path: string;
  /** Query parameters of both the list and the watch (a field selector). */
  query?: Record<string, string>;
  /** Lists the collection with `query`. */
  list(query: Record<string, string>): Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  handler: ReflectorHandler<T>;
  log: Logger;
};

/** Server-side watch timeout; the watch then ends normally and the reflector relists. */
const WATCH_TIMEOUT_SECONDS = 240;
/**
 * A watch silent for this long is presumed dead (the server would have ended it at its timeout) and
 * is aborted.
 */
const WATCH_SILENCE_MS = (WATCH_TIMEOUT_SECONDS + 30) * 1000;
/**
 * Back-off cap between failed lists, shorter than client-go's 30 s: the API server is local, so a list a
 * few seconds apart costs nothing, and the node sees what changed during an outage (pods the node
 * lifecycle controller marked not Ready) within seconds of the API server's return.
 */
const BACKOFF_MAX_MS = 4_000;

/**
 * One collection of the API server, followed by a reflector that never stops: list, hand every object
 * to the handler (and report objects missing since the last list as removed), then watch from the
 * list's resourceVersion. Whenever the watch ends — server timeout, 410 Gone, network error, or silence
 * longer than the server timeout — it lists again, with exponential back-off after errors. Written by
 * hand because client-node's informer stops for good on errors other than 410 and timeouts.
 */
export class Reflector<T extends KubernetesObject> {
  private readonly watch: Watch;
  private readonly options: ReflectorOptions<T>;
  private readonly known = new Set<string>();
  private stopped = false;
  private abort: AbortController | undefined;
  private readonly wakeSleep = new AbortController();

  constructor(kc: KubeConfig, options: ReflectorOptions<T>) {
    this.watch = new Watch(kc);
    this.options = options;
  }

  /** Runs until {@link stop}; resolves then. */
  async run(): Promise<void> {
    let backoffMs = 0;
    while (!this.stopped) {
      try {
        const resourceVersion = await this.relist();
        await this.watchFrom(resourceVersion);
        backoffMs = 0;
      } catch (err) {
        backoffMs = Math.min(Math.max(500, backoffMs * 2), BACKOFF_MAX_MS);
        this.options.log.warn({ err, backoffMs }, `${this.options.kind} list/watch failed; retrying`);
        await sleep(backoffMs, undefined, { signal: this.wakeSleep.signal }).catch(() => undefined);
      }
    }
  }

  /** Ends the watch and the loop. */
  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wakeSleep.abort();
  }

  private async relist(): Promise<string> {
    const { handler } = this.options;
    const list = await this.options.list(this.options.query ?? {});
    const seen = new Set<string>();
    for (const obj of list.items) {
      const uid = obj.metadata?.uid;
      if (!uid) continue;
      seen.add(uid);
      handler.upsert(obj);
    }
    for (const uid of this.known) if (!seen.has(uid)) handler.remove(uid);
    this.known.clear();
    for (const uid of seen) this.known.add(uid);
    handler.synced?.();
    return list.metadata?.resourceVersion ?? "";
  }

  /** Resolves when the watch ends, for whatever reason (the caller relists). */
  private watchFrom(resourceVersion: string): Promise<void> {
    const { handler, kind, log } = this.options;
    return new Promise((resolve, reject) => {
      let silence: NodeJS.Timeout | undefined;
      let settled = false;
      const end = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(silence);
        this.abort?.abort();
        if (err && !this.stopped && !isAbort(err)) reject(err);
        else resolve();
      };
      const heard = (): void => {
        clearTimeout(silence);
        silence = setTimeout(() => {
          log.warn(`${kind} watch silent for too long; restarting it`);
          end();
        }, WATCH_SILENCE_MS);
      };
      heard();
      this.watch
        .watch(
          this.options.path,
          {
            ...this.options.query,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: WATCH_TIMEOUT_SECONDS,
          },
          (phase: string, obj: T & { code?: number; message?: string }) => {
            heard();
            const uid = obj.metadata?.uid;
            switch (phase) {
              case "ADDED":
              case "MODIFIED":
                if (uid) {
                  this.known.add(uid);
                  handler.upsert(obj);
                }
                break;
              case "DELETED":
                if (uid) {
                  this.known.delete(uid);
                  handler.remove(uid);
                }
                break;
              case "ERROR":
                // e.g. 410 Gone: the resourceVersion is too old; relisting fixes it.
                log.info({ code: obj.code, message: obj.message }, `${kind} watch ended by the server`);
                end();
                break;
              default:
                break; // BOOKMARK
            }
          },
          (err: unknown) => end(err),
        )
        .then((controller) => {
          this.abort = controller;
          if (settled || this.stopped) controller.abort();
        })
        .catch((err: unknown) => end(err));
    });
  }
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || err.message.includes("aborted"));
}
