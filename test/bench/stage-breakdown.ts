/**
 * The invoke path's breakdown by stage, read from a component's /metrics: how many calls of each port
 * (`gatehouse_port_call_duration_seconds{port,method}`, observability/port-timing.ts) one invoke made and
 * how long they took, from the difference of two scrapes around a measured stretch.
 */

/** Count and sum (seconds) of each series of one histogram, keyed by its labels' values joined with ".". */
export type HistogramTotals = Map<string, { count: number; sum: number }>;

/**
 * The totals of histogram `name` on the /metrics page at `metricsUrl`. Only its `_sum` and `_count`
 * lines are read (prom-client writes labels without commas or quotes in their values here): the text
 * parser on npm (parse-prometheus-text-format 1.1.1) drops the labels, sum and count of a labelled
 * histogram as prom-client writes it.
 */
export async function scrapeHistogram(metricsUrl: string, name: string): Promise<HistogramTotals> {
  return histogramTotals(await (await fetch(metricsUrl)).text(), name);
}

/** The totals of histogram `name` in Prometheus text `text` (see {@link scrapeHistogram}). */
export function histogramTotals(text: string, name: string): HistogramTotals {
  const totals: HistogramTotals = new Map();
  const line = new RegExp(`^${name}_(sum|count)(?:\\{([^}]*)\\})? (\\S+)$`, "gm");
  for (const [, series, labels = "", value] of text.matchAll(line)) {
    const key = [...labels.matchAll(/\w+="([^"]*)"/g)].map((m) => m[1]).join(".");
    const entry = totals.get(key) ?? { count: 0, sum: 0 };
    entry[series as "sum" | "count"] = Number(value);
    totals.set(key, entry);
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
