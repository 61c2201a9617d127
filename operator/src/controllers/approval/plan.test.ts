/**
 * The approval reconciler without a cluster: planApproval and planDispatchOutcome over every phase
 * transition (tables), and the applier over the in-memory writer — with Core's executeApproved on the
 * in-memory ports where a pass dispatches — counting what one pass writes.
 */
import type { Logger } from "pino";
import { describe, expect, it } from "vitest";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { APPROVAL_FINALIZER } from "../../api/well-known.ts";
import { type ApprovalHistory, historyOf, readHistory } from "../../core/approval-lifecycle.ts";
import { AuditKind } from "../../core/audit.ts";
import type { ExecuteApprovedResult } from "../../core/execute-approved.ts";
import {
  createInMemoryWorld,
  RULES_ENFORCED,
  TEST_SESSION,
  testCapability,
} from "../../core/in-memory-ports.ts";
import { executeApproved, invoke } from "../../core/invoke.ts";
import { approvalSettings } from "../../core/policy.ts";
import type { AuditEntry, ChainedRecord, DecisionRulesVerdict, ExecutionRecord } from "../../core/ports.ts";
import { approvalSpecOf } from "../../kube/approvals.ts";
import { inMemoryApprovalWriter } from "./in-memory-writer.ts";
import {
  type ApprovalPlan,
  type ApprovalPlanInput,
  type ApprovalStatus,
  DISPATCH_RECHECK_MS,
  dispatchRefusedMessage,
  lateDecisionMessage,
  lateDecisionsOf,
  observationsFor,
  planApproval,
  planDatabaseUnavailable,
  planDispatchOutcome,
  RULES_RECHECK_MS,
} from "./plan.ts";
import { applyApproval } from "./reconciler.ts";

const CREATED = "2026-12-01T10:00:00Z";
const EXPIRES = "2026-12-01T11:00:00Z";
const BEFORE_EXPIRY = new Date("2026-12-01T10:10:00Z");
const AFTER_EXPIRY = new Date("2026-12-01T11:00:01Z");
const NOT_ENFORCED: DecisionRulesVerdict = {
  enforced: false,
  message: "binding gatehouse-approval-decide is missing",
};
const quiet = { info() {}, warn() {}, error() {} } as unknown as Logger;

type Decisions = Approval["spec"]["decisions"];

function approvalOf(
  options: {
    phase?: ApprovalStatus["phase"];
    decisions?: Decisions;
    observedDecisions?: number;
    finalizer?: boolean;
    deleting?: boolean;
    spec?: Partial<Approval["spec"]>;
  } = {},
): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: {
      name: "apr-1",
      namespace: "plant-a",
      uid: "apr-uid-1",
      generation: 1,
      resourceVersion: "7",
      creationTimestamp: CREATED,
      ...(options.finalizer === false ? {} : { finalizers: [APPROVAL_FINALIZER] }),
      ...(options.deleting ? { deletionTimestamp: "2026-12-01T10:20:00Z" } : {}),
    },
    spec: {
      executionId: "e".repeat(40),
      sessionRef: { name: "s1", uid: "uid-1" },
      capability: "aps-schedule-publish",
      capabilityId: "aps.schedule.publish",
      providerRef: { name: "aps", namespace: "plant-a" },
      arguments: '{"planId":"P-7"}',
      argumentsDigest: "d".repeat(64),
      schemaDigest: "a".repeat(64),
      requester: { user: "alice", groups: ["planners"] },
      approvers: { users: ["alice"], groups: ["approvers"] },
      requiredApprovals: 1,
      allowSelfApproval: true,
      expiresAt: EXPIRES,
      decisions: options.decisions ?? [],
      ...options.spec,
    },
    ...(options.phase
      ? {
          status: {
            phase: options.phase,
            ...(options.observedDecisions !== undefined
              ? { observedDecisions: options.observedDecisions }
              : {}),
          },
        }
      : {}),
  } as Approval;
}

function sessionOf(overrides: { cancel?: boolean; phase?: string; deleting?: boolean } = {}): AgentSession {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: {
      name: "s1",
      namespace: "plant-a",
      uid: "uid-1",
      ...(overrides.deleting ? { deletionTimestamp: "2026-12-01T10:20:00Z" } : {}),
    },
    spec: {
      subject: { user: "alice", groups: ["planners"] },
      messages: [{ text: "go" }],
      cancel: overrides.cancel,
    },
    status: { phase: overrides.phase ?? "AwaitingApproval" },
  } as unknown as AgentSession;
}

const EMPTY: ApprovalHistory = { decided: new Map() };

/** A history holding `kinds` as this Approval's records (payloads minimal). */
function historyWithKinds(...records: Array<Partial<ChainedRecord> & { kind: string }>): ApprovalHistory {
  return historyOf(
    records.map((r, i) => ({
      actor: "gatehouse",
      atMicros: 0,
      seq: i + 10,
      hash: String(i).padStart(64, "0"),
      ...r,
      payload: { approval: "plant-a/apr-1", ...r.payload },
    })),
    "plant-a/apr-1",
    "apr-uid-1",
  );
}

function inputOf(approval: Approval, extra: Partial<ApprovalPlanInput> = {}): ApprovalPlanInput {
  return {
    approval,
    session: sessionOf(),
    now: BEFORE_EXPIRY,
    rules: RULES_ENFORCED,
    history: EMPTY,
    ...extra,
  };
}

