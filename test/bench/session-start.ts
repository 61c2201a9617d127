/**
 * Benchmark of session → model (`make bench`, not `make test`): on a fresh local control plane
 * with the operator and the real agent runtime, alice creates an AgentSession (`kubectl create`, model
 * `scripted/answer`: one answer, no tool) and the time until the scripted model receives the session's
 * first request is measured (the model records each request's arrival time), for each engine the agent
 * image carries (spec.engine; pi starts Pi as a child process first), interleaved in the same run.
 * Sessions run one at a time: each is Completed before the next is created.
 *
 * Baseline, measured in the same run and interleaved with the sessions: a direct pod creation to its
 * process start — `kubectl create` of a `gatehouse/testbox:dev` pod, until the process prints `started
 * … at <epoch ms>` (its first statement, a Node process like the agent). It is what any pod costs on
 * this control plane and node, so the ratio says how much the operator, the gateway and the agent's
 * own start add to it.
 *
 * Operator share, per session, from the API server's audit log, the local node's log and the operator's
 * log (one host clock): the time from the API server's answer to the create until the operator's
 * request creating the agent pod arrives (watch, reconcile: ServiceAccount, NetworkPolicy, pod), plus the
 * gateway's own time answering the agent's `GET /v1/session` (fastify's responseTime), plus — when the
 * agent's model requests go through the gateway's model proxy — the time from the gateway receiving the
 * request to the model receiving it; over the whole. The rest is reported by stage: kubectl and the API
 * server, pod creation to the node spawning the container, and the agent process from spawn to request.
 * The agent process's load alone — CPU time of a fresh process loading its engine's modules, without
 * and with Node's compile cache — is `agentStartCpu` (agent-start.ts).
 *
 * Writes test/bench/results/session-start.json.
 *
 *   node test/bench/session-start.ts [--sessions N]    (default 20, after 2 warm-up sessions)
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ENGINES, type Engine } from "../../operator/src/api/agentsession.ts";
import { CONTROLLER_USERNAME } from "../../operator/src/api/well-known.ts";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { NAMESPACE, startEnvironment } from "../e2e/environment.ts";
import { eventually } from "../e2e/story.ts";
import { agentStartCpu } from "./agent-start.ts";
import { readApiRequests } from "./api-audit-log.ts";
import { p50p95, percentile, ratio } from "./percentiles.ts";

const RESULTS = fileURLToPath(new URL("./results/session-start.json", import.meta.url));
const flag = process.argv.indexOf("--sessions");
const count = flag >= 0 ? Number(process.argv[flag + 1]) : 20;
const WARMUP = 2;
const BASELINE_NAMESPACE = "bench-pods";

/** One session's timeline (epoch ms). */
interface Sample {
  session: string;
  startMs: number;
  modelMs: number;
}

/** A pino JSON line of a log file (the operator's, the local node's). */
interface LogLine {
  time: number;
  msg?: string;
  reqId?: string;
  req?: { method?: string; url?: string };
  responseTime?: number;
  namespace?: string;
  name?: string;
  container?: string;
}

function readLogLines(path: string): LogLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .flatMap((line) => {
      if (!line.startsWith("{")) return [];
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return [];
      }
    });
}

