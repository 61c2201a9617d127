/**
 * The shapes of an AgentSession's plan (plan.ts): what the planner is given, and what the applier
 * (reconciler.ts) does with each kind of plan.
 */
import type { V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import type { SessionEventReason, SessionReason } from "../../api/status/agentsession.ts";
import type { OperatorConfig } from "../../config.ts";
import type { SessionRecord } from "../../core/session-record.ts";

/** `status` of an AgentSession. */
export type AgentSessionStatus = NonNullable<AgentSession["status"]>;

/** How soon a running session is looked at again: its final answer lands in Postgres, not the API server. */
export const POLL_INTERVAL_MS = 2_000;
/** How soon a pod of an earlier session of the same name is looked at again (garbage collection). */
export const EARLIER_POD_WAIT_MS = 2_000;
/** How soon a deleted session looks again for its Pending Approvals to be cancelled. */
export const RELEASE_WAIT_MS = 1_000;

/**
 * What the AgentSession controller is given of the operator's configuration (built once by
 * controllers/manager.ts): the served namespaces, the model endpoints, the agent pod's image, resources
 * and retries, the session ceilings, and where agent pods reach the gateway (its URL, and for the agent
 * NetworkPolicy its port, namespace and off-cluster addresses). Each one's meaning is in config.ts.
 */
export const AGENT_SESSION_SETTINGS = [
  "watchNamespaces",
  "modelEndpoints",
  "agentImage",
  "agentResources",
  "agentPodRetries",
  "sessionCeilings",
  "gatewayUrl",
  "gatewayPort",
  "operatorNamespace",
  "offClusterGateways",
] as const satisfies readonly (keyof OperatorConfig)[];
export type AgentSessionSettings = Pick<OperatorConfig, (typeof AGENT_SESSION_SETTINGS)[number]>;

/** What the planner is given: the session as cached, what was read for it, the settings, the clock. */
export interface AgentSessionPlanInput {
  session: AgentSession;
  settings: AgentSessionSettings;
  now: Date;
  /** The session's Approvals, from the cache. */
  approvals: Approval[];
  /** The cached pod under the current run's name (status.attempt, resumes, continuations). */
  pod: V1Pod | undefined;
  /** The namespace's agent NetworkPolicy as the informer holds it. */
  agentPolicy?: V1NetworkPolicy | undefined;
  /** The session's transcript record; read when the plan says `readRecord`. */
  record?: SessionRecord | undefined;
}

/** An Event for people. */
export interface PlannedEvent {
  type: "Normal" | "Warning";
  /** A condition reason it reports, or a reason of its own. */
  reason: SessionReason | SessionEventReason;
  message: string;
}

/** One info log line the applier writes (without fields: the message alone). */
export interface PlannedLog {
  fields?: Record<string, unknown> | undefined;
  message: string;
}

/** Writes, in this order, and ends the pass. */
export interface FinalPlan {
  kind: "final";
  finalizer?: "add" | "remove" | undefined;
  /** Written only if it differs from the session's. */
  status?: AgentSessionStatus | undefined;
  /** Logged and emitted only when `status` was written. */
  whenWritten?: { log: PlannedLog[]; events: PlannedEvent[] } | undefined;
  log: PlannedLog[];
  events: PlannedEvent[];
  requeueAfterMs?: number | undefined;
  /**
   * The requeue is only the running session's poll ({@link POLL_INTERVAL_MS}): it waits behind every
   * event-driven pass in the work queue (kube/runtime/workqueue.ts), so thousands of live sessions'
   * polls do not hold up the passes that create pods and end sessions.
   */
  poll?: boolean | undefined;
}

/** Read the transcript record, then plan again with it. */
export interface ReadRecordPlan {
  kind: "readRecord";
  /** The status to write when the database is unavailable (the error then goes to the work queue). */
  unavailable: AgentSessionStatus;
  /** Whether the next plan takes the time again after the read ("again") or keeps this plan's. */
  clock: "same" | "again";
}

/** The agent pod's side of a pass; then {@link planCreatedPod} and {@link planStatus}. */
export interface RunPlan {
  kind: "run";
  /** Keep the namespace's agent NetworkPolicy as `desired`, against `cached` (undefined: ask the API server). */
  networkPolicy?: {
    desired: V1NetworkPolicy;
    cached: V1NetworkPolicy | undefined;
    whenApplied: PlannedLog[];
  };
  deletePod?: V1Pod | undefined;
  /** Ensure the agent ServiceAccount, then create {@link planAgentPod}'s pod. */
  createPod: boolean;
}

export type AgentSessionPlan = FinalPlan | ReadRecordPlan | RunPlan;

export function final(plan: Partial<Omit<FinalPlan, "kind">>): FinalPlan {
  return { kind: "final", log: [], events: [], ...plan };
}

export function event(
  type: PlannedEvent["type"],
  name: PlannedEvent["reason"],
  message: string,
): PlannedEvent {
  return { type, reason: name, message };
}