const kindsOf = (plan: { audit: AuditEntry[] }) => plan.audit.map((e) => e.kind);
const decidedOf = (plan: ApprovalPlan) => plan.status?.conditions?.find((c) => c.type === "Decided");

const execution = (state: ExecutionRecord["state"]): ExecutionRecord =>
  ({
    id: "e".repeat(40),
    state,
    createdAtMicros: 1_700_000_000_000_000,
    updatedAtMicros: 1_700_000_001_000_000,
    ...(state === "failed" ? { errorKind: "forbidden", message: "no right to publish" } : {}),
  }) as ExecutionRecord;

describe("planApproval: a Pending Approval", () => {
  const rows: Array<{
    name: string;
    input: ApprovalPlanInput;
    phase: string;
    reason: string;
    audit: string[];
    events?: string[];
    dispatch?: boolean;
    recordOutcome?: boolean;
  }> = [
    {
      name: "stays Pending while nobody decided (awaiting)",
      input: inputOf(approvalOf()),
      phase: "Pending",
      reason: "AwaitingDecision",
      audit: [],
    },
    {
      name: "stays Pending, recording a decision as never counting, while the rules are not enforced",
      input: inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Approve" }] }), {
        rules: NOT_ENFORCED,
      }),
      phase: "Pending",
      reason: "DecisionRulesNotEnforced",
      audit: [AuditKind.approvalDecided],
    },
    {
      name: "is approved and dispatched (Executing written before the call)",
      input: inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Approve" }] })),
      phase: "Executing",
      reason: "Approved",
      audit: [AuditKind.approvalDecided, AuditKind.approvalApproved],
      dispatch: true,
    },
    {
      name: "is rejected",
      input: inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Reject" }] })),
      phase: "Rejected",
      reason: "Rejected",
      audit: [AuditKind.approvalDecided, AuditKind.approvalRejected],
      events: ["Normal/Rejected"],
      recordOutcome: true,
    },
    {
      name: "expires when nobody decided in time",
      input: inputOf(approvalOf(), { now: AFTER_EXPIRY }),
      phase: "Expired",
      reason: "Expired",
      audit: [AuditKind.approvalExpired],
      events: ["Warning/Expired"],
      recordOutcome: true,
    },
    {
      name: "expires while the rules are not enforced (expiry needs no decision)",
      input: inputOf(approvalOf(), { now: AFTER_EXPIRY, rules: NOT_ENFORCED }),
      phase: "Expired",
      reason: "Expired",
      audit: [AuditKind.approvalExpired],
      events: ["Warning/Expired"],
      recordOutcome: true,
    },
    {
      name: "is cancelled when its session is gone, its decisions recorded first",
      input: inputOf(approvalOf({ decisions: [{ approver: "carol", verdict: "Approve" }] }), {
        session: undefined,
      }),
      phase: "Cancelled",
      reason: "SessionEnded",
      audit: [AuditKind.approvalDecided, AuditKind.approvalCancelled],
      events: ["Normal/Cancelled"],
    },
    {
      name: "is cancelled when its session was cancelled",
      input: inputOf(approvalOf(), { session: sessionOf({ cancel: true }) }),
      phase: "Cancelled",
      reason: "SessionEnded",
      audit: [AuditKind.approvalCancelled],
      events: ["Normal/Cancelled"],
    },
    {
      name: "is cancelled when its session ended",
      input: inputOf(approvalOf(), { session: sessionOf({ phase: "Completed" }) }),
      phase: "Cancelled",
      reason: "SessionEnded",
      audit: [AuditKind.approvalCancelled],
      events: ["Normal/Cancelled"],
    },
    {
      name: "is cancelled when its session is being deleted",
      input: inputOf(approvalOf(), { session: sessionOf({ deleting: true }) }),
      phase: "Cancelled",
      reason: "SessionEnded",
      audit: [AuditKind.approvalCancelled],
      events: ["Normal/Cancelled"],
    },
    {
      name: "fails, and never runs, when its requester is not its session's subject (Gatehouse never proposed it)",
      input: inputOf(
        approvalOf({
          decisions: [{ approver: "carol", verdict: "Approve" }],
          spec: { requester: { user: "bob", groups: ["planners"] } },
        }),
      ),
      phase: "Failed",
      reason: "RequesterMismatch",
      audit: [AuditKind.approvalDecided, AuditKind.approvalFailed],
      events: ["Warning/RequesterMismatch"],
    },
    {
      name: "follows an end the chain already holds (a crash before the status write), appending nothing",
      input: inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Reject" }] }), {
        history: historyWithKinds(
          {
            kind: AuditKind.approvalDecided,
            payload: { index: 0, approver: "alice", verdict: "Reject", counted: true, rulesEnforced: true },
          },
          {
            kind: AuditKind.approvalRejected,
            payload: { reason: "Rejected", message: "Rejected by alice." },
          },
        ),
      }),
      phase: "Rejected",
      reason: "Rejected",
      audit: [],
      events: ["Normal/Rejected"],
      recordOutcome: true,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = planApproval(row.input);
      expect(plan.status?.phase).toBe(row.phase);
      expect(decidedOf(plan)?.reason).toBe(row.reason);
      expect(kindsOf(plan)).toEqual(row.audit);
      expect(plan.auditWhen).toBe("beforeStatus");
      expect(plan.events.map((e) => `${e.type}/${e.reason}`)).toEqual(row.events ?? []);
      expect(plan.dispatch !== undefined).toBe(row.dispatch ?? false);
      expect(plan.recordOutcome).toBe(row.recordOutcome ?? false);
      expect(plan.finalizer).toBeUndefined();
      expect(plan.status?.observedDecisions).toBe(row.input.approval.spec.decisions.length);
    });
  }

  it("says how many approvals count, and looks again at expiry (enforced) or soon (not enforced)", () => {
    const awaiting = planApproval(inputOf(approvalOf()));
    expect(decidedOf(awaiting)?.message).toBe("0 of 1 approvals.");
    expect(awaiting.requeueAfterMs).toBe(Date.parse(EXPIRES) - BEFORE_EXPIRY.getTime());
    const held = planApproval(inputOf(approvalOf(), { rules: NOT_ENFORCED }));
    expect(held.requeueAfterMs).toBe(RULES_RECHECK_MS);
    expect(held.status?.conditions?.find((c) => c.type === "DecisionRulesEnforced")).toMatchObject({
      status: "False",
      reason: "DecisionRulesNotEnforced",
    });
  });

  it("observes the decision metric once, when it first leaves Pending for Approved, Rejected or Expired", () => {
    const approved = planApproval(
      inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Approve" }] })),
    );
    expect(approved.decided).toEqual({ outcome: "Approved", durationMs: 10 * 60_000 });
    expect(planApproval(inputOf(approvalOf())).decided).toBeUndefined();
    expect(planApproval(inputOf(approvalOf(), { session: undefined })).decided).toBeUndefined();
  });

  it("hands the dispatch the history it decided on, and ends with an approved record carrying the Approval uid", () => {
    const plan = planApproval(
      inputOf(approvalOf({ decisions: [{ approver: "alice", verdict: "Approve" }] })),
    );
    expect(plan.dispatch?.history).toBe(EMPTY);
    expect(plan.audit.every((e) => e.payload.approvalUid === "apr-uid-1")).toBe(true);
    expect(EMPTY.decided.size).toBe(0); // the planner does not touch what it was given
  });

  it("records nothing twice when planned again over the history its records made", () => {
    const approval = approvalOf({ decisions: [{ approver: "carol", verdict: "Approve" }] });
    const first = planApproval(inputOf(approval, { rules: NOT_ENFORCED }));
    const history = historyOf(
      first.audit.map((e, i) => ({ ...e, seq: i + 1, hash: String(i).padStart(64, "0") })),
      "plant-a/apr-1",
      "apr-uid-1",
    );
    const again = planApproval(inputOf(approval, { history }));
    expect(kindsOf(first)).toEqual([AuditKind.approvalDecided]);
    // Seen while not enforced, carol's decision never counts, even once the rules are enforced.
    expect(kindsOf(again)).toEqual([]);
    expect(again.status?.phase).toBe("Pending");
    expect(again.status?.ignoredDecisions?.[0]?.reason).toMatch(/did not enforce the decision rules/);
  });
});

