/**
 * AgentSession reconciler: a pure planner (plan.ts) and this thin applier over a writer port (writer.ts).
 *
 *   session = cache.get(key)                    ; gone → owner references delete the pod
 *   observed = the session's Approvals, the cached pod of its current run, the agent NetworkPolicy
 *   plan = planAgentSession(session, settings, now, observed)
 *            being deleted → remove the finalizer once no Approval of it is Pending; no finalizer →
 *            add it, then plan again on the session as written (same pass); ended → nothing, unless messages were appended to a Completed one → continue it;
 *            namespace not served, no model endpoint or model, a pod under its name it does not
 *            control → say so (plan.ts's header)
 *   plan.readRecord → its transcript record (Postgres), then plan again with it ; unavailable →
 *            Progressing=False DatabaseUnavailable, the error to the work queue (retried soon)
 *            pod of status.attempt failed, retries left → after a back-off, record attempt+1; released
 *            and decided → resumes+1; answered and more messages wait → continuations+1 (the next
 *            pass creates the pod)
 *   plan.run → keep the namespace's agent NetworkPolicy (applied before each pod; otherwise when the
 *            informer's copy drifted); cancelled → delete the pod; no pod → ensure the namespace's
 *            agent ServiceAccount, create planAgentPod's pod (deterministic name per run), then
 *            planCreatedPod (someone else's → Failed PodNameTaken)
 *   planStatus = statusFrom(session, pod, approvals, record, effective limits)
 *   apply a final plan: finalizer, status (only if it changed; resourceVersion-guarded), then when
 *            written its logs and Events (LimitLowered the first time, Session<phase> at the end),
 *            then the plan's logs and Events; return its requeue (a running session's poll at low
 *            priority: behind every event-driven pass in the work queue) — none while transcript notices
 *            arrive (store/session-notices.ts): an append's notice queues the session instead
 */
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { AGENT_NETWORK_POLICY } from "../../api/well-known.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import { approvalsOfSession } from "../../kube/cache-indexes.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import type { EventRecorder } from "../../kube/runtime/events.ts";
import type { ObjectCache } from "../../kube/runtime/informer.ts";
import type { ReconcileResult } from "../../kube/runtime/workqueue.ts";
import { type PortCallObserver, timedPort } from "../../observability/port-timing.ts";
import { isDatabaseUnavailable } from "../../store/unavailable.ts";
import {
  type AgentSessionPlanInput,
  type AgentSessionSettings,
  type FinalPlan,
  type PlannedEvent,
  type PlannedLog,
  planAgentPod,
  planAgentSession,
  planCreatedPod,
  planStatus,
  type ReadRecordPlan,
} from "./plan.ts";
import { agentPodName } from "./pod.ts";
import { sidecarProvidersFor } from "./sidecars.ts";
import { type AgentSessionWriter, kubeAgentSessionWriter } from "./writer.ts";

export {
  type AgentPolicyGateway,
  agentNetworkPolicy,
  agentNetworkPolicyHolds,
  keepAgentNetworkPolicy,
} from "./network-policy.ts";
export { continuationDue, resumeDue, retryDecision } from "./transitions.ts";

/**
 * Concurrent reconciles of the AgentSession controller (controller-runtime's MaxConcurrentReconciles;
 * the work queue never gives one key to two workers). A pass is a few API requests in a row (about
 * 15 ms each on a local control plane), so with the other controllers' 2 a burst of sessions — 200
 * created at once — waited in the queue for their pods (test/bench/operator-sessions.ts); 8 lets the
 * API server, not the queue, set the pace, and keeps the requests in flight few enough for its
 * default max-requests-inflight (400 mutating and not).
 */
export const AGENT_SESSION_WORKERS = 8;

/** Reads what Postgres holds about a session. */
export interface SessionRecords {
  recordOf(sessionUid: string): Promise<SessionRecord>;
}

export interface AgentSessionDeps {
  clients: KubeClients;
  caches: Caches;
  records: SessionRecords;
  settings: AgentSessionSettings;
  events: EventRecorder;
  /** The agent NetworkPolicies (name AGENT_NETWORK_POLICY) of every namespace, as the API server holds them. */
  agentPolicies: ObjectCache<V1NetworkPolicy>;
  now: () => Date;
  /** Observes each writer call as `agentsession.<method>` (the controller's /metrics; test/bench/operator-sessions.ts). */
  metrics?: { portCalled: PortCallObserver };
  /**
   * Whether every transcript append is noticed (store/session-notices.ts): then a running session is
   * queued by the notice of its agent's post, not polled. None: polled.
   */
  notices?: { live(): boolean };
}

/** Approvals owned by a session, from the cache. */
export function approvalsOf(caches: Caches, session: AgentSession): Approval[] {
  return approvalsOfSession(caches, session.metadata.namespace, session.metadata.uid);
}

/** Reconciles one AgentSession: observe, plan, apply. */
export async function reconcileAgentSession(
  deps: AgentSessionDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const session = deps.caches.sessions.get(name, namespace);
  if (!session) return undefined;
  const writer = kubeAgentSessionWriter(deps);
  const timed = deps.metrics ? timedPort(writer, "agentsession", deps.metrics.portCalled) : writer;
  return await applyAgentSession(deps, timed, session, log);
}

