/**
 * The informer caches the operator reads from: the four Gatehouse kinds in all namespaces, the agent
 * and provider pods it manages, and EndpointSlices (providers are reached at their ready endpoints;
 * the local node has no kube-proxy, and a real cluster's ClusterIP would hide pod readiness anyway).
 *
 * Pods and EndpointSlices are watched only in the served namespaces (WATCH_NAMESPACES) when there are
 * any, one list+watch each, so RBAC can grant their read there only (api/rbac.ts POD_READER_ROLE): a
 * label selector filters what is sent, not what may be asked for, and a pod's spec carries its
 * environment. Nothing is lost: agent pods run only in served namespaces, and so do the provider
 * workloads the controller follows (a session or a ProviderInstance elsewhere is NamespaceNotServed,
 * controllers/served-namespaces.ts).
 *
 * Every cache keeps the indexes it is given (kube/cache-indexes.ts names Gatehouse's) and caches objects
 * through stripForCache (cache-transform.ts), or through the transform a program gives for its pods
 * (the gateway keeps only what it reads of a pod: gateway/pod-cache.ts).
 */
import type { KubernetesObject, V1EndpointSlice, V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type {
  AgentSession,
  Approval,
  Capability,
  KindDefinition,
  ProviderInstance,
} from "../../api/kinds.ts";
import { AGENT_SESSION, APPROVAL, CAPABILITY, GROUP, PROVIDER_INSTANCE, VERSION } from "../../api/kinds.ts";
import { AGENT_NETWORK_POLICY, MANAGED_BY_SELECTOR } from "../../api/well-known.ts";
import { stripForCache } from "./cache-transform.ts";
import type { KubeClients } from "./client.ts";
import type { Indexers } from "./indexer.ts";
import { Informer, type ObjectCache } from "./informer.ts";
import { MultiNamespaceInformer } from "./multi-namespace-informer.ts";

export interface Caches {
  sessions: Informer<AgentSession & KubernetesObject>;
  capabilities: Informer<Capability & KubernetesObject>;
  providers: Informer<ProviderInstance & KubernetesObject>;
  approvals: Informer<Approval & KubernetesObject>;
  /** Gatehouse's pods of the served namespaces (every namespace when none is listed). */
  pods: ObjectCache<V1Pod>;
  /** Gatehouse's EndpointSlices of the served namespaces (likewise). */
  endpointSlices: ObjectCache<V1EndpointSlice>;
}

/** The indexes each cache keeps beside the namespace index (indexer.ts). */
export interface CacheIndexers {
  sessions: Indexers<AgentSession & KubernetesObject>;
  capabilities: Indexers<Capability & KubernetesObject>;
  providers: Indexers<ProviderInstance & KubernetesObject>;
  approvals: Indexers<Approval & KubernetesObject>;
  pods: Indexers<V1Pod>;
}

/** What a program caches of each pod, when not the whole pod stripped of managedFields. */
export type PodTransform = (pod: V1Pod) => V1Pod;

/** What a program caches of each AgentSession, when not the whole object stripped of managedFields. */
export type SessionTransform = (session: AgentSession & KubernetesObject) => AgentSession & KubernetesObject;

/** Called when an informer restarts its list+watch (for the informer-restarts metric). */
export type RestartObserver = (path: string, reason: "gone" | "error" | "silent") => void;

/**
 * Builds (not starts) every cache, each keeping its `indexers`; pods and EndpointSlices only in
 * `watchNamespaces` (config.ts `watchNamespaces`), or cluster-wide when it is empty; pods through
 * `podTransform` and AgentSessions through `sessionTransform` (default: stripForCache, as every other
 * cache).
 */
export function makeCaches(
  clients: KubeClients,
  log: Logger,
  watchNamespaces: readonly string[],
  indexers: CacheIndexers,
  onRestart?: RestartObserver,
  podTransform: PodTransform = stripForCache,
  sessionTransform: SessionTransform = stripForCache,
): Caches {
  const informer = <T extends KubernetesObject>(
    path: string,
    labelSelector?: string,
    index?: Indexers<T>,
    transform: (object: T) => T = stripForCache,
  ) =>
    new Informer<T>(clients.config, {
      path,
      labelSelector,
      log,
      indexers: index,
      transform,
      onRestart: onRestart ? (reason) => onRestart(path, reason) : undefined,
    });
  const custom = (kind: KindDefinition) => `/apis/${GROUP}/${VERSION}/${kind.plural}`;
  /** Gatehouse's objects of `plural` under `prefix` (`/api/v1`): in the served namespaces, or all. */
  const served = <T extends KubernetesObject>(
    prefix: string,
    plural: string,
    index?: Indexers<T>,
    transform?: (object: T) => T,
  ): ObjectCache<T> =>
    watchNamespaces.length === 0
      ? informer<T>(`${prefix}/${plural}`, MANAGED_BY_SELECTOR, index, transform)
      : new MultiNamespaceInformer<T>(watchNamespaces, (ns) =>
          informer<T>(`${prefix}/namespaces/${ns}/${plural}`, MANAGED_BY_SELECTOR, index, transform),
        );
  return {
    sessions: informer(custom(AGENT_SESSION), undefined, indexers.sessions, sessionTransform),
    capabilities: informer(custom(CAPABILITY), undefined, indexers.capabilities),
    providers: informer(custom(PROVIDER_INSTANCE), undefined, indexers.providers),
    approvals: informer(custom(APPROVAL), undefined, indexers.approvals),
    pods: served<V1Pod & KubernetesObject>(
      "/api/v1",
      "pods",
      indexers.pods,
      (pod) => podTransform(pod) as V1Pod & KubernetesObject,
    ),
    endpointSlices: served("/apis/discovery.k8s.io/v1", "endpointslices"),
  };
}

/**
 * The controller's cache of the agent NetworkPolicies: every namespace's object of that name, whoever
 * labelled it (a replacement need not carry Gatehouse's label), so a change to one is seen and undone
 * (controllers/agentsession/network-policy.ts keepAgentNetworkPolicy). Selected by name, so RBAC grants
 * the list and watch of that name only (api/rbac.ts).
 */
export function makeAgentPolicyCache(
  clients: KubeClients,
  log: Logger,
  onRestart?: RestartObserver,
): Informer<V1NetworkPolicy & KubernetesObject> {
  const path = "/apis/networking.k8s.io/v1/networkpolicies";
  return new Informer(clients.config, {
    path,
    fieldSelector: `metadata.name=${AGENT_NETWORK_POLICY}`,
    log,
    transform: stripForCache,
    onRestart: onRestart ? (reason) => onRestart(path, reason) : undefined,
  });
}

/** Starts every cache and waits for the initial lists. */
export async function startCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: ObjectCache<KubernetesObject>) => cache.start()));
}

/** Stops every cache. */
export async function stopCaches(caches: Caches): Promise<void> {
  await Promise.all(Object.values(caches).map((cache: ObjectCache<KubernetesObject>) => cache.stop()));
}
