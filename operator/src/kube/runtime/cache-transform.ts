/**
 * What the informers cache of an object, after controller-runtime's cache TransformFunc
 * (pkg/cache/cache.go, `TransformStripManagedFields`): every field some reader of the cache uses, and
 * not the server-side apply bookkeeping (`metadata.managedFields`) or the copy of the whole object that
 * a client-side `kubectl apply` keeps in an annotation. No controller, the gateway or a status write
 * reads either: status writes are merge patches of `status` alone (status.ts), and no write sends a
 * cached object's metadata back. Every other field stays, including the large ones (an Approval's
 * `spec.arguments`, a session's `spec.instructions` and `spec.messages`, a Capability's schemas),
 * which the controller or the gateway reads.
 */
import type { KubernetesObject } from "@kubernetes/client-node";

/** The annotation `kubectl apply` (client-side) keeps the last applied object in. */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * `object` without `metadata.managedFields` and the last-applied annotation; changes and returns the
 * object it is given (a freshly parsed list item or watch event, which nothing else holds).
 *
 * The metadata is rebuilt without the dropped field, not `delete`d from: V8 turns an object parsed by
 * JSON.parse that loses a property into a dictionary (a hash table of its properties), which took
 * ~250–500 bytes more per cached object than the fields saved (test/bench/cache-memory.ts); a rebuilt
 * object keeps the compact layout. {@link without} is that rebuild for the other transforms.
 */
export function stripForCache<T extends KubernetesObject>(object: T): T {
  const metadata = object.metadata;
  if (!metadata) return object;
  const annotations = metadata.annotations;
  const applied = annotations !== undefined && LAST_APPLIED_ANNOTATION in annotations;
  if (!("managedFields" in metadata) && !applied) return object;
  const kept = without(metadata, "managedFields");
  if (annotations && applied) {
    const others = without(annotations, LAST_APPLIED_ANNOTATION);
    // Assigned in place, the annotations keep their position; none left, the field goes.
    if (Object.keys(others).length > 0) kept.annotations = others;
    else {
      object.metadata = without(kept, "annotations");
      return object;
    }
  }
  object.metadata = kept;
  return object;
}

/**
 * A copy of `object` without `key` (the same object when it has none), built property by property so
 * that V8 keeps its compact layout (see {@link stripForCache}). The values are shared, not copied.
 */
export function without<T extends object, K extends keyof T>(object: T, key: K): Omit<T, K> {
  if (!(key in object)) return object;
  const { [key]: _dropped, ...kept } = object;
  return kept;
}
