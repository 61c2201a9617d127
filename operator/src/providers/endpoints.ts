/**
 * Where Core reaches a provider (the gateway's EndpointLookup): a Shared provider at the first ready
 * endpoint its ProviderInstance status lists (from its Service's EndpointSlices); a Sidecar provider in
 * the calling session's agent pod — the pod whose uid the session's status records (status.podUID)
 * and which the session controls, at its IP and the port of the sidecar container named for the
 * provider (controllers/agentsession/sidecars.ts), while that container is ready.
 */

import type { V1Pod } from "@kubernetes/client-node";
import type { AgentSession } from "../api/kinds.ts";
import { PodPhase } from "../api/status/kubernetes.ts";
import { sidecarContainerName } from "../api/well-known.ts";
import type { ProviderRef } from "../core/ports.ts";
import { sessionByUid } from "../kube/cache-indexes.ts";
import type { Caches } from "../kube/runtime/caches.ts";

/**
 * The URL of Sidecar provider `providerName` in `pod` when `pod` is `session`'s agent pod: the uid its
 * status records, controlled by the session. Anyone who may create pods in the namespace can copy the
 * session-uid label and a container name; neither the pod's uid nor the status are theirs to choose
 * (pure).
 */
export function sidecarEndpoint(pod: V1Pod, session: AgentSession, providerName: string): string | undefined {
  const podUid = session.status?.podUID;
  if (!podUid || pod.metadata?.uid !== podUid || pod.status?.phase !== PodPhase.Running) return undefined;
  const controlled = pod.metadata.ownerReferences?.some(
    (o) => o.controller === true && o.kind === "AgentSession" && o.uid === session.metadata.uid,
  );
  if (!controlled) return undefined;
  const container = sidecarContainerName(providerName);
  const sidecar = pod.spec?.initContainers?.find((c) => c.name === container);
  const ready = pod.status?.initContainerStatuses?.find((s) => s.name === container)?.ready;
  const port = sidecar?.ports?.[0]?.containerPort;
  return sidecar && ready && port && pod.status?.podIP ? `http://${pod.status.podIP}:${port}` : undefined;
}

/** The lookup over the operator's caches. */
export function providerEndpoints(
  caches: Caches,
): (provider: ProviderRef, sessionUid: string) => string | undefined {
  return (ref, sessionUid) => {
    const provider = caches.providers.get(ref.name, ref.namespace);
    if (!provider) return undefined;
    if (provider.spec.placement !== "Sidecar") return provider.status?.endpoints?.[0];
    // A Sidecar provider serves only the sessions of its own namespace (controllers/agentsession/sidecars.ts).
    const session = sessionByUid(caches, ref.namespace, sessionUid);
    const podName = session?.status?.podName;
    const pod = podName ? caches.pods.get(podName, ref.namespace) : undefined;
    return session && pod ? sidecarEndpoint(pod, session, ref.name) : undefined;
  };
}
