import { describe, expect, it } from "vitest";
import type { ChainVerifyReport } from "../store/audit-verify.ts";
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
    };
    expect(verifyReportLines(report, "ConfigMap gatehouse-system/gatehouse-audit-checkpoints")).toEqual([
      `audit chain intact: 21 records from seq 1, head seq 21 (${"b".repeat(16)}…)`,
      "checkpoint seq 12 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
      "checkpoint seq 19 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
      "checkpoint seq 21 (Postgres audit_checkpoints): ok — matches the chain",
      "checkpoint seq 21 (ConfigMap gatehouse-system/gatehouse-audit-checkpoints): ok — matches the chain",
    ]);
  });
});
