/**
 * Which tools a session is offered (DESIGN §4 step 3: a tool resolves to a Capability *visible to the
 * session*). The gateway's `GET /v1/session` gives the agent exactly these; a tool left out here is
 * one the model never sees, so it never proposes a call that policy would only deny.
 */
import type { Subject } from "@gatehouse/provider-sdk";
import { mayUse } from "./policy.ts";
import type { ResolvedCapability } from "./ports.ts";

/**
 * True when `capability` is offered to a session acting for `subject`: it is Ready, not disabled, and
 * its `spec.policy.subjects` admits the subject — the very rule (`mayUse`) that denies a call at invoke
 * time with reason `NotASubject`. The session's `spec.capabilities` list is applied by the caller when
 * it picks the candidates (`kube/catalog.ts` `visibleCapabilities`).
 */
export function isOffered(capability: ResolvedCapability, subject: Subject): boolean {
  return capability.ready && !capability.disabled && mayUse(capability.policy.subjects, subject);
}

/** The capabilities of `candidates` offered to `subject` ({@link isOffered}), in their order. */
export function offeredCapabilities(
  candidates: readonly ResolvedCapability[],
  subject: Subject,
): ResolvedCapability[] {
  return candidates.filter((capability) => isOffered(capability, subject));
}
