import { describe, expect, it } from "vitest";
import type { JsonObject } from "../core/canonical.ts";
import type { AuditOutcome, ChainedRecord } from "../core/ports.ts";
import {
  approvalHistoryLines,
  approvalHistoryOf,
  BEFORE_DECISIONS_NOTE,
  rfc3339Micros,
  UNREQUESTED_NOTE,
} from "./approval-history.ts";

const EXECUTION = "0123456789abcdef0123456789abcdef01234567";
const NAME = "apr-0123456789abcdef0123";
const APPROVAL = `team-a/${NAME}`;
const T0 = 1_700_000_000_000_000;

function record(
  seq: number,
  kind: string,
  actor: string,
  outcome: AuditOutcome | undefined,
  payload: JsonObject,
): ChainedRecord {
  return {
    seq,
    hash: `${seq}`.padStart(64, "a"),
    kind,
    actor,
    ...(outcome ? { outcome } : {}),
    sessionUid: "uid-1",
    executionId: EXECUTION,
    atMicros: T0 + seq * 1_000_001,
    payload: { approval: APPROVAL, ...payload },
  };
}

const requested = (seq: number, extra: JsonObject = {}) =>
  record(seq, "approval.requested", "alice", "pending", {
    session: "team-a/s1",
    capability: "aps.schedule.publish",
    argumentsDigest: "d".repeat(64),
    approvers: { users: ["bob", "carol"], groups: ["ops"] },
    requiredApprovals: 1,
    expiresAt: "2023-11-15T22:13:20Z",
    ...extra,
  });

const history = (records: ChainedRecord[], markerSeq?: number) =>
  approvalHistoryOf({ namespace: "team-a", name: NAME, executionId: EXECUTION, records }, markerSeq);

/** The lines after the two heading lines, without "seq N  time  ". */
const steps = (records: ChainedRecord[], markerSeq?: number) =>
  approvalHistoryLines(history(records, markerSeq))
    .slice(2)
    .map((line) => line.replace(/^ {2}seq +\d+ {2}\S+ {2}/, "").trim());

