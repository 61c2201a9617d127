import { describe, expect, it } from "vitest";
import {
  approvalSettings,
  decidePolicy,
  effectiveApproval,
  limitDecision,
  type PolicyInput,
  strictest,
} from "./policy.ts";

const alice = { user: "alice", groups: ["planners"] };

function input(
  overrides: Omit<Partial<PolicyInput>, "capability"> & {
    capability?: string;
    effect?: string;
    policy?: PolicyInput["capability"]["policy"];
  } = {},
): PolicyInput {
  return {
    capability: {
      id: overrides.capability ?? "aps.schedule.publish",
      effect: overrides.effect ?? "write",
      policy: overrides.policy ?? {},
    },
    subject: overrides.subject ?? alice,
    turn: overrides.turn ?? 0,
    limits: overrides.limits ?? { maxTurns: 5 },
    ...(overrides.floor ? { floor: overrides.floor } : {}),
  };
}

describe("effective approval", () => {
  it("defaults by effect: read and draft run, write needs approval", () => {
    expect(effectiveApproval("read", undefined)).toBe("Auto");
    expect(effectiveApproval("draft", undefined)).toBe("Auto");
    expect(effectiveApproval("write", undefined)).toBe("Required");
  });

  it("lets an explicit policy.approval win over the default", () => {
    expect(effectiveApproval("read", "Required")).toBe("Required");
    expect(effectiveApproval("write", "Auto")).toBe("Auto");
    expect(effectiveApproval("draft", "Forbidden")).toBe("Forbidden");
  });

  it("treats an unknown effect or mode as unknown", () => {
    expect(effectiveApproval("delete", undefined)).toBeUndefined();
    expect(effectiveApproval("read", "Maybe")).toBeUndefined();
  });
});

describe("policy decision", () => {
  it("allows a read, asks approval for a write", () => {
    expect(decidePolicy(input({ effect: "read" }))).toMatchObject({ verdict: "allow", reason: "Auto" });
    expect(decidePolicy(input({ effect: "write" }))).toMatchObject({
      verdict: "approval",
      reason: "ApprovalRequired",
    });
  });

  it("denies Forbidden, unknown effects and unknown modes", () => {
    expect(decidePolicy(input({ policy: { approval: "Forbidden" } }))).toMatchObject({
      verdict: "deny",
      reason: "Forbidden",
    });
    expect(decidePolicy(input({ effect: "destroy" }))).toMatchObject({
      verdict: "deny",
      reason: "UnknownEffect",
    });
    expect(decidePolicy(input({ policy: { approval: "Sometimes" } }))).toMatchObject({
      verdict: "deny",
      reason: "UnknownApprovalMode",
    });
  });

  it("lets the strictest rule win when an operator floor is stricter", () => {
    const decision = decidePolicy(
      input({ effect: "write", policy: { approval: "Auto" }, floor: { write: "Required" } }),
    );
    expect(decision).toMatchObject({ verdict: "approval" });
    expect(decidePolicy(input({ effect: "read", floor: { write: "Required" } }))).toMatchObject({
      verdict: "allow",
    });
  });

  it("denies a subject the capability is not granted to", () => {
    const policy = { subjects: { users: ["carol"], groups: ["approvers"] } };
    expect(decidePolicy(input({ effect: "read", policy }))).toMatchObject({
      verdict: "deny",
      reason: "NotASubject",
    });
    expect(
      decidePolicy(input({ effect: "read", policy, subject: { user: "bob", groups: ["approvers"] } })),
    ).toMatchObject({
      verdict: "allow",
    });
    expect(
      decidePolicy(input({ effect: "read", policy: { subjects: { users: [], groups: [] } } })),
    ).toMatchObject({
      verdict: "allow",
    });
  });

  it("tells a subject the capability is not granted to which field admits whom, and what to do", () => {
    const decision = decidePolicy(
      input({
        effect: "read",
        capability: "aps.schedule.read",
        policy: { subjects: { users: ["bob", "carol"], groups: ["ops"] } },
      }),
    );
    expect(decision.message).toBe(
      "alice may not use aps.schedule.read: its spec.policy.subjects admits only users bob, carol and " +
        "group ops; ask the platform team to add you, or use another capability",
    );
  });

  it("denies a call in turn maxTurns or later, and allows the last turn", () => {
    expect(decidePolicy(input({ effect: "read", turn: 4, limits: { maxTurns: 5 } }))).toMatchObject({
      verdict: "allow",
    });
    expect(decidePolicy(input({ effect: "read", turn: 5, limits: { maxTurns: 5 } }))).toMatchObject({
      verdict: "deny",
      reason: "TurnLimitReached",
      message: expect.stringMatching(/may use 5 turns and this call is in turn 6/),
    });
  });

  it("words a used-up tool-call or write limit as a denial with its reason", () => {
    expect(limitDecision("tool_call", 3)).toMatchObject({ verdict: "deny", reason: "ToolCallLimitReached" });
    expect(limitDecision("write", 1)).toMatchObject({
      verdict: "deny",
      reason: "WriteLimitReached",
      message: "this session has used the 1 write it is allowed",
    });
  });

  it("keeps the first decision among equally strict ones", () => {
    const a = { verdict: "deny" as const, reason: "Forbidden" as const, message: "a" };
    const b = { verdict: "deny" as const, reason: "NotASubject" as const, message: "b" };
    expect(strictest([a, b])).toBe(a);
    expect(() => strictest([])).toThrow(RangeError);
  });
});

describe("approval settings", () => {
  it("defaults approvers to the requester, one approval, self-approval allowed", () => {
    expect(approvalSettings({}, alice, 3600)).toEqual({
      approvers: { users: ["alice"], groups: [] },
      requiredApprovals: 1,
      allowSelfApproval: true,
      ttlSeconds: 3600,
    });
  });

  it("adds the requester to the policy's approvers while self-approval is allowed", () => {
    const policy = { approvers: { users: ["carol"], groups: ["approvers"] } };
    expect(approvalSettings(policy, alice, 3600).approvers).toEqual({
      users: ["alice", "carol"],
      groups: ["approvers"],
    });
  });

  it("uses the policy's values when given, without the requester when self-approval is off", () => {
    const policy = {
      approvers: { users: [], groups: ["approvers"] },
      requiredApprovals: 2,
      allowSelfApproval: false,
      ttlSeconds: 600,
    };
    expect(approvalSettings(policy, alice, 3600)).toEqual({
      approvers: { users: [], groups: ["approvers"] },
      requiredApprovals: 2,
      allowSelfApproval: false,
      ttlSeconds: 600,
    });
  });
});
