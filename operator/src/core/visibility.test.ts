import { describe, expect, it } from "vitest";
import { testCapability } from "./in-memory-ports.ts";
import { decideAccess } from "./policy.ts";
import type { PrincipalSet } from "./ports.ts";
import { isOffered, offeredCapabilities } from "./visibility.ts";

const alice = { user: "alice", groups: ["planners"] };

/** One row: a capability's `spec.policy.subjects` and whether alice is offered it. */
const SUBJECT_TABLE: Array<{ rule: string; subjects: PrincipalSet | undefined; offered: boolean }> = [
  { rule: "no subjects rule", subjects: undefined, offered: true },
  { rule: "an empty subjects rule", subjects: { users: [], groups: [] }, offered: true },
  { rule: "a rule naming alice", subjects: { users: ["alice"], groups: [] }, offered: true },
  { rule: "a rule naming one of her groups", subjects: { users: [], groups: ["planners"] }, offered: true },
  { rule: "a rule naming only bob", subjects: { users: ["bob"], groups: [] }, offered: false },
  { rule: "a rule naming only other groups", subjects: { users: [], groups: ["approvers"] }, offered: false },
  {
    rule: "a rule naming bob and other groups",
    subjects: { users: ["bob"], groups: ["ops"] },
    offered: false,
  },
];

describe("the tools a session is offered", () => {
  it.each(SUBJECT_TABLE)("with $rule, offers the tool to alice: $offered", ({ subjects, offered }) => {
    const capability = testCapability({ policy: subjects ? { subjects } : {} });
    expect(isOffered(capability, alice)).toBe(offered);
  });

  it.each(SUBJECT_TABLE)(
    "with $rule, denies alice's call exactly when it hides the tool",
    ({ subjects, offered }) => {
      const capability = testCapability({ policy: subjects ? { subjects } : {} });
      const decision = decideAccess({ capability, subject: alice });
      expect(decision.reason === "NotASubject").toBe(!offered);
    },
  );

  it("leaves out a capability that is not Ready or is disabled", () => {
    expect(isOffered(testCapability({ ready: false }), alice)).toBe(false);
    expect(isOffered(testCapability({ disabled: true }), alice)).toBe(false);
  });

  it("keeps the candidates' order and drops only those alice may not use", () => {
    const read = testCapability({ id: "aps.schedule.read" });
    const reserved = testCapability({
      id: "aps.schedule.publish",
      policy: { subjects: { users: ["bob"], groups: [] } },
    });
    const draft = testCapability({ id: "aps.schedule.draft" });
    expect(offeredCapabilities([read, reserved, draft], alice).map((c) => c.id)).toEqual([
      "aps.schedule.read",
      "aps.schedule.draft",
    ]);
  });
});