describe("approvalHistoryLines", () => {
  it("heads the history with the Approval, its execution, session and how it ended", () => {
    const lines = approvalHistoryLines(
      history([
        requested(3),
        record(9, "approval.approved", "gatehouse", "success", { phase: "Approved", approvedBy: ["bob"] }),
        record(11, "execution.finished", "alice", "success", { state: "succeeded", attempts: 1 }),
      ]),
    );
    expect(lines.slice(0, 3)).toEqual([
      `Approval team-a/${NAME} — execution ${EXECUTION}, session team-a/s1 (uid uid-1)`,
      "  Approval Approved, execution succeeded",
      `  seq  3  ${rfc3339Micros(T0 + 3_000_003)}  requested by alice: aps.schedule.publish, arguments sha256 ${"d".repeat(64)}, approvers users bob, carol; groups ops, 1 approval required, expires 2023-11-15T22:13:20Z`,
    ]);
  });

  it.each<[string, ChainedRecord, string]>([
    [
      "a request with a target and its version",
      requested(1, { target: { kind: "Schedule", id: "s-42", version: "7" }, requiredApprovals: 2 }),
      `requested by alice: aps.schedule.publish, arguments sha256 ${"d".repeat(64)}, target Schedule s-42 at version 7, approvers users bob, carol; groups ops, 2 approvals required, expires 2023-11-15T22:13:20Z`,
    ],
    [
      "a counted decision with its reason",
      record(2, "approval.decided", "bob", "success", {
        index: 0,
        approver: "bob",
        verdict: "Approve",
        reason: "ship it",
        counted: true,
        rulesEnforced: true,
      }),
      'decision 0 by bob: Approve "ship it" — counted',
    ],
    [
      "a decision that did not count, and why",
      record(2, "approval.decided", "mallory", "failure", {
        index: 1,
        approver: "mallory",
        verdict: "Approve",
        counted: false,
        ignoredReason: "mallory is not a listed approver",
        rulesEnforced: false,
      }),
      "decision 1 by mallory: Approve — not counted: mallory is not a listed approver (decision rules were not enforced)",
    ],
    [
      "the approved record",
      record(2, "approval.approved", "gatehouse", "success", {
        phase: "Approved",
        reason: "Approved",
        message: "approved by bob",
        decisions: [{ index: 0, approver: "bob", verdict: "Approve" }],
        approvedBy: ["bob"],
      }),
      "approved (Approved): approved by bob",
    ],
    [
      "a backfilled approved record",
      record(2, "approval.approved", "gatehouse", "success", {
        phase: "Approved",
        approvedBy: ["bob"],
        backfilled: true,
      }),
      "approved (Approved): approved by bob (written at dispatch: decided by an earlier version of Gatehouse)",
    ],
    [
      "the rejected record",
      record(2, "approval.rejected", "gatehouse", "failure", {
        phase: "Rejected",
        reason: "Rejected",
        message: "rejected by carol: wrong week",
        rejectedBy: "carol",
      }),
      "rejected (Rejected): rejected by carol: wrong week",
    ],
    [
      "a refusal for good at dispatch",
      record(2, "approval.stale", "gatehouse", "failure", {
        phase: "Stale",
        reason: "TargetChanged",
        message: "Schedule s-42 is at version 8, not 7",
        atDispatch: true,
        approvalRecord: { seq: 9, hash: "f".repeat(64) },
      }),
      `not run, stale at dispatch (Stale, TargetChanged): Schedule s-42 is at version 8, not 7 — approved record seq 9 (hash ${"f".repeat(16)}…)`,
    ],
    [
      "a dispatch refusal that is not final",
      record(2, "approval.refused", "gatehouse", "failure", {
        phase: "Approved",
        reason: "ProviderUnavailable",
        message: "no ready endpoint",
      }),
      "dispatch refused (Approved, ProviderUnavailable): no ready endpoint",
    ],
    [
      "an ignored decision",
      record(2, "approval.decision_ignored", "gatehouse", "failure", {
        index: 2,
        approver: "dave",
        verdict: "Reject",
        phase: "Approved",
      }),
      "decision 2 ignored: Reject by dave appended when the Approval was already Approved",
    ],
    [
      "a conflict",
      record(2, "approval.conflict", "alice", "failure", {
        session: "team-a/s1",
        tool: "aps_schedule_publish",
      }),
      "conflict: the Approval already existed but was not created for this call; refused",
    ],
    [
      "the execution's start, naming the approved record",
      record(2, "execution.started", "alice", "pending", {
        capability: "aps.schedule.publish",
        provider: "team-a/aps",
        argumentsDigest: "d".repeat(64),
        idempotencyKey: `gh1.${EXECUTION}`,
        approvalRecord: { seq: 9, hash: "e".repeat(64) },
      }),
      `execution started by alice: aps.schedule.publish, provider team-a/aps — approved record seq 9 (hash ${"e".repeat(16)}…)`,
    ],
    [
      "a recovery",
      record(2, "execution.recovering", "gatehouse", "pending", {
        reason: "the lease ended before an outcome was recorded",
        idempotency: "key",
        reinvoke: true,
      }),
      "execution recovering: the lease ended before an outcome was recorded (the provider is called again)",
    ],
    [
      "the execution's end with its receipt evidence and result digest",
      record(2, "execution.finished", "alice", "success", {
        state: "succeeded",
        attempts: 1,
        evidence: { system: "aps", reference: "pub-77" },
        resultDigest: "c".repeat(64),
      }),
      `execution finished: succeeded, after 1 attempt, evidence aps pub-77, result sha256 ${"c".repeat(64)}`,
    ],
    [
      "a failed execution appended late",
      record(2, "execution.finished", "gatehouse", "failure", {
        state: "failed",
        attempts: 2,
        errorKind: "unavailable",
        message: "provider down",
        late: true,
      }),
      'execution finished: failed, after 2 attempts, error unavailable, "provider down", appended late by the outbox',
    ],
    [
      "a kind this version does not know",
      record(2, "approval.reminded", "gatehouse", undefined, { to: "bob" }),
      `approval.reminded by gatehouse: {"approval":"${APPROVAL}","to":"bob"}`,
    ],
    [
      "a known kind whose payload has another shape",
      record(2, "execution.finished", "alice", "success", { state: 3 }),
      `execution.finished by alice (success): {"approval":"${APPROVAL}","state":3}`,
    ],
  ])("prints %s", (_, one, line) => {
    expect(steps([one])[0]).toBe(line);
  });

  it("says an execution that started has no finish recorded yet", () => {
    const lines = approvalHistoryLines(
      history([requested(1), record(2, "execution.started", "alice", "pending", {})], 50),
    );
    expect(lines[1]).toBe("  no end of the decision recorded, execution started, no finish recorded");
  });

  it("says a request written before decisions were audited has no decision records", () => {
    const old = [
      requested(1),
      record(2, "execution.started", "alice", "pending", { capability: "aps.schedule.publish" }),
      record(3, "execution.finished", "alice", "success", { state: "succeeded", attempts: 1 }),
    ];
    expect(steps(old, 50)).toEqual([
      "requested by alice: aps.schedule.publish, arguments sha256 " +
        `${"d".repeat(64)}, approvers users bob, carol; groups ops, 1 approval required, expires 2023-11-15T22:13:20Z`,
      "execution started by alice: aps.schedule.publish",
      "execution finished: succeeded, after 1 attempt",
      BEFORE_DECISIONS_NOTE,
    ]);
    expect(history(old).notes).toEqual([BEFORE_DECISIONS_NOTE]);
  });

  it("says nothing is missing when a request after the marker expired without decisions", () => {
    const expired = [
      requested(60),
      record(61, "approval.expired", "gatehouse", "failure", { phase: "Expired", reason: "Expired" }),
    ];
    expect(history(expired, 50).notes).toEqual([]);
    expect(history(expired).notes).toEqual([]);
  });

  it("says an execution started with no request in the history: no tool call asked for it", () => {
    const conflict = record(1, "approval.conflict", "alice", "failure", { tool: "aps_schedule_publish" });
    const ran = [conflict, record(2, "execution.started", "gatehouse", "pending", { approval: NAME })];
    expect(history(ran, 50).notes).toEqual([UNREQUESTED_NOTE]);
    expect(history([conflict], 50).notes).toEqual([]);
  });

  it("says a request after the marker with nothing after it is still Pending", () => {
    expect(history([requested(60)], 50).notes).toEqual([
      "(no decision recorded yet: the Approval was Pending at the last record)",
    ]);
  });
});

