/**
 * The NODE_OPTIONS of a component's container as the chart's default Deployment runs it, for the test
 * bed's host processes in the benchmarks (test/bench: startEnvironment's `chartNodeOptions`, and the
 * cache benchmark's own processes), so that they measure the heap and the CPU a platform runs. Tests
 * start the components with node's own heap sizes instead: the chart's 2 MiB semi-spaces save memory
 * with more young-generation collections, CPU that tests on a 2-core machine, beside the API server,
 * the local node and Postgres, pay for in wall time (the fault campaign's file: 113 s with them, 110 s
 * without, in one sitting), and tests do not measure heaps. integration/chart.test.ts checks that
 * these are the flags the chart renders.
 *
 * The chart's own flags (charts/gatehouse/values.yaml `<component>.nodeOptions`), and one more: in a
 * container node sizes V8's old generation from the memory limit (its cgroup's), half of it — 512 MiB
 * under the chart's 1 GiB. A host process has no such limit, and node takes half the machine's memory,
 * up to 4 GiB; V8 then also lets the heap grow to up to four times what is live before it collects
 * (its growing factor rises with the heap's limit), so the same program's peak RSS on a large host is
 * no measure of its peak in the container. So the old space is given explicitly: half the chart's
 * default limit (`<component>.resources.limits.memory`), or what the chart's flags set.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { readStages } from "../images/dockerfile-stages.ts";

const VALUES = fileURLToPath(new URL("../../charts/gatehouse/values.yaml", import.meta.url));
const DOCKERFILE = fileURLToPath(new URL("../../Dockerfile", import.meta.url));
const MIB = 2 ** 20;
const SUFFIXES: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** Bytes of a Kubernetes memory quantity (`1Gi`, `512Mi`, `1G`, `1073741824`). */
export function memoryQuantityBytes(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)([kMGT]i?)?$/.exec(String(quantity).trim());
  const factor = SUFFIXES[match?.[2] ?? ""];
  if (!match || factor === undefined) throw new Error(`not a memory quantity: ${JSON.stringify(quantity)}`);
  return Math.floor(Number(match[1]) * factor);
}

/**
 * `nodeOptions` for a process outside a container of `memoryLimitBytes`: the old space node would
 * give it there (half the limit) unless the flags size it; a percentage of the limit becomes MiB.
 */
export function hostNodeOptions(nodeOptions: string, memoryLimitBytes: number): string {
  const flags = nodeOptions.split(/\s+/).filter(Boolean);
  const sized = flags.some((flag) => /^--max-old-space-size(-percentage)?=/.test(flag));
  const mib = (share: number) => `--max-old-space-size=${Math.floor((memoryLimitBytes * share) / MIB)}`;
  return [
    ...flags.map((flag) => {
      const percentage = /^--max-old-space-size-percentage=(\d+(?:\.\d+)?)%?$/.exec(flag)?.[1];
      return percentage === undefined ? flag : mib(Number(percentage) / 100);
    }),
    ...(sized ? [] : [mib(0.5)]),
  ].join(" ");
}

/** The chart's default NODE_OPTIONS of `component`, for a host process (see the file's comment). */
export function chartNodeOptions(component: "gateway" | "controller"): string {
  const values = parse(readFileSync(VALUES, "utf8")) as Record<
    string,
    { nodeOptions?: string; resources?: { limits?: { memory?: string | number } } }
  >;
  const { nodeOptions = "", resources } = values[component] ?? {};
  const limit = resources?.limits?.memory;
  // Without a limit in the chart, node sizes the heap from the node's memory, as on this host.
  return limit === undefined ? nodeOptions : hostNodeOptions(nodeOptions, memoryQuantityBytes(limit));
}

/**
 * glibc's MALLOC_ARENA_MAX of `component`'s container (`<component>.mallocArenaMax`; none when unset):
 * how many malloc arenas node's threads may allocate from.
 */
export function chartMallocEnv(component: "gateway" | "controller"): Record<string, string> {
  const values = parse(readFileSync(VALUES, "utf8")) as Record<string, { mallocArenaMax?: number | null }>;
  const arenas = values[component]?.mallocArenaMax;
  return arenas ? { MALLOC_ARENA_MAX: String(arenas) } : {};
}

/** The chart's environment for `component`'s node and libc (not the operator's settings), for a host process. */
export function chartComponentEnv(component: "gateway" | "controller"): Record<string, string> {
  return { NODE_OPTIONS: chartNodeOptions(component), ...chartMallocEnv(component) };
}

/**
 * The V8 flags the operator image's ENTRYPOINT gives node (between `node` and the program), which
 * NODE_OPTIONS cannot carry: a benchmark's host processes start with them too.
 */
export function imageNodeFlags(): string[] {
  const entrypoint = readStages(DOCKERFILE).at(-1)?.entrypoint ?? [];
  const script = entrypoint.findIndex((word, i) => i > 0 && !word.startsWith("-"));
  return entrypoint.slice(1, script < 0 ? undefined : script);
}