describe("planApproval: a policy tightened while Pending", () => {
  /** The Capability's current settings for alice, from `policy` (core/policy.ts). */
  const current = (policy: Parameters<typeof approvalSettings>[0]) =>
    approvalSettings(policy, { user: "alice", groups: ["planners"] }, 3_600);
  const rows: Array<{
    name: string;
    decisions: Decisions;
    policy: Parameters<typeof approvalSettings>[0];
    phase: string;
    message?: string;
    ignored?: string;
    spec?: Partial<Approval["spec"]>;
  }> = [
    {
      name: "needs the larger number of approvals",
      decisions: [{ approver: "alice", verdict: "Approve" }],
      policy: { approvers: { users: [], groups: ["approvers"] }, requiredApprovals: 2 },
      phase: "Pending",
      message: "1 of 2 approvals (the Capability's policy now requires 2 approvals).",
    },
    {
      name: "does not count the requester's approval once self-approval is off",
      decisions: [{ approver: "alice", verdict: "Approve" }],
      policy: { approvers: { users: [], groups: ["approvers"] }, allowSelfApproval: false },
      phase: "Pending",
      message: "0 of 1 approvals (the Capability's policy no longer allows self-approval).",
      ignored: "self-approval is not allowed for this capability",
    },
    {
      name: "does not count an approver the policy no longer admits",
      decisions: [{ approver: "carol", verdict: "Approve" }],
      policy: { approvers: { users: ["dave"], groups: [] } },
      phase: "Pending",
      ignored: "carol is no longer an approver under the Capability's policy",
    },
    {
      name: "counts a group approver while the policy still admits every group of the spec",
      decisions: [{ approver: "carol", verdict: "Approve" }],
      policy: { approvers: { users: [], groups: ["approvers", "ops"] } },
      phase: "Executing",
    },
    {
      name: "keeps the spec's rules when the policy became looser",
      decisions: [{ approver: "mallory", verdict: "Approve" }],
      policy: { approvers: { users: ["mallory"], groups: ["approvers"] } },
      spec: { approvers: { users: ["alice"], groups: [] } },
      phase: "Pending",
      ignored: "mallory is not an approver",
    },
    {
      name: "still lets the requester reject",
      decisions: [{ approver: "alice", verdict: "Reject" }],
      policy: { approvers: { users: ["dave"], groups: [] }, allowSelfApproval: false, requiredApprovals: 3 },
      phase: "Rejected",
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const approval = approvalOf({ decisions: row.decisions, ...(row.spec ? { spec: row.spec } : {}) });
      const plan = planApproval(inputOf(approval, { policy: current(row.policy) }));
      expect(plan.status?.phase).toBe(row.phase);
      if (row.message) expect(decidedOf(plan)?.message).toBe(row.message);
      if (row.ignored) expect(plan.status?.ignoredDecisions?.map((i) => i.reason)).toEqual([row.ignored]);
    });
  }

  it("expires at the earlier of the spec's expiry and creation + the policy's ttl, saying so in the record", () => {
    const plan = planApproval(
      inputOf(approvalOf(), {
        policy: current({ approvers: { users: [], groups: ["approvers"] }, ttlSeconds: 300 }),
      }),
    );
    expect(plan.status?.phase).toBe("Expired");
    expect(decidedOf(plan)?.message).toBe("No decision before 2026-12-01T10:05:00Z.");
    expect(plan.audit.at(-1)?.payload.policyTightened).toEqual([
      "the Capability's policy now lets it wait 300 s, until 2026-12-01T10:05:00Z",
    ]);
  });

  it("records the stricter required count in the end record", () => {
    const plan = planApproval(
      inputOf(
        approvalOf({
          decisions: [
            { approver: "alice", verdict: "Approve" },
            { approver: "carol", verdict: "Approve" },
          ],
        }),
        { policy: current({ approvers: { users: [], groups: ["approvers"] }, requiredApprovals: 2 }) },
      ),
    );
    expect(plan.status?.phase).toBe("Executing");
    expect(plan.audit.at(-1)?.payload).toMatchObject({
      requiredApprovals: 2,
      approvedBy: ["alice", "carol"],
      policyTightened: ["the Capability's policy now requires 2 approvals"],
    });
  });
});

