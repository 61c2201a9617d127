import { describe, expect, it } from "vitest";
import { type ChainRecordFact, checkInvariants, type RunFacts } from "./invariants.ts";

const EXECUTION = "ex-1";
const KEY = "gh1.a-1";
const ACTION = 'chaos.write {"planId":"plan-0"}';

function record(seq: number, kind: string, payload: Record<string, unknown> = {}): ChainRecordFact {
  return { seq, hash: `h${seq}`, kind, outcome: null, executionId: EXECUTION, payload };
}

/** A run where one Required write was approved by alice and executed once: every invariant holds. */
function keptRun(): RunFacts {
  return {
    effects: [{ capability: "chaos.write", idempotencyKey: KEY, executionId: EXECUTION, action: ACTION }],
    calls: [{ capability: "chaos.write", idempotencyKey: KEY, executionId: EXECUTION }],
    chain: [
      record(10, "approval.requested", { approval: "apr-1" }),
      record(11, "approval.decided", {
        approval: "ns/apr-1",
        index: 0,
        approver: "alice",
        verdict: "Approve",
      }),
      record(12, "approval.approved", { approval: "ns/apr-1" }),
      record(13, "execution.started", { approval: "apr-1", approvalRecord: { seq: 12, hash: "h12" } }),
      record(14, "execution.finished"),
    ],
    executions: [
      { id: EXECUTION, idempotencyKey: KEY, state: "succeeded", errorKind: null, leaseUntilMs: 1_000 },
    ],
    approvals: [
      {
        namespace: "ns",
        name: "apr-1",
        executionId: EXECUTION,
        phase: "Succeeded",
        decisions: [{ approver: "alice", verdict: "Approve" }],
      },
    ],
    verdict: { ok: true, message: "", checkpoints: [{ seq: 14, status: "ok", message: "" }] },
    nowMs: 2_000,
  };
}

const kinds = (facts: RunFacts) => checkInvariants(facts).map((v) => v.kind);

describe("the campaign's invariants", () => {
  it("find nothing in a run that kept every guarantee", () => {
    expect(checkInvariants(keptRun())).toEqual([]);
  });

  it("find two effects under one idempotency key", () => {
    const facts = keptRun();
    facts.effects.push({ ...facts.effects[0]!, executionId: "ex-2", action: "another" });
    expect(checkInvariants(facts)).toEqual([
      {
        kind: "duplicate-effect",
        message: expect.stringContaining(`2 effects of chaos.write under idempotency key ${KEY}`),
      },
    ]);
  });

  it("find one action committed twice under two keys", () => {
    const facts = keptRun();
    facts.effects.push({ ...facts.effects[0]!, idempotencyKey: "gh1.a-2", executionId: "ex-2" });
    expect(checkInvariants(facts)).toEqual([
      { kind: "duplicate-effect", message: expect.stringContaining(`under keys ${KEY}, gh1.a-2`) },
    ]);
  });

  it("find an approved execution.started that names no approval.approved record, or another one", () => {
    const unnamed = keptRun();
    unnamed.chain[3] = record(13, "execution.started", { approval: "apr-1" });
    expect(kinds(unnamed)).toEqual(["execution-without-approval-record"]);
    const wrongHash = keptRun();
    wrongHash.chain[3] = record(13, "execution.started", {
      approval: "apr-1",
      approvalRecord: { seq: 12, hash: "x" },
    });
    expect(kinds(wrongHash)).toEqual(["execution-without-approval-record"]);
    const decidedOnly = keptRun();
    decidedOnly.chain[3] = record(13, "execution.started", {
      approval: "apr-1",
      approvalRecord: { seq: 11, hash: "h11" },
    });
    expect(kinds(decidedOnly)).toEqual(["execution-without-approval-record"]);
  });

  it("leave an Auto execution.started alone: it names no Approval", () => {
    const facts = keptRun();
    facts.chain[3] = record(13, "execution.started", { approval: null });
    expect(checkInvariants(facts)).toEqual([]);
  });

  it("find a decision the Approval holds that the chain does not", () => {
    const facts = keptRun();
    facts.approvals[0]!.decisions.push({ approver: "alice", verdict: "Reject" });
    expect(checkInvariants(facts)).toEqual([
      {
        kind: "decision-not-in-chain",
        message: expect.stringContaining("decision 1 of Approval ns/apr-1 (alice: Reject)"),
      },
    ]);
    facts.chain.push(
      record(15, "approval.decision_ignored", { index: 1, approver: "alice", verdict: "Reject" }),
    );
    expect(checkInvariants(facts)).toEqual([]);
  });

  it("find an approval.requested with no end record after it", () => {
    const facts = keptRun();
    facts.chain = facts.chain.filter((r) => r.kind !== "approval.approved" && r.kind !== "execution.started");
    expect(kinds(facts)).toEqual(["request-without-end"]);
  });

  it("find an Approval Executing past its execution's lease, and one Executing with no execution", () => {
    const facts = keptRun();
    facts.approvals[0]!.phase = "Executing";
    expect(checkInvariants(facts)).toEqual([
      {
        kind: "executing-past-lease",
        message: expect.stringContaining("Executing 1000 ms past its execution's lease"),
      },
    ]);
    facts.executions[0]!.leaseUntilMs = 3_000;
    expect(checkInvariants(facts)).toEqual([]);
    facts.executions = [];
    expect(kinds(facts)).toEqual(["executing-past-lease"]);
  });

  it("find a failed execution whose call reached the business system, but not a business refusal", () => {
    const facts = keptRun();
    facts.executions[0] = { ...facts.executions[0]!, state: "failed", errorKind: "unavailable" };
    expect(kinds(facts)).toEqual(["failed-after-reaching-business"]);
    facts.effects = [];
    facts.executions[0]!.errorKind = "forbidden";
    expect(checkInvariants(facts)).toEqual([]);
    facts.calls = [];
    facts.executions[0]!.errorKind = "unavailable";
    expect(checkInvariants(facts)).toEqual([]);
  });

  it("find a chain that does not verify, or disagrees with a checkpoint", () => {
    const broken = keptRun();
    broken.verdict = { ok: false, message: "record 12: hash mismatch", checkpoints: [] };
    expect(checkInvariants(broken)).toEqual([{ kind: "chain-broken", message: "record 12: hash mismatch" }]);
    const disagreeing = keptRun();
    disagreeing.verdict.checkpoints.push({ seq: 9, status: "hash_mismatch", message: "differs" });
    expect(checkInvariants(disagreeing)).toEqual([
      { kind: "chain-broken", message: "checkpoint 9: hash_mismatch differs" },
    ]);
  });
});
