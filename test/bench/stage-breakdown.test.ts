import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { histogramTotals, stagesPerOp } from "./stage-breakdown.ts";

describe("the breakdown by stage from /metrics", () => {
  it("reads each labelled series' count and sum as prom-client writes them, and the stages per operation", async () => {
    const registry = new Registry();
    const histogram = new Histogram({
      name: "gatehouse_port_call_duration_seconds",
      help: "h",
      labelNames: ["port", "method"],
      registers: [registry],
    });
    histogram.observe({ port: "audit", method: "append" }, 0.002);
    const before = histogramTotals(await registry.metrics(), "gatehouse_port_call_duration_seconds");
    expect(before).toEqual(new Map([["audit.append", { count: 1, sum: 0.002 }]]));

    for (let i = 0; i < 4; i++) histogram.observe({ port: "audit", method: "append" }, 0.003);
    histogram.observe({ port: "executions", method: "claim" }, 0.01);
    histogram.observe({ port: "executions", method: "claim" }, 0.03);
    const after = histogramTotals(await registry.metrics(), "gatehouse_port_call_duration_seconds");
    expect(stagesPerOp(before, after, 2)).toEqual([
      { stage: "executions.claim", callsPerOp: 1, msPerOp: 20 },
      { stage: "audit.append", callsPerOp: 2, msPerOp: 6 },
    ]);
  });

  it("finds nothing of a histogram the page does not have", () => {
    expect(histogramTotals("other_seconds_count 3\n", "gatehouse_invoke_duration_seconds").size).toBe(0);
  });
});
