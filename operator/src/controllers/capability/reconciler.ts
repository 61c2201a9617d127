/**
 * Capability reconciler: a pure planner (plan.ts) and this thin applier over a writer port (writer.ts).
 *
 *   capability = cache.get(key)                    ; gone → nothing to do
 *   provider = the referenced ProviderInstance, from the cache
 *   endpoint = plan.ts's manifestEndpointOf        : the provider's first endpoint when it is usable
 *   manifest = fetch it from endpoint              ; a failure is described, and planned on
 *   capabilities = the namespace's, from the cache : whose tool names may clash with this one
 *   plan = planCapability(capability, provider, manifest, capabilities, now)
 *            → status with condition Ready: Offered | NotOffered | ProviderNotReady | Disabled |
 *              InvalidSchema | EffectChanged | SidecarWriteUnsupported | DuplicateId (plan.ts's header)
 *   log plan.log
 *   write plan.status (only if it changed; resourceVersion-guarded)
 *   return plan.requeueAfterMs                     : 5 s while not Ready=True
 * So a pass reads one manifest at most, writes the status at most once, and emits no Event.
 */
import type { Logger } from "pino";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { toolNameOf } from "../../core/tool-names.ts";
import { capabilitiesByToolName } from "../../kube/cache-indexes.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { describeApiError } from "../../kube/runtime/client.ts";
import type { ReconcileResult } from "../../kube/runtime/workqueue.ts";
import type { ManifestSource } from "../providerinstance/reconciler.ts";
import {
  type CapabilityPlanInput,
  type ManifestRead,
  manifestEndpointOf,
  type PlannedLog,
  planCapability,
} from "./plan.ts";
import { type CapabilityWriter, kubeCapabilityWriter } from "./writer.ts";

export interface CapabilityDeps {
  clients: KubeClients;
  caches: Caches;
  manifests: ManifestSource;
  now: () => Date;
}

/** The ProviderInstance a Capability refers to, from the cache. */
export function providerOf(caches: Caches, capability: Capability): ProviderInstance | undefined {
  const ref = capability.spec.providerRef;
  return caches.providers.get(ref.name, ref.namespace ?? capability.metadata.namespace);
}

/** Reconciles one Capability: observe, plan, apply. */
export async function reconcileCapability(
  deps: CapabilityDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const capability = deps.caches.capabilities.get(name, namespace);
  if (!capability || capability.metadata.deletionTimestamp) return undefined;
  const now = deps.now();
  return applyCapability(kubeCapabilityWriter(deps), await observe(deps, capability, now), log);
}

/** Reads what the plan of `capability` needs: the caches, and the manifest when plan.ts says so. */
async function observe(
  deps: CapabilityDeps,
  capability: Capability,
  now: Date,
): Promise<CapabilityPlanInput> {
  const provider = providerOf(deps.caches, capability);
  const endpoint = manifestEndpointOf(capability, provider);
  const manifest = endpoint === undefined ? undefined : await readManifest(deps.manifests, endpoint);
  // Those it could clash with: its namespace's Capabilities of its tool name (itself included).
  const capabilities = capabilitiesByToolName(
    deps.caches,
    capability.metadata.namespace,
    toolNameOf(capability.spec.id),
  );
  return { capability, provider, manifest, capabilities, now };
}

/** The manifest at `endpoint`, or its fetch's error described (never throws). */
export async function readManifest(manifests: ManifestSource, endpoint: string): Promise<ManifestRead> {
  try {
    return { manifest: await manifests.fetchManifest(endpoint) };
  } catch (error) {
    return { error: describeApiError(error) };
  }
}

function logAll(log: Logger, lines: readonly PlannedLog[]) {
  for (const line of lines) log[line.level](line.fields, line.message);
}

/**
 * Applies `planCapability(input)` through `writer` (see the header). Errors: the writer's (409 Conflict
 * on a stale cache); the work queue retries, and the pass is safe to repeat.
 */
export async function applyCapability(
  writer: CapabilityWriter,
  input: CapabilityPlanInput,
  log: Logger,
): Promise<ReconcileResult> {
  const plan = planCapability(input);
  logAll(log, plan.log);
  if (plan.status) await writer.writeStatus(input.capability, plan.status);
  return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
}
