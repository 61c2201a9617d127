/**
 * What one reconcile of a ProviderInstance does, as pure functions of what was observed, so the
 * reconciler reads like the paragraph that explains it (the applier is reconciler.ts). A pass plans
 * twice, around its I/O, as the Approval's planApproval and planDispatchOutcome do around a dispatch:
 * the Service's uid, which says which EndpointSlices are the provider's, is known only once the
 * Service is applied.
 *
 *   being deleted     → nothing: owner references clean up the workload
 *   namespace not served → Ready=False NamespaceNotServed, no endpoints; nothing applied, no requeue
 *                       ({@link planProviderInstance})
 *   else              → apply the Deployment (Sidecar: one discovery replica), the Service and the
 *                       NetworkPolicy (workload.ts); then the health check ({@link planHealthCheck}) on
 *                       the Service's ready endpoints and, from the first, GET /v1/manifest:
 *     no ready endpoint → Ready=False NoReadyEndpoints, saying what the pods wait for; look again soon
 *     manifest fetched  → Ready=True ManifestFetched, Healthy=True ManifestAnswered, status.manifest
 *     fetch failed      → Ready=False, Healthy=False ManifestUnavailable (the last manifest kept); look
 *                         again soon (manifest-grace.ts hides a failure shorter than its grace)
 *     spec.disabled     → Ready=False Disabled over any of those (workloads and health checks go on)
 *     status.endpoints, lastHealthCheck = now; the next health check in HEALTH_INTERVAL_MS
 */
import type { Manifest } from "@gatehouse/provider-sdk";
import { schemaDigest } from "@gatehouse/provider-sdk";
import type {
  V1Deployment,
  V1EndpointSlice,
  V1NetworkPolicy,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import type { Condition } from "../../api/common.ts";
import type { ProviderInstance } from "../../api/kinds.ts";
import { PodReason } from "../../api/status/kubernetes.ts";
import { ProviderInstanceCondition, ProviderInstanceReason } from "../../api/status/providerinstance.ts";
import {
  ENDPOINT_SLICE_CONTROLLER,
  ENDPOINT_SLICE_MANAGED_BY_LABEL,
  PROVIDER_LABEL,
  SERVICE_NAME_LABEL,
} from "../../api/well-known.ts";
import type { OperatorConfig } from "../../config.ts";
import { describeApiError } from "../../kube/runtime/client.ts";
import { setCondition } from "../../kube/runtime/conditions.ts";
import { namespaceNotServedMessage, serves } from "../served-namespaces.ts";
import { deploymentFor, networkPolicyFor, serviceFor } from "./workload.ts";

/** `status` of a ProviderInstance. */
export type ProviderInstanceStatus = NonNullable<ProviderInstance["status"]>;

/** How soon a healthy provider is checked again. */
export const HEALTH_INTERVAL_MS = 30_000;
/** How soon a provider without a ready endpoint, or whose manifest failed, is looked at again. */
export const WAITING_INTERVAL_MS = 2_000;

/**
 * What the ProviderInstance controller is given of the operator's configuration (built once by
 * controllers/manager.ts): the provider port, the gateway URL provider containers fetch the grant JWKS
 * from, the operator's namespace (where the pods allowed to call providers run) and the served
 * namespaces (the only ones whose pods the caches hold). Each one's meaning is in config.ts.
 */
export const PROVIDER_INSTANCE_SETTINGS = [
  "providerPort",
  "gatewayUrl",
  "operatorNamespace",
  "watchNamespaces",
] as const satisfies readonly (keyof OperatorConfig)[];
export type ProviderInstanceSettings = Pick<OperatorConfig, (typeof PROVIDER_INSTANCE_SETTINGS)[number]>;

/** What the planner is given: the ProviderInstance as cached, the settings, the clock. */
export interface ProviderInstancePlanInput {
  provider: ProviderInstance;
  settings: ProviderInstanceSettings;
  now: Date;
}

/** The objects a pass applies, in this order (server-side apply, forced, field manager gatehouse-operator). */
export interface WorkloadObjects {
  deployment: V1Deployment;
  service: V1Service;
  /** Applied like the workload, so a policy of an older release (which selected other pods) is corrected. */
  networkPolicy: V1NetworkPolicy;
}

/** One log line the applier writes. */
export interface PlannedLog {
  level: "info" | "warn";
  fields: Record<string, unknown>;
  message: string;
}

/** What a pass does before it reads anything. */
export interface ProviderInstancePlan {
  /** Apply these, then run the health check ({@link planHealthCheck}); absent → nothing is applied. */
  apply?: WorkloadObjects | undefined;
  /** The status to write (only if it differs) when nothing is applied. */
  status?: ProviderInstanceStatus | undefined;
}

/** GET /v1/manifest at one endpoint: what it answered, or how it failed. */
export type ManifestFetch = { endpoint: string; manifest: Manifest } | { endpoint: string; error: unknown };

/** Which reads the health check needs once the ready endpoints are known. */
export interface Observations {
  /** The endpoint to fetch the manifest from: the first ready one. */
  manifestFrom: string | undefined;
  /** Whether to read the pods, to say what keeps them from being ready. */
  pods: boolean;
}

/** What the health check observed. */
export interface HealthObservation {
  /** The Service's ready endpoints ({@link readyEndpoints}). */
  endpoints: string[];
  /** The pods of the namespace (the plan picks the provider's); read when {@link observationsFor} says so. */
  pods?: readonly V1Pod[] | undefined;
  /** The manifest fetch; made when {@link observationsFor} says so. */
  manifest?: ManifestFetch | undefined;
}

/** What the health check writes. */
export interface HealthCheckPlan {
  status: ProviderInstanceStatus;
  requeueAfterMs: number;
  log: PlannedLog[];
}

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
      if (waiting?.reason && waiting.reason !== PodReason.ContainerCreating) {
        if (!problems.has(waiting.reason)) {
          problems.set(
            waiting.reason,
            ` ${name} waits: ${waiting.reason}${waiting.message ? ` (${waiting.message.slice(0, 512)})` : ""}.`,
          );
        }
      } else if (terminated) {
        const reason = terminated.reason ?? PodReason.Error;
        if (!problems.has(reason)) {
          problems.set(reason, ` ${name} ended: ${reason}, exit code ${terminated.exitCode}.`);
        }
      }
    }
  }
  return [...problems.values()].slice(0, MAX_PROBLEMS).join("");
}

