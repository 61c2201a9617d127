/**
 * The words Core gives about a tool call: the reason of its policy decision and of a refusal (the
 * audit record's `reason`, with the message the model gets as the tool's result), and the rule by
 * which a write proposed again is answered from an earlier record (`invoke.reproposed`'s `rule`).
 * Several are also reasons of an Approval's Executed condition, when the same check refuses an
 * approved call at dispatch (approval-reasons.ts). words.ts says how the modules are used.
 */
import { namesOf, type Reason, type Vocabulary, wordsOf } from "./words.ts";

const REFUSED = "tool call refused (audit `invoke.denied`)";

/** Why a tool call was allowed, sent for approval or refused. */
export const TOOL_CALL_REASONS = {
  Auto: {
    where: "audit record of an allowed call",
    means: "Policy: allowed without approval. Nothing to do.",
  },
  ApprovalRequired: {
    where: "audit record, then an Approval",
    means: "Policy: the call needs a human; an Approval was created.",
  },
  SessionInactive: { where: REFUSED, means: "A call from a session that is finished or cancelled." },
  UnknownTool: {
    where: REFUSED,
    means:
      "No visible Capability has that tool name (not in the namespace, not Ready, or not in `spec.capabilities`).",
  },
  Disabled: {
    where: REFUSED,
    means:
      "The Capability or its ProviderInstance has `spec.disabled` set: the tool is not offered and no new calls run. Unset it to resume (the Capability's Ready message gives the `kubectl patch`).",
  },
  NotReady: {
    where: REFUSED,
    means:
      "The Capability is not Ready and has no more specific reason; see its conditions. A Capability that is not Ready for a known reason refuses the call with that reason (the Capability's reasons above).",
  },
  ProviderNotReady: {
    where: REFUSED,
    means:
      "The Capability's ProviderInstance is missing, not Ready, in another namespace (not supported yet) or its manifest could not be read. Fix the ProviderInstance first; try the call again once it is Ready.",
  },
  InvalidSchema: {
    where: REFUSED,
    means:
      "The provider's schemas cannot be given to a model (the message lists the problems, e.g. an array without `items`). The provider author fixes them (the contract kit checks this).",
  },
  IdentityUnbound: {
    where: REFUSED,
    means:
      "The requester has no account binding for the provider, or several: a platform engineer adds `user: account` to one Secret labelled `gatehouse.dev/identity-binding=<provider>` in the provider's namespace.",
  },
  Forbidden: {
    where: REFUSED,
    means: "The Capability's `policy.approval` (or the operator's approval floor) is Forbidden.",
  },
  NotASubject: {
    where: REFUSED,
    means:
      "The requester is not in the Capability's `spec.policy.subjects`. Such a tool is not offered to their sessions at all; this shows when the subjects changed after the session started, or when an Approval is dispatched later. Ask the platform team to add the user or group.",
  },
  UnknownEffect: {
    where: REFUSED,
    means: "The capability's effect is none of read, draft, write: fix the provider's manifest.",
  },
  UnknownApprovalMode: {
    where: REFUSED,
    means: "An approval mode Core does not know; denied. Use Auto, Required or Forbidden.",
  },
  PreviouslyFailed: {
    where: REFUSED,
    means:
      "The same write (capability and arguments) failed earlier in this session with the business system's final answer, or a person resolved its unknown outcome as failed; the message names that execution.",
  },
  PreviouslyRejected: {
    where: REFUSED,
    means:
      "The same action (capability and arguments) was rejected earlier in this session; the message names the Approval.",
  },
  TurnLimitReached: {
    where: REFUSED,
    means: "The call's turn is at or past `maxTurns` (turns count from 0).",
  },
  ToolCallLimitReached: {
    where: REFUSED,
    means:
      "The session used `maxToolCalls` (the lower of `spec.limits` and the operator's ceiling): every call that passed policy counts once, from Core's budget ledger.",
  },
  WriteLimitReached: {
    where: REFUSED,
    means:
      "The session used `maxWrites`: writes proposed for approval, run, or of unknown outcome (a failed write gives its write back).",
  },
} as const satisfies Record<string, Reason>;
export type ToolCallReason = keyof typeof TOOL_CALL_REASONS;
export const ToolCallReason = namesOf(TOOL_CALL_REASONS);

/** The reasons of a policy decision (core/policy.ts): its rules, the turn limit and the budget's limits. */
export const POLICY_REASONS = [
  ToolCallReason.Auto,
  ToolCallReason.ApprovalRequired,
  ToolCallReason.Forbidden,
  ToolCallReason.UnknownEffect,
  ToolCallReason.UnknownApprovalMode,
  ToolCallReason.NotASubject,
  ToolCallReason.TurnLimitReached,
  ToolCallReason.ToolCallLimitReached,
  ToolCallReason.WriteLimitReached,
] as const;
export type PolicyReason = (typeof POLICY_REASONS)[number];

const REPROPOSED = "audit `invoke.reproposed`, `rule`";

/**
 * How an action proposed again identically (same session, capability and arguments) is answered — a
 * write always, a read or draft when it needs approval (core/reproposal.ts, DESIGN §4 step 4b).
 */
export const REPROPOSAL_RULES = {
  OutcomeUnsettled: {
    where: REPROPOSED,
    means:
      "The earlier execution is running or its outcome is unknown: the call is answered from it and not sent until a person resolves it.",
  },
  ApprovalOpen: {
    where: REPROPOSED,
    means: "The earlier proposal's Approval is still open: the call waits on that Approval.",
  },
  ResolvedByPerson: {
    where: REPROPOSED,
    means: "A person resolved the earlier execution's unknown outcome: the call is answered from that.",
  },
  AlreadySucceeded: {
    where: REPROPOSED,
    means:
      "The earlier execution succeeded: the call is answered from its receipt and not sent again. An action meant to happen again differs in its arguments or runs in a new session.",
  },
  ConcurrentProposal: {
    where: REPROPOSED,
    means:
      "An identical proposal at the same moment holds the action's idempotency key: the call is answered by it.",
  },
  NeverSent: {
    where: REPROPOSED,
    means:
      "The earlier execution failed without reaching the provider: the call runs again under that execution's idempotency key.",
  },
} as const satisfies Record<string, Reason>;
export type ReproposalRule = keyof typeof REPROPOSAL_RULES;
export const ReproposalRule = namesOf(REPROPOSAL_RULES);

export const TOOL_CALL_VOCABULARY: Vocabulary = {
  kind: "tool call",
  phases: [],
  phaseMeanings: {},
  conditions: [],
  conditionMeanings: {},
  reasons: TOOL_CALL_REASONS,
  events: {},
};

/** The words of this module, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = [...wordsOf(TOOL_CALL_VOCABULARY), ...Object.keys(REPROPOSAL_RULES)];
