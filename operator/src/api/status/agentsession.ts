/**
 * The words of an AgentSession's status: its phases, condition types, condition reasons and Event
 * reasons, each with what it means and what to do (docs/troubleshooting.md and the CRD's descriptions
 * are generated from this module; words.ts says how the modules are used).
 */
import { byName, namesOf, type Reason, type Vocabulary, wordsOf } from "./words.ts";

export const SESSION_PHASES = [
  "Pending",
  "Running",
  "AwaitingApproval",
  "Completed",
  "Failed",
  "Cancelled",
] as const;
export type SessionPhase = (typeof SESSION_PHASES)[number];
export const SessionPhase = byName(SESSION_PHASES);

const PHASE_MEANINGS: Record<SessionPhase, string> = {
  Pending:
    "The agent pod is not running yet: the session is starting, or a new pod is about to resume or continue it.",
  Running: "The agent pod is working.",
  AwaitingApproval: "A call waits for a decision on an Approval (status.pendingApprovals).",
  Completed:
    "The agent answered every message (status.result); a message appended later continues the session.",
  Failed: "The session ended without an answer; its Failed condition says why.",
  Cancelled: "spec.cancel was set; the session ended.",
};

/** The phases a session never leaves (a Completed one continues only when a message is appended). */
export const TERMINAL_SESSION_PHASES = [
  SessionPhase.Completed,
  SessionPhase.Failed,
  SessionPhase.Cancelled,
] as const;
export type TerminalSessionPhase = (typeof TERMINAL_SESSION_PHASES)[number];

/** True for Completed, Failed and Cancelled (an unset phase is Pending). */
export function isTerminalSessionPhase(phase: SessionPhase | undefined): phase is TerminalSessionPhase {
  return (TERMINAL_SESSION_PHASES as readonly string[]).includes(phase ?? SessionPhase.Pending);
}

export const SESSION_CONDITION_TYPES = [
  "Progressing",
  "AwaitingApproval",
  "CapabilitiesResolved",
  "Complete",
  "Failed",
] as const;
export type SessionCondition = (typeof SESSION_CONDITION_TYPES)[number];
export const SessionCondition = byName(SESSION_CONDITION_TYPES);

const CONDITION_MEANINGS: Record<SessionCondition, string> = {
  Progressing:
    "True while the session runs or waits; False once it ended, or while it cannot go on (the reason says why).",
  AwaitingApproval: "True while a call waits for a decision on an Approval.",
  CapabilitiesResolved:
    "Whether every Capability spec.capabilities names exists (set only when spec.capabilities is).",
  Complete:
    "True once the agent answered; False while a new pod answers messages appended after that answer.",
  Failed: "True once the session failed or was cancelled; the reason says why.",
};

/** What NamespaceNotServed means, on a session and on a ProviderInstance (providerinstance.ts). */
export const NAMESPACE_NOT_SERVED =
  "The components serve only the namespaces in their `WATCH_NAMESPACES` (chart value `watchNamespaces`): only there may the controller create agent pods, and only there do both read pods and EndpointSlices, so a provider elsewhere could never be seen Ready (nothing is applied for it). Add the namespace there and upgrade; the session then starts, the provider is rolled out.";

