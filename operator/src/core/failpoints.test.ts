import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { FAILPOINTS, type Failpoint, parseFailpoints } from "./failpoints.ts";
import { createInMemoryWorld, RULES_ENFORCED, TEST_SESSION, testCapability } from "./in-memory-ports.ts";
import { executeApproved, invoke } from "./invoke.ts";

const DISPATCH: Failpoint[] = [
  "dispatch.before-claim",
  "dispatch.after-claim",
  "dispatch.after-started",
  "dispatch.before-provider-call",
  "dispatch.after-provider-call",
  "dispatch.after-receipt",
  "dispatch.after-finished",
];

function call(tool: string): InvokeCall {
  return { turn: 0, position: 0, callId: "call_0", tool, arguments: '{"planId":"P-7"}' };
}

/** An in-memory Core whose failpoints record the order they are reached in. */
function recordingWorld() {
  const world = createInMemoryWorld();
  world.capabilities.push(
    testCapability({ id: "aps.schedule.read", effect: "read" }),
    testCapability({ id: "aps.schedule.publish", effect: "write", idempotency: "key" }),
  );
  const reached: Failpoint[] = [];
  world.deps.failpoint = (point) => reached.push(point);
  return { world, reached };
}

describe("failpoint specs", () => {
  it("parses point=action entries, spaces allowed, empty meaning none", () => {
    expect(parseFailpoints("").size).toBe(0);
    expect(
      Object.fromEntries(parseFailpoints(" dispatch.after-started=exit , approval.after-audit=block")),
    ).toEqual({
      "dispatch.after-started": "exit",
      "approval.after-audit": "block",
    });
  });

  it("refuses an unknown point, naming every known one", () => {
    expect(() => parseFailpoints("dispatch.after-lunch=exit")).toThrow(
      /unknown failpoint "dispatch.after-lunch"/,
    );
    expect(() => parseFailpoints("dispatch.after-lunch=exit")).toThrow(Object.keys(FAILPOINTS).join(", "));
  });

  it.each(["dispatch.after-claim", "dispatch.after-claim=pause", "dispatch.after-claim=exit=block"])(
    "refuses %s: one action of exit or block",
    (spec) => {
      expect(() => parseFailpoints(spec)).toThrow(/needs one action, as dispatch.after-claim=exit\|block/);
    },
  );

  it("refuses a point armed twice", () => {
    expect(() => parseFailpoints("dispatch.after-claim=exit,dispatch.after-claim=block")).toThrow(
      /armed twice/,
    );
  });
});

describe("where Core reaches its failpoints", () => {
  it("an Auto call passes the decision, then every dispatch point, in order", async () => {
    const { world, reached } = recordingWorld();
    const { answer } = await invoke(world.deps, TEST_SESSION, call("aps_schedule_read"));
    expect(answer.status).toBe("succeeded");
    expect(reached).toEqual(["invoke.before-decision", "invoke.after-decision", ...DISPATCH]);
  });

  it("a Required write stops after creating its Approval; its dispatch passes every dispatch point", async () => {
    const { world, reached } = recordingWorld();
    const { answer } = await invoke(world.deps, TEST_SESSION, call("aps_schedule_publish"));
    expect(answer.status).toBe("pending_approval");
    expect(reached).toEqual([
      "invoke.before-decision",
      "invoke.after-decision",
      "invoke.before-approval-create",
      "invoke.after-approval-create",
    ]);
    reached.length = 0;
    const stored = [...world.approvals.values()][0]!;
    const result = await executeApproved(world.deps, {
      approval: {
        request: stored.request,
        decisions: [{ approver: "alice", verdict: "Approve" }],
        phase: "Approved",
      },
      session: TEST_SESSION,
      rules: RULES_ENFORCED,
    });
    expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
    expect(reached).toEqual(DISPATCH);
  });
});
