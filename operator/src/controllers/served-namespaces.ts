/**
 * The namespaces Gatehouse serves: WATCH_NAMESPACES (chart value watchNamespaces), every namespace when
 * empty. Only there may the controller create agent pods, and only there do both components watch pods
 * and EndpointSlices (kube/runtime/caches.ts); an AgentSession or ProviderInstance elsewhere waits with reason
 * NamespaceNotServed until the platform adds its namespace (a new configuration restarts the components).
 */

/** True when `namespace` is served by a controller serving `served` (empty: all). */
export function serves(served: readonly string[], namespace: string): boolean {
  return served.length === 0 || served.includes(namespace);
}

/** Why a `kind` object in `namespace` is not served, and the fix. */
export function namespaceNotServedMessage(
  kind: "AgentSessions" | "ProviderInstances",
  namespace: string,
  served: readonly string[],
): string {
  return (
    `Gatehouse runs ${kind} only in namespaces ${served.join(", ")} (the components' WATCH_NAMESPACES, ` +
    `chart value watchNamespaces), not in ${namespace}: ask the platform team to add ${namespace} there.`
  );
}