describe("planApproval: finalizer and deletion", () => {
  it("adds the finalizer to an Approval an earlier version created, and looks again", () => {
    const plan = planApproval(inputOf(approvalOf({ finalizer: false })));
    expect(plan).toMatchObject({ finalizer: "add", requeueAfterMs: 500, audit: [] });
    expect(plan.status).toBeUndefined();
  });

  it("ends a Pending Approval being deleted Cancelled (ApprovalDeleted), then removes the finalizer", () => {
    const approval = approvalOf({ deleting: true, decisions: [{ approver: "carol", verdict: "Approve" }] });
    const plan = planApproval(inputOf(approval));
    expect(kindsOf(plan)).toEqual([AuditKind.approvalDecided, AuditKind.approvalCancelled]);
    expect(plan.audit[1]?.payload).toMatchObject({ reason: "ApprovalDeleted", phase: "Cancelled" });
    expect(plan.status?.phase).toBe("Cancelled");
    expect(decidedOf(plan)?.reason).toBe("ApprovalDeleted");
    expect(plan.finalizer).toBe("remove");
    expect(plan.events.map((e) => e.reason)).toEqual(["Cancelled"]);
  });

  it("ends the dispatch of a deleted approved Approval that never started, citing the approval record", () => {
    const history = historyWithKinds({ kind: AuditKind.approvalApproved, payload: { reason: "Approved" } });
    const plan = planApproval(inputOf(approvalOf({ phase: "Approved", deleting: true }), { history }));
    expect(kindsOf(plan)).toEqual([AuditKind.approvalCancelled]);
    expect(plan.audit[0]?.payload).toMatchObject({ atDispatch: true, approvalRecord: { seq: 10 } });
    expect(plan.finalizer).toBe("remove");
    expect(plan.dispatch).toBeUndefined();
  });

  it("appends nothing for a deleted approved Approval whose execution started (its records are its end)", () => {
    const history = historyWithKinds({ kind: AuditKind.approvalApproved, payload: {} });
    const plan = planApproval(
      inputOf(approvalOf({ phase: "Executing", deleting: true }), {
        history,
        execution: execution("started"),
      }),
    );
    expect(kindsOf(plan)).toEqual([]);
    expect(plan.finalizer).toBe("remove");
  });

  it("only removes the finalizer of a deleted settled Approval, and does nothing without one", () => {
    expect(planApproval(inputOf(approvalOf({ phase: "Succeeded", deleting: true })))).toMatchObject({
      finalizer: "remove",
      audit: [],
    });
    const gone = planApproval(inputOf(approvalOf({ phase: "Pending", deleting: true, finalizer: false })));
    expect(gone.finalizer).toBeUndefined();
    expect(gone.status).toBeUndefined();
  });
});