/** Why a session is in its phase: the reasons of its conditions. */
export const SESSION_REASONS = {
  PodStarting: {
    where: "Progressing (Pending)",
    means:
      "The agent pod is not running yet. If it stays: `kubectl describe pod <session>-agent-<n>` (image pull, Pod Security, quota; on the local node `ImageNotInMap`).",
  },
  PodRunning: { where: "Progressing (Running)", means: "The agent is working. Nothing to do." },
  ApprovalPending: {
    where: "Progressing (AwaitingApproval), AwaitingApproval=True",
    means: "A call waits for a human: `kubectl get approvals -n NS`; an approver decides.",
  },
  NoPendingApprovals: { where: "AwaitingApproval=False", means: "No decision is pending." },
  PodReleased: {
    where: "Progressing (AwaitingApproval)",
    means:
      "The agent pod waited `holdPodForSeconds` and was released; a new pod resumes the session from its stored history once the Approval is decided. Decide it.",
  },
  Resuming: {
    where: "Progressing (Pending)",
    means: "Every Approval the released pod waited for is decided; a new agent pod is starting.",
  },
  AnswerPosted: {
    where: "Complete",
    means: "Done: the answer is in `status.result`, the transcript in Postgres.",
  },
  MessageAppended: {
    where: "Progressing (Pending), Complete=False",
    means:
      "A message was appended after the agent answered the ones before: a new agent pod (`-m<N>` in its name) continues the conversation. Nothing to do; `status.continuations` counts them.",
  },
  Cancelled: {
    where: "Progressing, Failed (phase Cancelled)",
    means: "`spec.cancel` is set; the pod is deleted and Pending Approvals are cancelled.",
  },
  TokenBudgetExceeded: {
    where: "Failed",
    means:
      "The model proxy refused further model requests. Raise `spec.limits.tokenBudget` (capped by the operator's `SESSION_CEILINGS`) in a new session, or narrow the task.",
  },
  TimedOut: {
    where: "Failed",
    means:
      "`spec.limits.timeoutSeconds` ran out (the pod's `activeDeadlineSeconds`). Raise it within the ceiling or split the task.",
  },
  RetriesExhausted: {
    where: "Failed",
    means:
      "`AGENT_POD_RETRIES` agent pods failed in a row: read `status.podFailures` and the pods' logs (model endpoint, key, gateway reachable).",
  },
  AgentFailed: {
    where: "Failed",
    means:
      "The agent pod failed and is not retried (a final error: a limit, a model 4xx, or a model error marked `x-should-retry: false`); the message says which. Fix the cause and start a new session.",
  },
  NoAnswer: {
    where: "Failed",
    means: "The agent exited without posting an answer: read its pod's logs; an engine fault.",
  },
  ModelEndpointNotFound: {
    where: "Failed; Event (Warning)",
    means:
      "`spec.model.endpointRef` names no endpoint of the operator's `MODEL_ENDPOINTS`. Fix the name, or configure the endpoint.",
  },
  ModelNotOffered: {
    where: "Failed; Event (Warning)",
    means:
      "The endpoint's `models` list does not contain `spec.model.name`. Use one it lists, or add it to the endpoint.",
  },
  NamespaceNotServed: {
    where: "Progressing=False (phase Pending); Event (Warning)",
    means: NAMESPACE_NOT_SERVED,
  },
  DatabaseUnavailable: {
    where: "Progressing=False",
    means:
      "The operator's Postgres does not answer (refused, shut down, timed out): the session's pod and status wait, and both components' `/readyz` say `\"database\": false`. Bring the database back: work resumes within seconds (retries are capped at 2 s) and the condition clears.",
  },
  PodNameTaken: {
    where: "Failed; Event (Warning)",
    means:
      "A pod with the agent pod's name exists that this session does not control: someone created it. The operator never adopts it (its token would act as the session). Find out who (audit log), delete it, create the session again.",
  },
  CapabilityNotFound: {
    where: "CapabilitiesResolved=False",
    means:
      "`spec.capabilities` names a Capability that does not exist in the namespace; the agent does not see it. Fix the name or ask the platform team for the Capability.",
  },
  AllFound: {
    where: "CapabilitiesResolved=True",
    means: "Every Capability in `spec.capabilities` exists.",
  },
  SessionEnded: {
    where: "AwaitingApproval=False (phase Completed, Failed or Cancelled)",
    means:
      "The session is over: nothing waits for a decision any more, and its Pending Approvals are cancelled (their reason is `SessionEnded` too).",
  },
} as const satisfies Record<string, Reason>;
export type SessionReason = keyof typeof SESSION_REASONS;
export const SessionReason = namesOf(SESSION_REASONS);

/** Reasons of Events on a session that are not condition reasons (those are Events too, where noted). */
export const SESSION_EVENT_REASONS = {
  LimitLowered: {
    where: "Event (Warning)",
    means:
      "`spec.limits.*` or `spec.approval.holdPodForSeconds` asks for more than the operator's ceiling; the message names the field, the value asked and the ceiling, which the session runs with (recorded once; `status.effectiveLimits` shows every limit as it runs). Ask for at most the ceiling, or ask the platform team to raise it (chart value `sessionCeilings`).",
  },
  AgentPodCreated: {
    where: "Event (Normal)",
    means: "The controller created the agent pod of this run; the message names it. Nothing to do.",
  },
  AgentPodFailed: {
    where: "Event (Warning)",
    means:
      "An agent pod failed and is replaced after a back-off (`status.attempt` counts the pods, `status.podFailures` lists the failed ones); the message gives its reason and exit code. If it repeats, read the pod's logs (model endpoint, key, gateway reachable): after `AGENT_POD_RETRIES` failures the session fails (`RetriesExhausted`).",
  },
  AgentResuming: {
    where: "Event (Normal)",
    means:
      "Every Approval the released pod waited for is decided; a new agent pod resumes the session from its stored history (`status.resumes` counts them). Nothing to do.",
  },
  SessionContinued: {
    where: "Event (Normal)",
    means:
      "Messages were appended after the agent's final answer; a new agent pod answers the next (`status.continuations` counts them). Nothing to do.",
  },
  SessionCompleted: {
    where: "Event (Normal)",
    means: "The session reached phase Completed: the answer is in `status.result`.",
  },
  SessionFailed: {
    where: "Event (Warning)",
    means:
      "The session reached phase Failed; the message is its Progressing condition's, the Failed condition's reason says why (above).",
  },
  SessionCancelled: {
    where: "Event (Normal)",
    means: "The session reached phase Cancelled (`spec.cancel`).",
  },
} as const satisfies Record<string, Reason>;
export type SessionEventReason = keyof typeof SESSION_EVENT_REASONS;
export const SessionEventReason = namesOf(SESSION_EVENT_REASONS);

export const AGENT_SESSION_VOCABULARY: Vocabulary = {
  kind: "AgentSession",
  phases: SESSION_PHASES,
  phaseMeanings: PHASE_MEANINGS,
  conditions: SESSION_CONDITION_TYPES,
  conditionMeanings: CONDITION_MEANINGS,
  reasons: SESSION_REASONS,
  events: SESSION_EVENT_REASONS,
};

/** The words of this module, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = wordsOf(AGENT_SESSION_VOCABULARY);
