/**
 * What the AgentSession reconciler's applier does to the world, as a small port (a pure planner, a
 * thin applier over this writer): the real one over the API server ({@link kubeAgentSessionWriter});
 * an in-memory one for tests (in-memory-writer.ts).
 */
import type { V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import { AGENT_SESSION, type AgentSession } from "../../api/kinds.ts";
import { AGENT_SERVICE_ACCOUNT, MANAGED_BY, SESSION_FINALIZER } from "../../api/well-known.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { isConflict, isNotFound } from "../../kube/runtime/client.ts";
import type { EventRecorder } from "../../kube/runtime/events.ts";
import { addFinalizerWritten, removeFinalizer } from "../../kube/runtime/finalizers.ts";
import { writeStatusIfChanged } from "../../kube/runtime/status.ts";
import { keepAgentNetworkPolicy } from "./network-policy.ts";
import type { AgentSessionStatus, PlannedEvent } from "./plan.ts";

/** The applier's side effects. Every method but `event` throws the API server's error; the work queue retries. */
export interface AgentSessionWriter {
  /**
   * Writes `status` unless it equals the session's, guarded by its resourceVersion (409 Conflict when
   * stale). Says whether it wrote.
   */
  writeStatus(session: AgentSession, status: AgentSessionStatus): Promise<boolean>;
  /** Adds the session finalizer; returns the session as written (as given when it had it already). */
  addFinalizer(session: AgentSession): Promise<AgentSession>;
  removeFinalizer(session: AgentSession): Promise<void>;
  /** Records an Event on the session (never throws). */
  event(session: AgentSession, event: PlannedEvent): void;
  /** keepAgentNetworkPolicy (network-policy.ts): nothing when `cached` holds `desired`, else a forced apply. */
  keepNetworkPolicy(
    desired: V1NetworkPolicy,
    cached: V1NetworkPolicy | undefined,
  ): Promise<"unchanged" | "applied">;
  /** Creates the namespace's agent ServiceAccount unless it exists. */
  ensureServiceAccount(namespace: string): Promise<void>;
  /** Creates `pod`; on 409 returns the existing pod of that name (the plan checks who controls it). */
  createPod(pod: V1Pod): Promise<V1Pod>;
  /** Deletes `pod`; gone already is fine. */
  deletePod(pod: V1Pod): Promise<void>;
}

/** What the real writer uses. */
export interface KubeAgentSessionWriterDeps {
  clients: KubeClients;
  events: EventRecorder;
}

/** The writer over the API server (status, finalizer, pods, ServiceAccount, NetworkPolicy, Events). */
export function kubeAgentSessionWriter(deps: KubeAgentSessionWriterDeps): AgentSessionWriter {
  const { clients, events } = deps;
  return {
    async writeStatus(session, status) {
      return (await writeStatusIfChanged(clients, AGENT_SESSION, session, status)) !== undefined;
    },
    async addFinalizer(session) {
      return (await addFinalizerWritten(clients, AGENT_SESSION, session, SESSION_FINALIZER)) ?? session;
    },
    async removeFinalizer(session) {
      await removeFinalizer(clients, AGENT_SESSION, session, SESSION_FINALIZER);
    },
    event(session, e) {
      if (e.type === "Warning") events.warning(session, e.reason, e.message);
      else events.normal(session, e.reason, e.message);
    },
    async keepNetworkPolicy(desired, cached) {
      return await keepAgentNetworkPolicy(clients, desired, cached);
    },
    async ensureServiceAccount(namespace) {
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
    },
    async createPod(pod) {
      const namespace = pod.metadata!.namespace!;
      try {
        return await clients.core.createNamespacedPod({ namespace, body: pod });
      } catch (error) {
        if (!isConflict(error)) throw error;
        return await clients.core.readNamespacedPod({ namespace, name: pod.metadata!.name! });
      }
    },
    async deletePod(pod) {
      try {
        await clients.core.deleteNamespacedPod({
          namespace: pod.metadata!.namespace!,
          name: pod.metadata!.name!,
        });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
}
