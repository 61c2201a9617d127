/**
 * Core.invoke's refusals and the calls it keeps apart, on Core's in-memory ports (DESIGN §4 steps 2–6):
 * malformed arguments, call ids the model reuses, a rejection that stays final, a capability whose
 * spec.policy.subjects leaves the subject out, and a capability the catalog reports not Ready
 * (DuplicateId). Each refusal is answered to the model, audited, and nothing is approved, reserved or
 * sent. No Kubernetes behaviour is involved; what only a cluster shows (the pod's token, admission,
 * conditions written on objects, the caches) is in `test/e2e/invoke.test.ts`.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import { sha256Hex } from "./canonical.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  RULES_ENFORCED,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { executeApproved, invoke } from "./invoke.ts";
import type { ApprovalView } from "./ports.ts";
import { offeredCapabilities } from "./visibility.ts";

const session = TEST_SESSION;

/** Two writes (approval Required by default), a read (Auto) and a read only bob may use. */
const place = testCapability({
  id: "aps.order.place",
  effect: "write",
  inputSchema: { type: "object", properties: { orderId: { type: "string" } } },
});
const publish = testCapability({
  id: "aps.plan.publish",
  effect: "write",
  inputSchema: {
    type: "object",
    properties: { planId: { type: "string" }, version: { type: "integer" } },
    required: ["planId", "version"],
  },
});
const read = testCapability({ id: "aps.stock.read", effect: "read" });
const reserved = testCapability({
  id: "aps.stock.audit",
  effect: "read",
  policy: { subjects: { users: ["bob"], groups: [] } },
});

function world(): InMemoryWorld {
  const w = createInMemoryWorld();
  w.capabilities.push(place, publish, read, reserved);
  return w;
}

function call(turn: number, position: number, toolName: string, args: string, callId = `call_${position}`) {
  return { turn, position, callId, tool: toolName, arguments: args } satisfies InvokeCall;
}

/** Nothing was approved, reserved, claimed or sent. */
function expectNothingRan(w: InMemoryWorld): void {
  expect(w.approvals.size).toBe(0);
  expect(w.reservations).toEqual([]);
  expect(w.executions.size).toBe(0);
  expect(w.providerCalls).toEqual([]);
}

describe("malformed arguments", () => {
  // The publish requires planId and version; each text below is refused before its schema is asked.
  const cases: Array<{ label: string; raw: string; problem: string }> = [
    { label: "a cut-off object", raw: '{"planId":"P-7","shift": 1', problem: "truncated" },
    { label: '"" for a capability that requires fields', raw: "", problem: "empty" },
    { label: "null", raw: "null", problem: "not_object" },
    { label: "an array", raw: "[1,2]", problem: "not_object" },
    {
      label: "two concatenated objects",
      raw: '{"planId":"P-7","version":1}{"planId":"P-7","version":1}',
      problem: "trailing_content",
    },
    { label: "duplicate keys", raw: '{"planId":"P-7","version":1,"version":2}', problem: "duplicate_key" },
    { label: "an escaped lone surrogate", raw: '{"a":"\\ud800"}', problem: "lone_surrogate" },
    { label: "a raw lone surrogate", raw: '{"a":"\ud800"}', problem: "lone_surrogate" },
    {
      label: "an integer beyond 2^53",
      raw: '{"planId":"P-7","version":9007199254740993}',
      problem: "unsafe_integer",
    },
  ];

  it.each(cases)(
    "answers $label with an invalid_arguments result, audits it, and approves and runs nothing",
    async ({ raw, problem }) => {
      const w = world();
      const { answer, decision } = await invoke(w.deps, session, call(0, 0, "aps_plan_publish", raw));
      expect(decision).toBe("invalid_arguments");
      expect(answer).toMatchObject({ status: "invalid_arguments", errorKind: "invalid_arguments" });
      expect(answer.content).toMatch(/^Invalid arguments: /);
      expect(w.audit.map((e) => e.kind)).toEqual([AuditKind.invalidArguments]);
      expect(auditPayloads(w, AuditKind.invalidArguments)).toEqual([
        expect.objectContaining({ capability: "aps.plan.publish", problem, rawDigest: sha256Hex(raw) }),
      ]);
      expectNothingRan(w);
    },
  );

  it('counts "" as {} for a capability that requires no field, and runs it once', async () => {
    const w = world();
    const { answer } = await invoke(w.deps, session, call(0, 0, "aps_stock_read", ""));
    expect(answer).toMatchObject({ status: "succeeded" });
    expect(auditPayloads(w, AuditKind.invalidArguments)).toEqual([]);
    expect([...w.executions.values()].map((e) => e.argumentsCanonical)).toEqual(["{}"]);
    expect(w.providerCalls.map((c) => [c.request.capability, c.request.arguments])).toEqual([
      ["aps.stock.read", {}],
    ]);
  });
});

