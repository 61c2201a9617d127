/**
 * The end of an AgentSession's pass (plan.ts): the agent pod it creates ({@link planAgentPod}) and
 * the status it writes ({@link planStatus}), both pure.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { Approval, ProviderInstance } from "../../api/kinds.ts";
import {
  isTerminalSessionPhase,
  SessionCondition,
  SessionEventReason,
  SessionPhase,
  type TerminalSessionPhase,
} from "../../api/status/agentsession.ts";
import { limitsOf } from "../../kube/session-context.ts";
import {
  type AgentSessionPlanInput,
  event,
  type FinalPlan,
  final,
  type PlannedEvent,
  POLL_INTERVAL_MS,
} from "./plan-types.ts";
import { agentPodFor } from "./pod.ts";
import { sidecarsFor } from "./sidecars.ts";
import { limitLoweredEvent, statusFrom } from "./status.ts";

/** The Event recorded when a session reaches a terminal phase. */
const END_EVENTS: Record<TerminalSessionPhase, SessionEventReason> = {
  Completed: SessionEventReason.SessionCompleted,
  Failed: SessionEventReason.SessionFailed,
  Cancelled: SessionEventReason.SessionCancelled,
};

/**
 * The agent pod of the current run (pod.ts), its time left counted from the run's start, with a
 * sidecar for each of `sidecarProviders` (sidecars.ts). Pure.
 */
export function planAgentPod(input: AgentSessionPlanInput, sidecarProviders: ProviderInstance[]): V1Pod {
  const { session, settings, now } = input;
  const runStart = session.status?.runStartTime ?? session.status?.startTime;
  const started = runStart ? Date.parse(runStart) : now.getTime();
  const timeout = limitsOf(session, settings.sessionCeilings).timeoutSeconds;
  return agentPodFor(
    session,
    session.status?.attempt ?? 1,
    {
      image: settings.agentImage,
      gatewayUrl: settings.gatewayUrl,
      remainingSeconds: timeout - (now.getTime() - started) / 1000,
      resources: settings.agentResources,
      sidecars: sidecarsFor(sidecarProviders, settings.gatewayUrl, session.metadata.uid),
    },
    session.status?.resumes ?? 0,
    session.status?.continuations ?? 0,
  );
}

/** What the status is planned on, read after the pod's side of the pass. */
export interface StatusObservation {
  /** The session's Approvals, from the cache. */
  approvals: Approval[];
  /** The names in spec.capabilities no Capability of the namespace has. */
  missingCapabilities: string[];
}

/**
 * The session's status (status.ts statusFrom) with the pod the pass ends with, and what to say when it
 * is written: LimitLowered (judged against the status before this write: once the write records the
 * limits, it is silent) and, on reaching a terminal phase, Session<phase>. Pure; needs the record.
 */
export function planStatus(
  input: AgentSessionPlanInput,
  pod: V1Pod | undefined,
  observed: StatusObservation,
): FinalPlan {
  const { session, settings, now } = input;
  const record = input.record;
  if (!record) throw new Error("planStatus needs the session's record (readRecord)");
  const limits = limitsOf(session, settings.sessionCeilings);
  const status = statusFrom(
    session,
    pod,
    observed.approvals,
    record,
    now,
    observed.missingCapabilities,
    limits,
  );
  const lowered = limitLoweredEvent(session, settings.sessionCeilings);
  const events: PlannedEvent[] = [];
  if (lowered) events.push(event("Warning", lowered.reason, lowered.message));
  const terminal = isTerminalSessionPhase(status.phase);
  if (status.phase !== session.status?.phase && isTerminalSessionPhase(status.phase)) {
    const ended = status.conditions?.find((c) => c.type === SessionCondition.Progressing);
    events.push(
      event(
        status.phase === SessionPhase.Failed ? "Warning" : "Normal",
        END_EVENTS[status.phase],
        ended?.message ?? `The session is ${status.phase}.`,
      ),
    );
  }
  return final({
    status,
    whenWritten: { log: [{ fields: { phase: status.phase }, message: "session status written" }], events },
    ...(terminal ? {} : { requeueAfterMs: POLL_INTERVAL_MS, poll: true }),
  });
}
