/**
 * Where Core reaches a provider (the gateway's EndpointLookup): a Shared provider at the first ready
 * endpoint its ProviderInstance status lists (from its Service's EndpointSlices); a Sidecar provider in
 * the calling session's agent pod — the pod's IP and the port of the sidecar container named for it
 * (controllers/agentsession/sidecars.ts), while that container is ready.
 */

import { SESSION_UID_LABEL, sidecarContainerName } from "../api/well-known.ts";
import type { ProviderRef } from "../core/ports.ts";
import type { Caches } from "./caches.ts";

/** The lookup over the operator's caches. */
export function providerEndpoints(
  caches: Caches,
): (provider: ProviderRef, sessionUid: string) => string | undefined {
  return (ref, sessionUid) => {
    const provider = caches.providers.get(ref.name, ref.namespace);
    if (!provider) return undefined;
    if (provider.spec.placement !== "Sidecar") return provider.status?.endpoints?.[0];
    const container = sidecarContainerName(ref.name);
    for (const pod of caches.pods.list(ref.namespace)) {
      if (pod.metadata?.labels?.[SESSION_UID_LABEL] !== sessionUid || pod.status?.phase !== "Running")
        continue;
      const sidecar = pod.spec?.initContainers?.find((c) => c.name === container);
      const ready = pod.status?.initContainerStatuses?.find((s) => s.name === container)?.ready;
      const port = sidecar?.ports?.[0]?.containerPort;
      if (sidecar && ready && port && pod.status?.podIP) return `http://${pod.status.podIP}:${port}`;
    }
    return undefined;
  };
}
