/**
 * Benchmark of the operator's session path (`make bench`, not `make test`): on a fresh local
 * control plane, create 200 AgentSessions whose agent image is mapped to `sleep infinity`
 * (`gatehouse/sleeper:dev`) and time until every one has a Running pod; in the same run, as the
 * baseline, create 200 such pods directly and time the same. The machine is shared and noisy, so the
 * result is the ratio of the two. Also recorded: the operator's CPU time (utime+stime from
 * /proc/<pid>/stat, in seconds) and peak RSS (VmHWM from /proc/<pid>/status) over the session run, and
 * the API requests it made per session (from the API server's audit log).
 *
 * Writes test/bench/results/operator-sessions.json.
 *
 *   node test/bench/operator-sessions.ts [--sessions N]    (default 200)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { startEnvironment } from "../e2e/environment.ts";
import type { Kubectl } from "../e2e/kubectl.ts";

const RESULTS = fileURLToPath(new URL("./results/operator-sessions.json", import.meta.url));
const flag = process.argv.indexOf("--sessions");
const count = flag >= 0 ? Number(process.argv[flag + 1]) : 200;
const CLOCK_TICKS = 100; // USER_HZ on Linux (sysconf(_SC_CLK_TCK)), the unit of /proc/<pid>/stat times

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function peakRssMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
}

/** Polls until `count` pods matching `selector` in `namespace` are Running; returns seconds since `start`. */
async function untilRunning(
  kubectl: Kubectl,
  namespace: string,
  selector: string,
  start: bigint,
): Promise<number> {
  for (;;) {
    const pods = await kubectl.json<{ items: Array<{ status?: { phase?: string } }> }>("admin", [
      "get",
      "pods",
      "-n",
      namespace,
      "-l",
      selector,
    ]);
    if (pods.items.filter((p) => p.status?.phase === "Running").length >= count) {
      return Number(process.hrtime.bigint() - start) / 1e9;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function list(items: unknown[]): string {
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}

async function main(): Promise<void> {
  const plane = await startControlPlane();
  const node = await startLocalNode(plane);
  // The local node offers the machine's CPUs (2 here): small requests, so 200 pods fit, for both runs.
  const requests = { cpu: "5m", memory: "16Mi" };
  const env = await startEnvironment(plane, {
    componentEnv: { AGENT_IMAGE: "gatehouse/sleeper:dev", AGENT_RESOURCES: JSON.stringify({ requests }) },
  });
  try {
    const { kubectl } = env;
    // Baseline: the same pods, created directly.
    await kubectl.ok("admin", ["create", "namespace", "bench-pods"]);
    await kubectl.ok("admin", [
      "wait",
      "--for=jsonpath={.metadata.name}",
      "serviceaccount/default",
      "-n",
      "bench-pods",
    ]);
    const pods = Array.from({ length: count }, (_, i) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `sleeper-${i}`, namespace: "bench-pods", labels: { bench: "direct" } },
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "sleeper", image: "gatehouse/sleeper:dev", resources: { requests } }],
      },
    }));
    const baselineStart = process.hrtime.bigint();
    await kubectl.ok("admin", ["create", "-f", "-"], list(pods));
    const baselineSeconds = await untilRunning(kubectl, "bench-pods", "bench=direct", baselineStart);
    await kubectl.ok("admin", ["delete", "namespace", "bench-pods", "--wait=true", "--timeout=300s"]);

    const since = new Date().toISOString();
    // The controller runs the sessions; the gateway only serves their agents (idle here).
    const pid = env.controller.pid;
    const cpuBefore = cpuSeconds(pid);
    const sessions = Array.from({ length: count }, (_, i) => ({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name: `bench-${i}`, namespace: "plant-a" },
      spec: { subject: { user: "alice" }, model: { name: "scripted/answer" }, messages: [{ text: "Wait." }] },
    }));
    const sessionStart = process.hrtime.bigint();
    await kubectl.ok("alice", ["create", "-f", "-"], list(sessions));
    const sessionSeconds = await untilRunning(
      kubectl,
      "plant-a",
      "app.kubernetes.io/name=gatehouse-agent",
      sessionStart,
    );
    const operatorCpuSeconds = cpuSeconds(pid) - cpuBefore;
    const operatorPeakRssMiB = peakRssMiB(pid);
    const operatorRequests = readFileSync(plane.auditLogPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map(
        (line) =>
          JSON.parse(line) as { stage: string; requestReceivedTimestamp: string; user: { username: string } },
      )
      .filter(
        (e) =>
          e.stage === "ResponseComplete" &&
          e.requestReceivedTimestamp >= since &&
          e.user.username === "system:serviceaccount:gatehouse-system:gatehouse-operator",
      ).length;
    const result = {
      sessions: count,
      sessionsToRunningSeconds: Math.round(sessionSeconds * 100) / 100,
      baselinePodsToRunningSeconds: Math.round(baselineSeconds * 100) / 100,
      ratio: Math.round((sessionSeconds / baselineSeconds) * 100) / 100,
      operatorCpuSeconds: Math.round(operatorCpuSeconds * 100) / 100,
      operatorPeakRssMiB,
      apiRequestsPerSession: Math.round((operatorRequests / count) * 10) / 10,
      measuredAt: new Date().toISOString(),
    };
    writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `${count} sessions → Running pods in ${result.sessionsToRunningSeconds} s; the same pods created directly: ` +
        `${result.baselinePodsToRunningSeconds} s; ratio ${result.ratio}×; operator CPU ${result.operatorCpuSeconds} s, ` +
        `peak RSS ${operatorPeakRssMiB} MiB, ${result.apiRequestsPerSession} API requests per session`,
    );
    console.log(`wrote ${RESULTS}`);
  } finally {
    await env.stop();
    await node.stop();
    await plane.stop();
  }
}

await main();
