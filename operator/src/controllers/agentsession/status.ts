/**
 * A session's status from what the API server and Postgres show (pure): the agent pod's state, the
 * session's Approvals, and the final answer the agent posted.
 */
import { isDeepStrictEqual } from "node:util";
import type { V1Pod } from "@kubernetes/client-node";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import {
  isTerminalSessionPhase,
  SessionCondition,
  SessionEventReason,
  SessionPhase,
  SessionReason,
} from "../../api/status/agentsession.ts";
import { ApprovalPhase } from "../../api/status/approval.ts";
import { PodPhase, PodReason } from "../../api/status/kubernetes.ts";
import { type LoweredLimit, loweredLimits, type SessionCeilings } from "../../core/limits.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import { findCondition, metaTimeOf, setCondition } from "../../kube/runtime/conditions.ts";
import { LIMIT_FIELDS, limitsOf, requestedLimitsOf } from "../../kube/session-context.ts";

const RESULT_LIMIT = 16_384;
/** status.pendingApprovals lists at most this many names (the CRD's maxItems); the rest are in the cluster. */
const MAX_LISTED_APPROVALS = 64;

/** `text` ending with a full stop, so another sentence can follow it. */
function sentence(text: string): string {
  return /[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`;
}

/**
 * The message of ModelEndpointNotFound: the field, the endpoints the operator has (by name), and where
 * the platform configures them (the chart value `modelEndpoints`, the operator's MODEL_ENDPOINTS).
 * Without `endpointRef` a session gets the default endpoint, so only an empty list misses it.
 */
export function modelEndpointNotFoundMessage(
  endpointRef: string | undefined,
  configured: readonly { name: string }[],
): string {
  const source = "the chart value modelEndpoints (the operator's MODEL_ENDPOINTS)";
  if (configured.length === 0) {
    return `spec.model.endpointRef ${endpointRef ?? "(unset)"}: the operator has no model endpoint configured; the platform team configures them with ${source}.`;
  }
  return `spec.model.endpointRef ${endpointRef}: the operator has no model endpoint of that name; it has ${configured.map((e) => e.name).join(", ")}. Use one of them, or ask the platform team to add it to ${source}.`;
}

/**
 * The message of LimitLowered: each field asked above its ceiling, the value asked, the ceiling it runs
 * with, and who sets the ceilings (the chart value `sessionCeilings`, the operator's SESSION_CEILINGS).
 */
export function limitLoweredMessage(lowered: readonly LoweredLimit[]): string {
  const each = lowered.map(
    (l) =>
      `${LIMIT_FIELDS[l.limit]} asks for ${l.asked}, but the operator's ceiling is ${l.ceiling}, so the session runs with ${l.ceiling}`,
  );
  return `${each.join("; ")}. The platform team sets the ceilings with the chart value sessionCeilings (the operator's SESSION_CEILINGS); status.effectiveLimits shows every limit the session runs under.`;
}

/**
 * The Warning Event to record when the status about to be written holds `effectiveLimits` for the first
 * time (or new ones: the ceilings changed) and a ceiling lowers a value the spec asks for; undefined
 * otherwise, so each session is told once, not on every reconcile. Pure.
 */
export function limitLoweredEvent(
  session: AgentSession,
  ceilings: SessionCeilings,
): { reason: SessionEventReason; message: string } | undefined {
  const lowered = loweredLimits(requestedLimitsOf(session), ceilings);
  if (lowered.length === 0) return undefined;
  if (isDeepStrictEqual(session.status?.effectiveLimits, limitsOf(session, ceilings))) return undefined;
  return { reason: SessionEventReason.LimitLowered, message: limitLoweredMessage(lowered) };
}

/**
 * True once the current run posted its final answer. Each run answers one message: the first run
 * message 1, continuation `c` (status.continuations) message `c + 1` (DESIGN §2: appending a message
 * starts a turn).
 */
export function runAnswered(session: AgentSession, record: SessionRecord): boolean {
  return record.finalAnswers > (session.status?.continuations ?? 0);
}

/** True when the agent posted a final answer to every message of `spec.messages`. */
export function allAnswered(session: AgentSession, record: SessionRecord): boolean {
  return record.finalAnswers >= session.spec.messages.length;
}

/** True once the session can no longer change phase (a Completed one continues when a message is appended). */
export function isTerminal(session: AgentSession): boolean {
  return isTerminalSessionPhase(session.status?.phase);
}

