/**
 * Benchmark of the operator's session path (`make bench`, not `make test`): on a fresh local
 * control plane, create 200 AgentSessions whose agent image is mapped to `sleep infinity`
 * (`gatehouse/sleeper:dev`) and time until every one has a Running pod; in the same run, as the
 * baseline, create 200 such pods directly and time the same; then 200 such pods under the agent pods'
 * NetworkPolicy (selecting them by their own label), so the node enforces the same rules for them as
 * for the sessions' pods (`ratioToPodsUnderPolicy`). The machine is shared and noisy, so the result is
 * the ratio. Also recorded: the operator's CPU time (utime+stime from
 * /proc/<pid>/stat, in seconds) and peak RSS (VmHWM from /proc/<pid>/status) over the session run, and
 * the API requests it made per session (from the API server's audit log).
 *
 * `breakdown` says where the time goes: the operator's requests per session by verb and resource
 * (409s apart), the AgentSession controller's reconciles and their time per session and its writer's
 * calls (the controller's /metrics), how busy its workers were, and per session (audit log, one host
 * clock) the time from its create to the operator's first request about it (informer delay + queue
 * wait), to its pod's create, to the pod's binding by the scheduler, to the node's last status write of
 * the pod (about when it ran) and to the session's last status write. `nodeStages` splits the local
 * node's part for each set of pods (its log, node-stages.ts): binding → the node's worker sees the pod
 * → network namespace and veth → NetworkPolicy rules in force → volumes → process spawned → Running
 * written, and the NetworkPolicy enforcer's passes (planning time, installs) meanwhile.
 *
 * Writes test/bench/results/operator-sessions.json.
 *
 *   node test/bench/operator-sessions.ts [--sessions N]    (default 200)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { CONTROLLER_USERNAME, OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { agentNetworkPolicy } from "../../operator/src/controllers/agentsession/network-policy.ts";
import { eventually, startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { startEnvironment } from "../e2e/environment.ts";
import type { Kubectl } from "../e2e/kubectl.ts";
import { type ApiRequest, readApiRequests } from "./api-audit-log.ts";
import { nodeStages, readNodeLog } from "./node-stages.ts";
import { p50p95 } from "./percentiles.ts";
import { scrapeHistogram, stagesPerOp } from "./stage-breakdown.ts";

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

/**
 * Requests per session (or pod), by `verb resource[/subresource]` and code class (409 apart); with
 * `byUser`, prefixed by who sent them.
 */
function requestsByKind(requests: ApiRequest[], sessions: number, byUser = false): Record<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) {
    const kind = `${byUser ? `${r.user} ` : ""}${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ""}${r.code === 409 ? " (409)" : ""}`;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return Object.fromEntries(
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([kind, n]) => [kind, Math.round((n / sessions) * 100) / 100]),
  );
}

/**
 * Per session, milliseconds from alice's create of it to: the operator's first request naming it or
 * its pod, the pod's create, the scheduler's binding of the pod, the operator's last status write.
 */
function sessionTimeline(
  all: ApiRequest[],
  sessions: string[],
): Record<string, { p50Ms: number; p95Ms: number }> {
  const stages = {
    firstOperatorRequest: [],
    podCreated: [],
    podBound: [],
    lastNodePodStatus: [],
    lastStatusWrite: [],
  } as Record<string, number[]>;
  const created = new Map<string, number>();
  for (const r of all) {
    if (r.verb === "create" && r.resource === "agentsessions" && r.name && !created.has(r.name)) {
      created.set(r.name, r.receivedMs);
    }
  }
  // The pod is named after its session (agentsession/pod.ts): "<session>-…".
  const sessionOf = (name: string | undefined) =>
    sessions.find((s) => name === s || name?.startsWith(`${s}-`)) ?? undefined;
  const first = new Map<string, Record<string, number>>();
  for (const r of all) {
    const session =
      r.resource === "agentsessions" ? r.name : r.resource === "pods" ? sessionOf(r.name) : undefined;
    if (!session || !created.has(session)) continue;
    const at = first.get(session) ?? {};
    first.set(session, at);
    const since = r.receivedMs - created.get(session)!;
    if (r.user === CONTROLLER_USERNAME && at.firstOperatorRequest === undefined)
      at.firstOperatorRequest = since;
    if (r.user === CONTROLLER_USERNAME && r.verb === "create" && r.resource === "pods")
      at.podCreated ??= since;
    if (r.resource === "pods" && r.subresource === "binding") at.podBound ??= since;
    // The node's last pod status write: about when the pod became Running (the sleeper never ends).
    if (r.resource === "pods" && r.subresource === "status" && r.user !== CONTROLLER_USERNAME) {
      at.lastNodePodStatus = since;
    }
    if (r.user === CONTROLLER_USERNAME && r.resource === "agentsessions" && r.subresource === "status")
      at.lastStatusWrite = since;
  }
  for (const at of first.values()) for (const [stage, ms] of Object.entries(at)) stages[stage]?.push(ms);
  return Object.fromEntries(Object.entries(stages).map(([stage, samples]) => [stage, p50p95(samples)]));
}

