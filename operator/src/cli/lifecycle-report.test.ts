import { describe, expect, it } from "vitest";
import type { OpenRequestsFound } from "../store/approval-records.ts";
import { type ApprovalLookup, lifecycleReportLines, lifecycleReportOf } from "./lifecycle-report.ts";

const found: OpenRequestsFound = {
  lifecycleMarkerSeq: 3,
  open: [
    {
      seq: 7,
      atMicros: 1_796_000_000_000_000,
      executionId: "a".repeat(40),
      namespace: "plant-a",
      name: "apr-aaa",
    },
    {
      seq: 9,
      atMicros: 1_796_000_001_000_000,
      executionId: "b".repeat(40),
      namespace: "plant-a",
      name: "apr-bbb",
    },
  ],
};

describe("the verdict on Approval requests without an end", () => {
  it("holds when each open request's Approval is still in the cluster", () => {
    const lookups = new Map<string, ApprovalLookup>([
      ["plant-a/apr-aaa", { found: true, phase: "Pending" }],
      ["plant-a/apr-bbb", { found: true, phase: "Pending" }],
    ]);
    const report = lifecycleReportOf(found, lookups);
    expect(report).toMatchObject({ ok: true, lost: [], lifecycleMarkerSeq: 3 });
    expect(lifecycleReportLines(report).at(-1)).toBe(
      "every Approval request has an end in the chain, or its Approval is still in the cluster (2 waiting)",
    );
  });

  it("names each request whose Approval is gone without an end, and fails", () => {
    const lookups = new Map<string, ApprovalLookup>([
      ["plant-a/apr-aaa", { found: true, phase: "Pending" }],
      ["plant-a/apr-bbb", { found: false }],
    ]);
    const report = lifecycleReportOf(found, lookups);
    expect(report.ok).toBe(false);
    expect(report.lost.map((l) => l.name)).toEqual(["apr-bbb"]);
    const lines = lifecycleReportLines(report);
    expect(lines[0]).toBe(
      "lifecycle marker at seq 3: requests before it predate recorded decisions and are not checked",
    );
    expect(lines).toContain(
      `  seq 9  2026-11-30T00:53:21.000Z  Approval plant-a/apr-bbb (execution ${"b".repeat(40)}) has no end in the chain and is gone from the cluster (or re-created as another object): its end was lost (was its finalizer removed by hand?)`,
    );
    expect(lines.at(-1)).toMatch(/^1 Approval request without an end/);
  });

  it("counts a request whose Approval was re-created under its name as lost, not waiting", () => {
    const recreated: OpenRequestsFound = {
      open: [{ ...(found.open[0] as OpenRequestsFound["open"][number]), approvalUid: "uid-first" }],
    };
    const lookups = new Map<string, ApprovalLookup>([
      ["plant-a/apr-aaa", { found: true, phase: "Pending", uid: "uid-second" }],
    ]);
    expect(lifecycleReportOf(recreated, lookups)).toMatchObject({ ok: false, waiting: [] });
    const same = new Map<string, ApprovalLookup>([
      ["plant-a/apr-aaa", { found: true, phase: "Pending", uid: "uid-first" }],
    ]);
    expect(lifecycleReportOf(recreated, same)).toMatchObject({ ok: true, lost: [] });
  });

  it("checks every request when the chain has no marker, and holds for a chain without open requests", () => {
    const report = lifecycleReportOf({ open: [] }, new Map());
    expect(lifecycleReportLines(report)).toEqual([
      "no lifecycle marker: every request in the chain is checked",
      "every Approval request has an end in the chain",
    ]);
  });
});

describe("the verdict on approved calls that ran without a request", () => {
  const unrequested = [
    { seq: 12, atMicros: 1_796_000_002_000_000, executionId: "c".repeat(40), approval: "apr-ccc" },
  ];

  it("fails, naming each, though every request has an end", () => {
    const report = lifecycleReportOf({ open: [] }, new Map(), unrequested);
    expect(report).toMatchObject({ ok: false, lost: [], unrequested });
    const lines = lifecycleReportLines(report);
    expect(lines).toContain(
      `  seq 12  2026-11-30T00:53:22.000Z  execution ${"c".repeat(40)} of Approval apr-ccc started with no approval.requested before it: no tool call asked for it (who created the Approval? see the API server's audit log)`,
    );
    expect(lines.at(-1)).toBe(
      "1 approved call run without a request: gatehouse-audit show --approval NAME prints what the chain holds",
    );
  });

  it("holds when there is none", () => {
    expect(lifecycleReportOf({ open: [] }, new Map(), []).ok).toBe(true);
  });
});