/** Phase and reason from the pod, Approvals and transcript. */
export function phaseFrom(
  session: AgentSession,
  pod: V1Pod | undefined,
  pendingApprovals: Approval[],
  record: SessionRecord,
): { phase: SessionPhase; reason: SessionReason; message: string } {
  if (session.spec.cancel) {
    return { phase: SessionPhase.Cancelled, reason: SessionReason.Cancelled, message: "spec.cancel is set." };
  }
  const podPhase = pod?.status?.phase;
  if (
    record.finalAnswer !== undefined &&
    allAnswered(session, record) &&
    (podPhase === PodPhase.Succeeded || podPhase === undefined)
  ) {
    return {
      phase: SessionPhase.Completed,
      reason: SessionReason.AnswerPosted,
      message: "The agent posted its final answer.",
    };
  }
  if (
    (podPhase === PodPhase.Failed || podPhase === PodPhase.Succeeded) &&
    record.budgetExceeded !== undefined
  ) {
    // The model proxy refused the session's model requests: that, not the pod's exit, is why it ended.
    return {
      phase: SessionPhase.Failed,
      reason: SessionReason.TokenBudgetExceeded,
      message: sentence(record.budgetExceeded),
    };
  }
  if (podPhase === PodPhase.Failed) {
    const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
    const why = pod?.status?.reason ?? terminated?.reason ?? PodReason.Error;
    const attempts = session.status?.attempt ?? 1;
    const retried = attempts > 1 ? ` ${attempts} agent pods failed; no retries are left.` : "";
    return {
      phase: SessionPhase.Failed,
      reason:
        why === PodReason.DeadlineExceeded
          ? SessionReason.TimedOut
          : attempts > 1
            ? SessionReason.RetriesExhausted
            : SessionReason.AgentFailed,
      message:
        sentence(
          record.agentError ??
            `The agent pod failed (${why}, exit code ${terminated?.exitCode ?? "unknown"})`,
        ) + retried,
    };
  }
  if (podPhase === PodPhase.Succeeded && record.releases > (session.status?.resumes ?? 0)) {
    // The agent posted `released`: it stopped while waiting for a decision (holdPodForSeconds).
    return pendingApprovals.length > 0
      ? {
          phase: SessionPhase.AwaitingApproval,
          reason: SessionReason.PodReleased,
          message: `Waiting for a decision on ${pendingApprovals.map((a) => a.metadata.name).join(", ")}; the agent pod was released and a new one resumes the session once it is decided.`,
        }
      : {
          phase: SessionPhase.Pending,
          reason: SessionReason.Resuming,
          message: "The decision was made; a new agent pod resumes the session.",
        };
  }
  if (podPhase === PodPhase.Succeeded && runAnswered(session, record)) {
    return {
      phase: SessionPhase.Pending,
      reason: SessionReason.MessageAppended,
      message: `The agent answered ${record.finalAnswers} of ${session.spec.messages.length} messages; a new agent pod answers the next.`,
    };
  }
  if (podPhase === PodPhase.Succeeded) {
    return {
      phase: SessionPhase.Failed,
      reason: SessionReason.NoAnswer,
      message: "The agent exited without posting a final answer.",
    };
  }
  if (!pod || podPhase === PodPhase.Pending || podPhase === undefined) {
    return {
      phase: SessionPhase.Pending,
      reason: SessionReason.PodStarting,
      message: "Waiting for the agent pod to run.",
    };
  }
  if (pendingApprovals.length > 0) {
    return {
      phase: SessionPhase.AwaitingApproval,
      reason: SessionReason.ApprovalPending,
      message: `Waiting for a decision on ${pendingApprovals.map((a) => a.metadata.name).join(", ")}.`,
    };
  }
  return { phase: SessionPhase.Running, reason: SessionReason.PodRunning, message: "The agent is working." };
}

/**
 * The status of a session whose reconcile could not read its record because the operator's database
 * is unavailable (pure): `Progressing=False`, reason `DatabaseUnavailable`, naming what waits — its
 * first agent pod, or its status; the phase stays (Pending for a new session, so it has a status at
 * all). The next pass after the database answers writes the whole status again (statusFrom).
 */
export function databaseUnavailableStatus(
  session: AgentSession,
  now: Date,
): NonNullable<AgentSession["status"]> {
  const waits = session.status?.podName ? "its status is brought up to date" : "its agent pod is started";
  const conditions = setCondition(
    session.status?.conditions,
    {
      type: SessionCondition.Progressing,
      status: "False",
      reason: SessionReason.DatabaseUnavailable,
      message: `The operator's database (Postgres) does not answer, so the session's transcript cannot be read; ${waits} once it answers again.`,
      observedGeneration: session.metadata.generation,
    },
    now,
  );
  // No startTime: the session's timeout runs from when its work starts, not from the outage.
  return { ...session.status, phase: session.status?.phase ?? SessionPhase.Pending, conditions };
}

