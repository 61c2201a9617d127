import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { trackArrayBuffers } from "../../operator/src/observability/memory-metrics.ts";
import { createMetrics } from "../../operator/src/observability/metrics.ts";
import { metricsMemory, procStatusMemory } from "./process-memory.ts";

describe("where a component's memory is (process-memory.ts)", () => {
  it("reads the resident set, anonymous and file-backed, and the peak from /proc/<pid>/status", () => {
    const text = [
      "Name:\tnode",
      "VmHWM:\t  819200 kB",
      "VmRSS:\t  524288 kB",
      "RssAnon:\t  460800 kB",
      "RssFile:\t   63488 kB",
      "RssShmem:\t       0 kB",
    ].join("\n");
    expect(procStatusMemory(text)).toEqual({ rss: 512, rssAnon: 450, rssFile: 62, peakRss: 800 });
    // This process's own: the parse finds every field the kernel writes.
    const own = procStatusMemory(readFileSync("/proc/self/status", "utf8"));
    expect(own.rss).toBeGreaterThan(0);
    expect(own.rssAnon + own.rssFile).toBeCloseTo(own.rss, 0);
  });

  it("reads the heap, young generation, external memory and ArrayBuffers from the operator's /metrics", async () => {
    const metrics = createMetrics();
    trackArrayBuffers(metrics.registry);
    const text = await metrics.registry.metrics();
    const read = metricsMemory(text);
    const own = process.memoryUsage();
    // Every figure is present (a renamed metric would read 0), and in the range of this process's own.
    for (const [name, mib] of Object.entries(read)) expect(mib, name).toBeGreaterThan(0);
    expect(read.heapTotal).toBeGreaterThanOrEqual(read.heapUsed);
    // In MiB: within a factor of two of this process's heap in bytes / 2^20.
    expect(read.heapUsed).toBeLessThan((2 * own.heapTotal) / 2 ** 20);
    expect(read.external).toBeGreaterThanOrEqual(read.arrayBuffers);
  });
});
