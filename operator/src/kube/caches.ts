/**
 * The informer caches the operator reads from: the four Gatehouse kinds in all namespaces, the agent
 * and provider pods it manages, and EndpointSlices (providers are reached at their ready endpoints;
 * the local node has no kube-proxy, and a real cluster's ClusterIP would hide pod readiness anyway).
 */
import type { KubernetesListObject, KubernetesObject, V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentSession, Approval, Capability, KindDefinition, ProviderInstance } from "../api/kinds.ts";
import { AGENT_SESSION, APPROVAL, CAPABILITY, GROUP, PROVIDER_INSTANCE, VERSION } from "../api/kinds.ts";
import { MANAGED_BY_SELECTOR } from "../api/well-known.ts";
import type { KubeClients } from "./client.ts";
import { WatchedCache } from "./informer.ts";

export interface Caches {
  sessions: WatchedCache<AgentSession & KubernetesObject>;
  capabilities: WatchedCache<Capability & KubernetesObject>;
  providers: WatchedCache<ProviderInstance & KubernetesObject>;
  approvals: WatchedCache<Approval & KubernetesObject>;
  pods: WatchedCache<V1Pod>;
  endpointSlices: WatchedCache<V1EndpointSlice>;
}

function customCache<T extends KubernetesObject>(clients: KubeClients, kind: KindDefinition, log: Logger) {
  const list = async () =>
    (await clients.custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: kind.plural,
    })) as KubernetesListObject<T>;
  return new WatchedCache<T>(clients.config, `/apis/${GROUP}/${VERSION}/${kind.plural}`, list, log);
}

/** Builds (not starts) every cache. */
export function makeCaches(clients: KubeClients, log: Logger): Caches {
  const managed = MANAGED_BY_SELECTOR;
  return {
    sessions: customCache(clients, AGENT_SESSION, log),
    capabilities: customCache(clients, CAPABILITY, log),
    providers: customCache(clients, PROVIDER_INSTANCE, log),
    approvals: customCache(clients, APPROVAL, log),
    pods: new WatchedCache<V1Pod>(
      clients.config,
      "/api/v1/pods",
      () => clients.core.listPodForAllNamespaces({ labelSelector: managed }),
      log,
      managed,
    ),
    endpointSlices: new WatchedCache<V1EndpointSlice>(
      clients.config,
      "/apis/discovery.k8s.io/v1/endpointslices",
      () => clients.discovery.listEndpointSliceForAllNamespaces({ labelSelector: managed }),
      log,
      managed,
    ),
  };
}

/** Starts every cache and waits for the initial lists. */
export async function startCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: WatchedCache<KubernetesObject>) => cache.start()));
}

/** Stops every cache. */
export async function stopCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: WatchedCache<KubernetesObject>) => cache.stop()));
}