/**
 * The full desired status; `effectiveLimits` are the session's limits under the operator's ceilings
 * (default: under the default ceilings, as limitsOf's).
 */
export function statusFrom(
  session: AgentSession,
  pod: V1Pod | undefined,
  approvals: Approval[],
  record: SessionRecord,
  now: Date,
  missingCapabilities: readonly string[] = [],
  effectiveLimits: SessionCeilings = limitsOf(session),
): NonNullable<AgentSession["status"]> {
  const undecided = approvals.filter(
    (a) => (a.status?.phase ?? ApprovalPhase.Pending) === ApprovalPhase.Pending,
  );
  const { phase, reason, message } = phaseFrom(session, pod, undecided, record);
  const terminal = isTerminalSessionPhase(phase);
  // An ended session waits for nothing: its Pending Approvals are being cancelled (SessionEnded).
  const pending = terminal ? [] : undecided;
  const generation = session.metadata.generation;
  const stamp = metaTimeOf(now);
  let conditions = setCondition(
    session.status?.conditions,
    {
      type: SessionCondition.AwaitingApproval,
      status: pending.length > 0 ? "True" : "False",
      reason:
        pending.length > 0
          ? SessionReason.ApprovalPending
          : terminal
            ? SessionReason.SessionEnded
            : SessionReason.NoPendingApprovals,
      message:
        pending.length > 0
          ? message
          : terminal
            ? `The session is ${phase}; nothing waits for a decision (a Pending Approval of it is cancelled, reason SessionEnded).`
            : "No decision is pending.",
      observedGeneration: generation,
    },
    now,
  );
  if (session.spec.capabilities) {
    // A name that matches no Capability hides nothing dangerous, but the user meant a tool the agent
    // cannot see: say so instead of letting it look like the agent ignored it.
    const missing = missingCapabilities.length > 0;
    conditions = setCondition(
      conditions,
      {
        type: SessionCondition.CapabilitiesResolved,
        status: missing ? "False" : "True",
        reason: missing ? SessionReason.CapabilityNotFound : SessionReason.AllFound,
        message: missing
          ? `spec.capabilities names ${missingCapabilities.join(", ")}, which no Capability in this namespace is; the agent does not see ${missingCapabilities.length === 1 ? "it" : "them"}. Fix the name or ask a platform engineer to create the Capability.`
          : "Every Capability in spec.capabilities exists.",
        observedGeneration: generation,
      },
      now,
    );
  }
  conditions = setCondition(
    conditions,
    {
      type: SessionCondition.Progressing,
      status: terminal ? "False" : "True",
      reason,
      message,
      observedGeneration: generation,
    },
    now,
  );
  if (terminal) {
    conditions = setCondition(
      conditions,
      {
        type: phase === SessionPhase.Completed ? SessionCondition.Complete : SessionCondition.Failed,
        status: "True",
        reason,
        message,
        observedGeneration: generation,
      },
      now,
    );
    // A continued session that then ends otherwise keeps no stale "continuing" message in Complete.
    if (phase !== SessionPhase.Completed && findCondition(conditions, SessionCondition.Complete)) {
      conditions = setCondition(
        conditions,
        { type: SessionCondition.Complete, status: "False", reason, message, observedGeneration: generation },
        now,
      );
    }
  }
  return {
    ...session.status,
    phase,
    observedGeneration: generation,
    conditions,
    ...(pod?.metadata?.name ? { podName: pod.metadata.name } : {}),
    ...(pod?.metadata?.uid ? { podUID: pod.metadata.uid } : {}),
    turns: record.turns,
    toolCalls: record.toolCalls,
    writes: record.writes,
    compactions: record.compactions,
    usage: record.usage,
    effectiveLimits,
    pendingApprovals: pending.slice(0, MAX_LISTED_APPROVALS).map((a) => a.metadata.name),
    ...(record.finalAnswer !== undefined ? { result: record.finalAnswer.slice(0, RESULT_LIMIT) } : {}),
    startTime: session.status?.startTime ?? stamp,
    ...(terminal ? { completionTime: session.status?.completionTime ?? stamp } : {}),
  };
}
