/**
 * ProviderInstance reconciler:
 *   provider = cache.get(key)               ; gone → owner references clean up the workload
 *   namespace not served → Ready=False NamespaceNotServed, apply nothing
 *   apply Deployment + Service (Sidecar: one discovery replica) ; server-side apply, field manager gatehouse-operator
 *   apply the NetworkPolicy admitting only the gateway and the controller (same field manager)
 *   endpoints = ready addresses of the EndpointSlices the EndpointSlice controller keeps for that Service
 *   manifest = GET /v1/manifest at an endpoint
 *   status = Ready/Healthy conditions (spec.disabled → Ready=False Disabled), manifest summary, endpoints
 *   requeue for the next health check
 */

import type { Manifest } from "@gatehouse/provider-sdk";
import { schemaDigest } from "@gatehouse/provider-sdk";
import type { KubernetesObject, V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import { PatchStrategy } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Condition } from "../../api/common.ts";
import { PROVIDER_INSTANCE, type ProviderInstance } from "../../api/kinds.ts";
import {
  ENDPOINT_SLICE_CONTROLLER,
  ENDPOINT_SLICE_MANAGED_BY_LABEL,
  FIELD_MANAGER,
  PROVIDER_LABEL,
  SERVICE_NAME_LABEL,
} from "../../api/well-known.ts";
import type { Caches } from "../../kube/caches.ts";
import type { KubeClients } from "../../kube/client.ts";
import { describeApiError } from "../../kube/client.ts";
import { setCondition } from "../../kube/conditions.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import { namespaceNotServedMessage, serves } from "../served-namespaces.ts";
import { deploymentFor, networkPolicyFor, serviceFor, workloadName } from "./workload.ts";

/** Fetches a provider's manifest from one of its endpoints (`http://ip:port`). Throws on any failure. */
export interface ManifestSource {
  fetchManifest(endpoint: string): Promise<Manifest>;
}

export interface ProviderInstanceDeps {
  clients: KubeClients;
  caches: Caches;
  manifests: ManifestSource;
  providerPort: number;
  /** The gateway URL provider containers fetch the grant JWKS from. */
  gatewayUrl: string;
  /** The operator's namespace (POD_NAMESPACE): where the pods allowed to call providers run. */
  operatorNamespace: string;
  /** The served namespaces (WATCH_NAMESPACES; empty: all): the only ones whose pods the caches hold. */
  watchNamespaces: readonly string[];
  now: () => Date;
}

const HEALTH_INTERVAL_MS = 30_000;
const WAITING_INTERVAL_MS = 2_000;

/**
 * Whether the EndpointSlice controller keeps `slice` for `service`: labelled with the Service's name
 * and that controller as its manager, and controlled by the Service (its uid). A slice anyone else
 * wrote with the service-name label — a mirror of a hand-made Endpoints object, or a forgery pointing
 * at an address of its writer's choosing — is not the provider's.
 */
export function isServiceSlice(slice: V1EndpointSlice, service: { name: string; uid: string }): boolean {
  const labels = slice.metadata?.labels;
  return (
    labels?.[SERVICE_NAME_LABEL] === service.name &&
    labels[ENDPOINT_SLICE_MANAGED_BY_LABEL] === ENDPOINT_SLICE_CONTROLLER &&
    (slice.metadata?.ownerReferences?.some(
      (o) => o.controller === true && o.kind === "Service" && o.uid === service.uid,
    ) ??
      false)
  );
}

/**
 * Ready endpoint URLs of a Service from the EndpointSlices (discovery.k8s.io/v1) the EndpointSlice
 * controller keeps for it ({@link isServiceSlice}), sorted.
 */
export function readyEndpoints(
  slices: V1EndpointSlice[],
  service: { name: string; uid: string },
  port: number,
): string[] {
  const urls = new Set<string>();
  for (const slice of slices) {
    if (!isServiceSlice(slice, service)) continue;
    const slicePort = slice.ports?.find((p) => p.name === "http")?.port ?? port;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false) continue;
      for (const address of endpoint.addresses) urls.add(`http://${address}:${slicePort}`);
    }
  }
  return [...urls].sort();
}

