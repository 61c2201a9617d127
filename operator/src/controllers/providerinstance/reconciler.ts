/**
 * ProviderInstance reconciler: a pure planner (plan.ts) and this thin applier over a writer port (writer.ts).
 *
 *   provider = cache.get(key)                 ; gone → owner references clean up the workload
 *   plan = planProviderInstance(provider, settings, now)
 *              being deleted → nothing; namespace not served → Ready=False NamespaceNotServed, no
 *              endpoints: write plan.status, apply nothing, no requeue
 *   apply plan.apply: Deployment (Sidecar: one discovery replica), Service, then the NetworkPolicy
 *              admitting only the gateway and the controller ; server-side apply, field manager
 *              gatehouse-operator, forced
 *   endpoints = ready addresses of the EndpointSlices the EndpointSlice controller keeps for the
 *              Service as applied (its uid)
 *   observed = what plan.ts's observationsFor asks: none ready → the pods (what they wait for);
 *              else GET /v1/manifest at the first endpoint (manifest-grace.ts rides out a short failure)
 *   check = planHealthCheck(provider, observed) : Ready / Healthy conditions (spec.disabled →
 *              Ready=False Disabled), the manifest summary, endpoints, lastHealthCheck
 *   log check.log; write check.status (resourceVersion-guarded, only if it differs)
 *   return check.requeueAfterMs                ; the next health check, or sooner while waiting
 */
import type { Manifest } from "@gatehouse/provider-sdk";
import type { V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { podsOfProvider } from "../../kube/cache-indexes.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import type { ReconcileResult } from "../../kube/runtime/workqueue.ts";
import {
  type HealthObservation,
  type ManifestFetch,
  observationsFor,
  type PlannedLog,
  type ProviderInstancePlanInput,
  type ProviderInstanceSettings,
  planHealthCheck,
  planProviderInstance,
  readyEndpoints,
} from "./plan.ts";
import { workloadName } from "./workload.ts";
import { kubeProviderInstanceWriter, type ProviderInstanceWriter } from "./writer.ts";

/** Fetches a provider's manifest from one of its endpoints (`http://ip:port`). Throws on any failure. */
export interface ManifestSource {
  fetchManifest(endpoint: string): Promise<Manifest>;
}

export interface ProviderInstanceDeps {
  clients: KubeClients;
  caches: Caches;
  manifests: ManifestSource;
  settings: ProviderInstanceSettings;
  now: () => Date;
}

/** What the health check reads: the caches of the served namespaces, and the provider itself. */
export interface ProviderInstanceReads {
  endpointSlices(namespace: string): V1EndpointSlice[];
  pods(namespace: string): V1Pod[];
  manifests: ManifestSource;
}

/** Reconciles one ProviderInstance: plan, apply, observe, plan the health check, write it. */
export async function reconcileProviderInstance(
  deps: ProviderInstanceDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const provider = deps.caches.providers.get(name, namespace);
  if (!provider) return undefined;
  const reads: ProviderInstanceReads = {
    endpointSlices: (ns) => deps.caches.endpointSlices.list(ns),
    // Its own pods only: plan.ts keeps those of its label anyway, and a namespace may hold many agent pods.
    pods: (ns) => podsOfProvider(deps.caches, ns, provider.metadata.name),
    manifests: deps.manifests,
  };
  return await applyProviderInstance(
    kubeProviderInstanceWriter(deps.clients),
    reads,
    {
      provider,
      settings: deps.settings,
      now: deps.now(),
    },
    log,
  );
}

/**
 * Applies `planProviderInstance(input)` through `writer`, then the health check on what `reads` show
 * (see the header). Errors: the writer's (a failed manifest fetch is a finding, not an error); the
 * work queue retries, and every step is safe to repeat.
 */
export async function applyProviderInstance(
  writer: ProviderInstanceWriter,
  reads: ProviderInstanceReads,
  input: ProviderInstancePlanInput,
  log: Logger,
): Promise<ReconcileResult> {
  const plan = planProviderInstance(input);
  if (!plan.apply) {
    if (plan.status) await writer.writeStatus(input.provider, plan.status);
    return undefined;
  }
  await writer.apply(plan.apply.deployment);
  const service = await writer.apply(plan.apply.service);
  await writer.apply(plan.apply.networkPolicy);
  const check = planHealthCheck(input, await observe(reads, input, service));
  logAll(log, check.log);
  await writer.writeStatus(input.provider, check.status);
  return { requeueAfterMs: check.requeueAfterMs };
}

/** Reads what the health check needs (plan.ts `observationsFor`), the Service being as applied. */
async function observe(
  reads: ProviderInstanceReads,
  input: ProviderInstancePlanInput,
  service: V1Service,
): Promise<HealthObservation> {
  const { provider, settings } = input;
  const namespace = provider.metadata.namespace;
  const endpoints = readyEndpoints(
    reads.endpointSlices(namespace),
    { name: workloadName(provider), uid: service.metadata?.uid ?? "" },
    settings.providerPort,
  );
  const needs = observationsFor(endpoints);
  return {
    endpoints,
    pods: needs.pods ? reads.pods(namespace) : undefined,
    manifest: needs.manifestFrom === undefined ? undefined : await fetchManifest(reads, needs.manifestFrom),
  };
}

/** GET /v1/manifest at `endpoint`, its failure kept as a finding. */
async function fetchManifest(reads: ProviderInstanceReads, endpoint: string): Promise<ManifestFetch> {
  try {
    return { endpoint, manifest: await reads.manifests.fetchManifest(endpoint) };
  } catch (error) {
    return { endpoint, error };
  }
}

function logAll(log: Logger, lines: readonly PlannedLog[]) {
  for (const line of lines) log[line.level](line.fields, line.message);
}
