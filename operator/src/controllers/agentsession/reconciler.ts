/**
 * AgentSession reconciler:
 *   session = cache.get(key)                    ; gone → owner references delete the pod
 *   terminal → nothing to do
 *   ensure the namespace's agent ServiceAccount
 *   cancelled → delete the pod
 *   pod = ensurePod(agentPodFor(session))        ; create-if-absent, deterministic name
 *   status = statusFrom(session, pod, approvals, transcript record)
 *   writeStatusIfChanged(status)
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { isTerminalSessionPhase } from "../../api/agentsession.ts";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { AGENT_SESSION } from "../../api/kinds.ts";
import { AGENT_SERVICE_ACCOUNT, MANAGED_BY } from "../../api/well-known.ts";
import type { OperatorConfig } from "../../config.ts";
import { endpointFor } from "../../config.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import type { Caches } from "../../kube/caches.ts";
import type { KubeClients } from "../../kube/client.ts";
import { isConflict, isNotFound } from "../../kube/client.ts";
import { setCondition } from "../../kube/conditions.ts";
import { writeStatusIfChanged } from "../../kube/status.ts";
import type { ReconcileResult } from "../../kube/workqueue.ts";
import { agentPodFor, agentPodName } from "./pod.ts";
import { isTerminal, statusFrom } from "./status.ts";

/** Reads what Postgres holds about a session. */
export interface SessionRecords {
  recordOf(sessionUid: string): Promise<SessionRecord>;
}

export interface AgentSessionDeps {
  clients: KubeClients;
  caches: Caches;
  records: SessionRecords;
  config: OperatorConfig;
  now: () => Date;
}

/** Default session timeout in seconds when spec.limits.timeoutSeconds is unset (the operator's ceiling comes later). */
export const DEFAULT_TIMEOUT_SECONDS = 3600;

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
  if (!session || session.metadata.deletionTimestamp || isTerminal(session)) return undefined;
  const now = deps.now();

  const endpoint = endpointFor(deps.config, session.spec.model.endpointRef);
  if (!endpoint) {
    const message = `No model endpoint ${session.spec.model.endpointRef ?? "(default)"} is configured in the operator.`;
    const conditions = setCondition(
      session.status?.conditions,
      {
        type: "Failed",
        status: "True",
        reason: "ModelEndpointNotFound",
        message,
        observedGeneration: session.metadata.generation,
      },
      now,
    );
    await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, {
      ...session.status,
      phase: "Failed",
      conditions,
    });
    return undefined;
  }

  let pod: V1Pod | undefined = deps.caches.pods.get(agentPodName(session), namespace);
  if (session.spec.cancel) {
    if (pod) await deletePod(deps.clients, pod);
  } else if (!pod) {
    await ensureServiceAccount(deps.clients, namespace);
    const started = session.status?.startTime ? Date.parse(session.status.startTime) : now.getTime();
    const timeout = session.spec.limits?.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const desired = agentPodFor(session, {
      image: deps.config.agentImage,
      gatewayUrl: deps.config.gatewayUrl,
      modelBaseUrl: endpoint.baseURL,
      remainingSeconds: timeout - (now.getTime() - started) / 1000,
    });
    pod = await createPod(deps.clients, desired);
    log.info({ pod: pod.metadata?.name, podUID: pod.metadata?.uid }, "agent pod created");
  }

  const record = await deps.records.recordOf(session.metadata.uid);
  const status = statusFrom(session, pod, approvalsOf(deps.caches, session), record, now);
  if (await writeStatusIfChanged(deps.clients, AGENT_SESSION, session, status)) {
    log.info({ phase: status.phase }, "session status written");
  }
  // The final answer lands in Postgres, not the API server: poll for it while the pod runs.
  return isTerminalSessionPhase(status.phase) ? undefined : { requeueAfterMs: 2_000 };
}

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
