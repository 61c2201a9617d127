/**
 * Core's CapabilityCatalog over the informer caches: a Capability joined with its ProviderInstance.
 */
import type { Capability } from "../api/kinds.ts";
import { CapabilityCondition, CapabilityReason } from "../api/status/capability.ts";
import { ProviderInstanceCondition } from "../api/status/providerinstance.ts";
import type { CapabilityCatalog, ResolvedCapability } from "../core/ports.ts";
import { toolNameOf } from "../core/tool-names.ts";
import { capabilitiesByToolName } from "./cache-indexes.ts";
import type { Caches } from "./runtime/caches.ts";
import { findCondition } from "./runtime/conditions.ts";

/**
 * The other Capabilities of `capability`'s namespace that the model would call by the same tool name
 * (the same `spec.id`, or ids that differ only in `.` against `_`), by name. Which one a call meant is
 * unknowable, so none of them is offered.
 */
export function duplicatesOf(all: readonly Capability[], capability: Capability): string[] {
  const toolName = toolNameOf(capability.spec.id);
  return all
    .filter(
      (other) =>
        other.metadata.namespace === capability.metadata.namespace &&
        other.metadata.name !== capability.metadata.name &&
        toolNameOf(other.spec.id) === toolName,
    )
    .map((other) => other.metadata.name)
    .sort();
}

/**
 * Joins a Capability with its ProviderInstance from the cache. One whose tool name another
 * Capability of its namespace also has is not ready (`DuplicateId`), whatever its status says: the
 * cache decides at once, before the reconciler has written the condition.
 */
export function resolveCapability(caches: Caches, capability: Capability): ResolvedCapability {
  const ref = capability.spec.providerRef;
  const providerNamespace = ref.namespace ?? capability.metadata.namespace;
  const provider = caches.providers.get(ref.name, providerNamespace);
  const sameToolName = capabilitiesByToolName(
    caches,
    capability.metadata.namespace,
    toolNameOf(capability.spec.id),
  );
  const duplicate = duplicatesOf(sameToolName, capability).length > 0;
  const condition = findCondition(capability.status?.conditions, CapabilityCondition.Ready);
  const ready = duplicate ? { status: "False", reason: CapabilityReason.DuplicateId } : condition;
  const status = capability.status ?? {};
  return {
    name: capability.metadata.name,
    namespace: capability.metadata.namespace,
    id: capability.spec.id,
    toolName: toolNameOf(capability.spec.id),
    effect: status.effect ?? "unknown",
    mode: status.mode ?? "sync",
    idempotency: status.idempotency ?? "none",
    policy: capability.spec.policy ?? {},
    inputSchema: status.inputSchema ?? {},
    schemaDigest: status.schemaDigest ?? "",
    ...(status.target ? { target: status.target } : {}),
    providerRef: { namespace: providerNamespace, name: ref.name },
    requiresIdentity: provider?.status?.manifest?.requiresIdentity ?? false,
    ready: ready?.status === "True",
    providerReady:
      findCondition(provider?.status?.conditions, ProviderInstanceCondition.Ready)?.status === "True",
    disabled: Boolean(capability.spec.disabled || provider?.spec.disabled),
    ...(ready && ready.status !== "True" ? { notReadyReason: ready.reason } : {}),
  };
}

/** Capabilities a session may see: its spec.capabilities, else every Capability of the namespace. */
export function visibleCapabilities(
  caches: Caches,
  namespace: string,
  names: readonly string[] | undefined,
): Capability[] {
  const visible = names
    ? [...new Set(names)].flatMap((name) => caches.capabilities.get(name, namespace) ?? [])
    : caches.capabilities.list(namespace);
  return visible.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}

/** The catalog Core resolves tool names with. */
export function cacheCatalog(caches: Caches): CapabilityCatalog {
  return {
    async resolve(namespace, toolName) {
      const capability = capabilitiesByToolName(caches, namespace, toolName)[0];
      return capability ? resolveCapability(caches, capability) : undefined;
    },
    async get(namespace, name) {
      const capability = caches.capabilities.get(name, namespace);
      return capability ? resolveCapability(caches, capability) : undefined;
    },
  };
}
