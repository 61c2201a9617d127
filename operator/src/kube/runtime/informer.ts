/**
 * An informer: a cache of one resource collection kept by list+watch, after client-go's Reflector and
 * shared informer (k8s.io/client-go/tools/cache/reflector.go, shared_informer.go), on client-node's
 * `Watch` for the stream and plain GETs for the lists (raw JSON both ways, so list and watch objects
 * have the same shape; client-node's typed lists turn timestamps into Dates). Lists go through
 * undici's fetch with the dispatcher client-node builds from the kubeconfig (CA, client certificate).
 *
 * - list (paged, 500 per page) → replace the cache: objects that vanished are announced as deletes;
 * - watch from the list's resourceVersion with bookmarks and a server timeout of 5–10 min (client-go's
 *   minWatchTimeout × [1, 2)); a normal end re-watches from the last resourceVersion seen;
 * - `410 Gone` (an ERROR event or response) → relist;
 * - a stream silent for 30 s is dropped by client-node's inactivity timeout, the watchdog, and is
 *   re-opened from the last resourceVersion;
 * - any other error → retry after a capped, jittered exponential backoff (client-go's
 *   wait.Backoff with Jitter 1.0: 500 ms doubling to 30 s); an error that follows our own `stop()` is
 *   ignored;
 * - every `resyncMs` each cached object is announced again, so controllers re-check every key.
 *
 * Each listed or watched object goes through the `transform` before it is cached (controller-runtime's
 * cache TransformFunc), and the store keeps the `indexers`' indexes (indexer.ts).
 */
