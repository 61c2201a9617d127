/**
 * The informer caches the operator reads from: the four Gatehouse kinds in all namespaces, the agent
 * and provider pods it manages, and EndpointSlices (providers are reached at their ready endpoints;
 * the local node has no kube-proxy, and a real cluster's ClusterIP would hide pod readiness anyway).
 */
import type { KubernetesObject, V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentSession, Approval, Capability, KindDefinition, ProviderInstance } from "../api/kinds.ts";
import { AGENT_SESSION, APPROVAL, CAPABILITY, GROUP, PROVIDER_INSTANCE, VERSION } from "../api/kinds.ts";
import { MANAGED_BY_SELECTOR } from "../api/well-known.ts";
import type { KubeClients } from "./client.ts";
import { Informer } from "./informer.ts";

export interface Caches {
  sessions: Informer<AgentSession & KubernetesObject>;
  capabilities: Informer<Capability & KubernetesObject>;
  providers: Informer<ProviderInstance & KubernetesObject>;
  approvals: Informer<Approval & KubernetesObject>;
  pods: Informer<V1Pod>;
  endpointSlices: Informer<V1EndpointSlice>;
}

/** Called when an informer restarts its list+watch (for the informer-restarts metric). */
export type RestartObserver = (path: string, reason: "gone" | "error" | "silent") => void;

/** Builds (not starts) every cache. */
export function makeCaches(clients: KubeClients, log: Logger, onRestart?: RestartObserver): Caches {
  const informer = <T extends KubernetesObject>(path: string, labelSelector?: string) =>
    new Informer<T>(clients.config, {
      path,
      labelSelector,
      log,
      onRestart: onRestart ? (reason) => onRestart(path, reason) : undefined,
    });
  const custom = (kind: KindDefinition) => `/apis/${GROUP}/${VERSION}/${kind.plural}`;
  return {
    sessions: informer(custom(AGENT_SESSION)),
    capabilities: informer(custom(CAPABILITY)),
    providers: informer(custom(PROVIDER_INSTANCE)),
    approvals: informer(custom(APPROVAL)),
    pods: informer("/api/v1/pods", MANAGED_BY_SELECTOR),
    endpointSlices: informer("/apis/discovery.k8s.io/v1/endpointslices", MANAGED_BY_SELECTOR),
  };
}

/** Starts every cache and waits for the initial lists. */
export async function startCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: Informer<KubernetesObject>) => cache.start()));
}

/** Stops every cache. */
export async function stopCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: Informer<KubernetesObject>) => cache.stop()));
}
