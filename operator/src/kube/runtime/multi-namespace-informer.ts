/**
 * One cache over a fixed set of namespaces, after controller-runtime's multiNamespaceCache
 * (pkg/cache/multi_namespace_cache.go): a cache per namespace, each its own list+watch of
 * `…/namespaces/<ns>/<plural>`, read as one. What a component may not read is never listed: RBAC can
 * then grant the read in those namespaces only, where a label selector would confine nothing.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ObjectCache, ObjectHandler } from "./informer.ts";

/** The caches of several namespaces, read as one {@link ObjectCache}. */
export class MultiNamespaceInformer<T extends KubernetesObject> implements ObjectCache<T> {
  private readonly byNamespace: ReadonlyMap<string, ObjectCache<T>>;

  /**
   * `cacheOf(namespace)` builds (not starts) one namespace's cache; a namespace listed twice is watched
   * once. Throws on an empty list: a cache of no namespace would silently find nothing (watch every
   * namespace with one cluster-wide Informer instead).
   */
  constructor(namespaces: readonly string[], cacheOf: (namespace: string) => ObjectCache<T>) {
    if (namespaces.length === 0) throw new Error("MultiNamespaceInformer needs at least one namespace");
    this.byNamespace = new Map([...new Set(namespaces)].map((ns) => [ns, cacheOf(ns)]));
  }

  /** The namespaces it watches. */
  get namespaces(): string[] {
    return [...this.byNamespace.keys()];
  }

  onChange(handler: ObjectHandler<T>): () => void {
    const removers = [...this.byNamespace.values()].map((cache) => cache.onChange(handler));
    return () => {
      for (const remove of removers) remove();
    };
  }

  /** Starts every namespace's cache; resolves once each has its first list. */
  async start(): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((cache) => cache.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((cache) => cache.stop()));
  }

  /** The cached object; undefined in a namespace it does not watch (and without a namespace). */
  get(name: string, namespace?: string): T | undefined {
    return namespace === undefined ? undefined : this.byNamespace.get(namespace)?.get(name, namespace);
  }

  /** The objects of `namespace` (none when it is not watched), or of every watched namespace. */
  list(namespace?: string): T[] {
    if (namespace !== undefined) return this.byNamespace.get(namespace)?.list(namespace) ?? [];
    return [...this.byNamespace.values()].flatMap((cache) => cache.list());
  }

  /** The objects filed under `value` in index `name`, from every watched namespace. */
  byIndex(name: string, value: string): T[] {
    return [...this.byNamespace.values()].flatMap((cache) => cache.byIndex(name, value));
  }
}
