/**
 * Where a component's memory is while a benchmark runs: its resident set from /proc (anonymous and
 * file-backed), and from its /metrics (prom-client's process metrics) the V8 heap used and reserved,
 * the young generation, code space, and memory outside the heap (external, of which ArrayBuffers).
 * RSS much above the heap's total is native memory (malloc, WASM, buffers); heap total much above heap
 * used is garbage V8 has not collected yet or space it has not given back.
 */
import { readFileSync } from "node:fs";

/** One reading, in MiB. */
export interface MemorySample {
  rss: number;
  rssAnon: number;
  rssFile: number;
  heapUsed: number;
  heapTotal: number;
  newSpace: number;
  oldSpaceUsed: number;
  codeSpace: number;
  largeObjects: number;
  external: number;
  arrayBuffers: number;
}

const MIB = 2 ** 20;
const mib = (bytes: number) => Math.round((bytes / MIB) * 10) / 10;

/** VmRSS, RssAnon, RssFile and VmHWM of /proc/<pid>/status text, in MiB. */
export function procStatusMemory(text: string) {
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  return {
    rss: mib(kb("VmRSS") * 1024),
    rssAnon: mib(kb("RssAnon") * 1024),
    rssFile: mib(kb("RssFile") * 1024),
    peakRss: mib(kb("VmHWM") * 1024),
  };
}

/** The heap and external figures of a prom-client /metrics page (prefix `gatehouse_`), in MiB. */
export function metricsMemory(text: string) {
  const value = (name: string, labels = "") => {
    const line = new RegExp(`^gatehouse_${name}${labels.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text);
    return mib(Number(line?.[1] ?? 0));
  };
  return {
    heapUsed: value("nodejs_heap_size_used_bytes"),
    heapTotal: value("nodejs_heap_size_total_bytes"),
    newSpace: value("nodejs_heap_space_size_total_bytes", '{space="new"}'),
    oldSpaceUsed: value("nodejs_heap_space_size_used_bytes", '{space="old"}'),
    codeSpace: value("nodejs_heap_space_size_total_bytes", '{space="code"}'),
    largeObjects: value("nodejs_heap_space_size_used_bytes", '{space="large_object"}'),
    external: value("nodejs_external_memory_bytes"),
    arrayBuffers: value("nodejs_array_buffers_bytes"),
  };
}

/**
 * Samples process `pid` (its /metrics at `metricsUrl`) every `intervalMs` until stopped: the reading
 * with the highest RSS, the highest of each figure, and readings marked by name (`mark`).
 */
export class MemorySampler {
  private readonly pid: () => number;
  private readonly metricsUrl: string;
  private timer: NodeJS.Timeout | undefined;
  private atPeak: MemorySample | undefined;
  private readonly highest: Partial<MemorySample> = {};
  private readonly marks: Record<string, MemorySample> = {};
  private samples = 0;

  constructor(pid: () => number, metricsUrl: string) {
    this.pid = pid;
    this.metricsUrl = metricsUrl;
  }

  /** One reading now. */
  async sample(): Promise<MemorySample> {
    const metrics = metricsMemory(await (await fetch(this.metricsUrl)).text());
    const proc = procStatusMemory(readFileSync(`/proc/${this.pid()}/status`, "utf8"));
    const reading: MemorySample = {
      rss: proc.rss,
      rssAnon: proc.rssAnon,
      rssFile: proc.rssFile,
      ...metrics,
    };
    this.samples++;
    if (!this.atPeak || reading.rss > this.atPeak.rss) this.atPeak = reading;
    for (const [key, v] of Object.entries(reading) as [keyof MemorySample, number][]) {
      this.highest[key] = Math.max(this.highest[key] ?? 0, v);
    }
    return reading;
  }

  start(intervalMs = 2000): void {
    this.timer = setInterval(() => void this.sample().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  /** Takes a reading now and keeps it under `name`. */
  async mark(name: string): Promise<void> {
    this.marks[name] = await this.sample();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Everything so far, with the kernel's own peak (VmHWM, which sampling can miss). */
  report() {
    const proc = procStatusMemory(readFileSync(`/proc/${this.pid()}/status`, "utf8"));
    return {
      peakRssMiB: proc.peakRss,
      samples: this.samples,
      atHighestSampledRssMiB: this.atPeak,
      highestMiB: this.highest,
      atMiB: this.marks,
    };
  }
}
