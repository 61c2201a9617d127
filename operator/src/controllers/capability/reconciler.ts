/**
 * Capability reconciler:
 *   capability = cache.get(key)
 *   provider = the referenced ProviderInstance   ; missing / not Ready → Ready=False ProviderNotReady,
 *                                                  disabled → Ready=False Disabled
 *   offer = the provider's manifest entry         ; absent → NotOffered
 *   status = effect, mode, idempotency, schemas, digest, tool name; observedEffect kept from the first
 *            sighting. Ready=False: SidecarWriteUnsupported (a write offered by a Sidecar provider),
 *            InvalidSchema (the SDK's capabilitySchemaProblems, the rule providers are tested against), EffectChanged (a weaker declaration later; DESIGN §2)
 *   another Capability of the namespace has the same tool name → Ready=False DuplicateId naming it
 *            (each of them gets it; none is offered until one is renamed or deleted)
 *   spec.disabled → Ready=False Disabled, saying how to re-enable it (the status keeps what the
 *            provider offers, so it is Offered again as soon as it is re-enabled)
 */
import type { Effect } from "@gatehouse/provider-sdk";
import { capabilitySchemaProblems, schemaDigest } from "@gatehouse/provider-sdk";
import type { Logger } from "pino";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { CAPABILITY } from "../../api/kinds.ts";
import { toolNameOf } from "../../core/tool-names.ts";
import type { Caches } from "../../kube/caches.ts";
import { duplicatesOf } from "../../kube/catalog.ts";
import type { KubeClients } from "../../kube/client.ts";
import { describeApiError } from "../../kube/client.ts";
import { findCondition, setCondition } from "../../kube/conditions.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import type { ManifestSource } from "../providerinstance/reconciler.ts";

export interface CapabilityDeps {
  clients: KubeClients;
  caches: Caches;
  manifests: ManifestSource;
  now: () => Date;
}

const EFFECT_STRENGTH: Record<Effect, number> = { read: 0, draft: 1, write: 2 };

/** The ProviderInstance a Capability refers to, from the cache. */
export function providerOf(caches: Caches, capability: Capability): ProviderInstance | undefined {
  const ref = capability.spec.providerRef;
  return caches.providers.get(ref.name, ref.namespace ?? capability.metadata.namespace);
}

/**
 * Why `capability` cannot use `provider` (its spec.providerRef looked up in the cache), as a message
 * naming the field and the fix; undefined when the provider is there and Ready. Cross-namespace
 * providers (allowedNamespaces) are refused until they are supported, whether or not one exists (pure).
 */
export function providerProblemOf(
  capability: Capability,
  provider: ProviderInstance | undefined,
): string | undefined {
  const ref = capability.spec.providerRef;
  const own = capability.metadata.namespace;
  if (ref.namespace !== undefined && ref.namespace !== own) {
    return `spec.providerRef.namespace ${ref.namespace}: a Capability can only use a ProviderInstance of its own namespace (${own}) for now; remove spec.providerRef.namespace or create the Capability in ${ref.namespace}.`;
  }
  if (!provider) {
    return `spec.providerRef.name ${ref.name}: no ProviderInstance ${ref.name} in namespace ${own}; create it or fix the name.`;
  }
  if (provider.spec.disabled) return providerDisabledMessage(ref.name, own);
  const providerReady = findCondition(provider.status?.conditions, "Ready");
  if (providerReady?.status !== "True" || !provider.status?.endpoints?.[0]) {
    return `ProviderInstance ${ref.name} is not Ready${providerReady ? ` (${providerReady.reason})` : ""}; see kubectl describe providerinstance ${ref.name} -n ${own}.`;
  }
  return undefined;
}

/**
 * True when `provider` is the Capability's own-namespace ProviderInstance and has spec.disabled set:
 * the case in which providerProblemOf gives {@link providerDisabledMessage} (pure).
 */
export function providerDisabled(capability: Capability, provider: ProviderInstance | undefined): boolean {
  const ref = capability.spec.providerRef;
  const foreign = ref.namespace !== undefined && ref.namespace !== capability.metadata.namespace;
  return !foreign && provider?.spec.disabled === true;
}

/** The Disabled message of a Capability whose ProviderInstance has spec.disabled set (pure). */
export function providerDisabledMessage(provider: string, namespace: string): string {
  return `ProviderInstance ${provider} is disabled (spec.disabled), so this capability is not offered and new calls are refused; to offer it again, unset it: kubectl patch providerinstance ${provider} -n ${namespace} --type merge -p '{"spec":{"disabled":null}}'.`;
}

