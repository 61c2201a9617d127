/**
 * AgentSession reconciler:
 *   session = cache.get(key)                    ; gone → owner references delete the pod
 *   deleting → once no Approval of it is Pending, remove the finalizer
 *   no finalizer → add it
 *   terminal → nothing to do, unless messages were appended to a Completed session → continue it
 *   record = its transcript record (Postgres)   ; unavailable → Progressing=False DatabaseUnavailable, retried soon
 *   pod of status.attempt failed, retries left   → after a back-off, record attempt+1 (next pass creates it)
 *   pod answered and more messages wait         → record continuations+1 (next pass creates its pod)
 *   keep the namespace's agent NetworkPolicy    ; applied before each pod; otherwise when the informer's copy drifted
 *   cancelled → delete the pod
 *   no pod → ensure the namespace's agent ServiceAccount
 *   pod = ensurePod(agentPodFor(session, attempt)) ; create-if-absent, deterministic name per attempt
 *   status = statusFrom(session, pod, approvals, transcript record, effective limits)
 *   writeStatusIfChanged(status)                ; first written limits a ceiling lowered → Event LimitLowered
 */
import { isDeepStrictEqual } from "node:util";
import { PatchStrategy, type V1NetworkPolicy, type V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { isTerminalSessionPhase } from "../../api/agentsession.ts";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { AGENT_SESSION } from "../../api/kinds.ts";
import {
  AGENT_NETWORK_POLICY,
  AGENT_SERVICE_ACCOUNT,
  COMPONENT_POD_LABELS,
  FIELD_MANAGER,
  MANAGED_BY,
  SESSION_FINALIZER,
} from "../../api/well-known.ts";
import type { OperatorConfig } from "../../config.ts";
import { endpointFor } from "../../config.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import type { Caches } from "../../kube/caches.ts";
import type { KubeClients } from "../../kube/client.ts";
import { isConflict, isNotFound } from "../../kube/client.ts";
import { metaTimeOf, setCondition } from "../../kube/conditions.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "../../kube/finalizers.ts";
import type { ObjectCache } from "../../kube/informer.ts";
import { limitsOf } from "../../kube/session-context.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import { isDatabaseUnavailable } from "../../store/unavailable.ts";
import { namespaceNotServedMessage, serves } from "../served-namespaces.ts";
import { agentPodFor, agentPodName } from "./pod.ts";
import { MAX_SIDECARS, SIDECAR_BASE_PORT, sidecarProvidersFor, sidecarsFor } from "./sidecars.ts";
import {
  allAnswered,
  databaseUnavailableStatus,
  isTerminal,
  limitLoweredEvent,
  modelEndpointNotFoundMessage,
  runAnswered,
  statusFrom,
} from "./status.ts";

/** Reads what Postgres holds about a session. */
export interface SessionRecords {
  recordOf(sessionUid: string): Promise<SessionRecord>;
}

export interface AgentSessionDeps {
  clients: KubeClients;
  caches: Caches;
  records: SessionRecords;
  config: OperatorConfig;
  events: EventRecorder;
  /** The agent NetworkPolicies (name AGENT_NETWORK_POLICY) of every namespace, as the API server holds them. */
  agentPolicies: ObjectCache<V1NetworkPolicy>;
  now: () => Date;
}

/** Approvals owned by a session, from the cache. */
export function approvalsOf(caches: Caches, session: AgentSession): Approval[] {
  return caches.approvals
    .list(session.metadata.namespace)
    .filter((a) => a.spec.sessionRef.uid === session.metadata.uid);
}

/** Reconciles one AgentSession. */
export async function reconcileAgentSession(
  deps: AgentSessionDeps,
  namespace: string,
  name: string,
  log: Logger,
): Promise<ReconcileResult> {
  const session = deps.caches.sessions.get(name, namespace);
  if (!session) return undefined;
  if (session.metadata.deletionTimestamp) return releaseSession(deps, session, log);
  if (!hasFinalizer(session, SESSION_FINALIZER)) {
    await addFinalizer(deps.clients, AGENT_SESSION, session, SESSION_FINALIZER);
    return { requeueAfterMs: 0 }; // the next pass works on the version that carries it
  }
  if (isTerminal(session)) return continueIfAppended(deps, session, log);
  const now = deps.now();

  /** Ends the session Failed with `reason` (for what no retry can fix). */
  const fail = async (reason: string, message: string) => {
    const conditions = setCondition(
      session.status?.conditions,
      { type: "Failed", status: "True", reason, message, observedGeneration: session.metadata.generation },
      now,
    );
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...session.status,
      phase: "Failed",
      conditions,
    });
    deps.events.warning(session, reason, message);
    return undefined;
  };

  // Outside the namespaces this controller serves it has no right to create pods: say so and wait, as
  // Pending, for the platform to add the namespace (a new configuration restarts the controller).
  const served = deps.config.watchNamespaces;
  if (!serves(served, namespace)) {
    const message = namespaceNotServedMessage("AgentSessions", namespace, served);
    const conditions = setCondition(
      session.status?.conditions,
      {
        type: "Progressing",
        status: "False",
        reason: "NamespaceNotServed",
        message,
        observedGeneration: session.metadata.generation,
      },
      now,
    );
    if (
      await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
        ...session.status,
        phase: session.status?.phase ?? "Pending",
        conditions,
      })
    ) {
      deps.events.warning(session, "NamespaceNotServed", message);
    }
    return undefined;
  }

  const endpoint = endpointFor(deps.config, session.spec.model.endpointRef);
  if (!endpoint) {
    return fail(
      "ModelEndpointNotFound",
      modelEndpointNotFoundMessage(session.spec.model.endpointRef, deps.config.modelEndpoints),
    );
  }
  if (endpoint.models.length > 0 && !endpoint.models.includes(session.spec.model.name)) {
    return fail(
      "ModelNotOffered",
      `Model endpoint ${endpoint.name} does not offer model ${session.spec.model.name}; it offers ${endpoint.models.join(", ")}.`,
    );
  }

  const attempt = session.status?.attempt ?? 1;
  const resumes = session.status?.resumes ?? 0;
  const continuations = session.status?.continuations ?? 0;
  let pod: V1Pod | undefined = deps.caches.pods.get(
    agentPodName(session, attempt, resumes, continuations),
    namespace,
  );
  // A pod under our deterministic name that this session does not control was made by someone else:
  // adopting it would let its token act as the session (DESIGN §7). Refuse it.
  if (pod && !controlledBy(pod, session)) {
    // A pod of an earlier session of the same name is on its way out (garbage collection): wait for it.
    if (leftOfEarlierSession(pod, session)) return { requeueAfterMs: 2_000 };
    return fail("PodNameTaken", foreignPodMessage(pod));
  }
  const record = await recordOrSayUnavailable(deps, session, now);
  const retry =
    pod && !session.spec.cancel
      ? retryDecision(pod, record, attempt, deps.config.agentPodRetries, now, runAnswered(session, record))
      : undefined;
  if (retry?.kind === "wait") return { requeueAfterMs: retry.afterMs };
  if (
    !session.spec.cancel &&
    pod &&
    resumeDue(pod, record, resumes, approvalsOf(deps.caches, session), runAnswered(session, record))
  ) {
    // Record the resumption before creating its pod: a crash in between re-creates the same name.
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...session.status,
      resumes: resumes + 1,
    });
    log.info({ releasedPod: pod.metadata?.name, resumes: resumes + 1 }, "approvals decided; resuming");
    deps.events.normal(
      session,
      "AgentResuming",
      `Every Approval the released pod ${pod.metadata?.name} waited for is decided; starting a new agent pod.`,
    );
    return { requeueAfterMs: 0 };
  }
  if (!session.spec.cancel && pod && continuationDue(pod, session, record)) {
    // Record the continuation before creating its pod: a crash in between re-creates the same name.
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...session.status,
      continuations: continuations + 1,
      runStartTime: metaTimeOf(now),
    });
    log.info({ answered: record.finalAnswers, continuations: continuations + 1 }, "continuing");
    deps.events.normal(session, "SessionContinued", continuedMessage(session, record));
    return { requeueAfterMs: 0 };
  }
  if (retry?.kind === "replace") {
    // Record the next attempt before creating its pod: a crash in between re-creates the same name.
    const failure = podFailureOf(pod!);
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...session.status,
      attempt: attempt + 1,
      podFailures: [...(session.status?.podFailures ?? []), failure],
    });
    log.info(
      { failedPod: failure.podName, reason: failure.reason, attempt: attempt + 1 },
      "agent pod failed; retrying",
    );
    deps.events.warning(
      session,
      "AgentPodFailed",
      `Agent pod ${failure.podName} failed (${failure.reason}, exit code ${failure.exitCode ?? "unknown"}); starting attempt ${attempt + 1}.`,
    );
    // Our own status write does not queue the session again (manager.ts), so ask for the next pass.
    return { requeueAfterMs: 0 };
  }
  if (!session.spec.cancel) {
    // Before a pod starts, checked against the API server itself (an apply); while it runs, the cache.
    const desired = agentNetworkPolicy(namespace, deps.config);
    const cached = pod ? deps.agentPolicies.get(AGENT_NETWORK_POLICY, namespace) : undefined;
    const wrote = await keepAgentNetworkPolicy(deps.clients, desired, cached);
    if (wrote === "applied" && cached) {
      log.info({ networkPolicy: AGENT_NETWORK_POLICY, wrote }, "agent NetworkPolicy had drifted; restored");
    }
  }
  if (session.spec.cancel) {
    if (pod) await deletePod(deps.clients, pod);
  } else if (!pod) {
    await ensureServiceAccount(deps.clients, namespace);
    const runStart = session.status?.runStartTime ?? session.status?.startTime;
    const started = runStart ? Date.parse(runStart) : now.getTime();
    const timeout = limitsOf(session, deps.config.sessionCeilings).timeoutSeconds;
    const desired = agentPodFor(
      session,
      attempt,
      {
        image: deps.config.agentImage,
        gatewayUrl: deps.config.gatewayUrl,
        remainingSeconds: timeout - (now.getTime() - started) / 1000,
        resources: deps.config.agentResources,
        sidecars: sidecarsFor(sidecarProvidersFor(deps.caches, session), deps.config.gatewayUrl),
      },
      resumes,
      continuations,
    );
    pod = await createPod(deps.clients, desired);
    if (!controlledBy(pod, session)) return fail("PodNameTaken", foreignPodMessage(pod));
    log.info({ pod: pod.metadata?.name, podUID: pod.metadata?.uid }, "agent pod created");
    deps.events.normal(session, "AgentPodCreated", `Created agent pod ${pod.metadata?.name}.`);
  }

  const missing = (session.spec.capabilities ?? []).filter(
    (name) => !deps.caches.capabilities.get(name, namespace),
  );
  const limits = limitsOf(session, deps.config.sessionCeilings);
  const status = statusFrom(session, pod, approvalsOf(deps.caches, session), record, now, missing, limits);
  // Judged against the status before this write: once the write records the limits, it is silent.
  const lowered = limitLoweredEvent(session, deps.config.sessionCeilings);
  if (await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, status)) {
    log.info({ phase: status.phase }, "session status written");
    if (lowered) deps.events.warning(session, lowered.reason, lowered.message);
    if (status.phase !== session.status?.phase && isTerminalSessionPhase(status.phase)) {
      const ended = status.conditions?.find((c) => c.type === "Progressing");
      const say = status.phase === "Failed" ? deps.events.warning : deps.events.normal;
      say(session, `Session${status.phase}`, ended?.message ?? `The session is ${status.phase}.`);
    }
  }
  // The final answer lands in Postgres, not the API server: poll for it while the pod runs.
  return isTerminalSessionPhase(status.phase) ? undefined : { requeueAfterMs: 2_000 };
}

