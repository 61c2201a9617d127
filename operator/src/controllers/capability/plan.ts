/**
 * What one reconcile of a Capability does, as a pure function of what was observed, so the reconciler
 * reads like the paragraph that explains it (the applier is reconciler.ts). Condition `Ready`, set in
 * this order, the last one set winning:
 *
 *   being deleted     → nothing (no status, no requeue)
 *   its ProviderInstance (spec.providerRef) in another namespace, missing, or not Ready with an
 *                       endpoint → ProviderNotReady naming the field or the provider and the fix;
 *                       disabled (spec.disabled, own namespace) → Disabled, saying what to unset
 *   its manifest (read at the provider's first endpoint, {@link manifestEndpointOf}) unreadable →
 *                       ProviderNotReady, and a warning logged
 *   the manifest has no offer of spec.id → NotOffered
 *   an offer          → the status takes its effect, mode, idempotency, description, schemas, digest,
 *                       target and tool name; observedEffect is the first effect seen and is kept; then
 *                       a write on a Sidecar provider → SidecarWriteUnsupported; schemas a model cannot
 *                       use (the SDK's capabilitySchemaProblems) → InvalidSchema; an effect weaker than
 *                       observedEffect → EffectChanged (DESIGN §2); else Ready=True Offered
 *   another Capability of the namespace has its tool name → DuplicateId naming them (each of them gets
 *                       it; none is offered until all but one are renamed or deleted)
 *   spec.disabled     → Disabled, saying how to re-enable it (the status keeps what the provider
 *                       offers, so it is Offered again as soon as it is re-enabled)
 *   not Ready=True    → looked at again in {@link NOT_READY_RECHECK_MS}
 *
 * No Events: the condition is what people read.
 */
import type { Effect, Manifest } from "@gatehouse/provider-sdk";
import { capabilitySchemaProblems, schemaDigest } from "@gatehouse/provider-sdk";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { CapabilityCondition, CapabilityReason } from "../../api/status/capability.ts";
import { ProviderInstanceCondition } from "../../api/status/providerinstance.ts";
import { toolNameOf } from "../../core/tool-names.ts";
import { duplicatesOf } from "../../kube/catalog.ts";
import { findCondition, setCondition } from "../../kube/runtime/conditions.ts";

/** `status` of a Capability. */
export type CapabilityStatus = NonNullable<Capability["status"]>;

/** The provider's manifest as read this pass, or why it could not be read (the error, described). */
export type ManifestRead = { manifest: Manifest } | { error: string };

/** What the planner is given: the Capability as cached, and what was read for it this pass. */
export interface CapabilityPlanInput {
  capability: Capability;
  /** Its ProviderInstance from the cache (spec.providerRef), absent when there is none. */
  provider: ProviderInstance | undefined;
  /** The provider's manifest; read when {@link manifestEndpointOf} names an endpoint. */
  manifest?: ManifestRead | undefined;
  /** Its namespace's Capabilities of its tool name, from the cache (itself among them or not), for DuplicateId. */
  capabilities: readonly Capability[];
  now: Date;
}

/** One log line the applier writes. */
export interface PlannedLog {
  level: "info" | "warn";
  fields: Record<string, unknown>;
  message: string;
}

/** What one pass does, in the applier's order. */
export interface CapabilityPlan {
  /** The status to write (only if it differs), or absent. */
  status?: CapabilityStatus | undefined;
  requeueAfterMs?: number | undefined;
  log: PlannedLog[];
}

/** How soon a Capability that is not Ready is looked at again (its provider may come up). */
export const NOT_READY_RECHECK_MS = 5_000;

const EFFECT_STRENGTH: Record<Effect, number> = { read: 0, draft: 1, write: 2 };

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
  const providerReady = findCondition(provider.status?.conditions, ProviderInstanceCondition.Ready);
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

/**
 * The endpoint whose manifest a pass over `capability` reads: its provider's first endpoint, when the
 * provider is usable (providerProblemOf finds nothing); undefined when no manifest is read (pure).
 */
export function manifestEndpointOf(
  capability: Capability,
  provider: ProviderInstance | undefined,
): string | undefined {
  if (capability.metadata.deletionTimestamp) return undefined;
  if (providerProblemOf(capability, provider) !== undefined) return undefined;
  return provider?.status?.endpoints?.[0];
}

