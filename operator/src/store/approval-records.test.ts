import { describe, expect, it } from "vitest";
import { AuditKind } from "../core/audit.ts";
import type { ChainedRecord } from "../core/ports.ts";
import { byObject } from "./approval-records.ts";

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