/**
 * The session's record from Postgres. When the database is unavailable the session says so
 * (databaseUnavailableStatus) before the error goes on to the work queue, which retries it within
 * seconds (controller.ts): without it, a session created during an outage would have no status at all.
 */
async function recordOrSayUnavailable(
  deps: AgentSessionDeps,
  session: AgentSession,
  now: Date,
): Promise<SessionRecord> {
  try {
    return await deps.records.recordOf(session.metadata.uid);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, databaseUnavailableStatus(session, now));
    throw error;
  }
}

/**
 * A session being deleted: its Pending Approvals must be Cancelled first (the Approval reconciler does
 * that once it sees the deletion), then the finalizer goes and the API server deletes the session,
 * its pods and Approvals follow through their owner references.
 */
async function releaseSession(
  deps: AgentSessionDeps,
  session: AgentSession,
  log: Logger,
): Promise<ReconcileResult> {
  if (!hasFinalizer(session, SESSION_FINALIZER)) return undefined;
  const pending = approvalsOf(deps.caches, session).filter(
    (a) => (a.status?.phase ?? "Pending") === "Pending",
  );
  if (pending.length > 0) {
    log.info(
      { pending: pending.map((a) => a.metadata.name) },
      "session deleted; waiting for its approvals to be cancelled",
    );
    return { requeueAfterMs: 1_000 };
  }
  await removeFinalizer(deps.clients, AGENT_SESSION, session, SESSION_FINALIZER);
  log.info("session released");
  return undefined;
}

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
  if (pod.status?.phase !== "Failed" || pod.status.reason === "DeadlineExceeded") return undefined;
  // Exit code 2: the agent says its failure is final (a limit, a model refusal); a new pod would repeat it.
  if (pod.status.containerStatuses?.[0]?.state?.terminated?.exitCode === AGENT_EXIT_FINAL) return undefined;
  // A new pod would meet the same refusal of the model proxy: the token budget stays used up.
  if (answered || record.budgetExceeded !== undefined || attempt > retries) return undefined;
  const finished = pod.status.containerStatuses?.[0]?.state?.terminated?.finishedAt;
  const endedAt = finished ? new Date(finished).getTime() : now.getTime();
  const dueAt = endedAt + Math.min(RETRY_BASE_MS * 2 ** (attempt - 1), RETRY_MAX_MS);
  return dueAt <= now.getTime() ? { kind: "replace" } : { kind: "wait", afterMs: dueAt - now.getTime() };
}

