import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { chartNodeOptions, hostNodeOptions, memoryQuantityBytes } from "../e2e/component-node-options.ts";

/** The heap limit (MiB) node reports when started with `nodeOptions` in NODE_OPTIONS. */
function heapLimitMiB(nodeOptions: string): number {
  const out = execFileSync(
    process.execPath,
    ["-e", "process.stdout.write(String(require('node:v8').getHeapStatistics().heap_size_limit))"],
    { env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions } },
  );
  return Number(out) / 2 ** 20;
}

describe("the heap the test bed gives the components: the chart's default Deployment's", () => {
  it("reads Kubernetes memory quantities, and refuses what is not one", () => {
    expect(memoryQuantityBytes("1Gi")).toBe(2 ** 30);
    expect(memoryQuantityBytes("512Mi")).toBe(512 * 2 ** 20);
    expect(memoryQuantityBytes("1G")).toBe(1e9);
    expect(memoryQuantityBytes(1073741824)).toBe(2 ** 30);
    expect(() => memoryQuantityBytes("1 gigabyte")).toThrow(/not a memory quantity: "1 gigabyte"/);
  });

  it("gives a host process the old space node gives the container: half its limit, or what the flags say", () => {
    expect(hostNodeOptions("--max-semi-space-size=2", 2 ** 30)).toBe(
      "--max-semi-space-size=2 --max-old-space-size=512",
    );
    expect(hostNodeOptions("", 2 * 2 ** 30)).toBe("--max-old-space-size=1024");
    expect(hostNodeOptions("--max-old-space-size-percentage=25%", 2 * 2 ** 30)).toBe(
      "--max-old-space-size=512",
    );
    expect(hostNodeOptions("--max-old-space-size=300 --jitless", 2 ** 30)).toBe(
      "--max-old-space-size=300 --jitless",
    );
  });

  it("gives both components the chart's semi-spaces and half the chart's memory limit of old space, which node applies", () => {
    for (const component of ["gateway", "controller"] as const) {
      const options = chartNodeOptions(component);
      expect(options).toBe("--max-semi-space-size=2 --max-old-space-size=512");
      // What node makes of it: 512 MiB of old space and three 2 MiB semi-spaces of young generation
      // (in a 1 GiB container without flags: 512 + 48; on a host of 16 GiB or more: 4096 + 192).
      expect(heapLimitMiB(options)).toBeCloseTo(518, 0);
    }
  });
});
