/**
 * What one reconcile of an AgentSession does, as pure functions of what was observed, so the
 * reconciler reads like the paragraph that explains it (the applier is reconciler.ts). A pass plans
 * up to four times, around its I/O, as the ProviderInstance's does around its health check:
 *
 *   {@link planAgentSession}, before and again after the transcript record is read (`readRecord`):
 *   being deleted     → once no Approval of it is Pending, remove the finalizer (else look again in 1 s)
 *   no finalizer      → add it; the applier plans again on the version that carries it (same pass)
 *   ended             → nothing, unless messages were appended to a Completed one: Pending,
 *                       Progressing=True and Complete=False MessageAppended, continuations+1
 *   namespace not served → Progressing=False NamespaceNotServed, phase kept (Pending); no requeue
 *   no such model endpoint / model → Failed ModelEndpointNotFound / ModelNotOffered
 *   a pod under its name it does not control → an earlier session's: wait 2 s; else Failed PodNameTaken
 *   record unavailable → Progressing=False DatabaseUnavailable, and the error to the work queue
 *   pod failed, retries left → wait out the back-off, then attempt+1 (Event AgentPodFailed)
 *   released pod, every Approval decided → resumes+1 (Event AgentResuming)
 *   pod answered, more messages wait → continuations+1, runStartTime now (Event SessionContinued)
 *   else `run`: keep the agent NetworkPolicy (not when cancelled); cancelled → delete the pod; no pod
 *                       → the ServiceAccount, then the pod ({@link planAgentPod})
 *   {@link planCreatedPod}: the created pod is someone else's → Failed PodNameTaken; else AgentPodCreated
 *   {@link planStatus}: statusFrom's status (status.ts: Pending PodStarting → Running PodRunning →
 *                       AwaitingApproval ApprovalPending | PodReleased → Completed AnswerPosted | Failed
 *                       AgentFailed, RetriesExhausted, TimedOut, TokenBudgetExceeded, NoAnswer |
 *                       Cancelled); when written: LimitLowered the first time, Session<phase> on the end;
 *                       poll again in 2 s until the phase is terminal
 */
import type { V1Pod } from "@kubernetes/client-node";
import {
  SessionCondition,
  SessionEventReason,
  SessionPhase,
  SessionReason,
} from "../../api/status/agentsession.ts";
import { ApprovalPhase } from "../../api/status/approval.ts";
import { AGENT_NETWORK_POLICY, SESSION_FINALIZER } from "../../api/well-known.ts";
import { endpointFor } from "../../config.ts";
import { metaTimeOf, setCondition } from "../../kube/runtime/conditions.ts";
import { hasFinalizer } from "../../kube/runtime/finalizers.ts";
import { namespaceNotServedMessage, serves } from "../served-namespaces.ts";
import { agentNetworkPolicy } from "./network-policy.ts";
import {
  type AgentSessionPlan,
  type AgentSessionPlanInput,
  EARLIER_POD_WAIT_MS,
  event,
  type FinalPlan,
  final,
  type PlannedEvent,
  type PlannedLog,
  RELEASE_WAIT_MS,
} from "./plan-types.ts";
import {
  allAnswered,
  databaseUnavailableStatus,
  isTerminal,
  modelEndpointNotFoundMessage,
  runAnswered,
} from "./status.ts";
import {
  continuationDue,
  continuedMessage,
  controlledBy,
  foreignPodMessage,
  leftOfEarlierSession,
  podFailureOf,
  resumeDue,
  retryDecision,
} from "./transitions.ts";

export { planAgentPod, planStatus, type StatusObservation } from "./plan-status.ts";
export * from "./plan-types.ts";

/** Ends the session Failed with `reason` (for what no retry can fix); the Event whether or not it was written. */
function failed(input: AgentSessionPlanInput, reason: SessionReason, message: string): FinalPlan {
  const { session, now } = input;
  const conditions = setCondition(
    session.status?.conditions,
    {
      type: SessionCondition.Failed,
      status: "True",
      reason,
      message,
      observedGeneration: session.metadata.generation,
    },
    now,
  );
  return final({
    status: { ...session.status, phase: SessionPhase.Failed, conditions },
    events: [event("Warning", reason, message)],
  });
}

