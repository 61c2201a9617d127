import { describe, expect, it } from "vitest";
import type { Approval } from "../api/kinds.ts";
import { approvalPhaseMoved } from "./manager.ts";

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