function podFailureOf(pod: V1Pod): NonNullable<NonNullable<AgentSession["status"]>["podFailures"]>[number] {
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  const finishedAt = terminated?.finishedAt;
  return {
    podName: pod.metadata?.name ?? "",
    reason: (pod.status?.reason ?? terminated?.reason ?? "Error").slice(0, 128),
    ...(terminated?.exitCode !== undefined ? { exitCode: terminated.exitCode } : {}),
    ...(finishedAt ? { finishedAt: new Date(finishedAt).toISOString() } : {}),
  };
}

/** The agent's exit code for a final failure (agent-image/src/run-agent.ts EXIT_FINAL). */
const AGENT_EXIT_FINAL = 2;

/** Approval phases in which a released agent still has to wait: undecided, or decided and running. */
const UNSETTLED = new Set(["Pending", "Approved", "Executing"]);

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
  if (pod.status?.phase !== "Succeeded" || answered) return false;
  if (record.releases <= resumes) return false;
  return !approvals.some((a) => UNSETTLED.has(a.status?.phase ?? "Pending"));
}

/**
 * True when `pod` ended after its run posted the final answer and `spec.messages` holds messages the
 * agent has not answered (appended while it ran): a new pod continues the conversation with the next.
 */
export function continuationDue(pod: V1Pod, session: AgentSession, record: SessionRecord): boolean {
  return pod.status?.phase === "Succeeded" && runAnswered(session, record) && !allAnswered(session, record);
}

