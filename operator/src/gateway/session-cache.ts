/**
 * What the gateway caches of an AgentSession (its session informer's transform; the controller's is
 * controllers/session-cache.ts): the object stripped for the cache (kube/runtime/cache-transform.ts)
 * without `status.conditions`, which only the controller reads (to keep each condition's
 * lastTransitionTime) and writes; the gateway reads the phase, the pod's name and uid and the counters,
 * never a condition, and writes no session. At 10 000 sessions about 4 MiB of heap and its garbage
 * (test/bench/cache-memory.ts).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { AgentSession } from "../api/kinds.ts";
import { stripForCache, without } from "../kube/runtime/cache-transform.ts";

/**
 * `session` as the gateway caches it (see the file's comment); changes and returns the object it is
 * given (a freshly parsed list item or watch event, which nothing else holds).
 */
export function sessionForGateway(session: AgentSession & KubernetesObject): AgentSession & KubernetesObject {
  const stripped = stripForCache(session);
  // Rebuilt, not `delete`d from: see stripForCache.
  if (stripped.status) stripped.status = without(stripped.status, "conditions");
  return stripped;
}
