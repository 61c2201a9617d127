/**
 * Benchmark of Core's invoke overhead (`make bench`, not `make test`): on a fresh local
 * control plane with the operator running, an agent pod's token calls `POST /v1/invoke` for an
 * auto-allowed read whose provider (`gatehouse/provider-counter`, answering at once) runs in a pod —
 * TokenReview (cached), identity, policy, the execution claim, two audit appends, the provider call
 * with a signed grant, the receipt and two transcript appends, all real. Each call is a new execution
 * (a new position); at concurrency c, c agent pods (sessions) call at once, one call in flight each. The baseline, measured in the same run and at the same concurrency, is a raw
 * single-row Postgres INSERT on the same database: the cheapest durable write there is. Reported: p50
 * and p99 latency in milliseconds at concurrency 1, 16 and 64, and their ratios to the baseline; and
 * per level the breakdown by stage, from the gateway's /metrics: each port Core and the route call (the
 * store, the API server, the provider, TokenReview) with its calls and milliseconds per invoke, and the
 * route's own time outside Core (`gatehouse_invoke_duration_seconds` is Core's part); and the audit
 * chain's group commit while invoking: entries, batches (one transaction each, told apart by the rows'
 * xmin), their mean and largest size and the invoking time per batch.
 *
 * Writes test/bench/results/invoke.json.
 *
 *   node test/bench/invoke.ts [--calls N]    (calls per concurrency level, default 400)
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { type Agent, coreNamespace, SLEEPER_IMAGE, startAgent } from "../e2e/core-agent.ts";
import { deployCounter, toolName } from "../e2e/core-counter.ts";
import { startEnvironment } from "../e2e/environment.ts";
import { scrapeHistogram, stagesPerOp } from "./stage-breakdown.ts";

const RESULTS = fileURLToPath(new URL("./results/invoke.json", import.meta.url));
const flag = process.argv.indexOf("--calls");
const calls = flag >= 0 ? Number(process.argv[flag + 1]) : 400;
const LEVELS = [1, 16, 64] as const;

/** Latency percentile `p` (0…1) of `samples` in milliseconds, nearest-rank method. */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return Math.round(sorted[rank - 1]! * 1000) / 1000;
}

/** Runs `count` operations with `concurrency` in flight, worker `w` calling `op(i, w)`; latencies in ms. */
async function measure(
  count: number,
  concurrency: number,
  op: (i: number, worker: number) => Promise<void>,
): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const worker = async (w: number) => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const start = process.hrtime.bigint();
      await op(i, w);
      latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  return latencies;
}