/** The container log of pod `namespace/name` that the local node writes under `runDir`. */
function containerLog(
  runDir: string,
  namespace: string,
  name: string,
  container: string,
): string | undefined {
  const pods = join(runDir, "pods");
  const dir = existsSync(pods)
    ? readdirSync(pods).find((d) => d.startsWith(`${namespace}_${name}_`))
    : undefined;
  const path = dir ? join(pods, dir, "logs", `${container}.log`) : undefined;
  return path && existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

const plane = await startControlPlane();
const node = await startLocalNode(plane);
const env = await startEnvironment(plane, { chartNodeOptions: true });
try {
  const { kubectl } = env;
  await kubectl.ok("admin", ["create", "namespace", BASELINE_NAMESPACE]);
  await kubectl.ok("admin", [
    "wait",
    "--for=jsonpath={.metadata.name}",
    "serviceaccount/default",
    "-n",
    BASELINE_NAMESPACE,
  ]);

  const samples = Object.fromEntries(ENGINES.map((engine) => [engine, [] as Sample[]])) as Record<
    Engine,
    Sample[]
  >;
  const baseline: number[] = [];
  let measuredFromMs = 0;
  for (let i = 0; i < WARMUP + count; i++) {
    if (i === WARMUP) measuredFromMs = Date.now();
    // Baseline: a pod created directly, to its process's first statement.
    const podName = `testbox-${i}`;
    const podStart = Date.now();
    await kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: podName, namespace: BASELINE_NAMESPACE },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "testbox", image: "gatehouse/testbox:dev", args: ["exit", "0"] }],
        },
      }),
    );
    const processMs = await eventually(`pod ${podName} to start its process`, 60_000, async () => {
      const log = containerLog(plane.runDir, BASELINE_NAMESPACE, podName, "testbox");
      const at = log ? /started exit at (\d+)/.exec(log)?.[1] : undefined;
      return at ? Number(at) : undefined;
    });

    if (i >= WARMUP) baseline.push(processMs - podStart);
    for (const engine of ENGINES) {
      const session = `bench-start-${engine}-${i}`;
      const seen = env.model.requests().at(-1)?.seq ?? 0;
      const startMs = Date.now();
      await kubectl.ok(
        "alice",
        ["create", "-f", "-"],
        JSON.stringify({
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "AgentSession",
          metadata: { name: session, namespace: NAMESPACE },
          spec: {
            subject: { user: "alice" },
            engine,
            model: { name: "scripted/answer" },
            messages: [{ text: `Benchmark session ${i}: is the plan fine?` }],
          },
        }),
      );
      const first = await eventually(`the model's first request of ${session}`, 120_000, async () =>
        // Either wire: Codex speaks Responses.
        env.model.requests(seen).find((r) => /\/(chat\/completions|responses)$/.test(r.path)),
      );
      await kubectl.ok("admin", [
        "wait",
        "-n",
        NAMESPACE,
        "--for=jsonpath={.status.phase}=Completed",
        "--timeout=120s",
        `agentsession/${session}`,
      ]);
      if (i >= WARMUP) samples[engine].push({ session, startMs, modelMs: Date.parse(first.time) });
    }
  }

  // Decompose each sample with the API server's, the node's and the gateway's own timestamps.
  const requests = readApiRequests(plane.auditLogPath, measuredFromMs - 1000);
  const nodeLog = readLogLines(node.logPath);
  const gatewayLog = readLogLines(env.gateway.logPath);
  const incoming = gatewayLog.filter((l) => l.msg === "incoming request");
  const completed = new Map(
    gatewayLog.filter((l) => l.msg === "request completed" && l.reqId).map((l) => [l.reqId, l]),
  );
  /** One engine's samples by stage, and the operator's and gateway's share. */
  const decompose = (engineSamples: Sample[]) => {
    const stages = {
      kubectlStartToApiAnswer: [] as number[],
      apiAnswerToOperatorPodCreate: [] as number[],
      podCreateToContainerStart: [] as number[],
      containerStartToModel: [] as number[],
      gatewaySessionFetch: [] as number[],
      gatewayModelProxy: [] as number[],
    };
    const totals: number[] = [];
    const shares: number[] = [];
    for (const sample of engineSamples) {
      const create = requests.find(
        (r) =>
          r.verb === "create" &&
          r.resource === "agentsessions" &&
          r.user === "alice" &&
          r.name === sample.session,
      );
      const podCreate = requests.find(
        (r) =>
          r.verb === "create" &&
          r.resource === "pods" &&
          !r.subresource &&
          r.user === CONTROLLER_USERNAME &&
          r.namespace === NAMESPACE &&
          r.name?.startsWith(`${sample.session}-agent-`),
      );
      if (!create || !podCreate)
        throw new Error(`no audit record of ${sample.session}'s create or its pod's`);
      const started = nodeLog.find(
        (l) => l.msg === "container started" && l.namespace === NAMESPACE && l.name === podCreate.name,
      );
      const within = (l: LogLine) => l.time >= podCreate.completedMs && l.time <= sample.modelMs;
      const fetch = incoming.find((l) => l.req?.url === "/v1/session" && within(l));
      const fetchMs = fetch?.reqId ? (completed.get(fetch.reqId)?.responseTime ?? 0) : 0;
      const proxied = incoming.find((l) => l.req?.url?.startsWith("/v1/model/") && within(l));
      const proxyMs = proxied ? sample.modelMs - proxied.time : 0;
      const total = sample.modelMs - sample.startMs;
      const operatorMs = podCreate.receivedMs - create.completedMs;
      totals.push(total);
      stages.kubectlStartToApiAnswer.push(create.completedMs - sample.startMs);
      stages.apiAnswerToOperatorPodCreate.push(operatorMs);
      if (started) {
        stages.podCreateToContainerStart.push(started.time - podCreate.receivedMs);
        stages.containerStartToModel.push(sample.modelMs - started.time);
      }
      stages.gatewaySessionFetch.push(fetchMs);
      if (proxied) stages.gatewayModelProxy.push(proxyMs);
      shares.push(((operatorMs + fetchMs + proxyMs) / total) * 100);
    }
    const sessionToModel = p50p95(totals);
    return {
      sessionToModel,
      ratio: {
        p50: ratio(sessionToModel.p50Ms, baselinePod.p50Ms),
        p95: ratio(sessionToModel.p95Ms, baselinePod.p95Ms),
      },
      breakdown: Object.fromEntries(
        Object.entries(stages)
          .filter(([, values]) => values.length > 0)
          .map(([stage, values]) => [stage, p50p95(values)]),
      ),
      modelRequestsThroughGateway: stages.gatewayModelProxy.length === engineSamples.length,
      operatorSharePercent: { p50: percentile(shares, 0.5), p95: percentile(shares, 0.95) },
    };
  };
  const baselinePod = p50p95(baseline);
  const engines = Object.fromEntries(ENGINES.map((engine) => [engine, decompose(samples[engine])]));
  const result = {
    benchmark: "session-start",
    description:
      "kubectl create of an AgentSession → the model receiving the session's first request (operator, agent pod, runtime start — pi: Pi started as a child —, session fetch), per engine, one session at a time, vs kubectl create of a pod → its process's first statement in the same run",
    sessions: count,
    baselinePodToProcess: baselinePod,
    engines,
    // containerStartToModel's own part, apart from the cluster (agent-start.ts).
    agentStartCpu: agentStartCpu(ENGINES),
    measuredAt: new Date().toISOString(),
  };
  writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  for (const [engine, e] of Object.entries(engines)) {
    console.log(
      `${engine}: session → first model request over ${count} sessions: p50 ${e.sessionToModel.p50Ms} ms, p95 ${e.sessionToModel.p95Ms} ms; ` +
        `pod → process p50 ${baselinePod.p50Ms} ms, p95 ${baselinePod.p95Ms} ms; ratio p50 ${e.ratio.p50}×; ` +
        `operator and gateway p50 ${e.operatorSharePercent.p50} % of the whole; stages ${JSON.stringify(e.breakdown)}`,
    );
  }
  console.log(`wrote ${RESULTS}`);
} finally {
  await env.stop();
  await node.stop();
  await plane.stop();
}