describe("call ids the model reuses", () => {
  it.each([
    { where: "in one turn", first: [0, 0], second: [0, 1] },
    { where: "in two turns", first: [0, 0], second: [1, 0] },
  ])(
    "gives two write calls with callId call_0 $where two Approvals, and approving one runs only that one",
    async ({ first, second }) => {
      const w = world();
      const a = await invoke(
        w.deps,
        session,
        call(first[0]!, first[1]!, "aps_order_place", '{"orderId":"A-1"}', "call_0"),
      );
      const b = await invoke(
        w.deps,
        session,
        call(second[0]!, second[1]!, "aps_order_place", '{"orderId":"B-1"}', "call_0"),
      );
      expect(a.answer).toMatchObject({ status: "pending_approval" });
      expect(b.answer).toMatchObject({ status: "pending_approval" });
      const nameA = a.answer.approval?.name ?? "";
      const nameB = b.answer.approval?.name ?? "";
      expect(nameA).not.toBe(nameB);
      expect(a.answer.executionId).not.toBe(b.answer.executionId);
      expect([...w.approvals.values()].map((x) => x.request.name).sort()).toEqual([nameA, nameB].sort());
      expect(auditPayloads(w, AuditKind.approvalRequested).map((p) => p.approval)).toEqual([nameA, nameB]);

      const stored = w.approvals.get(`${session.namespace}/${nameA}`)!;
      const approved: ApprovalView = {
        request: stored.request,
        decisions: [{ approver: "alice", verdict: "Approve" }],
        phase: "Approved",
      };
      const result = await executeApproved(w.deps, { approval: approved, session, rules: RULES_ENFORCED });
      expect(result).toMatchObject({ kind: "executed", execution: { state: "succeeded" } });
      expect(w.providerCalls.map((c) => [c.request.executionId, c.request.arguments])).toEqual([
        [a.answer.executionId, { orderId: "A-1" }],
      ]);
      expect([...w.executions.keys()]).toEqual([a.answer.executionId]);
      expect(w.approvals.get(`${session.namespace}/${nameB}`)?.phase).toBe("Pending");
    },
  );
});

describe("a rejection", () => {
  it("is final: the identical call later in the turn and in a later turn is refused naming the rejected Approval, with no new Approval; another capability still gets its own", async () => {
    const w = world();
    const ORDER = '{"orderId":"R-1"}';
    const first = await invoke(w.deps, session, call(0, 0, "aps_order_place", ORDER));
    expect(first.answer).toMatchObject({ status: "pending_approval" });
    const rejected = first.answer.approval?.name ?? "";
    // As the approval controller records alice's rejection on the object.
    const stored = w.approvals.get(`${session.namespace}/${rejected}`)!;
    stored.decisions = [{ approver: "alice", verdict: "Reject" }];
    stored.phase = "Rejected";
    const reservedBefore = structuredClone(w.reservations);

    for (const again of [call(0, 1, "aps_order_place", ORDER), call(1, 0, "aps_order_place", ORDER)]) {
      const { answer, decision } = await invoke(w.deps, session, again);
      expect(decision).toBe("denied");
      expect(answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
      expect(answer.content).toContain(`Approval ${rejected}`);
    }
    expect([...w.approvals.keys()]).toEqual([`${session.namespace}/${rejected}`]);
    expect(auditPayloads(w, AuditKind.denied)).toEqual([
      expect.objectContaining({ reason: "PreviouslyRejected", rejectedApproval: rejected }),
      expect.objectContaining({ reason: "PreviouslyRejected", rejectedApproval: rejected }),
    ]);
    expect(w.reservations).toEqual(reservedBefore);

    const other = await invoke(
      w.deps,
      session,
      call(1, 1, "aps_plan_publish", '{"planId":"P-1","version":1}'),
    );
    expect(other.answer).toMatchObject({ status: "pending_approval" });
    expect([...w.approvals.values()].map((a) => a.request.name).sort()).toEqual(
      [rejected, other.answer.approval?.name ?? ""].sort(),
    );
    expect(w.executions.size).toBe(0);
    expect(w.providerCalls).toEqual([]);
  });
});

describe("a capability whose spec.policy.subjects leaves alice out", () => {
  it("is not among the tools alice's session is offered, and her call of it is refused naming that field", async () => {
    const w = world();
    const offered = offeredCapabilities(w.capabilities, session.subject).map((c) => c.toolName);
    expect(offered).toContain("aps_stock_read");
    expect(offered).not.toContain("aps_stock_audit");

    const { answer, decision } = await invoke(w.deps, session, call(0, 0, "aps_stock_audit", "{}"));
    expect(decision).toBe("denied");
    expect(answer).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(answer.content).toContain(
      "alice may not use aps.stock.audit: its spec.policy.subjects admits only user bob; ask the platform team to add you",
    );
    expect(auditPayloads(w, AuditKind.denied).map((p) => p.reason)).toEqual(["NotASubject"]);
    expectNothingRan(w);
  });
});

describe("a capability the catalog reports not Ready", () => {
  it("refuses the call naming the reason (DuplicateId), and runs it once the capability is Ready again", async () => {
    const w = world();
    // What the catalog makes of two Capabilities of one tool name (kube/catalog.ts): neither is Ready.
    w.capabilities[2] = { ...read, ready: false, notReadyReason: "DuplicateId" };
    const { answer, decision } = await invoke(w.deps, session, call(0, 0, "aps_stock_read", "{}"));
    expect(decision).toBe("denied");
    expect(answer).toMatchObject({ status: "denied", errorKind: "unavailable" });
    expect(answer.content).toContain("(DuplicateId)");
    expect(auditPayloads(w, AuditKind.denied).map((p) => p.reason)).toEqual(["DuplicateId"]);
    expectNothingRan(w);

    w.capabilities[2] = read;
    const again = await invoke(w.deps, session, call(0, 1, "aps_stock_read", "{}"));
    expect(again.answer).toMatchObject({ status: "succeeded" });
    expect(w.providerCalls).toHaveLength(1);
  });
});