const plane = await startControlPlane();
const node = await startLocalNode(plane);
const env = await startEnvironment(plane, {
  chartNodeOptions: true,
  componentEnv: {
    AGENT_IMAGE: SLEEPER_IMAGE,
    LOG_LEVEL: "warn",
    // Every call is a new tool call of its session: lift the ceiling the default limits would hit.
    SESSION_CEILINGS: JSON.stringify({ maxToolCalls: 10_000 }),
    // One session calls back to back here, far above an agent's rate: the gateway's per-session limit
    // (20/s) would measure the limiter, not the path.
    GATEWAY_LIMITS: JSON.stringify({
      requestsPerSecond: 10_000,
      burst: 100_000,
      eventsPerSession: 100_000_000,
    }),
    // The local node offers the machine's CPUs (2 here): small requests, so 64 sleeping agents fit.
    AGENT_RESOURCES: JSON.stringify({ requests: { cpu: "5m", memory: "16Mi" } }),
  },
});
try {
  const namespace = await coreNamespace(env, "bench-invoke");
  await deployCounter(env, namespace, "counter", [
    { id: "bench.echo.read", effect: "read", idempotency: "none" },
  ]);
  // One session (agent pod) per worker, as concurrent calls come from concurrent agents.
  const agents: Agent[] = [];
  for (let batch = 0; batch < Math.max(...LEVELS); batch += 16) {
    agents.push(
      ...(await Promise.all(Array.from({ length: 16 }, () => startAgent(env, namespace, "bench")))),
    );
  }
  const positions = agents.map(() => 0);
  await env.pool.query(
    "CREATE TABLE IF NOT EXISTS bench_baseline (id bigserial PRIMARY KEY, at bigint, body text)",
  );

  const invokeOnce = async (i: number, worker: number) => {
    const position = positions[worker]!++;
    const answer = await agents[worker]!.invoke({
      turn: 0,
      position,
      tool: toolName("bench.echo.read"),
      arguments: `{"n":${i}}`,
    });
    if (answer.status !== "succeeded") throw new Error(`invoke answered ${answer.status}: ${answer.content}`);
  };
  const insertOnce = async (i: number) => {
    await env.pool.query("INSERT INTO bench_baseline (at, body) VALUES ($1, $2)", [Date.now(), `{"n":${i}}`]);
  };

  // Warm-up: connections, TokenReview cache, JIT.
  await measure(50, 4, invokeOnce);
  await measure(50, 4, insertOnce);

  const metricsUrl = `${env.gateway.healthUrl}/metrics`;
  const scrape = async () => ({
    ports: await scrapeHistogram(metricsUrl, "gatehouse_port_call_duration_seconds"),
    core: await scrapeHistogram(metricsUrl, "gatehouse_invoke_duration_seconds"),
  });
  // The audit chain's group commit: every batch is one transaction, so the rows' xmin groups them.
  const auditHead = async () =>
    Number((await env.pool.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_log")).rows[0].seq);
  const groupCommit = async (afterSeq: number, invokeWallMs: number) => {
    const { rows } = await env.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_log WHERE seq > $1 GROUP BY xmin::text",
      [afterSeq],
    );
    const entries = rows.reduce((n, r) => n + r.n, 0);
    return {
      entries,
      batches: rows.length,
      meanBatch: Math.round((entries / Math.max(1, rows.length)) * 100) / 100,
      largestBatch: Math.max(0, ...rows.map((r) => r.n)),
      // The chain takes one batch at a time: near the transaction's own time, the lock is the bound.
      invokeWallMsPerBatch: Math.round((invokeWallMs / Math.max(1, rows.length)) * 1000) / 1000,
    };
  };
  const levels = [];
  for (const concurrency of LEVELS) {
    const before = await scrape();
    const headBefore = await auditHead();
    let invokeWallMs = 0;
    // Interleave halves so drift on the shared machine hits both series alike.
    const invoke: number[] = [];
    const insert: number[] = [];
    for (let half = 0; half < 2; half++) {
      insert.push(...(await measure(calls / 2, concurrency, insertOnce)));
      const started = performance.now();
      invoke.push(...(await measure(calls / 2, concurrency, invokeOnce)));
      invokeWallMs += performance.now() - started;
    }
    const after = await scrape();
    const audit = await groupCommit(headBefore, invokeWallMs);
    const invokes = invoke.length;
    const coreMs = stagesPerOp(before.core, after.core, invokes).reduce((ms, s) => ms + s.msPerOp, 0);
    const stages = stagesPerOp(before.ports, after.ports, invokes);
    const level = {
      concurrency,
      calls,
      breakdown: {
        // Mean milliseconds per invoke; the stages overlap nothing but Core's own time, which holds
        // every port call but the route's transcript appends and TokenReview.
        clientMeanMs: Math.round((invoke.reduce((a, b) => a + b, 0) / invokes) * 1000) / 1000,
        coreMeanMs: Math.round(coreMs * 1000) / 1000,
        portCallsPerInvoke: Math.round(stages.reduce((n, s) => n + s.callsPerOp, 0) * 100) / 100,
        stages,
        auditGroupCommit: audit,
      },
      invoke: { p50Ms: percentile(invoke, 0.5), p99Ms: percentile(invoke, 0.99) },
      baselineInsert: { p50Ms: percentile(insert, 0.5), p99Ms: percentile(insert, 0.99) },
      ratio: {
        p50: Math.round((percentile(invoke, 0.5) / percentile(insert, 0.5)) * 10) / 10,
        p99: Math.round((percentile(invoke, 0.99) / percentile(insert, 0.99)) * 10) / 10,
      },
    };
    levels.push(level);
    process.stdout.write(
      `concurrency ${concurrency}: invoke p50 ${level.invoke.p50Ms} ms p99 ${level.invoke.p99Ms} ms; ` +
        `INSERT p50 ${level.baselineInsert.p50Ms} ms p99 ${level.baselineInsert.p99Ms} ms; ` +
        `ratio p50 ${level.ratio.p50}× p99 ${level.ratio.p99}×\n` +
        `  per invoke: ${level.breakdown.clientMeanMs} ms at the client, ${level.breakdown.coreMeanMs} ms in Core, ` +
        `${level.breakdown.portCallsPerInvoke} port calls\n` +
        stages.map((s) => `    ${s.stage}: ${s.callsPerOp}× ${s.msPerOp} ms\n`).join("") +
        `  audit group commit: ${audit.entries} entries in ${audit.batches} batches (mean ${audit.meanBatch}, ` +
        `largest ${audit.largestBatch}), ${audit.invokeWallMsPerBatch} ms of invoking per batch\n`,
    );
  }
  const result = {
    benchmark: "invoke",
    description:
      "POST /v1/invoke of an auto-allowed read through the gateway and Core to a provider pod that answers at once, vs a raw single-row Postgres INSERT on the same database, same concurrency, same run",
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