/** The Event message of a continuation. */
function continuedMessage(session: AgentSession, record: SessionRecord): string {
  const total = session.spec.messages.length;
  return `The agent answered ${record.finalAnswers} of ${total} messages; starting a new agent pod for message ${record.finalAnswers + 1}.`;
}

/**
 * A Completed session whose spec changed since it completed (metadata.generation past
 * status.observedGeneration): when messages were appended that the agent has not answered, it goes
 * back to Pending with continuations+1 and a new runStartTime, and the next pass starts the pod that
 * answers them (DESIGN §2: "appending starts a turn"). Otherwise, and for Failed and Cancelled
 * sessions, nothing changes.
 */
async function continueIfAppended(
  deps: AgentSessionDeps,
  session: AgentSession,
  log: Logger,
): Promise<ReconcileResult> {
  const status = session.status ?? {};
  const generation = session.metadata.generation;
  if (status.phase !== "Completed" || session.spec.cancel) return undefined;
  if (generation === undefined || (status.observedGeneration ?? 0) >= generation) return undefined;
  const record = await recordOrSayUnavailable(deps, session, deps.now());
  if (allAnswered(session, record)) {
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...status,
      observedGeneration: generation,
    });
    return undefined;
  }
  const now = deps.now();
  const message = continuedMessage(session, record);
  let conditions = setCondition(
    status.conditions,
    { type: "Complete", status: "False", reason: "MessageAppended", message, observedGeneration: generation },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: "Progressing",
      status: "True",
      reason: "MessageAppended",
      message,
      observedGeneration: generation,
    },
    now,
  );
  const { completionTime: _completed, ...open } = status;
  await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
    ...open,
    phase: "Pending",
    observedGeneration: generation,
    conditions,
    continuations: (status.continuations ?? 0) + 1,
    runStartTime: metaTimeOf(now),
  });
  log.info({ answered: record.finalAnswers, messages: session.spec.messages.length }, "continuing");
  deps.events.normal(session, "SessionContinued", message);
  // Our own status write does not queue the session again (manager.ts), so ask for the next pass.
  return { requeueAfterMs: 0 };
}