/** Plans a pass up to the agent pod's side of it (see the header). Pure. */
export function planAgentSession(input: AgentSessionPlanInput): AgentSessionPlan {
  const { session, settings, now } = input;
  if (session.metadata.deletionTimestamp) return planRelease(input);
  if (!hasFinalizer(session, SESSION_FINALIZER)) return final({ finalizer: "add", requeueAfterMs: 0 });
  if (isTerminal(session)) return planContinuation(input);
  const namespace = session.metadata.namespace;

  // Outside the namespaces this controller serves it has no right to create pods: say so and wait, as
  // Pending, for the platform to add the namespace (a new configuration restarts the controller).
  const served = settings.watchNamespaces;
  if (!serves(served, namespace)) {
    const message = namespaceNotServedMessage("AgentSessions", namespace, served);
    const conditions = setCondition(
      session.status?.conditions,
      {
        type: SessionCondition.Progressing,
        status: "False",
        reason: SessionReason.NamespaceNotServed,
        message,
        observedGeneration: session.metadata.generation,
      },
      now,
    );
    return final({
      status: { ...session.status, phase: session.status?.phase ?? SessionPhase.Pending, conditions },
      whenWritten: { log: [], events: [event("Warning", SessionReason.NamespaceNotServed, message)] },
    });
  }

  const endpoint = endpointFor(settings, session.spec.model.endpointRef);
  if (!endpoint) {
    return failed(
      input,
      SessionReason.ModelEndpointNotFound,
      modelEndpointNotFoundMessage(session.spec.model.endpointRef, settings.modelEndpoints),
    );
  }
  if (endpoint.models.length > 0 && !endpoint.models.includes(session.spec.model.name)) {
    return failed(
      input,
      SessionReason.ModelNotOffered,
      `Model endpoint ${endpoint.name} does not offer model ${session.spec.model.name}; it offers ${endpoint.models.join(", ")}.`,
    );
  }

  const { pod, record } = input;
  // A pod under our deterministic name that this session does not control was made by someone else:
  // adopting it would let its token act as the session (DESIGN §7). Refuse it.
  if (pod && !controlledBy(pod, session)) {
    // A pod of an earlier session of the same name is on its way out (garbage collection): wait for it.
    if (leftOfEarlierSession(pod, session)) return final({ requeueAfterMs: EARLIER_POD_WAIT_MS });
    return failed(input, SessionReason.PodNameTaken, foreignPodMessage(pod));
  }
  if (!record)
    return { kind: "readRecord", unavailable: databaseUnavailableStatus(session, now), clock: "same" };

  const attempt = session.status?.attempt ?? 1;
  const resumes = session.status?.resumes ?? 0;
  const continuations = session.status?.continuations ?? 0;
  const cancel = session.spec.cancel;
  const answered = runAnswered(session, record);
  const retry =
    pod && !cancel ? retryDecision(pod, record, attempt, settings.agentPodRetries, now, answered) : undefined;
  if (retry?.kind === "wait") return final({ requeueAfterMs: retry.afterMs });
  // Each of the next three records the new run before creating its pod: a crash in between re-creates
  // the same name. Our own status write does not queue the session again (manager.ts), so each asks
  // for the next pass.
  if (!cancel && pod && resumeDue(pod, record, resumes, input.approvals, answered)) {
    return final({
      status: { ...session.status, resumes: resumes + 1 },
      log: [
        {
          fields: { releasedPod: pod.metadata?.name, resumes: resumes + 1 },
          message: "approvals decided; resuming",
        },
      ],
      events: [
        event(
          "Normal",
          SessionEventReason.AgentResuming,
          `Every Approval the released pod ${pod.metadata?.name} waited for is decided; starting a new agent pod.`,
        ),
      ],
      requeueAfterMs: 0,
    });
  }
  if (!cancel && pod && continuationDue(pod, session, record)) {
    return final({
      status: { ...session.status, continuations: continuations + 1, runStartTime: metaTimeOf(now) },
      log: [
        {
          fields: { answered: record.finalAnswers, continuations: continuations + 1 },
          message: "continuing",
        },
      ],
      events: [event("Normal", SessionEventReason.SessionContinued, continuedMessage(session, record))],
      requeueAfterMs: 0,
    });
  }
  if (retry?.kind === "replace" && pod) {
    const failure = podFailureOf(pod);
    return final({
      status: {
        ...session.status,
        attempt: attempt + 1,
        podFailures: [...(session.status?.podFailures ?? []), failure],
      },
      log: [
        {
          fields: { failedPod: failure.podName, reason: failure.reason, attempt: attempt + 1 },
          message: "agent pod failed; retrying",
        },
      ],
      events: [
        event(
          "Warning",
          SessionEventReason.AgentPodFailed,
          `Agent pod ${failure.podName} failed (${failure.reason}, exit code ${failure.exitCode ?? "unknown"}); starting attempt ${attempt + 1}.`,
        ),
      ],
      requeueAfterMs: 0,
    });
  }
  // Before a pod starts, checked against the API server itself (an apply); while it runs, the cache.
  const cached = pod ? input.agentPolicy : undefined;
  return {
    kind: "run",
    ...(cancel
      ? {}
      : {
          networkPolicy: {
            desired: agentNetworkPolicy(namespace, settings),
            cached,
            whenApplied: cached
              ? [
                  {
                    fields: { networkPolicy: AGENT_NETWORK_POLICY, wrote: "applied" },
                    message: "agent NetworkPolicy had drifted; restored",
                  },
                ]
              : [],
          },
        }),
    deletePod: cancel ? pod : undefined,
    createPod: !cancel && !pod,
  };
}