/** Plans one reconcile of `input.capability` (see the header). Pure; throws only when the manifest is missing. */
export function planCapability(input: CapabilityPlanInput): CapabilityPlan {
  const { capability, provider, now } = input;
  if (capability.metadata.deletionTimestamp) return { log: [] };
  const generation = capability.metadata.generation;
  const status: CapabilityStatus = { ...capability.status, observedGeneration: generation };
  const log: PlannedLog[] = [];
  // The checks below may each overrule the one before (Disabled last of all); only the last verdict is
  // set, once, so a Ready that ends where it was keeps its lastTransitionTime and the status is not
  // rewritten on every pass.
  let verdict: { reason: CapabilityReason; message: string; ok: boolean } | undefined;
  const ready = (reason: CapabilityReason, message: string, ok = false) => {
    verdict = { reason, message, ok };
  };
  const unreadable = (error: string) => {
    log.push({ level: "warn", fields: { err: error }, message: "manifest fetch failed" });
    ready(CapabilityReason.ProviderNotReady, `The provider's manifest could not be read: ${error}`);
  };

  const unusable = providerProblemOf(capability, provider);
  if (
    unusable !== undefined ||
    provider === undefined ||
    manifestEndpointOf(capability, provider) === undefined
  ) {
    // providerProblemOf says why whenever the provider is missing or has no endpoint.
    ready(
      providerDisabled(capability, provider) ? CapabilityReason.Disabled : CapabilityReason.ProviderNotReady,
      unusable ?? `ProviderInstance ${capability.spec.providerRef.name} is not Ready.`,
    );
  } else {
    const read = input.manifest;
    if (read === undefined) {
      throw new Error(
        "planCapability needs the provider's manifest for this Capability (manifestEndpointOf)",
      );
    }
    if ("error" in read) {
      unreadable(read.error);
    } else {
      try {
        planOffer(capability, provider, read.manifest, status, ready);
      } catch (error) {
        // As an unreadable manifest: what the offer's evaluation throws (it has never been seen to).
        unreadable(error instanceof Error ? error.message : String(error));
      }
    }
  }
  const duplicates = duplicatesOf(input.capabilities, capability);
  if (duplicates.length > 0) ready(CapabilityReason.DuplicateId, duplicateMessage(capability, duplicates));
  // Last: whatever else holds, a disabled Capability is not offered (core/visibility.ts), and the one
  // thing to do about it is to re-enable it.
  if (capability.spec.disabled) ready(CapabilityReason.Disabled, capabilityDisabledMessage(capability));
  if (verdict === undefined) throw new Error("planCapability reached no Ready verdict");
  status.conditions = setCondition(
    status.conditions,
    {
      type: CapabilityCondition.Ready,
      status: verdict.ok ? "True" : "False",
      reason: verdict.reason,
      message: verdict.message,
      observedGeneration: generation,
    },
    now,
  );
  return { status, requeueAfterMs: verdict.ok ? undefined : NOT_READY_RECHECK_MS, log };
}

/** The manifest's offer of spec.id into `status` (mutated), and the Ready condition it earns. */
function planOffer(
  capability: Capability,
  provider: ProviderInstance,
  manifest: Manifest,
  status: CapabilityStatus,
  ready: (reason: CapabilityReason, message: string, ok?: boolean) => void,
): void {
  const offer = manifest.capabilities.find((c) => c.id === capability.spec.id);
  if (!offer) {
    ready(
      CapabilityReason.NotOffered,
      `Provider ${manifest.provider} ${manifest.version} does not offer ${capability.spec.id}.`,
    );
    return;
  }
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
      CapabilityReason.SidecarWriteUnsupported,
      `${offer.id} writes, but ProviderInstance ${provider.metadata.name} runs as a Sidecar: a sidecar shares the agent's network and ends with its pod, so writes need placement Shared.`,
    );
  } else if (problems.length > 0) {
    ready(
      CapabilityReason.InvalidSchema,
      `The provider's schemas for ${offer.id} cannot be used: ${problems.join("; ")}.`,
    );
  } else if (EFFECT_STRENGTH[offer.effect] < EFFECT_STRENGTH[observedEffect]) {
    ready(
      CapabilityReason.EffectChanged,
      `The provider now declares ${offer.effect} but ${observedEffect} was observed first; to accept the change, recreate the Capability (kubectl delete, then apply it again): an edit keeps status.observedEffect.`,
    );
  } else {
    ready(
      CapabilityReason.Offered,
      `Offered by ${manifest.provider} ${manifest.version} as ${offer.effect}.`,
      true,
    );
  }
}
