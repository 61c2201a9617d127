import { describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import { ApprovalReason } from "../../api/status/approval.ts";
import type { ExecutionRecord } from "../../core/ports.ts";
import { needsResolution, planResolution } from "./resolution.ts";

const carol = { resolver: "carol", outcome: "Succeeded" as const, reason: "APS shows it published" };

function approval(
  overrides: { phase?: string; resolutions?: (typeof carol)[]; auto?: boolean } = {},
): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name: "apr-1", namespace: "plant-a", uid: "u1", generation: 2 },
    spec: {
      executionId: "e1",
      decisions: [],
      resolutions: overrides.resolutions ?? [],
      ...(overrides.auto ? { autoExecution: true } : {}),
    },
    ...(overrides.phase ? { status: { phase: overrides.phase } } : {}),
  } as unknown as Approval;
}

function row(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    id: "e1",
    state: "unknown",
    message: "no definite answer from the provider",
    createdAtMicros: 1_700_000_000_000_000,
    updatedAtMicros: 1_700_000_001_000_000,
    neverSent: false,
    ...overrides,
  } as ExecutionRecord;
}

const resolvedRow = row({
  state: "succeeded",
  message: "resolved by carol: APS shows it published",
  resolution: { resolver: carol.resolver, reason: carol.reason },
});

describe("planResolution", () => {
  it("keeps an unresolved Approval Unknown, with the row's message for a person", () => {
    const plan = planResolution(approval({ phase: "Unknown" }), row());
    expect(plan.resolve).toBeUndefined();
    expect(plan.status.phase).toBe("Unknown");
    expect(plan.status.execution).toMatchObject({ id: "e1", state: "unknown" });
    expect(plan.status.conditions?.[0]).toMatchObject({
      type: "Executed",
      reason: "Unknown",
      message:
        'no definite answer from the provider. Check the business system, then: kubectl gatehouse resolve apr-1 -n plant-a --succeeded|--failed --reason "…"',
    });
  });

  it("drops the unknown_outcome error kind once the outcome is settled as a success", () => {
    const plan = planResolution(approval({ phase: "Unknown", resolutions: [carol] }), {
      ...resolvedRow,
      errorKind: "unknown_outcome",
    } as ExecutionRecord);
    expect(plan.status.execution).toMatchObject({ state: "succeeded" });
    expect(plan.status.execution).not.toHaveProperty("errorKind");
  });

  it("marks an Auto execution's new record Unknown from its row", () => {
    const fresh = approval({ auto: true });
    expect(needsResolution(fresh)).toBe(true);
    expect(planResolution(fresh, row()).status.phase).toBe("Unknown");
  });

  it("resolves a resolution the row does not hold yet", () => {
    const plan = planResolution(approval({ phase: "Unknown", resolutions: [carol] }), row());
    expect(plan.resolve).toEqual(carol);
  });

  it("settles the phase as the person said once the row holds the resolution", () => {
    const plan = planResolution(approval({ phase: "Unknown", resolutions: [carol] }), resolvedRow);
    expect(plan.status.phase).toBe("Succeeded");
    expect(plan.status.conditions?.find((c) => c.type === "Executed")).toMatchObject({
      reason: ApprovalReason.ResolvedByPerson,
      message: "resolved by carol as Succeeded: APS shows it published",
    });
    expect(plan.status.execution?.resultSummary).toBe("resolved by carol: APS shows it published");
  });

  it("asks Core again for a resolution the row holds but the status does not show (its audit may be missing)", () => {
    expect(planResolution(approval({ phase: "Unknown", resolutions: [carol] }), resolvedRow).resolve).toEqual(
      carol,
    );
  });

  it("asks nothing more once the status shows the resolution", () => {
    const settled = planResolution(approval({ phase: "Unknown", resolutions: [carol] }), resolvedRow).status;
    const again = planResolution({ ...approval({ resolutions: [carol] }), status: settled }, resolvedRow);
    expect(again.resolve).toBeUndefined();
    expect(again.status).toEqual(settled);
  });

  it("follows a receipt that settled the row first, without a resolution", () => {
    const plan = planResolution(
      approval({ phase: "Unknown", resolutions: [carol] }),
      row({ state: "failed", errorKind: "forbidden" }),
    );
    expect(plan.resolve).toBeUndefined();
    expect(plan.status.phase).toBe("Failed");
    // The provider settled what was unknown: the agent, told "unknown" before, is told once more.
    expect(plan.status.conditions?.find((c) => c.type === "Executed")?.reason).toBe("OutcomeSettled");
  });

  it("leaves a Pending Approval of a call that needed approval to the decision path", () => {
    expect(needsResolution(approval())).toBe(false);
  });
});