/**
 * Plans `session`'s pass on what `deps` show and applies it through `writer` (see the header). Errors:
 * the writer's and the record's; the work queue retries, and every step is safe to repeat.
 */
export async function applyAgentSession(
  deps: Omit<AgentSessionDeps, "clients" | "events">,
  writer: AgentSessionWriter,
  given: AgentSession,
  log: Logger,
): Promise<ReconcileResult> {
  let session = given;
  let input = observe(deps, session, deps.now());
  let plan = planAgentSession(input);
  if (plan.kind === "final" && plan.finalizer === "add" && !plan.status) {
    // The pass goes on with the version that carries it (the API server's answer, whose
    // resourceVersion the status write needs): a requeue would put the session behind every other
    // key in the work queue before its pod is created.
    session = await writer.addFinalizer(session);
    input = observe(deps, session, input.now);
    plan = planAgentSession(input);
  }
  if (plan.kind === "readRecord") {
    const record = await readRecord(deps, writer, session, plan);
    const now = plan.clock === "again" ? deps.now() : input.now;
    // The caches again (they may have moved during the read), but the pod the checks were made on.
    input = { ...observe(deps, session, now), pod: input.pod, record };
    plan = planAgentSession(input);
  }
  const polls = !deps.notices?.live();
  if (plan.kind === "final") return await applyFinal(writer, session, plan, log, polls);
  if (plan.kind !== "run") throw new Error("planAgentSession asked for the record twice");

  let pod = input.pod;
  if (plan.networkPolicy) {
    const { desired, cached, whenApplied } = plan.networkPolicy;
    if ((await writer.keepNetworkPolicy(desired, cached)) === "applied") logAll(log, whenApplied);
  }
  if (plan.deletePod) {
    await writer.deletePod(plan.deletePod);
  } else if (plan.createPod) {
    await writer.ensureServiceAccount(session.metadata.namespace);
    pod = await writer.createPod(planAgentPod(input, sidecarProvidersFor(deps.caches, session)));
    const created = planCreatedPod(input, pod);
    if (created.kind === "final") return await applyFinal(writer, session, created, log, polls);
    logAll(log, created.log);
    emitAll(writer, session, created.events);
  }
  const missingCapabilities = (session.spec.capabilities ?? []).filter(
    (capability) => !deps.caches.capabilities.get(capability, session.metadata.namespace),
  );
  const approvals = approvalsOf(deps.caches, session);
  return await applyFinal(
    writer,
    session,
    planStatus(input, pod, { approvals, missingCapabilities }),
    log,
    polls,
  );
}

/** What the first plan of a pass is made on: the caches, at `now`. */
function observe(
  deps: Omit<AgentSessionDeps, "clients" | "events">,
  session: AgentSession,
  now: Date,
): AgentSessionPlanInput {
  const namespace = session.metadata.namespace;
  const status = session.status;
  const podName = agentPodName(
    session,
    status?.attempt ?? 1,
    status?.resumes ?? 0,
    status?.continuations ?? 0,
  );
  return {
    session,
    settings: deps.settings,
    now,
    approvals: approvalsOf(deps.caches, session),
    pod: deps.caches.pods.get(podName, namespace),
    agentPolicy: deps.agentPolicies.get(AGENT_NETWORK_POLICY, namespace),
  };
}

/**
 * The session's record from Postgres. When the database is unavailable the session says so
 * (`plan.unavailable`) before the error goes on to the work queue, which retries it within seconds
 * (controller.ts): without it, a session created during an outage would have no status at all.
 */
async function readRecord(
  deps: Pick<AgentSessionDeps, "records">,
  writer: AgentSessionWriter,
  session: AgentSession,
  plan: ReadRecordPlan,
): Promise<SessionRecord> {
  try {
    return await deps.records.recordOf(session.metadata.uid);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    await writer.writeStatus(session, plan.unavailable);
    throw error;
  }
}

/**
 * Applies a final plan: finalizer, status, what to say when it was written, the rest; its requeue —
 * the running session's poll only when `polls` (no transcript notices arrive).
 */
async function applyFinal(
  writer: AgentSessionWriter,
  session: AgentSession,
  plan: FinalPlan,
  log: Logger,
  polls: boolean,
): Promise<ReconcileResult> {
  if (plan.finalizer === "add") await writer.addFinalizer(session);
  if (plan.finalizer === "remove") await writer.removeFinalizer(session);
  if (plan.status && (await writer.writeStatus(session, plan.status)) && plan.whenWritten) {
    logAll(log, plan.whenWritten.log);
    emitAll(writer, session, plan.whenWritten.events);
  }
  logAll(log, plan.log);
  emitAll(writer, session, plan.events);
  if (plan.requeueAfterMs === undefined || (plan.poll && !polls)) return undefined;
  return { requeueAfterMs: plan.requeueAfterMs, ...(plan.poll ? { lowPriority: true } : {}) };
}

function logAll(log: Logger, lines: readonly PlannedLog[]) {
  for (const line of lines) {
    if (line.fields) log.info(line.fields, line.message);
    else log.info(line.message);
  }
}

function emitAll(writer: AgentSessionWriter, session: AgentSession, events: readonly PlannedEvent[]) {
  for (const e of events) writer.event(session, e);
}
