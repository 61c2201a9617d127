import { setTimeout as sleep } from "node:timers/promises";
import { type CoreV1Api, type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import type { Logger } from "pino";

/** Receives the pods bound to the node. */
export type PodHandler = {
  /** A pod was added or changed (or seen again on a relist). */
  upsert(pod: V1Pod): void;
  /** A pod is gone from the API server. */
  remove(uid: string): void;
};

/** Server-side watch timeout; the watch then ends normally and the source relists. */
const WATCH_TIMEOUT_SECONDS = 240;
/** A watch silent for this long is presumed dead (client-node #596) and is aborted. */
const WATCH_SILENCE_MS = (WATCH_TIMEOUT_SECONDS + 30) * 1000;
/**
 * Back-off cap between failed lists, shorter than client-go's 30 s: the API server is local, so a list a
 * few seconds apart costs nothing, and the node sees what changed during an outage (pods the node
 * lifecycle controller marked not Ready) within seconds of the API server's return.
 */
const BACKOFF_MAX_MS = 4_000;

/**
 * The pods bound to one node (`fieldSelector=spec.nodeName=<node>`), as a reflector that never stops:
 * list, hand every pod to the handler (and report pods missing since the last list as removed), then
 * watch from the list's resourceVersion. Whenever the watch ends — server timeout, 410 Gone, network
 * error, or silence longer than the server timeout — it lists again, with exponential back-off after
 * errors. Written by hand because client-node's informer stops for good on errors other than 410 and
 * timeouts (NOTES.md).
 */
export class PodSource {
  private readonly core: CoreV1Api;
  private readonly watch: Watch;
  private readonly fieldSelector: string;
  private readonly handler: PodHandler;
  private readonly log: Logger;
  private readonly known = new Set<string>();
  private stopped = false;
  private abort: AbortController | undefined;
  private wakeSleep = new AbortController();

  constructor(kc: KubeConfig, core: CoreV1Api, nodeName: string, handler: PodHandler, log: Logger) {
    this.core = core;
    this.watch = new Watch(kc);
    this.fieldSelector = `spec.nodeName=${nodeName}`;
    this.handler = handler;
    this.log = log;
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
        this.log.warn({ err, backoffMs }, "pod list/watch failed; retrying");
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
    const list = await this.core.listPodForAllNamespaces({ fieldSelector: this.fieldSelector });
    const seen = new Set<string>();
    for (const pod of list.items) {
      const uid = pod.metadata?.uid;
      if (!uid) continue;
      seen.add(uid);
      this.handler.upsert(pod);
    }
    for (const uid of this.known) if (!seen.has(uid)) this.handler.remove(uid);
    this.known.clear();
    for (const uid of seen) this.known.add(uid);
    return list.metadata?.resourceVersion ?? "";
  }

  /** Resolves when the watch ends, for whatever reason (the caller relists). */
  private watchFrom(resourceVersion: string): Promise<void> {
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
          this.log.warn("pod watch silent for too long; restarting it");
          end();
        }, WATCH_SILENCE_MS);
      };
      heard();
      this.watch
        .watch(
          "/api/v1/pods",
          {
            fieldSelector: this.fieldSelector,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: WATCH_TIMEOUT_SECONDS,
          },
          (phase: string, obj: V1Pod & { code?: number; message?: string }) => {
            heard();
            const uid = obj.metadata?.uid;
            switch (phase) {
              case "ADDED":
              case "MODIFIED":
                if (uid) {
                  this.known.add(uid);
                  this.handler.upsert(obj);
                }
                break;
              case "DELETED":
                if (uid) {
                  this.known.delete(uid);
                  this.handler.remove(uid);
                }
                break;
              case "ERROR":
                // e.g. 410 Gone: the resourceVersion is too old; relisting fixes it.
                this.log.info({ code: obj.code, message: obj.message }, "pod watch ended by the server");
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
