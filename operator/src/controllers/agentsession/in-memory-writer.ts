/**
 * An {@link AgentSessionWriter} in memory, for table tests of the applier: it keeps every write in
 * order, skips a status write that changes nothing (as the real one does, and then says so), answers a
 * create with the pod as given plus a uid, and keeps a NetworkPolicy that holds unchanged.
 */
import { isDeepStrictEqual } from "node:util";
import type { V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import { SESSION_FINALIZER } from "../../api/well-known.ts";
import { agentNetworkPolicyHolds } from "./network-policy.ts";
import type { AgentSessionStatus, PlannedEvent } from "./plan.ts";
import type { AgentSessionWriter } from "./writer.ts";

/** One side effect, as the fake saw it. */
export type WriterCall =
  | { kind: "writeStatus"; status: AgentSessionStatus }
  | { kind: "addFinalizer" | "removeFinalizer" }
  | { kind: "event"; event: PlannedEvent }
  | { kind: "applyNetworkPolicy"; policy: V1NetworkPolicy }
  | { kind: "ensureServiceAccount"; namespace: string }
  | { kind: "createPod" | "deletePod"; pod: V1Pod };

/** The fake and what it recorded. */
export interface InMemoryAgentSessionWriter extends AgentSessionWriter {
  calls: WriterCall[];
  /** Only the kinds of the calls, in order. */
  kinds(): string[];
}

/**
 * Builds the fake. `existingPod` answers a create as the API server does on 409 (the pod already
 * under that name); otherwise the created pod is the one given, with uid `pod-uid`.
 */
export function inMemoryAgentSessionWriter(
  options: { existingPod?: V1Pod } = {},
): InMemoryAgentSessionWriter {
  const calls: WriterCall[] = [];
  return {
    calls,
    kinds: () => calls.map((c) => c.kind),
    async writeStatus(session, status) {
      if (isDeepStrictEqual(session.status ?? {}, status)) return false;
      calls.push({ kind: "writeStatus", status: structuredClone(status) });
      return true;
    },
    async addFinalizer(session) {
      calls.push({ kind: "addFinalizer" });
      const finalizers = [...(session.metadata.finalizers ?? []), SESSION_FINALIZER];
      return { ...session, metadata: { ...session.metadata, finalizers } };
    },
    async removeFinalizer() {
      calls.push({ kind: "removeFinalizer" });
    },
    event(_session, event) {
      calls.push({ kind: "event", event });
    },
    async keepNetworkPolicy(desired, cached) {
      if (agentNetworkPolicyHolds(cached, desired)) return "unchanged";
      calls.push({ kind: "applyNetworkPolicy", policy: structuredClone(desired) });
      return "applied";
    },
    async ensureServiceAccount(namespace) {
      calls.push({ kind: "ensureServiceAccount", namespace });
    },
    async createPod(pod) {
      calls.push({ kind: "createPod", pod: structuredClone(pod) });
      return options.existingPod ?? { ...pod, metadata: { ...pod.metadata, uid: "pod-uid" } };
    },
    async deletePod(pod) {
      calls.push({ kind: "deletePod", pod });
    },
  };
}