describe("planApproval: a decided Approval", () => {
  it("dispatches an Approved or Executing one, writing Executing first", () => {
    for (const phase of ["Approved", "Executing"] as const) {
      const plan = planApproval(inputOf(approvalOf({ phase, observedDecisions: 1 }), { history: undefined }));
      expect(plan.status?.phase).toBe("Executing");
      expect(plan.dispatch).toMatchObject({ rules: RULES_ENFORCED });
      expect(plan.dispatch?.history).toBeUndefined(); // Core reads the chain itself
    }
  });

  it("reports a late decision once: counted in the status first, then an audit record and a Warning Event", () => {
    for (const phase of ["Succeeded", "Rejected", "Approved"] as const) {
      const approval = approvalOf({
        phase,
        observedDecisions: 1,
        decisions: [
          { approver: "alice", verdict: "Approve" },
          { approver: "carol", verdict: "Reject" },
        ],
      });
      const plan = planApproval(inputOf(approval, { history: undefined }));
      expect(plan.auditWhen).toBe("afterStatus");
      expect(plan.status?.observedDecisions).toBe(2);
      expect(plan.audit).toEqual([
        expect.objectContaining({
          kind: AuditKind.decisionIgnored,
          payload: { approval: "plant-a/apr-1", index: 1, approver: "carol", verdict: "Reject", phase },
        }),
      ]);
      expect(plan.events).toEqual([
        {
          type: "Warning",
          reason: "DecisionIgnored",
          message: lateDecisionMessage(
            lateDecisionsOf(approval)[0] ?? { index: 1, decision: { approver: "carol", verdict: "Reject" } },
            phase,
          ),
        },
      ]);
    }
  });

  it("records a decision appended after the chain's end but before the status showed it, as ignored", () => {
    // bob's rejection was recorded and ended the Approval; the status write was lost (409: alice's
    // approval had been appended meanwhile). The next reconcile sees both decisions, the end in the chain.
    const decisions: Decisions = [
      { approver: "bob", verdict: "Reject" },
      { approver: "alice", verdict: "Approve" },
    ];
    const history = historyWithKinds(
      {
        kind: AuditKind.approvalDecided,
        payload: { index: 0, approver: "bob", verdict: "Reject", counted: true, rulesEnforced: true },
      },
      { kind: AuditKind.approvalRejected, payload: { reason: "Rejected", message: "Rejected by bob." } },
    );
    const followed = planApproval(
      inputOf(approvalOf({ phase: "Pending", observedDecisions: 0, decisions }), { history }),
    );
    expect(followed.status?.phase).toBe("Rejected");
    expect(followed.audit).toEqual([]);
    // alice's decision is not taken as observed: the chain holds nothing of it yet.
    expect(followed.status?.observedDecisions).toBe(1);

    const next = planApproval(
      inputOf(
        approvalOf({ phase: "Rejected", observedDecisions: followed.status?.observedDecisions, decisions }),
        {
          history: undefined,
        },
      ),
    );
    expect(next.audit).toEqual([
      expect.objectContaining({
        kind: AuditKind.decisionIgnored,
        payload: {
          approval: "plant-a/apr-1",
          index: 1,
          approver: "alice",
          verdict: "Approve",
          phase: "Rejected",
        },
      }),
    ]);
    expect(next.status?.observedDecisions).toBe(2);
  });

  it("records a late decision of a decided Approval being deleted before its finalizer goes", () => {
    const approval = approvalOf({
      phase: "Rejected",
      deleting: true,
      observedDecisions: 1,
      decisions: [
        { approver: "bob", verdict: "Reject" },
        { approver: "alice", verdict: "Approve" },
      ],
    });
    const plan = planApproval(inputOf(approval, { history: undefined }));
    expect(plan.audit).toEqual([
      expect.objectContaining({
        kind: AuditKind.decisionIgnored,
        payload: {
          approval: "plant-a/apr-1",
          index: 1,
          approver: "alice",
          verdict: "Approve",
          phase: "Rejected",
        },
      }),
    ]);
    expect(plan.finalizer).toBe("remove");
  });

  it("does nothing more for a settled one whose decisions were all observed", () => {
    const plan = planApproval(
      inputOf(approvalOf({ phase: "Succeeded", observedDecisions: 0 }), { history: undefined }),
    );
    expect(plan.audit).toEqual([]);
    expect(plan.events).toEqual([]);
    expect(plan.dispatch).toBeUndefined();
    expect(plan.recordOutcome).toBe(false);
  });

  it("reads nothing for a settled Approval, the chain and rules for an undecided one, the row for an Unknown one", () => {
    expect(observationsFor(approvalOf({ phase: "Succeeded" }), sessionOf())).toEqual({
      rules: false,
      history: false,
      policy: false,
      execution: false,
    });
    expect(observationsFor(approvalOf(), sessionOf())).toEqual({
      rules: true,
      history: true,
      policy: true,
      execution: false,
    });
    expect(observationsFor(approvalOf(), undefined).execution).toBe(true);
    expect(observationsFor(approvalOf({ phase: "Unknown" }), sessionOf()).execution).toBe(true);
  });
});