/** Reconciles one ProviderInstance. */
export async function reconcileProviderInstance(
  deps: ProviderInstanceDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const provider = deps.caches.providers.get(name, namespace);
  if (!provider || provider.metadata.deletionTimestamp) return undefined;
  const now = deps.now();
  const generation = provider.metadata.generation;
  if (!serves(deps.watchNamespaces, namespace)) return notServed(deps, provider, now);

  // Shared: the provider itself. Sidecar: one discovery replica for the manifest and health.
  await apply(deps.clients, deploymentFor(provider, deps.providerPort, deps.gatewayUrl));
  const service = await apply(deps.clients, serviceFor(provider, deps.providerPort));
  // Applied like the workload, so a policy of an older release (which selected other pods) is corrected.
  await apply(deps.clients, networkPolicyFor(provider, deps.providerPort, deps.operatorNamespace));

  const slices = deps.caches.endpointSlices.list(namespace);
  const endpoints = readyEndpoints(
    slices,
    { name: workloadName(provider), uid: service.metadata?.uid ?? "" },
    deps.providerPort,
  );
  let conditions: Condition[] | undefined = provider.status?.conditions;
  let manifest = provider.status?.manifest;
  let requeueAfterMs = HEALTH_INTERVAL_MS;

  if (endpoints.length === 0) {
    conditions = setCondition(
      conditions,
      {
        type: "Ready",
        status: "False",
        reason: "NoReadyEndpoints",
        message: `No provider pod is ready yet.${podProblemOf(
          deps.caches.pods
            .list(namespace)
            .filter((pod) => pod.metadata?.labels?.[PROVIDER_LABEL] === provider.metadata.name),
        )}`,
        observedGeneration: generation,
      },
      now,
    );
    requeueAfterMs = WAITING_INTERVAL_MS;
  } else {
    try {
      const fetched = await deps.manifests.fetchManifest(endpoints[0]!);
      manifest = {
        provider: fetched.provider,
        version: fetched.version,
        requiresIdentity: fetched.requiresIdentity,
        capabilities: fetched.capabilities.map((c) => ({
          id: c.id,
          effect: c.effect,
          mode: c.mode,
          idempotency: c.idempotency,
          schemaDigest: schemaDigest(c),
        })),
      };
      const message = `Provider ${fetched.provider} ${fetched.version} offers ${fetched.capabilities.length} capabilities.`;
      conditions = setCondition(
        conditions,
        { type: "Ready", status: "True", reason: "ManifestFetched", message, observedGeneration: generation },
        now,
      );
      conditions = setCondition(
        conditions,
        {
          type: "Healthy",
          status: "True",
          reason: "ManifestAnswered",
          message: "The provider answered /v1/manifest.",
          observedGeneration: generation,
        },
        now,
      );
    } catch (error) {
      const message = `GET /v1/manifest at ${endpoints[0]} failed: ${describeApiError(error)}`;
      log.warn({ endpoint: endpoints[0], err: message }, "provider manifest unavailable");
      conditions = setCondition(
        conditions,
        {
          type: "Ready",
          status: "False",
          reason: "ManifestUnavailable",
          message,
          observedGeneration: generation,
        },
        now,
      );
      conditions = setCondition(
        conditions,
        {
          type: "Healthy",
          status: "False",
          reason: "ManifestUnavailable",
          message,
          observedGeneration: generation,
        },
        now,
      );
      requeueAfterMs = WAITING_INTERVAL_MS;
    }
  }

  if (provider.spec.disabled) {
    // No new calls (Core reads Ready); the workloads and health checks go on.
    conditions = setCondition(
      conditions,
      {
        type: "Ready",
        status: "False",
        reason: "Disabled",
        message: "spec.disabled is set: new calls are refused; the workloads are kept.",
        observedGeneration: generation,
      },
      now,
    );
  }

  const desired = {
    ...provider.status,
    observedGeneration: generation,
    conditions,
    endpoints,
    lastHealthCheck: now.toISOString(),
    ...(manifest ? { manifest } : {}),
  };
  await writeStatusIfChanged(deps.clients, PROVIDER_INSTANCE, provider, desired);
  return { requeueAfterMs };
}

