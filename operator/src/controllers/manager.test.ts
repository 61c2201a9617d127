import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import { staticCache } from "../kube/runtime/static-cache.ts";
import { approvalPhaseMoved, sessionNoticed } from "./manager.ts";

function approval(phase: string | undefined, decisions = 0): Approval {
  return {
    metadata: { name: "apr-1", namespace: "team", generation: 1 + decisions },
    spec: { decisions: Array.from({ length: decisions }, () => ({ approver: "alice", verdict: "Approve" })) },
    ...(phase ? { status: { phase } } : {}),
  } as unknown as Approval;
}

describe("which Approval events queue its session", () => {
  it("a created, deleted or resynced Approval does", () => {
    for (const event of ["add", "delete", "resync"] as const) {
      expect(approvalPhaseMoved(approval("Pending"), event, undefined)).toBe(true);
    }
  });

  it("an update that moves the phase does, a status-less Approval counting as Pending", () => {
    expect(approvalPhaseMoved(approval("Executing"), "update", approval("Pending"))).toBe(true);
    expect(approvalPhaseMoved(approval("Succeeded"), "update", approval("Executing"))).toBe(true);
    expect(approvalPhaseMoved(approval("Rejected"), "update", approval(undefined))).toBe(true);
  });

  it("an update within a phase does not: a decision appended, a status-less one written Pending", () => {
    expect(approvalPhaseMoved(approval("Pending", 1), "update", approval("Pending", 0))).toBe(false);
    expect(approvalPhaseMoved(approval("Pending"), "update", approval(undefined))).toBe(false);
  });
});

describe("which session a transcript notice queues", () => {
  const session = (namespace: string, uid: string, phase?: string, cancel = false) =>
    ({
      metadata: { name: `s-${uid}`, namespace, uid },
      spec: { cancel },
      ...(phase ? { status: { phase } } : {}),
    }) as unknown as AgentSession & KubernetesObject;
  const caches = {
    sessions: staticCache(
      [
        session("team-a", "u-running", "Running"),
        session("team-b", "u-new"),
        session("team-a", "u-done", "Completed"),
        session("team-b", "u-cancelled", "Running", true),
      ],
      GATEHOUSE_INDEXERS.sessions,
    ),
  } as never;

  it("a running or new session of that uid, in whichever namespace", () => {
    expect(sessionNoticed(caches, "u-running")?.metadata.name).toBe("s-u-running");
    expect(sessionNoticed(caches, "u-new")?.metadata.namespace).toBe("team-b");
  });

  it("none for a forged or stale uid, an ended session or a cancelled one", () => {
    for (const uid of ["no-such-uid", "", "team-a/u-running", "u-done", "u-cancelled"]) {
      expect(sessionNoticed(caches, uid), uid).toBeUndefined();
    }
  });
});