import {
  HttpMethod,
  type KubeConfig,
  type KubernetesObject,
  RequestContext,
  Watch,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { fetch } from "undici";
import { Indexer, type Indexers, keyOf, objectKey } from "./indexer.ts";

/** How an object reached a handler. */
export type InformerEvent = "add" | "update" | "delete" | "resync";

/**
 * Called for every announced object (a deleted object carries its last known state); for an update,
 * `previous` is the version the cache held before.
 */
export type ObjectHandler<T> = (object: T, event: InformerEvent, previous?: T) => void;

/**
 * What the rest of the operator uses of a cache: cached reads, change callbacks, start and stop. An
 * {@link Informer} is one; so is a MultiNamespaceInformer (kube/runtime/multi-namespace-informer.ts), one
 * informer per namespace read as one.
 */
export interface ObjectCache<T> {
  /** Adds a handler for every add, update, delete and resync; returns what removes it again. */
  onChange(handler: ObjectHandler<T>): () => void;
  /** Starts watching; resolves once the first list is cached. */
  start(): Promise<void>;
  /** Stops watching. */
  stop(): Promise<void>;
  /** The cached object, or undefined. */
  get(name: string, namespace?: string): T | undefined;
  /** All cached objects, optionally of one namespace. */
  list(namespace?: string): T[];
  /**
   * The cached objects filed under `value` in index `name` (indexer.ts). Errors: UnknownIndexError for
   * an index the cache was not built with.
   */
  byIndex(name: string, value: string): T[];
}

/** Options of an {@link Informer}. */
export interface InformerOptions<T = KubernetesObject> {
  /** Collection path, e.g. `/apis/gatehouse.dev/v1alpha1/agentsessions` or `/api/v1/pods`. */
  path: string;
  labelSelector?: string;
  /**
   * A field selector, e.g. `metadata.name=gatehouse-agent`: with a name, RBAC can grant the list and
   * watch of that name only.
   */
  fieldSelector?: string;
  /** Re-announce every cached object this often, in milliseconds (default 10 min; 0 disables). */
  resyncMs?: number;
  log: Logger;
  /** Called on every restart of the list+watch loop, with why (metrics) and, for "error", the error. */
  onRestart?: (reason: "gone" | "error" | "silent", error?: unknown) => void;
  /** Called after every successful list, once its differences are announced. */
  onListed?: () => void;
  /** Named indexes the cache keeps beside the namespace index. */
  indexers?: Indexers<T>;
  /**
   * What is cached of each listed or watched object (e.g. without metadata.managedFields). It may
   * change the object it is given, which nothing else holds.
   */
  transform?: (object: T) => T;
}

const PAGE_SIZE = 500;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;
const MIN_WATCH_TIMEOUT_S = 300;
const DEFAULT_RESYNC_MS = 600_000;

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/** Thrown inside the loop when the API server says the resourceVersion is too old. */
class GoneError extends Error {}

/** A running informer: cached reads plus change callbacks. */
export class Informer<T extends KubernetesObject> implements ObjectCache<T> {
  readonly path: string;
  private readonly config: KubeConfig;
  private readonly options: InformerOptions<T>;
  private readonly log: Logger;
  private readonly store: Indexer<T>;
  private readonly handlers = new Set<ObjectHandler<T>>();
  private resourceVersion = "";
  private stopped = false;
  private failures = 0;
  private abort: AbortController | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private synced: Promise<void> | undefined;
  private wakeBackoff: (() => void) | undefined;

  constructor(config: KubeConfig, options: InformerOptions<T>) {
    this.config = config;
    this.options = options;
    this.path = options.path;
    this.log = options.log.child({ informer: options.path });
    this.store = new Indexer(options.indexers);
  }

  /** Adds a handler for every add, update, delete and resync; returns what removes it again. */
  onChange(handler: ObjectHandler<T>): () => void {
    // Each subscription is its own entry, so the same function added twice is removed once per call.
    const entry: ObjectHandler<T> = (object, event, previous) => handler(object, event, previous);
    this.handlers.add(entry);
    return () => {
      this.handlers.delete(entry);
    };
  }

  /**
   * Starts the list+watch loop; resolves once the first list is cached (retrying failed lists with
   * backoff, each failure logged). Calling it again returns the same promise.
   */
  start(): Promise<void> {
    this.synced ??= new Promise<void>((resolve) => {
      void this.run(resolve);
    });
    const resync = this.options.resyncMs ?? DEFAULT_RESYNC_MS;
    if (resync > 0 && !this.resyncTimer) {
      this.resyncTimer = setInterval(() => {
        for (const [, object] of this.store.entries()) this.emit(object, "resync");
      }, resync);
      this.resyncTimer.unref();
    }
    return this.synced;
  }

  /** Stops watching; errors that follow are ignored. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    this.abort?.abort();
    this.wakeBackoff?.();
  }

  /** The cached object, or undefined. */
  get(name: string, namespace?: string): T | undefined {
    return this.store.getByKey(keyOf(namespace, name));
  }

  /** All cached objects, optionally of one namespace. */
  list(namespace?: string): T[] {
    return this.store.list(namespace);
  }

  byIndex(name: string, value: string): T[] {
    return this.store.byIndex(name, value);
  }

  /** How many objects it holds. */
  get size(): number {
    return this.store.size;
  }

  /**
   * Caches `objects` as a list would (transformed, indexed, differences announced) without asking the
   * API server: for measuring and testing the cache itself.
   */
  replaceWith(objects: Iterable<T>, resourceVersion = ""): void {
    this.replace(
      [...objects].map((o) => this.transformed(o)),
      resourceVersion,
    );
  }

  /** Caches one watch event as the watch would, without a stream: for measuring and testing the cache. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", object: T): void {
    this.applyEvent(type, object);
  }

  /** The resourceVersion the cache is at (last list, event or bookmark). */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(onSynced: () => void): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
          onSynced();
          this.options.onListed?.();
        }
        const ended = await this.watchOnce();
        this.failures = 0;
        if (ended === "silent") this.options.onRestart?.("silent");
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof GoneError) {
          this.log.info("resourceVersion too old (410 Gone); relisting");
          this.options.onRestart?.("gone");
          needList = true;
          continue;
        }
        this.options.onRestart?.("error", error);
        const delay = this.backoff();
        this.log.warn({ err: describe(error), delayMs: delay }, "list/watch failed; retrying");
        await this.sleep(delay);
      }
    }
  }

  /** Capped exponential backoff with full jitter: a delay in [d, 2d), d = 500 ms × 2^failures ≤ 30 s. */
  private backoff(): number {
    const base = Math.min(BACKOFF_BASE_MS * 2 ** this.failures, BACKOFF_MAX_MS);
    this.failures++;
    return Math.min(base * (1 + Math.random()), BACKOFF_MAX_MS);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeBackoff = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** The label and field selectors of every list and watch. */
  private selectors(): Record<string, string> {
    return {
      ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
      ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
    };
  }

  /** Lists the whole collection page by page and replaces the cache, announcing the differences. */
  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      const page = (await this.getJson(this.path, {
        limit: String(PAGE_SIZE),
        ...this.selectors(),
        ...(continueToken ? { continue: continueToken } : {}),
      })) as { items?: T[]; metadata?: { resourceVersion?: string; continue?: string } };
      // Transformed page by page: a relist holds the listed objects beside the cached ones, not their full form.
      for (const item of page.items ?? []) fresh.set(objectKey(item), this.transformed(item));
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (continueToken);
    this.replace(fresh.values(), resourceVersion);
  }

  /** Replaces the cache with a list's (transformed) `objects`, announcing the differences. */
  private replace(objects: Iterable<T>, resourceVersion: string): void {
    const previous = this.store.replace(objects);
    this.resourceVersion = resourceVersion;
    for (const [key, object] of previous) if (!this.store.getByKey(key)) this.emit(object, "delete");
    for (const [key, object] of this.store.entries()) {
      const before = previous.get(key);
      if (!before) this.emit(object, "add");
      else if (before.metadata?.resourceVersion !== object.metadata?.resourceVersion)
        this.emit(object, "update");
    }
  }

  /** Caches one watch event's object and announces it. */
  private applyEvent(type: string, item: T): void {
    if (type === "DELETED") {
      this.store.remove(item);
      this.emit(this.transformed(item), "delete");
      return;
    }
    const object = this.transformed(item);
    const previous = this.store.upsert(object);
    this.emit(object, previous ? "update" : "add", previous);
  }

  private transformed(object: T): T {
    return this.options.transform ? this.options.transform(object) : object;
  }

  /** One watch request; resolves when it ends normally ("closed") or by the inactivity timeout ("silent"). */
  private watchOnce(): Promise<"closed" | "silent"> {
    return new Promise((resolve, reject) => {
      let gone = false;
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.floor(MIN_WATCH_TIMEOUT_S * (1 + Math.random())),
        ...this.selectors(),
      };
      const onEvent = (type: string, object: unknown) => {
        if (type === "ERROR") {
          const status = object as WatchStatus;
          if (status.code === 410) gone = true;
          else this.log.warn({ status }, "watch error event");
          return;
        }
        const item = object as T;
        const rv = item.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (type === "BOOKMARK") return;
        this.failures = 0;
        this.applyEvent(type, item);
      };
      const onDone = (error: unknown) => {
        this.abort = undefined;
        if (gone || statusOf(error) === 410) reject(new GoneError("410 Gone"));
        else if (!error) resolve("closed");
        else if ((error as { name?: string }).name === "TimeoutError") resolve("silent");
        else reject(error);
      };
      new Watch(this.config)
        .watch(this.path, query, onEvent, onDone)
        .then((controller) => {
          this.abort = controller;
          if (this.stopped) controller.abort();
        })
        .catch(reject);
    });
  }

  /** A raw JSON GET of `path` with `query`, authenticated like every client of `config`. */
  private async getJson(path: string, query: Record<string, string>): Promise<unknown> {
    const cluster = this.config.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    const url = new URL(cluster.server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const context = new RequestContext(url.toString(), HttpMethod.GET);
    await this.config.applySecurityAuthentication(context);
    // undici's fetch, as client-node's Watch uses: its dispatcher carries the cluster CA and client certificate.
    const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() });
    const body = await response.text();
    if (response.status === 410) throw new GoneError("410 Gone");
    if (!response.ok) throw new ListError(response.status, body);
    return JSON.parse(body);
  }

  private emit(object: T, event: InformerEvent, previous?: T): void {
    for (const handler of this.handlers) {
      try {
        handler(object, event, previous);
      } catch (error) {
        this.log.error({ err: describe(error) }, "informer handler threw");
      }
    }
  }
}

/** A list request the API server refused, with its status code and metav1.Status body. */
export class ListError extends Error {
  readonly code: number;
  constructor(code: number, body: string) {
    let message = body;
    try {
      message = (JSON.parse(body) as WatchStatus).message ?? body;
    } catch {
      // not JSON
    }
    super(`list failed: ${code} ${message}`);
    this.code = code;
  }
}

function statusOf(error: unknown): number | undefined {
  const code = (error as { statusCode?: unknown; code?: unknown } | undefined)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
