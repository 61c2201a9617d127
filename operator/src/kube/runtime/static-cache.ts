/**
 * An {@link ObjectCache} over a fixed set of objects, with the same store and indexes an informer
 * keeps (indexer.ts): what tests and benchmarks read code that takes caches with, without a watch.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { Indexer, type Indexers } from "./indexer.ts";
import type { ObjectCache } from "./informer.ts";

/** A cache holding `objects`, indexed by `indexers`; it never changes, so no handler is ever called. */
export function staticCache<T extends KubernetesObject>(
  objects: Iterable<T>,
  indexers?: Indexers<T>,
): ObjectCache<T> {
  const store = new Indexer(indexers);
  store.replace(objects);
  return {
    onChange: () => () => {},
    start: async () => {},
    stop: async () => {},
    get: (name, namespace) => store.get(name, namespace),
    list: (namespace) => store.list(namespace),
    byIndex: (name, value) => store.byIndex(name, value),
  };
}