describe("planDatabaseUnavailable", () => {
  const executedOf = (status: ApprovalStatus | undefined) =>
    status?.conditions?.find((c) => c.type === "Executed");

  it("says on a Pending Approval that its decisions and call wait, and a pass that reads the chain clears it", () => {
    const approved = approvalOf({ decisions: [{ approver: "alice", verdict: "Approve" }] });
    const waiting = planDatabaseUnavailable(approved, BEFORE_EXPIRY);
    expect(waiting?.phase).toBe("Pending");
    expect(executedOf(waiting)).toMatchObject({ status: "False", reason: "DatabaseUnavailable" });
    expect(executedOf(waiting)?.message).toContain("an approved call runs once it answers again");

    const plan = planApproval(inputOf({ ...approved, status: waiting }));
    expect(plan.status?.phase).toBe("Executing");
    expect(plan.dispatch).toBeDefined();
    expect(executedOf(plan.status)).toBeUndefined();
  });

  it("says on an approved one that the call waits, and the dispatch's outcome replaces it", () => {
    for (const phase of ["Approved", "Executing"] as const) {
      const waiting = planDatabaseUnavailable(approvalOf({ phase }), BEFORE_EXPIRY);
      expect(waiting?.phase).toBe(phase);
      expect(executedOf(waiting)).toMatchObject({ status: "False", reason: "DatabaseUnavailable" });
      expect(executedOf(waiting)?.message).toContain("The approved call waits");
    }
    const approval = { ...approvalOf({ phase: "Executing" }) };
    approval.status = planDatabaseUnavailable(approval, BEFORE_EXPIRY);
    const plan = planApproval(inputOf(approval));
    const outcome = planDispatchOutcome(
      approval,
      plan.status!,
      { kind: "executed", execution: execution("succeeded") } as ExecuteApprovedResult,
      BEFORE_EXPIRY,
    );
    expect(executedOf(outcome.status)).toMatchObject({ status: "True", reason: "Succeeded" });
  });

  it("says nothing on a settled Approval or one being deleted: no call waits on them", () => {
    for (const phase of ["Succeeded", "Failed", "Rejected", "Expired", "Cancelled", "Stale"] as const) {
      expect(planDatabaseUnavailable(approvalOf({ phase }), BEFORE_EXPIRY), phase).toBeUndefined();
    }
    expect(planDatabaseUnavailable(approvalOf({ deleting: true }), BEFORE_EXPIRY)).toBeUndefined();
  });
});

describe("planDispatchOutcome", () => {
  const before: ApprovalStatus = { phase: "Executing", observedDecisions: 1 };
  const approval = approvalOf({ phase: "Approved", observedDecisions: 1 });
  const executed = (state: ExecutionRecord["state"]): ExecuteApprovedResult => ({
    kind: "executed",
    answer: { status: "succeeded", content: "ok" } as never,
    execution: execution(state),
    executedNow: true,
  });
  const rows: Array<{
    name: string;
    result: ExecuteApprovedResult;
    phase: string;
    reason: string;
    warning?: boolean;
    again?: boolean;
  }> = [
    { name: "Executing → Succeeded", result: executed("succeeded"), phase: "Succeeded", reason: "Succeeded" },
    {
      name: "Executing → Failed (the business system refused)",
      result: executed("failed"),
      phase: "Failed",
      reason: "Failed",
    },
    {
      name: "Executing → Unknown (nobody knows whether it ran)",
      result: executed("unknown"),
      phase: "Unknown",
      reason: "Unknown",
    },
    {
      name: "stays Executing while the row is started",
      result: executed("started"),
      phase: "Executing",
      reason: "Executing",
      again: true,
    },
    ...(
      [
        ["Stale", "TargetVersionMoved"],
        ["Expired", "Expired"],
        ["Cancelled", "SessionGone"],
        ["Failed", "ArgumentsDigestMismatch"],
      ] as const
    ).map(([phase, reason]) => ({
      name: `refused at dispatch → ${phase} (${reason})`,
      result: { kind: "refused" as const, phase, reason, message: "because" },
      phase,
      reason,
      warning: true,
    })),
    ...(["ProviderNotReady", "TargetUnverifiable", "DecisionRulesNotEnforced"] as const).map((reason) => ({
      name: `deferred (${reason}) → back to Approved, looked at again`,
      result: { kind: "deferred" as const, phase: "Approved" as const, reason, message: "will retry" },
      phase: "Approved",
      reason,
      again: true,
    })),
  ];
  for (const row of rows) {
    it(row.name, () => {
      const outcome = planDispatchOutcome(approval, before, row.result, BEFORE_EXPIRY);
      expect(outcome.status.phase).toBe(row.phase);
      expect(outcome.status.conditions?.find((c) => c.type === "Executed")?.reason).toBe(row.reason);
      expect(outcome.events.map((e) => e.type)).toEqual(row.warning ? ["Warning"] : []);
      expect(outcome.requeueAfterMs).toBe(row.again ? DISPATCH_RECHECK_MS : undefined);
      expect(outcome.recordOutcome).toBe(!["Approved", "Executing"].includes(row.phase));
      if (row.result.kind === "executed")
        expect(outcome.status.execution?.state).toBe(row.result.execution.state);
      else expect(outcome.status.execution).toBeUndefined();
    });
  }

  it("describes a refusal with the phase it leaves and the refusal's reason text", () => {
    expect(
      dispatchRefusedMessage(
        "Stale",
        "plan week-21 is now at version 6; the call was approved for version 5",
      ),
    ).toBe(
      "The approved call was not run; the Approval is Stale: plan week-21 is now at version 6; the call was approved for version 5.",
    );
  });
});

describe("late decisions", () => {
  const withDecisions = (observed?: number) =>
    approvalOf({
      phase: "Rejected",
      decisions: [
        { approver: "alice", verdict: "Reject" },
        { approver: "carol", verdict: "Approve" },
        { approver: "bob", verdict: "Approve" },
      ],
      ...(observed !== undefined ? { observedDecisions: observed } : {}),
    });

  it("are the decisions beyond status.observedDecisions, with their index", () => {
    expect(lateDecisionsOf(withDecisions(1))).toEqual([
      { index: 1, decision: { approver: "carol", verdict: "Approve" } },
      { index: 2, decision: { approver: "bob", verdict: "Approve" } },
    ]);
  });

  it("are none once every decision was observed, and none for an Approval decided before the count existed", () => {
    expect(lateDecisionsOf(withDecisions(3))).toEqual([]);
    expect(lateDecisionsOf(withDecisions())).toEqual([]);
  });

  it("are described with the approver, the verdict and the phase they found", () => {
    expect(
      lateDecisionMessage({ index: 1, decision: { approver: "carol", verdict: "Approve" } }, "Rejected"),
    ).toBe(
      "Decision Approve by carol (spec.decisions[1]) ignored: the Approval is already Rejected and takes no more decisions; nothing changed.",
    );
  });
});

