import { describe, expect, it } from "vitest";
import type { ChainVerifyReport } from "../store/audit/verify.ts";
import { verifyReportLines } from "./verify-report-text.ts";

const check = (seq: number, source: "postgres" | "outside") => ({
  checkpoint: { seq, headHash: "a".repeat(64), atMicros: 0 },
  status: "ok" as const,
  message: "matches the chain",
  source,
});

describe("verifyReportLines", () => {
  it("prints the verdict, then the checkpoints by seq whatever source they came from", () => {
    const report: ChainVerifyReport = {
      ok: true,
      records: 21,
      fromSeq: 1,
      head: { seq: 21, hash: "b".repeat(64) },
      badRows: 0,
      gaps: [],
      checkpoints: [check(21, "postgres"), check(19, "outside"), check(12, "outside"), check(21, "outside")],
      signatures: [],
    };
    expect(verifyReportLines(report, "ConfigMap gatehouse-system/gatehouse-audit-checkpoints")).toEqual([
      `audit chain intact: 21 records from seq 1, head seq 21 (${"b".repeat(16)}…)`,
      "checkpoint seq 12 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
      "checkpoint seq 19 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
      "checkpoint seq 21 (Postgres audit_checkpoints): ok — matches the chain",
      "checkpoint seq 21 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
    ]);
  });

  it("names the first checkpoint that disagrees and each outside checkpoint's signature", () => {
    const where = "ConfigMap gatehouse-system/gatehouse-audit-checkpoints";
    const report: ChainVerifyReport = {
      ok: false,
      records: 30,
      fromSeq: 1,
      head: { seq: 30, hash: "b".repeat(64) },
      badRows: 0,
      gaps: [],
      checkpoints: [
        check(5, "outside"),
        check(12, "outside"),
        {
          ...check(20, "outside"),
          status: "hash_mismatch",
          message: "record 20 hashes to …: the chain was rewritten",
        },
        check(30, "outside"),
      ],
      signatures: [
        { seq: 5, status: "unsigned_legacy", message: "unsigned (legacy)" },
        { seq: 12, status: "valid", kid: "k1", message: "signed by key k1" },
        { seq: 20, status: "valid", kid: "k1", message: "signed by key k1" },
        {
          seq: 30,
          status: "unknown_kid",
          kid: "x",
          message: "signed by kid x, which is not a published witness key",
        },
      ],
      firstDisagreement: { seq: 20, source: "outside", problem: "hash_mismatch", message: "…" },
    };
    expect(verifyReportLines(report, where)).toEqual([
      `AUDIT CHAIN BROKEN: 30 records from seq 1, head seq 30 (${"b".repeat(16)}…)`,
      `first checkpoint that disagrees: seq 20 (${where}): the chain holds another hash there`,
      `checkpoint seq 5 (${where}): ok — matches the chain; unsigned (legacy)`,
      `checkpoint seq 12 (${where}): ok — matches the chain; signed by key k1`,
      `checkpoint seq 20 (${where}): hash_mismatch — record 20 hashes to …: the chain was rewritten; signed by key k1`,
      `checkpoint seq 30 (${where}): ok — matches the chain; SIGNATURE FAILED (unknown_kid): signed by kid x, which is not a published witness key`,
    ]);
  });
});
