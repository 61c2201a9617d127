import { describe, expect, it } from "vitest";
import { AuditKind } from "../core/audit.ts";
import type { ChainedRecord } from "../core/ports.ts";
import { byObject, recordsOfApproval } from "./approval-records.ts";

function record(seq: number, kind: string, approvalUid?: string): ChainedRecord {
  return {
    seq,
    hash: String(seq).padStart(64, "0"),
    kind,
    actor: "gatehouse",
    atMicros: seq,
    payload: { approval: "plant-a/apr-1", ...(approvalUid ? { approvalUid } : {}) },
  };
}

describe("one execution's records split by Approval object", () => {
  it("starts a new history where a request names another object than the one before", () => {
    const first = [
      record(1, AuditKind.approvalRequested, "uid-a"),
      record(2, AuditKind.approvalDecided, "uid-a"),
      record(3, AuditKind.approvalCancelled, "uid-a"),
    ];
    const second = [
      record(4, AuditKind.approvalRequested, "uid-b"),
      record(5, AuditKind.approvalApproved, "uid-b"),
      record(6, AuditKind.executionStarted),
      record(7, AuditKind.executionFinished),
    ];
    expect(byObject([...first, ...second])).toEqual([first, second]);
  });

  it("keeps a repeated request of the same object, and records of earlier versions, in one history", () => {
    const same = [
      record(1, AuditKind.approvalRequested, "uid-a"),
      record(2, AuditKind.approvalRequested, "uid-a"),
      record(3, AuditKind.approvalApproved, "uid-a"),
    ];
    expect(byObject(same)).toEqual([same]);
    const old = [record(1, AuditKind.approvalRequested), record(2, AuditKind.executionStarted)];
    expect(byObject(old)).toEqual([old]);
  });
});

describe("one execution's records of one Approval", () => {
  const named = (seq: number, kind: string, payload: ChainedRecord["payload"]): ChainedRecord => ({
    ...record(seq, kind),
    payload,
  });

  it("keeps the records naming it, in either form, and the execution's own, and drops another Approval's", () => {
    const ours = [
      named(1, AuditKind.approvalRequested, { session: "plant-a/s1", approval: "apr-1" }),
      named(2, AuditKind.approvalApproved, { approval: "plant-a/apr-1" }),
      named(4, AuditKind.executionStarted, { approval: "apr-1" }),
      named(6, AuditKind.executionFinished, { state: "succeeded" }),
    ];
    const theirs = [
      named(3, AuditKind.approvalApproved, { approval: "plant-a/apr-2" }),
      named(5, AuditKind.executionStarted, { approval: "apr-2" }),
      named(7, AuditKind.approvalDecided, { approval: "plant-b/apr-1" }),
      named(8, AuditKind.approvalRequested, { session: "plant-b/s1", approval: "apr-1" }),
    ];
    const chain = [...ours, ...theirs].sort((a, b) => a.seq - b.seq);
    expect(recordsOfApproval(chain, "plant-a", "apr-1")).toEqual(ours);
  });

  it("keeps an Auto call's start, which names no Approval", () => {
    const auto = named(1, AuditKind.executionStarted, { approval: null });
    expect(recordsOfApproval([auto], "plant-a", "apr-1")).toEqual([auto]);
  });
});
