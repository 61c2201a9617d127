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
 */
export function stripForCache<T extends KubernetesObject>(object: T): T {
  const metadata = object.metadata;
  if (!metadata) return object;
  delete metadata.managedFields;
  const annotations = metadata.annotations;
  if (annotations && LAST_APPLIED_ANNOTATION in annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _dropped, ...kept } = annotations;
    if (Object.keys(kept).length > 0) metadata.annotations = kept;
    else delete metadata.annotations;
  }
  return object;
}
