import { describe, expect, it } from "vitest";
import { ConfigError, configFromEnvironment } from "./config.ts";
import { defaultSessionCeilings } from "./core/limits.ts";

describe("operator configuration", () => {
  it("starts from the defaults: default ceilings, no approval floor, no failpoints", () => {
    const config = configFromEnvironment({});
    expect(config.sessionCeilings).toEqual(defaultSessionCeilings);
    expect(config.execution).toEqual({ providerDeadlineMs: 30_000, leaseGraceMs: 30_000 });
    expect(config.failpoints).toEqual([]);
  });

  it("reads ceilings, the approval floor, deadlines and failpoints", () => {
    const config = configFromEnvironment({
      SESSION_CEILINGS: '{"maxWrites": 2, "timeoutSeconds": 600}',
      APPROVAL_FLOOR: '{"write": "Required"}',
      PROVIDER_DEADLINE_MS: "3000",
      EXECUTION_LEASE_GRACE_MS: "2000",
      GATEHOUSE_FAILPOINTS: "after-claim, after-provider-call",
    });
    expect(config.sessionCeilings).toEqual({ ...defaultSessionCeilings, maxWrites: 2, timeoutSeconds: 600 });
    expect(config.execution).toEqual({
      providerDeadlineMs: 3000,
      leaseGraceMs: 2000,
      approvalFloor: { write: "Required" },
    });
    expect(config.failpoints).toEqual(["after-claim", "after-provider-call"]);
  });

  it.each([
    ["SESSION_CEILINGS", "{nope"],
    ["SESSION_CEILINGS", '{"maxWritez": 2}'],
    ["APPROVAL_FLOOR", '{"write": "Sometimes"}'],
    ["GATEHOUSE_FAILPOINTS", "before-lunch"],
    ["PROVIDER_DEADLINE_MS", "soon"],
  ])("refuses a bad %s, naming it", (variable, value) => {
    expect(() => configFromEnvironment({ [variable]: value })).toThrow(ConfigError);
    expect(() => configFromEnvironment({ [variable]: value })).toThrow(variable);
  });
});
