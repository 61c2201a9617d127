/**
 * The store behind an informer: objects by `namespace/name` plus named indexes kept up to date on every
 * add, update, delete and relist, after client-go's thread-safe store and Indexer
 * (k8s.io/client-go/tools/cache/thread_safe_store.go, index.go). A lookup by an indexed value reads the
 * keys filed under it instead of scanning every cached object.
 */
import type { KubernetesObject } from "@kubernetes/client-node";

/**
 * The values `object` is filed under in one index (client-go's IndexFunc); none leaves it out. Values
 * of a namespaced lookup carry the namespace: {@link indexValue}.
 */
export type IndexFunc<T> = (object: T) => readonly string[];

/** Named index functions. */
export type Indexers<T> = Readonly<Record<string, IndexFunc<T>>>;

/** The index every store keeps: objects by namespace (client-go's MetaNamespaceIndexFunc). */
export const NAMESPACE_INDEX = "namespace";

/** An index value scoped to a namespace: `namespace/value`. */
export function indexValue(namespace: string | undefined, value: string): string {
  return `${namespace ?? ""}/${value}`;
}

/** The store key of an object: `namespace/name` (cluster-scoped objects: `/name`). */
export function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ""}/${name}`;
}

/** The store key of `object`. */
export function objectKey(object: KubernetesObject): string {
  return keyOf(object.metadata?.namespace, object.metadata?.name ?? "");
}

/** Thrown by {@link Indexer.byIndex} for an index no one declared: a typo would otherwise find nothing. */
export class UnknownIndexError extends Error {}

/** Objects by key, with named indexes over them. Not thread-safe; JavaScript needs none. */
export class Indexer<T extends KubernetesObject> {
  private readonly objects = new Map<string, T>();
  private readonly indexers: Indexers<T>;
  /**
   * Index name → value → keys. A value with no keys left is removed, so indexes shrink with the store.
   * A value filed under one key holds that key itself, not a set of one: most values are (a session's
   * uid, its pod's uid, an Approval's session), and a one-element Set costs about 150 bytes of heap
   * against none for the key, ~3 MiB per index at 10 000 sessions (test/bench/cache-memory.ts).
   */
  private readonly indices = new Map<string, Map<string, string | Set<string>>>();

  constructor(indexers: Indexers<T> = {}) {
    this.indexers = { [NAMESPACE_INDEX]: (o) => [o.metadata?.namespace ?? ""], ...indexers };
    for (const name of Object.keys(this.indexers)) this.indices.set(name, new Map());
  }

  /** How many objects it holds. */
  get size(): number {
    return this.objects.size;
  }

  /** The object at `key`, or undefined. */
  getByKey(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** The object, or undefined. */
  get(name: string, namespace?: string): T | undefined {
    return this.objects.get(keyOf(namespace, name));
  }

  /** Every object, or those of `namespace` (from the namespace index). */
  list(namespace?: string): T[] {
    return namespace === undefined ? [...this.objects.values()] : this.byIndex(NAMESPACE_INDEX, namespace);
  }

  /** The objects filed under `value` in index `name`. Errors: UnknownIndexError for an undeclared index. */
  byIndex(name: string, value: string): T[] {
    const index = this.indices.get(name);
    if (!index) throw new UnknownIndexError(`no index named ${name}`);
    const keys = index.get(value);
    if (keys === undefined) return [];
    const found: T[] = [];
    for (const key of typeof keys === "string" ? [keys] : keys) {
      const object = this.objects.get(key);
      if (object) found.push(object);
    }
    return found;
  }

  /** Adds or replaces `object`; returns what it replaced. */
  upsert(object: T): T | undefined {
    const key = objectKey(object);
    const previous = this.objects.get(key);
    this.objects.set(key, object);
    this.reindex(key, previous, object);
    return previous;
  }

  /** Removes the object with `object`'s key; returns what it removed. */
  remove(object: T): T | undefined {
    const key = objectKey(object);
    const previous = this.objects.get(key);
    if (!previous) return undefined;
    this.objects.delete(key);
    this.reindex(key, previous, undefined);
    return previous;
  }

  /** Replaces the whole content with `objects` (a relist); returns the previous content by key. */
  replace(objects: Iterable<T>): Map<string, T> {
    const previous = new Map(this.objects);
    this.objects.clear();
    for (const index of this.indices.values()) index.clear();
    for (const object of objects) this.upsert(object);
    return previous;
  }

  /** Every object by key. */
  entries(): IterableIterator<[string, T]> {
    return this.objects.entries();
  }

  private reindex(key: string, before: T | undefined, after: T | undefined): void {
    for (const [name, indexFunc] of Object.entries(this.indexers)) {
      const index = this.indices.get(name)!;
      const old = before ? new Set(indexFunc(before)) : new Set<string>();
      const fresh = after ? new Set(indexFunc(after)) : new Set<string>();
      for (const value of old) {
        if (fresh.has(value)) continue;
        const keys = index.get(value);
        if (keys === key) index.delete(value);
        else if (typeof keys === "object") {
          keys.delete(key);
          // Back to one key: held as itself again (see `indices`).
          if (keys.size === 1) index.set(value, keys.values().next().value as string);
        }
      }
      for (const value of fresh) {
        if (old.has(value)) continue;
        const keys = index.get(value);
        if (keys === undefined) index.set(value, key);
        else if (typeof keys === "string") {
          if (keys !== key) index.set(value, new Set([keys, key]));
        } else keys.add(key);
      }
    }
  }
}
