/**
 * The words of an Approval's status: its phases (and the groups of them the code asks about), the
 * outcomes a person may resolve an unknown execution to, condition types, condition reasons and Event
 * reasons, each with what it means and what to do (words.ts says how the modules are used).
 */
import { APPROVAL_REASONS } from "./approval-reasons.ts";
import { byName, namesOf, type Reason, type Vocabulary, wordsOf } from "./words.ts";

export { APPROVAL_REASONS } from "./approval-reasons.ts";

export const APPROVAL_PHASES = [
  "Pending",
  "Approved",
  "Rejected",
  "Expired",
  "Cancelled",
  "Stale",
  "Executing",
  "Succeeded",
  "Failed",
  "Unknown",
] as const;
export type ApprovalPhase = (typeof APPROVAL_PHASES)[number];
export const ApprovalPhase = byName(APPROVAL_PHASES);

const PHASE_MEANINGS: Record<ApprovalPhase, string> = {
  Pending: "Waiting for decisions until spec.expiresAt; status.approvals counts those that count.",
  Approved:
    "Approved, and its dispatch waits (provider not ready, target unverifiable, decision rules not enforced); it retries by itself.",
  Rejected: "An approver rejected it; nothing runs.",
  Expired: "No decision came before spec.expiresAt, or it expired before its dispatch; nothing runs.",
  Cancelled: "Its session ended, or it was deleted, before its call started; nothing runs.",
  Stale:
    "Approved, but refused at dispatch: what it was approved under changed (the Executed condition says what); nothing ran, the agent may propose again.",
  Executing: "The approved call is running, or its outcome is being recovered.",
  Succeeded:
    "The call ran once and took effect (status.execution has the receipt), or a person resolved its unknown outcome so.",
  Failed:
    "The call failed with the business system's answer, or it never runs: a person resolved it so, or it was not Gatehouse's to run (the reason says which).",
  Unknown:
    "The call's outcome could not be established; a person checks the business system and resolves it (kubectl gatehouse resolve).",
};

/** Phases in which a decision or the approved call's execution is still to come. */
export const OPEN_APPROVAL_PHASES = [
  ApprovalPhase.Pending,
  ApprovalPhase.Approved,
  ApprovalPhase.Executing,
] as const;
export type OpenApprovalPhase = (typeof OPEN_APPROVAL_PHASES)[number];

/** Phases after which an Approval's outcome is fixed (DESIGN §2): every phase but the open ones. */
export const SETTLED_APPROVAL_PHASES: ReadonlySet<ApprovalPhase> = new Set(
  APPROVAL_PHASES.filter((phase) => !(OPEN_APPROVAL_PHASES as readonly string[]).includes(phase)),
);

/** True when `phase` (unset: Pending) still waits for a decision or for the call's outcome. */
export function isOpenApprovalPhase(phase: ApprovalPhase | undefined): boolean {
  return (OPEN_APPROVAL_PHASES as readonly string[]).includes(phase ?? ApprovalPhase.Pending);
}

/** The phases a Pending Approval is decided into (the outcomes of the decision-time metric). */
export const DECIDED_PHASES = [
  ApprovalPhase.Approved,
  ApprovalPhase.Rejected,
  ApprovalPhase.Expired,
] as const;
export type DecidedPhase = (typeof DECIDED_PHASES)[number];

export function isDecidedPhase(phase: ApprovalPhase): phase is DecidedPhase {
  return (DECIDED_PHASES as readonly string[]).includes(phase);
}

/** The phases a Pending Approval ends in undecided: its session ended or it was deleted, or it is not Gatehouse's. */
export const UNDECIDED_END_PHASES = [ApprovalPhase.Cancelled, ApprovalPhase.Failed] as const;
export type UndecidedEndPhase = (typeof UNDECIDED_END_PHASES)[number];

/** What a person may resolve an unknown outcome to (spec.resolutions[].outcome): the phase it leads to. */
export const RESOLUTION_OUTCOMES = [ApprovalPhase.Succeeded, ApprovalPhase.Failed] as const;
export type ResolutionOutcome = (typeof RESOLUTION_OUTCOMES)[number];

/** The phase of an Approval whose execution row is in each state (status.execution.state). */
export const PHASE_OF_EXECUTION_STATE: Record<"started" | "succeeded" | "failed" | "unknown", ApprovalPhase> =
  {
    started: ApprovalPhase.Executing,
    succeeded: ApprovalPhase.Succeeded,
    failed: ApprovalPhase.Failed,
    unknown: ApprovalPhase.Unknown,
  };

export const APPROVAL_CONDITION_TYPES = ["Decided", "Executed", "DecisionRulesEnforced", "Ready"] as const;
export type ApprovalCondition = (typeof APPROVAL_CONDITION_TYPES)[number];
export const ApprovalCondition = byName(APPROVAL_CONDITION_TYPES);

const CONDITION_MEANINGS: Record<ApprovalCondition, string> = {
  Decided:
    "False while Pending; True once approved, rejected, expired or ended undecided (the reason says which).",
  Executed:
    "Whether the approved call ran: False while it waits, runs or was refused at dispatch; True with its outcome.",
  DecisionRulesEnforced:
    "Whether the API server is verified to enforce the admission rules of decisions; shown once they were not.",
  Ready:
    "Set only on an Approval of this name that Gatehouse did not create for its session: False, reason Conflict.",
};

export type ApprovalReason = keyof typeof APPROVAL_REASONS;
export const ApprovalReason = namesOf(APPROVAL_REASONS);

/** Reasons of Events on an Approval that are not condition reasons (those are Events too, where noted). */
export const APPROVAL_EVENT_REASONS = {
  Cancelled: {
    where: "Event (Normal)",
    means:
      "The Approval ended Cancelled before it was decided (its session ended, or it was deleted); the message says which. Nothing runs.",
  },
  DecisionIgnored: {
    where: "Event (Warning)",
    means:
      "A decision appended after the Approval was decided (admission refuses that; this one slipped through, e.g. while the decision policy was not installed). Nothing changed; it is recorded once as `approval.decision_ignored`.",
  },
  AlreadySettled: {
    where: "Event (Warning)",
    means:
      "A resolution was appended but a late receipt or status query (or an earlier resolution) had settled the execution first; the resolution changed nothing and the phase follows the execution.",
  },
  NoExecution: {
    where: "Event (Warning)",
    means: "A resolution was appended to an Approval whose execution row does not exist; nothing changed.",
  },
} as const satisfies Record<string, Reason>;
export type ApprovalEventReason = keyof typeof APPROVAL_EVENT_REASONS;
export const ApprovalEventReason = namesOf(APPROVAL_EVENT_REASONS);

export const APPROVAL_VOCABULARY: Vocabulary = {
  kind: "Approval",
  phases: APPROVAL_PHASES,
  phaseMeanings: PHASE_MEANINGS,
  conditions: APPROVAL_CONDITION_TYPES,
  conditionMeanings: CONDITION_MEANINGS,
  reasons: APPROVAL_REASONS,
  events: APPROVAL_EVENT_REASONS,
  notes:
    "A refusal at dispatch that settles the Approval (Stale, Expired, Cancelled, Failed) is also a Warning Event with its reason and message.",
};

/** The words of this module and approval-reasons.ts, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = wordsOf(APPROVAL_VOCABULARY);
