/**
 * Benchmark of the local control plane (`make bench`): how long the cold build took (recorded by
 * test/cluster/build.sh in the cache's `.complete` file), and how long a fresh control plane and local
 * node take to start, over several runs. The machine is shared and noisy, so each start is also given
 * as a ratio against a baseline measured in the same run: spawning `kubectl version --client`, a Go
 * binary of the same build, to completion.
 *
 * Writes test/bench/results/control-plane.json (merged with the demo's `demoWallSeconds`).
 *
 *   node test/bench/control-plane.ts [--runs N]     (default 3)
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { resolveBinDir } from "../cluster/src/binaries.ts";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { recordMeasurement } from "./record.ts";

const run = promisify(execFile);

interface Stats {
  min: number;
  median: number;
  max: number;
}

function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    min: round(sorted[0] ?? 0),
    median: round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    max: round(sorted.at(-1) ?? 0),
  };
}

async function seconds<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return [Number(process.hrtime.bigint() - start) / 1e9, value];
}

async function main(): Promise<void> {
  const runsFlag = process.argv.indexOf("--runs");
  const runs = runsFlag >= 0 ? Number(process.argv[runsFlag + 1]) : 3;
  const binDir = await resolveBinDir();
  const built = JSON.parse(readFileSync(join(dirname(binDir), ".complete"), "utf8")) as {
    buildSeconds: number;
    k8sVersion: string;
    etcdVersion: string;
  };

  const baseline: number[] = [];
  const planeStart: number[] = [];
  const nodeReady: number[] = [];
  for (let i = 0; i < runs; i++) {
    const [b] = await seconds(() => run(join(binDir, "kubectl"), ["version", "--client", "-o", "json"]));
    baseline.push(b);
    const [p, plane] = await seconds(() => startControlPlane({ binDir }));
    try {
      const [n, node] = await seconds(() => startLocalNode(plane));
      await node.stop();
      planeStart.push(p);
      nodeReady.push(n);
    } finally {
      await plane.stop();
    }
    console.log(`run ${i + 1}/${runs}: baseline ${b.toFixed(3)} s, control plane ${p.toFixed(1)} s`);
  }
  const base = stats(baseline).median;
  const result = {
    coldBuildSeconds: built.buildSeconds,
    controlPlaneStartSeconds: stats(planeStart),
    localNodeReadySeconds: stats(nodeReady),
    baselineKubectlSpawnSeconds: stats(baseline),
    controlPlaneStartRatio: Math.round((stats(planeStart).median / base) * 10) / 10,
    localNodeReadyRatio: Math.round((stats(nodeReady).median / base) * 10) / 10,
  };
  recordMeasurement("coldBuildSeconds", built.buildSeconds);
  recordMeasurement("controlPlaneStartSeconds", result.controlPlaneStartSeconds.median);
  recordMeasurement("localNodeReadySeconds", result.localNodeReadySeconds.median);
  recordMeasurement("baselineKubectlSpawnSeconds", base);
  recordMeasurement("controlPlaneStartRatio", result.controlPlaneStartRatio);
  recordMeasurement("localNodeReadyRatio", result.localNodeReadyRatio);
  console.log(JSON.stringify({ k8s: built.k8sVersion, etcd: built.etcdVersion, runs, ...result }, null, 2));
}

await main();