describe("the applier over the in-memory writer", () => {
  const publish = testCapability({
    id: "aps.schedule.publish",
    effect: "write",
    idempotency: "key",
    policy: { approval: "Required" },
    inputSchema: { type: "object", properties: { planId: { type: "string" } }, required: ["planId"] },
  });

  /** alice's publish proposed through Core, as the Approval object the reconciler caches. */
  async function proposedApproval(decisions: Decisions) {
    const world = createInMemoryWorld();
    world.capabilities.push(publish);
    const { answer } = await invoke(world.deps, TEST_SESSION, {
      turn: 0,
      position: 0,
      callId: "c0",
      tool: "aps_schedule_publish",
      arguments: '{"planId":"P-7"}',
    });
    expect(answer.status).toBe("pending_approval");
    const stored = [...world.approvals.values()][0];
    if (!stored) throw new Error("no Approval was created");
    const approval: Approval = {
      ...approvalOf(),
      metadata: { ...approvalOf().metadata, name: stored.request.name },
      spec: { ...approvalSpecOf(stored.request), decisions },
    };
    const writer = inMemoryApprovalWriter({
      audit: world.deps.audit,
      dispatch: (request) =>
        executeApproved(world.deps, {
          approval: {
            request: stored.request,
            decisions,
            phase: "Approved",
            uid: request.approval.metadata.uid,
          },
          session: TEST_SESSION,
          rules: request.rules,
          history: request.history,
        }),
    });
    const now = new Date(world.now.micros / 1000);
    const input = async (a: Approval): Promise<ApprovalPlanInput> => ({
      approval: a,
      session: sessionOf(),
      now,
      rules: RULES_ENFORCED,
      history: await readHistory(world.deps, {
        request: stored.request,
        decisions,
        phase: "Pending",
        uid: a.metadata.uid,
      }),
      policy: approvalSettings(publish.policy, TEST_SESSION.subject, world.deps.config.approvalTtlSeconds),
    });
    return { world, approval, writer, input };
  }

  it("approves and runs a call in one pass with two status writes: Executing beside the call, Succeeded after", async () => {
    const { world, approval, writer, input } = await proposedApproval([
      { approver: "alice", verdict: "Approve" },
    ]);
    const result = await applyApproval(writer, await input(approval), quiet);
    expect(result).toBeUndefined();
    expect(writer.statusWrites().map((s) => s.phase)).toEqual(["Executing", "Succeeded"]);
    expect(writer.calls.map((c) => c.kind)).toEqual([
      "appendAudit",
      "writeStatus",
      "dispatch",
      "observeDecided",
      "writeStatus",
      "recordOutcome",
    ]);
    expect(world.audit.map((e) => e.kind)).toEqual([
      AuditKind.approvalRequested,
      AuditKind.approvalDecided,
      AuditKind.approvalApproved,
      AuditKind.executionStarted,
      AuditKind.executionFinished,
    ]);
    expect(world.providerCalls).toHaveLength(1);
  });

  it("a refused Executing write fails the pass only after its dispatch settled; the next pass runs nothing twice", async () => {
    const { world, approval, writer, input } = await proposedApproval([
      { approver: "alice", verdict: "Approve" },
    ]);
    let dispatchSettled = false;
    const stale: typeof writer = {
      ...writer,
      writeStatus: async () => {
        throw new Error("409 Conflict: the object has been modified");
      },
      dispatch: (request) =>
        writer.dispatch(request).finally(() => {
          dispatchSettled = true;
        }),
    };
    await expect(applyApproval(stale, await input(approval), quiet)).rejects.toThrow(/409/);
    expect(dispatchSettled).toBe(true);
    expect(world.providerCalls).toHaveLength(1);
    // The status never moved; the chain holds the approved record, so the next pass dispatches again
    // and finds the execution, writing what it says.
    await applyApproval(writer, await input(approval), quiet);
    expect(world.providerCalls).toHaveLength(1);
    expect(writer.statusWrites().map((s) => s.phase)).toEqual(["Executing", "Succeeded"]);
    expect(world.audit.filter((e) => e.kind === AuditKind.executionStarted)).toHaveLength(1);
  });

  it("writes a Pending Approval's status once, and nothing on a repeat over what it wrote", async () => {
    const { writer, approval, input } = await proposedApproval([]);
    await applyApproval(writer, await input(approval), quiet);
    expect(writer.statusWrites()).toHaveLength(1);
    const written = { ...approval, status: writer.statusWrites()[0] };
    await applyApproval(writer, await input(written), quiet);
    expect(writer.statusWrites()).toHaveLength(1);
    expect(writer.calls.filter((c) => c.kind === "appendAudit")).toHaveLength(0);
  });

  it("writes the status of a late decision before appending its report", async () => {
    const writer = inMemoryApprovalWriter();
    const approval = approvalOf({
      phase: "Succeeded",
      observedDecisions: 0,
      decisions: [{ approver: "carol", verdict: "Approve" }],
    });
    await applyApproval(writer, inputOf(approval, { history: undefined, rules: undefined }), quiet);
    expect(writer.calls.map((c) => c.kind)).toEqual(["writeStatus", "appendAudit", "event"]);
  });

  it("ends a deleted Pending Approval in the chain, writes Cancelled, then removes the finalizer", async () => {
    const writer = inMemoryApprovalWriter();
    await applyApproval(writer, inputOf(approvalOf({ deleting: true })), quiet);
    expect(writer.calls.map((c) => c.kind)).toEqual([
      "appendAudit",
      "writeStatus",
      "event",
      "removeFinalizer",
    ]);
    expect(writer.calls.at(-1)).toEqual({ kind: "removeFinalizer", phase: "Cancelled" });
  });
});

