/**
 * The words of a Capability: its condition type and reasons, and the approval modes of its
 * `spec.policy.approval`, spelled like two of the policy's reasons (tool-call.ts) but not the same
 * thing. A Capability has no phase. words.ts says how the modules are used.
 */
import { byName, namesOf, type Reason, type Vocabulary, wordsOf } from "./words.ts";

/** `spec.policy.approval`: Auto → allowed, Required → an Approval, Forbidden → refused (core/policy.ts). */
export const APPROVAL_MODES = ["Auto", "Required", "Forbidden"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
export const ApprovalMode = byName(APPROVAL_MODES);

export const CAPABILITY_CONDITION_TYPES = ["Ready"] as const;
export type CapabilityCondition = (typeof CAPABILITY_CONDITION_TYPES)[number];
export const CapabilityCondition = byName(CAPABILITY_CONDITION_TYPES);

const CONDITION_MEANINGS: Record<CapabilityCondition, string> = {
  Ready: "Whether the capability is offered to sessions: True when its provider offers it as declared.",
};

/** Why a Capability is or is not Ready (the printer column Reason shows it). */
export const CAPABILITY_REASONS = {
  Offered: {
    where: "Ready=True",
    means: "The provider offers the capability; `status` holds its effect, schemas and tool name.",
  },
  ProviderNotReady: {
    where: "Ready=False",
    means:
      "The ProviderInstance is missing, not Ready, in another namespace (not supported yet) or its manifest could not be read. Fix the ProviderInstance first (the message names the field or the provider).",
  },
  Disabled: {
    where: "Ready=False",
    means:
      "`spec.disabled` is set on the Capability or on its ProviderInstance (the message says which): it is not offered and no new calls run. Unset it to resume (the message gives the `kubectl patch`).",
  },
  NotOffered: {
    where: "Ready=False",
    means: "The provider's manifest has no such `spec.id`. Fix the id or upgrade the provider.",
  },
  InvalidSchema: {
    where: "Ready=False",
    means:
      "The provider's schemas cannot be given to a model (the message lists the problems, e.g. an array without `items`). The provider author fixes them (the contract kit checks this).",
  },
  DuplicateId: {
    where: "Ready=False",
    means:
      "Another Capability of the namespace has the same tool name (the same `spec.id`, or ids that differ only in `.` against `_`); the message names it. Neither is offered and calls of the tool are refused, since which one was meant is unknowable. Rename or delete all but one.",
  },
  EffectChanged: {
    where: "Ready=False",
    means:
      "The provider now declares a weaker effect (write → read) than first observed (`status.observedEffect`). Review the provider's change; to accept it, recreate the Capability.",
  },
  SidecarWriteUnsupported: {
    where: "Ready=False",
    means:
      "A write capability on a Sidecar provider: a sidecar shares the agent's network and ends with its pod. Use `placement: Shared`.",
  },
} as const satisfies Record<string, Reason>;
export type CapabilityReason = keyof typeof CAPABILITY_REASONS;
export const CapabilityReason = namesOf(CAPABILITY_REASONS);

export const CAPABILITY_VOCABULARY: Vocabulary = {
  kind: "Capability",
  phases: [],
  phaseMeanings: {},
  conditions: CAPABILITY_CONDITION_TYPES,
  conditionMeanings: CONDITION_MEANINGS,
  reasons: CAPABILITY_REASONS,
  events: {},
};

/** The words of this module, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = [...wordsOf(CAPABILITY_VOCABULARY), ...APPROVAL_MODES];
