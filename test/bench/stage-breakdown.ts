/**
 * The invoke path's breakdown by stage, read from a component's /metrics: how many calls of each port
 * (`gatehouse_port_call_duration_seconds{port,method}`, observability/port-timing.ts) one invoke made and
 * how long they took, from the difference of two scrapes around a measured stretch.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";

/** Count and sum (seconds) of each series of one histogram, keyed by its labels' values joined with ".". */
export type HistogramTotals = Map<string, { count: number; sum: number }>;

interface ParsedFamily {
  name: string;
  metrics: Array<{ labels?: Record<string, string>; count?: string; sum?: string }>;
}

/** The totals of histogram `name` on the /metrics page at `metricsUrl`. */
export async function scrapeHistogram(metricsUrl: string, name: string): Promise<HistogramTotals> {
  const text = await (await fetch(metricsUrl)).text();
  const family = (parsePrometheusTextFormat(text) as ParsedFamily[]).find((f) => f.name === name);
  const totals: HistogramTotals = new Map();
  for (const series of family?.metrics ?? []) {
    totals.set(Object.values(series.labels ?? {}).join("."), {
      count: Number(series.count ?? 0),
      sum: Number(series.sum ?? 0),
    });
  }
  return totals;
}

/** One stage of the breakdown: calls of it per operation and milliseconds spent in it per operation. */
export interface Stage {
  stage: string;
  callsPerOp: number;
  msPerOp: number;
}

/** What happened between `before` and `after`, per operation of `ops`, the most expensive stage first. */
export function stagesPerOp(before: HistogramTotals, after: HistogramTotals, ops: number): Stage[] {
  const stages: Stage[] = [];
  for (const [stage, end] of after) {
    const start = before.get(stage) ?? { count: 0, sum: 0 };
    const calls = end.count - start.count;
    if (calls <= 0) continue;
    stages.push({
      stage,
      callsPerOp: Math.round((calls / ops) * 100) / 100,
      msPerOp: Math.round(((end.sum - start.sum) * 1000 * 1000) / ops) / 1000,
    });
  }
  return stages.sort((a, b) => b.msPerOp - a.msPerOp);
}
