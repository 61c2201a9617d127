/**
 * The decisions about the agent pod of a session that its plan (plan.ts) is made of, each pure: whether
 * a failed pod is replaced and when ({@link retryDecision}), whether a released pod's session resumes
 * ({@link resumeDue}) or an answered one continues ({@link continuationDue}), and whether a pod under
 * the session's name is its own ({@link controlledBy}). Moved out of reconciler.ts, which re-exports
 * the exported ones.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { isOpenApprovalPhase } from "../../api/status/approval.ts";
import { PodPhase, PodReason } from "../../api/status/kubernetes.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import { allAnswered, runAnswered } from "./status.ts";

/** Base delay before a failed agent pod is replaced; doubles per attempt up to {@link RETRY_MAX_MS}. */
const RETRY_BASE_MS = 2_000;
const RETRY_MAX_MS = 60_000;

/**
 * Whether the failed pod of `attempt` is replaced: not when it did not fail, ran out of time
 * (DeadlineExceeded: the session's timeout is over), the agent already answered (`answered`: the
 * current run posted its final answer), the token budget is used up, or `retries` are used up (the
 * session then fails); otherwise after RETRY_BASE_MS × 2^(attempt-1) from the pod's end.
 */
export function retryDecision(
  pod: V1Pod,
  record: SessionRecord,
  attempt: number,
  retries: number,
  now: Date,
  answered: boolean,
): { kind: "replace" } | { kind: "wait"; afterMs: number } | undefined {
  if (pod.status?.phase !== PodPhase.Failed || pod.status.reason === PodReason.DeadlineExceeded)
    return undefined;
  // Exit code 2: the agent says its failure is final (a limit, a model refusal); a new pod would repeat it.
  if (pod.status.containerStatuses?.[0]?.state?.terminated?.exitCode === AGENT_EXIT_FINAL) return undefined;
  // A new pod would meet the same refusal of the model proxy: the token budget stays used up.
  if (answered || record.budgetExceeded !== undefined || attempt > retries) return undefined;
  const finished = pod.status.containerStatuses?.[0]?.state?.terminated?.finishedAt;
  const endedAt = finished ? new Date(finished).getTime() : now.getTime();
  const dueAt = endedAt + Math.min(RETRY_BASE_MS * 2 ** (attempt - 1), RETRY_MAX_MS);
  return dueAt <= now.getTime() ? { kind: "replace" } : { kind: "wait", afterMs: dueAt - now.getTime() };
}

export function podFailureOf(
  pod: V1Pod,
): NonNullable<NonNullable<AgentSession["status"]>["podFailures"]>[number] {
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  const finishedAt = terminated?.finishedAt;
  return {
    podName: pod.metadata?.name ?? "",
    reason: (pod.status?.reason ?? terminated?.reason ?? PodReason.Error).slice(0, 128),
    ...(terminated?.exitCode !== undefined ? { exitCode: terminated.exitCode } : {}),
    ...(finishedAt ? { finishedAt: new Date(finishedAt).toISOString() } : {}),
  };
}

/** The agent's exit code for a final failure (agent-image/src/run-agent.ts EXIT_FINAL). */
const AGENT_EXIT_FINAL = 2;

/**
 * True when `pod` ended after posting `released` (record.releases counts it, `resumes` those already
 * answered by a new pod), the run has not `answered` yet, and none of the session's Approvals is still
 * undecided or running: the decisions it waited for are in, so a new pod resumes the conversation
 * from the stored history.
 */
export function resumeDue(
  pod: V1Pod,
  record: SessionRecord,
  resumes: number,
  approvals: readonly Approval[],
  answered: boolean,
): boolean {
  if (pod.status?.phase !== PodPhase.Succeeded || answered) return false;
  if (record.releases <= resumes) return false;
  // A released agent still waits while any is undecided, or decided and running.
  return !approvals.some((a) => isOpenApprovalPhase(a.status?.phase));
}

/**
 * True when `pod` ended after its run posted the final answer and `spec.messages` holds messages the
 * agent has not answered (appended while it ran): a new pod continues the conversation with the next.
 */
export function continuationDue(pod: V1Pod, session: AgentSession, record: SessionRecord): boolean {
  return (
    pod.status?.phase === PodPhase.Succeeded && runAnswered(session, record) && !allAnswered(session, record)
  );
}

/** The Event message of a continuation. */
export function continuedMessage(session: AgentSession, record: SessionRecord): string {
  const total = session.spec.messages.length;
  return `The agent answered ${record.finalAnswers} of ${total} messages; starting a new agent pod for message ${record.finalAnswers + 1}.`;
}

/**
 * True when `pod` is terminating, or is controlled by an AgentSession of `session`'s name with another
 * uid — a deleted earlier session whose pods the garbage collector is removing.
 */
export function leftOfEarlierSession(pod: V1Pod, session: AgentSession): boolean {
  if (pod.metadata?.deletionTimestamp) return true;
  return (
    pod.metadata?.ownerReferences?.some(
      (o) =>
        o.controller === true &&
        o.kind === "AgentSession" &&
        o.name === session.metadata.name &&
        o.uid !== session.metadata.uid,
    ) ?? false
  );
}

/** True when `pod`'s controller owner reference is `session` (by uid). */
export function controlledBy(pod: V1Pod, session: AgentSession): boolean {
  return (
    pod.metadata?.ownerReferences?.some(
      (o) => o.controller === true && o.kind === "AgentSession" && o.uid === session.metadata.uid,
    ) ?? false
  );
}

export function foreignPodMessage(pod: V1Pod): string {
  return `Pod ${pod.metadata?.name} already exists and is not controlled by this session; it was not adopted. Delete it and create the session again.`;
}
