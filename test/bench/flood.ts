/**
 * Benchmark of one session's flood against another session's calls (`make bench-flood`, not
 * `make test`): on a fresh local control plane with the operator running, a quiet agent pod calls
 * `POST /v1/invoke` for an auto-allowed read (provider `gatehouse/provider-counter` in a pod, answering
 * at once), one call at a time, ten a second — first alone (the baseline, same run), then while a flooding agent pod
 * keeps FLOOD_WORKERS invokes in flight without pause. Both phases run twice: against a gateway replica
 * with the default limits (GATEWAY_LIMITS unset), and against one whose limits are lifted out of reach,
 * to show what the limits buy. Reported per gateway: the quiet session's p50/p95 alone and during the
 * flood and their ratio, and the flood's answers by status with the p50 of each (what a refusal costs
 * the gateway against what an admitted call costs).
 *
 * Writes test/bench/results/flood.json.
 *
 *   node test/bench/flood.ts [--calls N]    (the quiet session's calls per phase, default 200)
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { type Agent, coreNamespace, SLEEPER_IMAGE, startAgent } from "../e2e/core-agent.ts";
import { deployCounter, toolName } from "../e2e/core-counter.ts";
import { startEnvironment } from "../e2e/environment.ts";
import { p50p95, percentile, ratio } from "./percentiles.ts";

const RESULTS = fileURLToPath(new URL("./results/flood.json", import.meta.url));
const flag = process.argv.indexOf("--calls");
const calls = flag >= 0 ? Number(process.argv[flag + 1]) : 200;
const FLOOD_WORKERS = 64;
const QUIET_PER_SECOND = 10;
const TOOL = toolName("bench.echo.read");

/** One invoke at `position` by `agent` at `gatewayUrl`: HTTP status and latency in milliseconds. */
async function invokeAt(
  gatewayUrl: string,
  agent: Agent,
  position: number,
): Promise<{ status: number; ms: number }> {
  const start = process.hrtime.bigint();
  const response = await fetch(`${gatewayUrl}/v1/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
    body: JSON.stringify({ turn: 0, position, callId: `call-${position}`, tool: TOOL, arguments: "{}" }),
  });
  await response.arrayBuffer();
  return { status: response.status, ms: Number(process.hrtime.bigint() - start) / 1e6 };
}

/**
 * The quiet session's `calls` invokes one after another, QUIET_PER_SECOND a second (an agent's pace,
 * under its own limit); their latencies (all must be answered 200).
 */
async function quietCalls(gatewayUrl: string, agent: Agent, next: () => number): Promise<number[]> {
  const latencies: number[] = [];
  const started = Date.now();
  for (let i = 0; i < calls; i++) {
    const due = started + (i * 1000) / QUIET_PER_SECOND;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    const { status, ms } = await invokeAt(gatewayUrl, agent, next());
    if (status !== 200) throw new Error(`the quiet session's invoke answered ${status}`);
    latencies.push(ms);
  }
  return latencies;
}

/** Floods `gatewayUrl` as `agent` until `stop` resolves; the answers' latencies by status. */
async function flood(gatewayUrl: string, agent: Agent, next: () => number, stop: Promise<unknown>) {
  const byStatus = new Map<number, number[]>();
  let done = false;
  void stop.then(() => {
    done = true;
  });
  const worker = async () => {
    while (!done) {
      const { status, ms } = await invokeAt(gatewayUrl, agent, next()).catch(() => ({ status: 0, ms: 0 }));
      byStatus.set(status, [...(byStatus.get(status) ?? []), ms]);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: FLOOD_WORKERS }, worker));
  const seconds = (Date.now() - started) / 1000;
  return Object.fromEntries(
    [...byStatus].map(([status, samples]) => [
      String(status),
      {
        answers: samples.length,
        perSecond: Math.round(samples.length / seconds),
        p50Ms: percentile(samples, 0.5),
      },
    ]),
  );
}

const plane = await startControlPlane();
const node = await startLocalNode(plane);
const componentEnv = {
  AGENT_IMAGE: SLEEPER_IMAGE,
  LOG_LEVEL: "warn",
  // Every call is a new tool call of its session: lift the ceiling the default limits would hit.
  SESSION_CEILINGS: JSON.stringify({ maxToolCalls: 1_000_000 }),
};
const env = await startEnvironment(plane, { componentEnv, chartNodeOptions: true });
try {
  const unlimited = await env.startReplica("gateway", "gateway-unlimited", {
    ...componentEnv,
    GATEWAY_LIMITS: JSON.stringify({
      requestsPerSecond: 10_000,
      burst: 100_000,
      maxInFlight: 10_000,
      eventsPerSession: 100_000_000,
    }),
  });
  const namespace = await coreNamespace(env, "bench-flood");
  await deployCounter(env, namespace, "counter", [
    { id: "bench.echo.read", effect: "read", idempotency: "none" },
  ]);
  const gateways = [
    { name: "default limits", url: env.gateway.gatewayUrl! },
    { name: "limits lifted", url: unlimited.gatewayUrl! },
  ];
  const levels = [];
  for (const gateway of gateways) {
    // Fresh sessions per gateway: neither starts with a bucket or a transcript the other phase spent.
    const [quiet, flooder] = await Promise.all([
      startAgent(env, namespace, "quiet"),
      startAgent(env, namespace, "flooder"),
    ]);
    let quietPosition = 0;
    let floodPosition = 0;
    const nextQuiet = () => quietPosition++;
    const nextFlood = () => floodPosition++;
    await quietCalls(gateway.url, quiet, nextQuiet); // warm-up: TokenReview cache, connections, JIT
    const alone = await quietCalls(gateway.url, quiet, nextQuiet);
    const during = quietCalls(gateway.url, quiet, nextQuiet);
    const flooded = await flood(gateway.url, flooder, nextFlood, during);
    const duringFlood = await during;
    const level = {
      gateway: gateway.name,
      calls,
      floodWorkers: FLOOD_WORKERS,
      quietAlone: p50p95(alone),
      quietDuringFlood: p50p95(duringFlood),
      ratio: {
        p50: ratio(percentile(duringFlood, 0.5), percentile(alone, 0.5)),
        p95: ratio(percentile(duringFlood, 0.95), percentile(alone, 0.95)),
      },
      floodAnswers: flooded,
    };
    levels.push(level);
    process.stdout.write(
      `${gateway.name}: quiet session p50 ${level.quietAlone.p50Ms} ms alone, ${level.quietDuringFlood.p50Ms} ms during the flood (${level.ratio.p50}×); ` +
        `p95 ${level.quietAlone.p95Ms} → ${level.quietDuringFlood.p95Ms} ms (${level.ratio.p95}×); flood answers ${JSON.stringify(flooded)}\n`,
    );
  }
  const result = {
    benchmark: "flood",
    description:
      "one session's POST /v1/invoke of an auto-allowed read, one at a time, alone and while another session keeps 64 invokes in flight; against a gateway with the default limits and one with them lifted; same run",
    levels,
    measuredAt: new Date().toISOString(),
  };
  writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`wrote ${RESULTS}\n`);
} finally {
  await env.stop();
  await node.stop();
  await plane.stop();
}