describe("an Approval whose execution's outcome is unknown", () => {
  const executionRow = (overrides: Partial<ExecutionRecord> = {}): ExecutionRecord =>
    ({
      id: "e".repeat(40),
      state: "unknown",
      message: "no definite answer from the provider",
      createdAtMicros: 1_764_583_200_000_000,
      updatedAtMicros: 1_764_583_260_000_000,
      neverSent: false,
      settleAttempts: 0,
      fencingToken: 1,
      ...overrides,
    }) as ExecutionRecord;
  const carol = { resolver: "carol", outcome: "Succeeded" as const, reason: "APS shows it published" };
  const unknownInput = (approval: Approval, execution: ExecutionRecord): ApprovalPlanInput => ({
    approval,
    session: sessionOf(),
    now: BEFORE_EXPIRY,
    execution,
  });

  it.each([
    {
      name: "Unknown, still unknown → Unknown, looked at after the sweep's next attempt",
      approval: approvalOf({ phase: "Unknown" }),
      execution: executionRow({ nextSettleMicros: BEFORE_EXPIRY.getTime() * 1000 + 30_000_000 }),
      phase: "Unknown",
      reason: "Unknown",
      told: false,
      requeue: 40_000,
    },
    {
      name: "Unknown, nobody asks any more → Unknown, waits for a person",
      approval: approvalOf({ phase: "Unknown" }),
      execution: executionRow(),
      phase: "Unknown",
      reason: "Unknown",
      told: false,
      requeue: undefined,
    },
    {
      name: "Unknown, the settle sweep learned it succeeded → Succeeded OutcomeSettled, the agent told",
      approval: approvalOf({ phase: "Unknown" }),
      execution: executionRow({ state: "succeeded", message: undefined }),
      phase: "Succeeded",
      reason: "OutcomeSettled",
      told: true,
      requeue: undefined,
    },
    {
      // Core is asked again (idempotent): it appends execution.resolved if a crash lost it.
      name: "Unknown, the row holds a person's resolution → Succeeded ResolvedByPerson, the agent told",
      approval: approvalOf({ phase: "Unknown", spec: { resolutions: [carol] } }),
      execution: executionRow({
        state: "succeeded",
        message: "resolved by carol: APS shows it published",
        resolution: { resolver: "carol", reason: carol.reason },
      }),
      phase: "Succeeded",
      reason: "ResolvedByPerson",
      told: true,
      requeue: undefined,
    },
    {
      name: "an Auto call's record Approval, not yet marked → Unknown",
      approval: approvalOf({ spec: { autoExecution: true } }),
      execution: executionRow(),
      phase: "Unknown",
      reason: "Unknown",
      told: false,
      requeue: undefined,
    },
  ])("$name", ({ approval, execution, phase, reason, told, requeue }) => {
    const plan = planApproval(unknownInput(approval, execution));
    expect(plan.resolve).toEqual(approval.spec.resolutions?.[0]);
    expect(plan.dispatch).toBeUndefined();
    expect(plan.audit).toEqual([]);
    expect(plan.status?.phase).toBe(phase);
    expect(plan.status?.conditions?.find((c) => c.type === "Executed")?.reason).toBe(reason);
    expect(plan.recordOutcome).toBe(told);
    expect(plan.events.map((e) => e.reason)).toEqual(told ? [reason] : []);
    expect(plan.requeueAfterMs).toBe(requeue);
  });

  it("asks Core to record a resolution the row does not hold, and reads only the row for it", () => {
    const approval = approvalOf({ phase: "Unknown", spec: { resolutions: [carol] } });
    expect(observationsFor(approval, sessionOf())).toEqual({
      rules: false,
      history: false,
      policy: false,
      execution: true,
    });
    expect(planApproval(unknownInput(approval, executionRow())).resolve).toEqual(carol);
  });

  it("applies a resolution in one pass: Core records it, then one status write, an Event and the agent told", async () => {
    const approval = approvalOf({ phase: "Unknown", spec: { resolutions: [carol] } });
    const resolved = executionRow({
      state: "succeeded",
      message: "resolved by carol: APS shows it published",
      resolution: { resolver: "carol", reason: carol.reason },
    });
    const writer = inMemoryApprovalWriter({
      resolve: async () => ({ kind: "resolved", execution: resolved, recordedNow: true }),
    });
    expect(await applyApproval(writer, unknownInput(approval, executionRow()), quiet)).toBeUndefined();
    expect(writer.calls.map((c) => c.kind)).toEqual(["resolve", "writeStatus", "event", "recordOutcome"]);
    expect(writer.statusWrites().map((s) => s.phase)).toEqual(["Succeeded"]);
  });
});