/** The pods of `provider` among `pods` (its label). */
function podsOf(provider: ProviderInstance, pods: readonly V1Pod[]): V1Pod[] {
  return pods.filter((pod) => pod.metadata?.labels?.[PROVIDER_LABEL] === provider.metadata.name);
}

/** `status.manifest`: what a fetched manifest declares, each capability with its schema digest. */
export function manifestSummaryOf(fetched: Manifest): NonNullable<ProviderInstanceStatus["manifest"]> {
  return {
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
}

/**
 * Plans one reconcile of `input.provider` up to its health check (see the header). Pure.
 *
 * A provider outside the served namespaces: neither component watches pods or EndpointSlices there
 * (kube/runtime/caches.ts), so its readiness could never be seen. Nothing is applied; the status says why and
 * lists no endpoint. A workload applied before the namespace stopped being served is left as it is.
 */
export function planProviderInstance(input: ProviderInstancePlanInput): ProviderInstancePlan {
  const { provider, settings, now } = input;
  if (provider.metadata.deletionTimestamp) return {};
  const generation = provider.metadata.generation;
  if (!serves(settings.watchNamespaces, provider.metadata.namespace)) {
    const conditions = setCondition(
      provider.status?.conditions,
      {
        type: ProviderInstanceCondition.Ready,
        status: "False",
        reason: ProviderInstanceReason.NamespaceNotServed,
        message: namespaceNotServedMessage(
          "ProviderInstances",
          provider.metadata.namespace,
          settings.watchNamespaces,
        ),
        observedGeneration: generation,
      },
      now,
    );
    return { status: { ...provider.status, observedGeneration: generation, conditions, endpoints: [] } };
  }
  // Shared: the provider itself. Sidecar: one discovery replica for the manifest and health.
  return {
    apply: {
      deployment: deploymentFor(provider, settings.providerPort, settings.gatewayUrl),
      service: serviceFor(provider, settings.providerPort),
      networkPolicy: networkPolicyFor(provider, settings.providerPort, settings.operatorNamespace),
    },
  };
}

/** The reads the health check needs, given the ready endpoints. Pure. */
export function observationsFor(endpoints: readonly string[]): Observations {
  return { manifestFrom: endpoints[0], pods: endpoints.length === 0 };
}

/**
 * The health check's status (see the header), from what was observed after the workload was applied.
 * Pure; throws only when a read {@link observationsFor} asks for is missing.
 */
export function planHealthCheck(
  input: ProviderInstancePlanInput,
  observed: HealthObservation,
): HealthCheckPlan {
  const { provider, now } = input;
  const generation = provider.metadata.generation;
  const { endpoints } = observed;
  const log: PlannedLog[] = [];
  // The last verdict of each condition type, set once at the end: spec.disabled overrules a Ready=True
  // of the same pass, and setting True then False would move lastTransitionTime on every pass.
  const verdicts = new Map<ProviderInstanceCondition, Omit<Condition, "type" | "lastTransitionTime">>();
  const set = (
    type: ProviderInstanceCondition,
    status: "True" | "False",
    reason: ProviderInstanceReason,
    message: string,
  ) => {
    verdicts.set(type, { status, reason, message, observedGeneration: generation });
  };
  let manifest = provider.status?.manifest;
  let requeueAfterMs = HEALTH_INTERVAL_MS;
  const { Ready, Healthy } = ProviderInstanceCondition;

  const fetch = endpoints.length === 0 ? undefined : need(observed.manifest, "the manifest fetch");
  if (!fetch) {
    const pods = podsOf(provider, need(observed.pods, "the pods"));
    set(
      Ready,
      "False",
      ProviderInstanceReason.NoReadyEndpoints,
      `No provider pod is ready yet.${podProblemOf(pods)}`,
    );
    requeueAfterMs = WAITING_INTERVAL_MS;
  } else if ("manifest" in fetch) {
    const fetched = fetch.manifest;
    manifest = manifestSummaryOf(fetched);
    const message = `Provider ${fetched.provider} ${fetched.version} offers ${fetched.capabilities.length} capabilities.`;
    set(Ready, "True", ProviderInstanceReason.ManifestFetched, message);
    set(Healthy, "True", ProviderInstanceReason.ManifestAnswered, "The provider answered /v1/manifest.");
  } else {
    const message = `GET /v1/manifest at ${fetch.endpoint} failed: ${describeApiError(fetch.error)}`;
    log.push({
      level: "warn",
      fields: { endpoint: fetch.endpoint, err: message },
      message: "provider manifest unavailable",
    });
    set(Ready, "False", ProviderInstanceReason.ManifestUnavailable, message);
    set(Healthy, "False", ProviderInstanceReason.ManifestUnavailable, message);
    requeueAfterMs = WAITING_INTERVAL_MS;
  }

  if (provider.spec.disabled) {
    // No new calls (Core reads Ready); the workloads and health checks go on.
    const message = "spec.disabled is set: new calls are refused; the workloads are kept.";
    set(Ready, "False", ProviderInstanceReason.Disabled, message);
  }

  let conditions: Condition[] | undefined = provider.status?.conditions;
  for (const [type, verdict] of verdicts) conditions = setCondition(conditions, { type, ...verdict }, now);
  const status: ProviderInstanceStatus = {
    ...provider.status,
    observedGeneration: generation,
    conditions,
    endpoints,
    lastHealthCheck: now.toISOString(),
    ...(manifest ? { manifest } : {}),
  };
  return { status, requeueAfterMs, log };
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`planHealthCheck needs ${what} for this pass (observationsFor)`);
  return value;
}