/**
 * A provider outside the served namespaces: neither component watches pods or EndpointSlices there
 * (kube/caches.ts), so its readiness could never be seen. Nothing is applied; the status says why and
 * lists no endpoint. A workload applied before the namespace stopped being served is left as it is.
 */
async function notServed(
  deps: ProviderInstanceDeps,
  provider: ProviderInstance,
  now: Date,
): Promise<ReconcileResult> {
  const conditions = setCondition(
    provider.status?.conditions,
    {
      type: "Ready",
      status: "False",
      reason: "NamespaceNotServed",
      message: namespaceNotServedMessage(
        "ProviderInstances",
        provider.metadata.namespace,
        deps.watchNamespaces,
      ),
      observedGeneration: provider.metadata.generation,
    },
    now,
  );
  const desired = {
    ...provider.status,
    observedGeneration: provider.metadata.generation,
    conditions,
    endpoints: [],
  };
  await writeStatusIfChanged(deps.clients, PROVIDER_INSTANCE, provider, desired);
  return undefined;
}

/** Server-side applies `object` as FIELD_MANAGER (forced); returns the object as the API server holds it. */
async function apply<T extends KubernetesObject>(clients: KubeClients, object: T): Promise<T> {
  return await clients.objects.patch(
    object,
    undefined,
    undefined,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  );
}

/** How many distinct problems the message names at most (one pod each). */
const MAX_PROBLEMS = 3;

/** Creation time of a pod in milliseconds (the cache may hold a Date or a string); 0 when unknown. */
function createdAt(pod: V1Pod): number {
  const created = pod.metadata?.creationTimestamp;
  return created ? new Date(created).getTime() || 0 : 0;
}

/**
 * The pods of the Deployment's current rollout, newest first: those of the ReplicaSet (label
 * `pod-template-hash`) whose newest pod is the newest of all. Pods of an earlier rollout still running
 * beside it (a rolling update waits for the new pods) are left out: their problems are fixed (pure).
 */
export function currentRolloutPods(pods: readonly V1Pod[]): V1Pod[] {
  const newest = [...pods].sort((a, b) => createdAt(b) - createdAt(a));
  const hash = (pod: V1Pod) => pod.metadata?.labels?.["pod-template-hash"] ?? "";
  const current = newest[0] ? hash(newest[0]) : "";
  return newest.filter((pod) => hash(pod) === current);
}

/**
 * What keeps a provider's pods from being ready, as sentences to append to the condition message: for
 * the pods of the current rollout (newest first), each distinct reason a container waits for (e.g.
 * `ImagePullBackOff`, `ImageNotInMap`, `CrashLoopBackOff`) or ended with, once, naming the first pod
 * that shows it, with the kubelet's message; "" when no pod says anything (pure).
 */
export function podProblemOf(pods: readonly V1Pod[]): string {
  const problems = new Map<string, string>();
  for (const pod of currentRolloutPods(pods)) {
    for (const container of pod.status?.containerStatuses ?? []) {
      const waiting = container.state?.waiting;
      const terminated = container.state?.terminated ?? container.lastState?.terminated;
      const name = `pod ${pod.metadata?.name}, container ${container.name}`;
      if (waiting?.reason && waiting.reason !== "ContainerCreating") {
        if (!problems.has(waiting.reason)) {
          problems.set(
            waiting.reason,
            ` ${name} waits: ${waiting.reason}${waiting.message ? ` (${waiting.message.slice(0, 512)})` : ""}.`,
          );
        }
      } else if (terminated) {
        const reason = terminated.reason ?? "Error";
        if (!problems.has(reason)) {
          problems.set(reason, ` ${name} ended: ${reason}, exit code ${terminated.exitCode}.`);
        }
      }
    }
  }
  return [...problems.values()].slice(0, MAX_PROBLEMS).join("");
}
