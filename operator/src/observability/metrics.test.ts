import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.ts";

/** One sample line of the exposition text, e.g. `name{a="b"} 1`, or undefined. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("operator metrics", () => {
  it("says whether decisions count: 1 while the decision rules are enforced, 0 while not", async () => {
    const metrics = createMetrics();
    let enforced = true;
    metrics.trackDecisionRules(() => enforced);
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_decision_rules_enforced 1$/m);
    enforced = false;
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_decision_rules_enforced 0$/m);
  });

  it("says whether the database answers: 1 while it does, 0 while not", async () => {
    const metrics = createMetrics();
    let available = true;
    metrics.trackDatabase(() => available);
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_database_available 1$/m);
    available = false;
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_database_available 0$/m);
  });

  it("says whether transcript notices arrive: 1 while they do, 0 while sessions are polled", async () => {
    const metrics = createMetrics();
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_transcript_notices_live 0$/m);
    let live = true;
    metrics.trackTranscriptNotices(() => live);
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_transcript_notices_live 1$/m);
    live = false;
    expect(await metrics.registry.metrics()).toMatch(/^gatehouse_transcript_notices_live 0$/m);
  });

  it("says while the audit witness refuses to publish, and at which seq the chain disagrees", async () => {
    const metrics = createMetrics();
    metrics.witnessMetrics.refused({ seq: 42, reason: "rewritten", message: "…" });
    let text = await metrics.registry.metrics();
    expect(text).toMatch(/^gatehouse_audit_witness_mismatch 1$/m);
    expect(text).toMatch(/^gatehouse_audit_witness_mismatch_seq 42$/m);
    expect(sample(text, "gatehouse_audit_witness_refusals_total", 'reason="rewritten"')).toBe(1);
    metrics.witnessMetrics.agreed(43);
    text = await metrics.registry.metrics();
    expect(text).toMatch(/^gatehouse_audit_witness_mismatch 0$/m);
    expect(text).toMatch(/^gatehouse_audit_witness_mismatch_seq 0$/m);
  });

  it("exposes invoke durations per decision in seconds", async () => {
    const metrics = createMetrics();
    metrics.coreMetrics.invoked("allowed", 40);
    metrics.coreMetrics.invoked("allowed", 2_000);
    metrics.coreMetrics.invoked("denied", 3);
    const text = await metrics.registry.metrics();
    expect(text).toContain("# TYPE gatehouse_invoke_duration_seconds histogram");
    expect(sample(text, "gatehouse_invoke_duration_seconds_count", 'decision="allowed"')).toBe(2);
    expect(sample(text, "gatehouse_invoke_duration_seconds_sum", 'decision="allowed"')).toBeCloseTo(2.04);
    expect(sample(text, "gatehouse_invoke_duration_seconds_bucket", 'le="0.05",decision="allowed"')).toBe(1);
    expect(sample(text, "gatehouse_invoke_duration_seconds_count", 'decision="denied"')).toBe(1);
  });

  it("counts finished executions per state and error kind, none for a success", async () => {
    const metrics = createMetrics();
    metrics.coreMetrics.executionFinished("succeeded", undefined);
    metrics.coreMetrics.executionFinished("failed", "forbidden");
    metrics.coreMetrics.executionFinished("failed", "forbidden");
    metrics.coreMetrics.executionFinished("unknown", "timeout");
    const text = await metrics.registry.metrics();
    expect(text).toContain("# TYPE gatehouse_executions_total counter");
    expect(sample(text, "gatehouse_executions_total", 'state="succeeded",error_kind="none"')).toBe(1);
    expect(sample(text, "gatehouse_executions_total", 'state="failed",error_kind="forbidden"')).toBe(2);
    expect(sample(text, "gatehouse_executions_total", 'state="unknown",error_kind="timeout"')).toBe(1);
  });

  it("exposes the time from an Approval's creation to its decision per outcome", async () => {
    const metrics = createMetrics();
    metrics.approvalDecided("Approved", 12_000);
    metrics.approvalDecided("Expired", 3_600_000);
    const text = await metrics.registry.metrics();
    expect(text).toContain("# TYPE gatehouse_approval_decision_seconds histogram");
    expect(sample(text, "gatehouse_approval_decision_seconds_sum", 'outcome="Approved"')).toBe(12);
    expect(sample(text, "gatehouse_approval_decision_seconds_bucket", 'le="15",outcome="Approved"')).toBe(1);
    expect(sample(text, "gatehouse_approval_decision_seconds_bucket", 'le="5",outcome="Approved"')).toBe(0);
    expect(sample(text, "gatehouse_approval_decision_seconds_sum", 'outcome="Expired"')).toBe(3600);
    expect(sample(text, "gatehouse_approval_decision_seconds_count", 'outcome="Rejected"')).toBeUndefined();
  });
});
