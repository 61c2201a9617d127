/** Percentiles of latency samples, as the benchmarks report them. */

/** Percentile `p` (0…1) of `samples`, nearest-rank method, rounded to 0.1; NaN when there are none. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return Math.round(sorted[rank - 1]! * 10) / 10;
}

/** p50 and p95 of `samples` (milliseconds in, milliseconds out). */
export function p50p95(samples: number[]): { p50Ms: number; p95Ms: number } {
  return { p50Ms: percentile(samples, 0.5), p95Ms: percentile(samples, 0.95) };
}

/** `a / b` rounded to 0.01 (a ratio or a share). */
export function ratio(a: number, b: number): number {
  return Math.round((a / b) * 100) / 100;
}
