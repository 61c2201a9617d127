/**
 * The in-memory ApprovalPort of in-memory-ports.ts: Approvals owned by the session that created them,
 * their decisions and phase, as kube/approvals.ts reads them from the API server.
 */
import { ApprovalPhase } from "../api/status/approval.ts";
import type { InMemoryWorld, StoredApproval } from "./in-memory-world.ts";
import type { ApprovalHandle, ApprovalPort, ApprovalRequest } from "./ports.ts";

/** The Approvals of `world`. */
export function inMemoryApprovalPort(world: InMemoryWorld): ApprovalPort {
  const handle = (stored: StoredApproval, sessionUid: string, request?: ApprovalRequest): ApprovalHandle => ({
    name: stored.request.name,
    // As kube/approvals.ts reads it: an Auto record not yet marked is Unknown.
    phase:
      stored.phase === ApprovalPhase.Pending && stored.request.autoExecution
        ? ApprovalPhase.Unknown
        : stored.phase,
    ownedBySession: stored.ownerUid === sessionUid,
    sameSpec: request ? JSON.stringify(stored.request) === JSON.stringify(request) : true,
    identity: {
      executionId: stored.request.executionId,
      capabilityId: stored.request.capabilityId,
      argumentsDigest: stored.request.argumentsDigest,
      sessionUid: stored.request.sessionRef.uid,
    },
    decisions: structuredClone(stored.decisions),
    conditionMessage: stored.conflictMessage,
  });
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  const approvals: ApprovalPort = {
    async get(namespace, name, sessionUid) {
      const stored = world.approvals.get(key(namespace, name));
      return stored ? handle(stored, sessionUid) : undefined;
    },
    async createOrGet(request) {
      const k = key(request.namespace, request.name);
      let stored = world.approvals.get(k);
      if (!stored) {
        stored = {
          request: structuredClone(request),
          ownerUid: request.sessionRef.uid,
          decisions: [],
          phase: ApprovalPhase.Pending,
        };
        world.approvals.set(k, stored);
      }
      return handle(stored, request.sessionRef.uid, request);
    },
    async findRejected(query) {
      const match = [...world.approvals.values()].find(
        (a) =>
          a.request.namespace === query.namespace &&
          a.request.sessionRef.uid === query.sessionUid &&
          a.request.capability === query.capability &&
          a.request.argumentsDigest === query.argumentsDigest &&
          a.phase === ApprovalPhase.Rejected,
      );
      return match ? { name: match.request.name } : undefined;
    },
    async createOrGetRecord(request) {
      const k = key(request.namespace, request.name);
      const existing = world.approvals.get(k);
      if (existing) return { handle: handle(existing, request.sessionRef.uid, request), created: false };
      // Phase-less, as the API server creates it: the approval reconciler moves it to Unknown.
      const stored: StoredApproval = {
        request: structuredClone(request),
        ownerUid: request.sessionRef.uid,
        decisions: [],
        phase: ApprovalPhase.Pending,
      };
      world.approvals.set(k, stored);
      return { handle: handle(stored, request.sessionRef.uid, request), created: true };
    },
    async findByAction(query) {
      return [...world.approvals.values()]
        .filter(
          (a) =>
            a.request.namespace === query.namespace &&
            a.request.sessionRef.uid === query.sessionUid &&
            a.request.capability === query.capability &&
            a.request.argumentsDigest === query.argumentsDigest,
        )
        .map((a) => handle(a, query.sessionUid));
    },
  };
  return approvals;
}