/**
 * A session being deleted: its Pending Approvals must be Cancelled first (the Approval reconciler does
 * that once it sees the deletion), then the finalizer goes and the API server deletes the session,
 * its pods and Approvals follow through their owner references.
 */
function planRelease(input: AgentSessionPlanInput): FinalPlan {
  if (!hasFinalizer(input.session, SESSION_FINALIZER)) return final({});
  const pending = input.approvals.filter(
    (a) => (a.status?.phase ?? ApprovalPhase.Pending) === ApprovalPhase.Pending,
  );
  if (pending.length > 0) {
    return final({
      log: [
        {
          fields: { pending: pending.map((a) => a.metadata.name) },
          message: "session deleted; waiting for its approvals to be cancelled",
        },
      ],
      requeueAfterMs: RELEASE_WAIT_MS,
    });
  }
  return final({ finalizer: "remove", log: [{ message: "session released" }] });
}

/**
 * A Completed session whose spec changed since it completed (metadata.generation past
 * status.observedGeneration): when messages were appended that the agent has not answered, it goes
 * back to Pending with continuations+1 and a new runStartTime, and the next pass starts the pod that
 * answers them (DESIGN §2: "appending starts a turn"). Otherwise, and for Failed and Cancelled
 * sessions, nothing changes.
 */
function planContinuation(input: AgentSessionPlanInput): AgentSessionPlan {
  const { session, now, record } = input;
  const status = session.status ?? {};
  const generation = session.metadata.generation;
  if (status.phase !== SessionPhase.Completed || session.spec.cancel) return final({});
  if (generation === undefined || (status.observedGeneration ?? 0) >= generation) return final({});
  if (!record)
    return { kind: "readRecord", unavailable: databaseUnavailableStatus(session, now), clock: "again" };
  if (allAnswered(session, record)) return final({ status: { ...status, observedGeneration: generation } });
  const message = continuedMessage(session, record);
  let conditions = setCondition(
    status.conditions,
    {
      type: SessionCondition.Complete,
      status: "False",
      reason: SessionReason.MessageAppended,
      message,
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: SessionCondition.Progressing,
      status: "True",
      reason: SessionReason.MessageAppended,
      message,
      observedGeneration: generation,
    },
    now,
  );
  const { completionTime: _completed, ...open } = status;
  return final({
    status: {
      ...open,
      phase: SessionPhase.Pending,
      observedGeneration: generation,
      conditions,
      continuations: (status.continuations ?? 0) + 1,
      runStartTime: metaTimeOf(now),
    },
    log: [
      {
        fields: { answered: record.finalAnswers, messages: session.spec.messages.length },
        message: "continuing",
      },
    ],
    events: [event("Normal", SessionEventReason.SessionContinued, message)],
    requeueAfterMs: 0,
  });
}

/**
 * After the create: the pod under the session's name (the API server's answer, or on 409 the pod
 * that was there) is someone else's → Failed PodNameTaken; else it is logged and announced. Pure.
 */
export function planCreatedPod(
  input: AgentSessionPlanInput,
  pod: V1Pod,
): FinalPlan | { kind: "created"; log: PlannedLog[]; events: PlannedEvent[] } {
  if (!controlledBy(pod, input.session)) {
    return failed(input, SessionReason.PodNameTaken, foreignPodMessage(pod));
  }
  return {
    kind: "created",
    log: [{ fields: { pod: pod.metadata?.name, podUID: pod.metadata?.uid }, message: "agent pod created" }],
    events: [event("Normal", SessionEventReason.AgentPodCreated, `Created agent pod ${pod.metadata?.name}.`)],
  };
}