/**
 * For the pods created directly, milliseconds from each pod's create to the scheduler's binding of it
 * and to the node's last status write of it: the same stages as the sessions' pods, for comparison.
 */
function podTimeline(all: ApiRequest[], namespace: string): Record<string, { p50Ms: number; p95Ms: number }> {
  const created = new Map<string, number>();
  const bound: number[] = [];
  const lastStatus = new Map<string, number>();
  for (const r of all) {
    if (r.namespace !== namespace || r.resource !== "pods" || !r.name) continue;
    if (r.verb === "create" && !r.subresource) created.set(r.name, r.receivedMs);
    const since = r.receivedMs - (created.get(r.name) ?? r.receivedMs);
    if (r.subresource === "binding") bound.push(since);
    if (r.subresource === "status") lastStatus.set(r.name, since);
  }
  return { podBound: p50p95(bound), lastNodePodStatus: p50p95([...lastStatus.values()]) };
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
    chartNodeOptions: true,
    componentEnv: { AGENT_IMAGE: "gatehouse/sleeper:dev", AGENT_RESOURCES: JSON.stringify({ requests }) },
  });
  try {
    const { kubectl } = env;
    // The 1-minute load average as each run starts and as the last ends: the machine is shared.
    const load = { beforeBaseline: loadavg()[0]!, beforeSessions: 0, after: 0 };
    /** Creates `count` sleeper pods in `namespace` (with `policy` first) and times them to Running. */
    const baselineRun = async (namespace: string, policy?: object) => {
      await kubectl.ok("admin", ["create", "namespace", namespace]);
      if (policy) await kubectl.ok("admin", ["create", "-f", "-"], JSON.stringify(policy));
      await kubectl.ok("admin", [
        "wait",
        "--for=jsonpath={.metadata.name}",
        "serviceaccount/default",
        "-n",
        namespace,
      ]);
      const pods = Array.from({ length: count }, (_, i) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `sleeper-${i}`, namespace, labels: { bench: "direct" } },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "sleeper", image: "gatehouse/sleeper:dev", resources: { requests } }],
        },
      }));
      const sinceMs = Date.now();
      const start = process.hrtime.bigint();
      await kubectl.ok("admin", ["create", "-f", "-"], list(pods));
      const seconds = await untilRunning(kubectl, namespace, "bench=direct", start);
      // The run's requests end here: deleting the namespace makes more.
      const untilMs = Date.now();
      await kubectl.ok("admin", ["delete", "namespace", namespace, "--wait=true", "--timeout=300s"]);
      // The pods are gone from the API before the node has removed their network namespaces: the
      // next run would start beside 200 teardowns (600 `ip` processes) that no run of its own has.
      await eventually(`the node to remove the network of ${namespace}'s pods`, 300_000, async () =>
        (readNodeLog(node.logPath).released.get(namespace) ?? 0) >= count ? true : undefined,
      );
      return { namespace, seconds, sinceMs, untilMs };
    };
    // Baseline: the same pods, created directly.
    const plain = await baselineRun("bench-pods");
    // And the same pods under the agent pods' NetworkPolicy (selecting them by their own label), so
    // the node enforces the same rules for them as for the sessions' pods.
    const gatewayPort = Number(new URL(env.gatewayUrl).port);
    const policy = agentNetworkPolicy("bench-policy-pods", {
      gatewayPort,
      operatorNamespace: OPERATOR_NAMESPACE,
      offClusterGateways: [{ cidr: `${plane.bridgeIP}/32`, port: gatewayPort }],
    });
    // Not Gatehouse's own (no managed-by label, another name), so no controller of it takes an interest.
    policy.metadata = { name: "bench-agent-like", namespace: "bench-policy-pods" };
    policy.spec!.podSelector = { matchLabels: { bench: "direct" } };
    // On the wire an ingress rule's peers are `from` (the typed client names them `_from`).
    for (const rule of policy.spec!.ingress ?? []) {
      Object.assign(rule, { from: rule._from });
      delete rule._from;
    }
    const underPolicy = await baselineRun("bench-policy-pods", policy);
    const baselineSeconds = plain.seconds;
    const baselineSinceMs = plain.sinceMs;
    const baselineUntilMs = plain.untilMs;

    load.beforeSessions = loadavg()[0]!;
    const sinceMs = Date.now();
    // The controller runs the sessions; the gateway only serves their agents (idle here).
    const pid = env.controller.pid;
    const controllerMetrics = `${env.controller.healthUrl}/metrics`;
    const scrape = async () => ({
      reconcile: await scrapeHistogram(controllerMetrics, "gatehouse_reconcile_time_seconds"),
      ports: await scrapeHistogram(controllerMetrics, "gatehouse_port_call_duration_seconds"),
    });
    const metricsBefore = await scrape();
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
    const untilMs = Date.now();
    load.after = loadavg()[0]!;
    const operatorCpuSeconds = cpuSeconds(pid) - cpuBefore;
    const operatorPeakRssMiB = peakRssMiB(pid);
    const metricsAfter = await scrape();
    const baselineRequests = readApiRequests(plane.auditLogPath, baselineSinceMs).filter(
      (r) => r.receivedMs < baselineUntilMs,
    );
    const all = readApiRequests(plane.auditLogPath, sinceMs);
    const operatorRequests = all.filter((r) => r.user === CONTROLLER_USERNAME);
    const reconcile = (m: typeof metricsBefore) => m.reconcile.get("agentsession") ?? { count: 0, sum: 0 };
    const reconciles = reconcile(metricsAfter).count - reconcile(metricsBefore).count;
    const reconcileSeconds = reconcile(metricsAfter).sum - reconcile(metricsBefore).sum;
    const names = sessions.map((s) => s.metadata.name);
    const nodeLog = readNodeLog(node.logPath);
    const breakdown = {
      reconcilesPerSession: Math.round((reconciles / count) * 100) / 100,
      reconcileMsPerSession: Math.round((reconcileSeconds * 1000) / count),
      // Reconcile time over wall time: near the worker count, the queue is the bottleneck.
      busyWorkers: Math.round((reconcileSeconds / sessionSeconds) * 100) / 100,
      apiRequestsPerSession: requestsByKind(operatorRequests, count),
      writerCalls: stagesPerOp(metricsBefore.ports, metricsAfter.ports, count).filter((s) =>
        s.stage.startsWith("agentsession."),
      ),
      sinceSessionCreated: sessionTimeline(all, names),
      // kubectl creates all 200 in one request, so these count from each pod's own create.
      baselineSincePodCreated: podTimeline(baselineRequests, "bench-pods"),
      // Everyone else's requests in the namespace per pod (the node, the scheduler, the bench's kubectl
      // polls), for the sessions' pods and the plain ones.
      othersPerSessionPod: requestsByKind(
        all.filter((r) => r.namespace === "plant-a" && r.user !== CONTROLLER_USERNAME),
        count,
        true,
      ),
      othersPerBaselinePod: requestsByKind(
        baselineRequests.filter((r) => r.namespace === "bench-pods"),
        count,
        true,
      ),
      nodeStages: {
        sessionPods: nodeStages(nodeLog, all, "plant-a", sinceMs, untilMs),
        baselinePods: nodeStages(nodeLog, baselineRequests, "bench-pods", baselineSinceMs, baselineUntilMs),
        baselinePodsUnderPolicy: nodeStages(
          nodeLog,
          readApiRequests(plane.auditLogPath, underPolicy.sinceMs).filter(
            (r) => r.receivedMs < underPolicy.untilMs,
          ),
          underPolicy.namespace,
          underPolicy.sinceMs,
          underPolicy.untilMs,
        ),
      },
    };
    const result = {
      description:
        "200 AgentSessions → Running agent pods vs, in the same run, 200 plain pods created directly (ratio) and 200 plain pods under the agent pods' NetworkPolicy (ratioToPodsUnderPolicy: the node enforces the same rules for them); nodeStages: the local node's part of each set by stage (its log). The node plans NetworkPolicy in linear time and not again when a pod turns Running.",
      loadAverage: Object.fromEntries(Object.entries(load).map(([k, v]) => [k, Math.round(v * 10) / 10])),
      sessions: count,
      sessionsToRunningSeconds: Math.round(sessionSeconds * 100) / 100,
      baselinePodsToRunningSeconds: Math.round(baselineSeconds * 100) / 100,
      ratio: Math.round((sessionSeconds / baselineSeconds) * 100) / 100,
      // The same pods under the agent NetworkPolicy: what the operator adds to what the node must do.
      baselinePodsUnderPolicyToRunningSeconds: Math.round(underPolicy.seconds * 100) / 100,
      ratioToPodsUnderPolicy: Math.round((sessionSeconds / underPolicy.seconds) * 100) / 100,
      operatorCpuSeconds: Math.round(operatorCpuSeconds * 100) / 100,
      operatorPeakRssMiB,
      apiRequestsPerSession: Math.round((operatorRequests.length / count) * 10) / 10,
      breakdown,
      measuredAt: new Date().toISOString(),
    };
    writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `${count} sessions → Running pods in ${result.sessionsToRunningSeconds} s; the same pods created directly: ` +
        `${result.baselinePodsToRunningSeconds} s; ratio ${result.ratio}×; operator CPU ${result.operatorCpuSeconds} s, ` +
        `peak RSS ${operatorPeakRssMiB} MiB, ${result.apiRequestsPerSession} API requests per session`,
    );
    console.log(JSON.stringify(breakdown, null, 2));
    console.log(`wrote ${RESULTS}`);
  } finally {
    await env.stop();
    await node.stop();
    await plane.stop();
  }
}

await main();
