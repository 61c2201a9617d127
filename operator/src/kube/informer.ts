/**
 * A watched cache of one resource type, over client-node's informer, with a watchdog: client-node
 * 2.0's informer stops for good on any error other than 410 or a timeout (NOTES.md; upstream issues
 * #596, #958), so this restarts it with capped exponential backoff and reports each restart.
 */
import {
  type KubeConfig,
  type KubernetesObject,
  type ListPromise,
  makeInformer,
} from "@kubernetes/client-node";
import type { Logger } from "pino";

export type ObjectHandler<T> = (object: T) => void;

const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 30_000;

/** A running informer: cached reads plus add/update/delete callbacks. */
export class WatchedCache<T extends KubernetesObject> {
  private readonly informer;
  private readonly handlers: Array<ObjectHandler<T>> = [];
  private restarts = 0;
  private stopped = false;
  private synced: Promise<void> | undefined;

  /**
   * @param path the watch path, e.g. `/apis/gatehouse.dev/v1alpha1/agentsessions`
   * @param list lists the same collection (the informer's initial list and relists)
   */
  readonly path: string;
  private readonly log: Logger;

  constructor(config: KubeConfig, path: string, list: ListPromise<T>, log: Logger, labelSelector?: string) {
    this.path = path;
    this.log = log;
    this.informer = makeInformer<T>(config, path, list, labelSelector);
    const fire = (object: T) => {
      for (const handler of this.handlers) handler(object);
    };
    this.informer.on("add", fire);
    this.informer.on("update", fire);
    this.informer.on("delete", fire);
    this.informer.on("connect", () => {
      this.restarts = 0;
    });
    this.informer.on("error", (error: unknown) => this.restart(error));
  }

  /** Calls handler for every added, updated or deleted object (deleted objects carry their last state). */
  onChange(handler: ObjectHandler<T>): void {
    this.handlers.push(handler);
  }

  /** Starts watching; resolves after the initial list is cached. */
  start(): Promise<void> {
    this.synced ??= this.informer.start();
    return this.synced;
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  /** The cached object, or undefined. */
  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  /** All cached objects, optionally of one namespace. */
  list(namespace?: string): T[] {
    return [...this.informer.list(namespace)];
  }

  private restart(error: unknown): void {
    if (this.stopped) return;
    const delay = Math.min(RESTART_BASE_MS * 2 ** this.restarts, RESTART_MAX_MS);
    this.restarts++;
    this.log.warn({ path: this.path, err: error, delayMs: delay }, "watch stopped; restarting informer");
    setTimeout(() => {
      if (this.stopped) return;
      this.informer.start().catch((startError: unknown) => this.restart(startError));
    }, delay).unref();
  }
}