/**
 * True when `pod` is terminating, or is controlled by an AgentSession of `session`'s name with another
 * uid — a deleted earlier session whose pods the garbage collector is removing.
 */
function leftOfEarlierSession(pod: V1Pod, session: AgentSession): boolean {
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
function controlledBy(pod: V1Pod, session: AgentSession): boolean {
  return (
    pod.metadata?.ownerReferences?.some(
      (o) => o.controller === true && o.kind === "AgentSession" && o.uid === session.metadata.uid,
    ) ?? false
  );
}

function foreignPodMessage(pod: V1Pod): string {
  return `Pod ${pod.metadata?.name} already exists and is not controlled by this session; it was not adopted. Delete it and create the session again.`;
}

/** Creates `pod`; on 409 returns the existing pod of that name (the caller checks who controls it). */
async function createPod(clients: KubeClients, pod: V1Pod): Promise<V1Pod> {
  const namespace = pod.metadata!.namespace!;
  try {
    return await clients.core.createNamespacedPod({ namespace, body: pod });
  } catch (error) {
    if (!isConflict(error)) throw error;
    return await clients.core.readNamespacedPod({ namespace, name: pod.metadata!.name! });
  }
}

async function deletePod(clients: KubeClients, pod: V1Pod): Promise<void> {
  try {
    await clients.core.deleteNamespacedPod({
      namespace: pod.metadata!.namespace!,
      name: pod.metadata!.name!,
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Where agent pods find the gateway, as the agent NetworkPolicy names it. */
export type AgentPolicyGateway = Pick<
  OperatorConfig,
  "gatewayPort" | "operatorNamespace" | "offClusterGateways"
>;

/**
 * The namespace's agent NetworkPolicy (DESIGN §7): agent pods accept ingress only on the Sidecar
 * providers' ports, from the components that call providers — the gateway (invoke path) and the
 * controller (approved dispatch) — and may send only to the gateway's pods (namespace
 * `operatorNamespace`, the operator's POD_NAMESPACE; labels COMPONENT_POD_LABELS.gateway, the gateway
 * port), to each off-cluster gateway's address block on its port (OFF_CLUSTER_GATEWAYS; no selector
 * names a host) and to cluster DNS. Enforced only where the CNI enforces NetworkPolicy. Its spec is
 * Gatehouse's alone ({@link keepAgentNetworkPolicy}); labels and annotations a platform adds stay.
 */
export function agentNetworkPolicy(namespace: string, gateway: AgentPolicyGateway): V1NetworkPolicy {
  const { gatewayPort, operatorNamespace, offClusterGateways } = gateway;
  const inOperatorNamespace = { matchLabels: { "kubernetes.io/metadata.name": operatorNamespace } };
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: AGENT_NETWORK_POLICY, namespace, labels: { ...MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-agent" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        {
          _from: (["gateway", "controller"] as const).map((component) => ({
            namespaceSelector: inOperatorNamespace,
            podSelector: { matchLabels: { ...COMPONENT_POD_LABELS[component] } },
          })),
          ports: [
            { protocol: "TCP", port: SIDECAR_BASE_PORT, endPort: SIDECAR_BASE_PORT + MAX_SIDECARS - 1 },
          ],
        },
      ],
      egress: [
        {
          to: [
            {
              namespaceSelector: inOperatorNamespace,
              podSelector: { matchLabels: { ...COMPONENT_POD_LABELS.gateway } },
            },
          ],
          ports: [{ protocol: "TCP", port: gatewayPort }],
        },
        ...offClusterGateways.map(({ cidr, port }) => ({
          to: [{ ipBlock: { cidr } }],
          ports: [{ protocol: "TCP", port }],
        })),
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    },
  };
}

/**
 * `policy`'s spec as JSON on the wire: the informer holds raw JSON, while client-node's typed objects
 * name `from` `_from` and carry absent fields as undefined.
 */
function wireSpecOf(policy: V1NetworkPolicy): unknown {
  const spec = JSON.parse(JSON.stringify(policy.spec ?? {})) as { ingress?: Record<string, unknown>[] };
  if (spec.ingress) {
    spec.ingress = spec.ingress.map(({ _from, ...rule }) =>
      _from === undefined ? rule : { ...rule, from: _from },
    );
  }
  return spec;
}

/**
 * Whether `live` is the agent NetworkPolicy as Gatehouse writes it (`desired`): exactly its spec, and
 * Gatehouse's label. Anything else is drift, above all a rule added (NetworkPolicy rules only ever
 * allow more) or a podSelector label no agent pod carries (the policy would confine none) (pure).
 */
export function agentNetworkPolicyHolds(
  live: V1NetworkPolicy | undefined,
  desired: V1NetworkPolicy,
): boolean {
  if (!live || live.metadata?.deletionTimestamp) return false;
  const labels = live.metadata?.labels ?? {};
  return (
    Object.entries(MANAGED_BY).every(([key, value]) => labels[key] === value) &&
    isDeepStrictEqual(wireSpecOf(live), wireSpecOf(desired))
  );
}

/**
 * Keeps the namespace's agent NetworkPolicy as `desired` (DESIGN §7): nothing when `cached` (the
 * informer's copy; undefined to check the API server's) holds it; otherwise a forced server-side apply
 * (FIELD_MANAGER), which creates it or takes back its spec whole — every field of a NetworkPolicy spec
 * is atomic (podSelector, policyTypes, ingress, egress), so no other manager's part of it survives the
 * apply: an edited rule, an added rule or a narrowed podSelector are all undone. Should a field ever
 * outlive the apply (a spec field added by a later Kubernetes), the error says so and the reconcile is
 * retried. Says what it wrote.
 */
export async function keepAgentNetworkPolicy(
  clients: KubeClients,
  desired: V1NetworkPolicy,
  cached: V1NetworkPolicy | undefined,
): Promise<"unchanged" | "applied"> {
  if (agentNetworkPolicyHolds(cached, desired)) return "unchanged";
  const applied = await clients.objects.patch(
    desired,
    undefined,
    undefined,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  );
  if (!agentNetworkPolicyHolds(applied, desired)) {
    throw new Error(
      `NetworkPolicy ${desired.metadata?.namespace}/${AGENT_NETWORK_POLICY} still differs from the operator's after a forced apply: ${JSON.stringify(wireSpecOf(applied))}`,
    );
  }
  return "applied";
}

async function ensureServiceAccount(clients: KubeClients, namespace: string): Promise<void> {
  try {
    await clients.core.createNamespacedServiceAccount({
      namespace,
      body: {
        metadata: { name: AGENT_SERVICE_ACCOUNT, namespace, labels: { ...MANAGED_BY } },
        automountServiceAccountToken: false,
      },
    });
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
}
