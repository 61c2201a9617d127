/**
 * What the controller caches of an AgentSession (its session informer's transform; the gateway's is
 * gateway/session-cache.ts): the object stripped for the cache (kube/runtime/cache-transform.ts) without
 * the conversation's text, which only the gateway hands the agent (gateway/server.ts): `spec.instructions`
 * and each message's text. The controller counts the messages (agentsession/status.ts, transitions.ts,
 * plan.ts: how many the agent answered), so `spec.messages` keeps its length. Nothing writes a cached
 * session's spec back: status writes are merge patches of `status` (kube/runtime/status.ts) and the
 * finalizer's a patch of `metadata.finalizers`; a changed spec is seen by its generation
 * (manager.ts specOrMetadataChanged). At 10 000 sessions about 7 MiB of heap and its garbage
 * (test/bench/cache-memory.ts).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { AgentSession } from "../api/kinds.ts";
import { stripForCache, without } from "../kube/runtime/cache-transform.ts";

type Message = AgentSession["spec"]["messages"][number];

/** What a cached session holds of each message: nothing but its place (one shared, frozen object). */
const COUNTED_MESSAGE = Object.freeze({}) as Message;

/**
 * `session` as the controller caches it (see the file's comment); changes and returns the object it
 * is given (a freshly parsed list item or watch event, which nothing else holds).
 */
export function sessionForController(
  session: AgentSession & KubernetesObject,
): AgentSession & KubernetesObject {
  const stripped = stripForCache(session);
  if (!stripped.spec) return stripped;
  // Rebuilt, not `delete`d from: see stripForCache.
  const spec = without(stripped.spec, "instructions") as AgentSession["spec"];
  if (Array.isArray(spec.messages)) spec.messages = spec.messages.map(() => COUNTED_MESSAGE);
  stripped.spec = spec;
  return stripped;
}