/** The Disabled message of a Capability with spec.disabled set (pure). */
export function capabilityDisabledMessage(capability: Capability): string {
  const { name, namespace } = capability.metadata;
  return `spec.disabled is set, so this capability is not offered and new calls are refused; to offer it again, unset it: kubectl patch capability ${name} -n ${namespace} --type merge -p '{"spec":{"disabled":null}}' (or remove it from the manifest your GitOps repo applies).`;
}

/** The DuplicateId message: which Capabilities clash, on what, and the fix (pure). */
export function duplicateMessage(capability: Capability, duplicates: readonly string[]): string {
  const others = duplicates.map((name) => `Capability ${name}`).join(", ");
  return `${others} in this namespace also define${duplicates.length === 1 ? "s" : ""} the tool ${toolNameOf(capability.spec.id)} (spec.id ${capability.spec.id}): none of them is offered until all but one are renamed or deleted.`;
}

/** Reconciles one Capability. */
export async function reconcileCapability(
  deps: CapabilityDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const capability = deps.caches.capabilities.get(name, namespace);
  if (!capability || capability.metadata.deletionTimestamp) return undefined;
  const now = deps.now();
  const generation = capability.metadata.generation;
  const status = { ...capability.status, observedGeneration: generation };
  const ready = (reason: string, message: string, ok = false) => {
    status.conditions = setCondition(
      status.conditions,
      { type: "Ready", status: ok ? "True" : "False", reason, message, observedGeneration: generation },
      now,
    );
  };

  const provider = providerOf(deps.caches, capability);
  const unusable = providerProblemOf(capability, provider);
  const endpoint = provider?.status?.endpoints?.[0];
  if (unusable !== undefined || provider === undefined || endpoint === undefined) {
    // providerProblemOf says why whenever the provider is missing or has no endpoint.
    ready(
      providerDisabled(capability, provider) ? "Disabled" : "ProviderNotReady",
      unusable ?? `ProviderInstance ${capability.spec.providerRef.name} is not Ready.`,
    );
  } else {
    try {
      const manifest = await deps.manifests.fetchManifest(endpoint);
      const offer = manifest.capabilities.find((c) => c.id === capability.spec.id);
      if (!offer) {
        ready(
          "NotOffered",
          `Provider ${manifest.provider} ${manifest.version} does not offer ${capability.spec.id}.`,
        );
      } else {
        const observedEffect = status.observedEffect ?? offer.effect;
        Object.assign(status, {
          effect: offer.effect,
          observedEffect,
          mode: offer.mode,
          idempotency: offer.idempotency,
          description: offer.description,
          inputSchema: offer.inputSchema,
          outputSchema: offer.outputSchema,
          schemaDigest: schemaDigest(offer),
          toolName: toolNameOf(offer.id),
        });
        if (offer.target) status.target = offer.target;
        else delete status.target;
        const problems = capabilitySchemaProblems(offer);
        if (provider.spec.placement === "Sidecar" && offer.effect === "write") {
          ready(
            "SidecarWriteUnsupported",
            `${offer.id} writes, but ProviderInstance ${provider.metadata.name} runs as a Sidecar: a sidecar shares the agent's network and ends with its pod, so writes need placement Shared.`,
          );
        } else if (problems.length > 0) {
          ready(
            "InvalidSchema",
            `The provider's schemas for ${offer.id} cannot be used: ${problems.join("; ")}.`,
          );
        } else if (EFFECT_STRENGTH[offer.effect] < EFFECT_STRENGTH[observedEffect]) {
          ready(
            "EffectChanged",
            `The provider now declares ${offer.effect} but ${observedEffect} was observed first; edit the Capability to accept the change.`,
          );
        } else {
          ready("Offered", `Offered by ${manifest.provider} ${manifest.version} as ${offer.effect}.`, true);
        }
      }
    } catch (error) {
      log.warn({ err: describeApiError(error) }, "manifest fetch failed");
      ready("ProviderNotReady", `The provider's manifest could not be read: ${describeApiError(error)}`);
    }
  }
  const duplicates = duplicatesOf(deps.caches.capabilities.list(namespace), capability);
  if (duplicates.length > 0) ready("DuplicateId", duplicateMessage(capability, duplicates));
  // Last: whatever else holds, a disabled Capability is not offered (core/visibility.ts), and the one
  // thing to do about it is to re-enable it.
  if (capability.spec.disabled) ready("Disabled", capabilityDisabledMessage(capability));
  await writeStatusIfChanged(deps.clients, CAPABILITY, capability, status);
  return findCondition(status.conditions, "Ready")?.status === "True" ? undefined : { requeueAfterMs: 5_000 };
}