describe("approvalHistoryOf", () => {
  it("gives the phase from the last ending record and the state from the last finish", () => {
    const h = history([
      requested(1),
      record(2, "approval.decided", "bob", "success", {
        index: 0,
        approver: "bob",
        verdict: "Approve",
        counted: true,
      }),
      record(3, "approval.approved", "gatehouse", "success", { phase: "Approved", approvedBy: ["bob"] }),
      record(4, "execution.started", "alice", "pending", {
        approvalRecord: { seq: 3, hash: "a".repeat(64) },
      }),
      record(5, "execution.finished", "alice", "unknown", { state: "unknown", attempts: 1 }),
    ]);
    expect(h).toMatchObject({
      approval: { namespace: "team-a", name: NAME },
      executionId: EXECUTION,
      session: "team-a/s1",
      sessionUid: "uid-1",
      phase: "Approved",
      executionState: "unknown",
      notes: [],
    });
    expect(h.events[1]).toEqual({
      seq: 2,
      hash: "2".padStart(64, "a"),
      at: rfc3339Micros(T0 + 2_000_002),
      kind: "approval.decided",
      actor: "bob",
      outcome: "success",
      step: "decision",
      index: 0,
      approver: "bob",
      verdict: "Approve",
      counted: true,
    });
  });
});

describe("rfc3339Micros", () => {
  it("keeps the microseconds", () => {
    expect(rfc3339Micros(1_700_000_000_123_456)).toBe("2023-11-14T22:13:20.123456Z");
  });
});
