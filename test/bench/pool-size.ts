/**
 * Benchmark of the gateway's Postgres pool size (GATEWAY_POSTGRES_POOL_SIZE, chart value
 * gateway.database.poolSize; `make bench`, not `make test`): Core's invoke of an auto-allowed read on
 * the real Postgres ports — execution lookup, budget, claim, two audit appends, receipt — and the
 * route's two transcript appends, as the gateway's runtime login on a store opened as the gateway opens
 * it, with the pool at each size; the catalog and the provider are in-process (the provider answers
 * after 1.4 ms, its HTTP call's time in test/bench/invoke.ts). No control plane: what changes with the
 * pool size is the Postgres side alone.
 *
 * The baseline is the default size (10), measured in the same run: sizes are interleaved in rounds so
 * drift on the shared machine hits each alike. Reported per size and concurrency (16 and 64 sessions,
 * one call in flight each): p50 and p99 latency, invokes per second, and the time one invoke waited
 * for a pooled connection (every acquire, `pool.connect` until it resolved), with ratios to the
 * default's in the same round.
 *
 * Writes test/bench/results/pool-size.json.
 *
 *   node test/bench/pool-size.ts [--calls N] [--rounds R]   (calls per size and level, default 800; rounds, default 2)
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { DEFAULT_GATEWAY_POSTGRES_POOL_SIZE } from "../../operator/src/config.ts";
import { createInMemoryWorld, testCapability } from "../../operator/src/core/in-memory-ports.ts";
import { invoke } from "../../operator/src/core/invoke.ts";
import type { SessionContext } from "../../operator/src/core/ports.ts";
import { openStore, type Store } from "../../operator/src/store/store.ts";
import { freshDatabase } from "../integration/fresh-database.ts";
import { percentile, ratio } from "./percentiles.ts";

const RESULTS = fileURLToPath(new URL("./results/pool-size.json", import.meta.url));
const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const CALLS = flag("--calls", 800);
const ROUNDS = flag("--rounds", 2);
const SIZES = [5, DEFAULT_GATEWAY_POSTGRES_POOL_SIZE, 20, 40];
const LEVELS = [16, 64];
/** The provider's answer time: its HTTP call at one caller in test/bench/invoke.ts. */
const PROVIDER_MS = 1.4;

/** Milliseconds spent in `pool.connect` (the pool's acquire), summed, and how often it was called. */
function timeAcquires(pool: pg.Pool) {
  const counted = { waitMs: 0, acquires: 0 };
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  // pool.query acquires through this.connect with a callback; direct callers use the promise.
  (pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
    const started = performance.now();
    counted.acquires++;
    const callback = args[0];
    if (typeof callback === "function") {
      return connect((...result: unknown[]) => {
        counted.waitMs += performance.now() - started;
        (callback as (...r: unknown[]) => void)(...result);
      });
    }
    return (connect() as Promise<pg.PoolClient>).then((client) => {
      counted.waitMs += performance.now() - started;
      return client;
    });
  };
  return counted;
}

/** One size at one concurrency: `calls` invokes, each followed by the route's transcript appends. */
async function measure(store: Store, size: number, concurrency: number, round: number, calls = CALLS) {
  const acquired = timeAcquires(store.pool);
  const world = createInMemoryWorld({ config: { providerDeadlineMs: 5_000 } });
  world.capabilities.push(
    testCapability({ inputSchema: { type: "object", properties: { n: { type: "integer" } } } }),
  );
  world.providerBehaviour = async () => {
    await sleep(PROVIDER_MS);
    return { kind: "answered", response: { status: "succeeded", result: { ok: true } } };
  };
  const deps = {
    ...world.deps,
    executions: store.executions,
    budget: store.budget,
    audit: store.audit,
    clock: { nowMicros: () => Date.now() * 1000 },
  };
  const sessions: SessionContext[] = Array.from({ length: concurrency }, (_, w) => ({
    namespace: "plant-a",
    name: `s${w}`,
    uid: `bench-${round}-${size}-${concurrency}-${w}`,
    subject: { user: "alice", groups: ["planners"] },
    limits: { maxTurns: 20, maxToolCalls: 1_000_000, maxWrites: 10 },
    active: true,
  }));
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    sessions.map(async (session) => {
      for (let position = 0; ; position++) {
        const i = next++;
        if (i >= calls) return;
        const t = performance.now();
        const { answer } = await invoke(deps, session, {
          turn: 0,
          position,
          callId: `call_${position}`,
          tool: "aps_schedule_read",
          arguments: `{"n":${i}}`,
        });
        if (answer.status !== "succeeded")
          throw new Error(`invoke answered ${answer.status}: ${answer.content}`);
        const atMicros = Date.now() * 1000;
        await store.transcripts.appendAll([
          {
            dedupeKey: `tool_call:${position}`,
            sessionUid: session.uid,
            source: "agent",
            kind: "tool_call",
            payload: { n: i },
            atMicros,
          },
          {
            dedupeKey: `tool_result:${position}`,
            sessionUid: session.uid,
            source: "core",
            kind: "tool_result",
            payload: { n: i },
            atMicros,
          },
        ]);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const wallMs = performance.now() - started;
  return {
    round,
    poolSize: size,
    concurrency,
    calls,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    invokesPerSecond: Math.round((calls / wallMs) * 1000),
    poolWaitMsPerInvoke: Math.round((acquired.waitMs / calls) * 10) / 10,
    acquiresPerInvoke: Math.round((acquired.acquires / calls) * 100) / 100,
  };
}

const loadBefore = loadavg().map((l) => Math.round(l * 10) / 10);
const db = await freshDatabase();
try {
  const runs: Awaited<ReturnType<typeof measure>>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const size of SIZES) {
      const store = await openStore({
        url: db.gatewayUrl,
        component: "gateway",
        checkpoints: false,
        poolMax: size,
      });
      try {
        // Warm-up: the pool's connections, prepared plans, JIT.
        await measure(store, size, 16, -1, 100);
        for (const concurrency of LEVELS) {
          const run = await measure(store, size, concurrency, round);
          runs.push(run);
          process.stdout.write(`${JSON.stringify(run)}\n`);
        }
      } finally {
        await store.stop();
      }
    }
  }
  // Each run against the default size's at the same round and concurrency.
  const levels = runs.map((run) => {
    const base = runs.find(
      (r) =>
        r.round === run.round &&
        r.concurrency === run.concurrency &&
        r.poolSize === DEFAULT_GATEWAY_POSTGRES_POOL_SIZE,
    )!;
    return {
      ...run,
      againstDefault: {
        p50: ratio(run.p50Ms, base.p50Ms),
        p99: ratio(run.p99Ms, base.p99Ms),
        invokesPerSecond: ratio(run.invokesPerSecond, base.invokesPerSecond),
      },
    };
  });
  const result = {
    benchmark: "pool-size",
    description:
      "Core's invoke on the real Postgres ports plus the route's transcript appends, as the gateway's login, at each pool size; the default size (10) is the baseline, same run, same round",
    providerMs: PROVIDER_MS,
    loadAverage: { before: loadBefore, after: loadavg().map((l) => Math.round(l * 10) / 10) },
    runs: levels,
    measuredAt: new Date().toISOString(),
  };
  writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`wrote ${RESULTS}\n`);
} finally {
  await db.drop();
}
