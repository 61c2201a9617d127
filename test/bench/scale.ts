/**
 * What one installation carries (`make bench-scale`; a small size in `make bench`): on a fresh local
 * control plane with one gateway and one controller, N AgentSessions and N Approvals created through the
 * API server, every one driven to a terminal phase.
 *
 * R of them (default 100) run to Completed through real agent pods on the local node: the agent
 * runtime answers from the scripted model. The rest are played by a fake agent speaking the gateway's
 * API without an agent process: the local node is cordoned first, so their agent pods stay Pending
 * (the pod objects exist with their UIDs; the gateway binds a token to the pod's UID and its session's
 * status, not to a running process — operator/src/gateway/authenticate.ts). For each, as its pod would:
 * a token bound to the pod (TokenRequest, audience gatehouse), an auto-allowed read invoke, a write
 * invoke that needs an Approval (the gateway creates it), alice's decision (a patch), the Approval's
 * execution by the controller through the provider pod, the agent's long-poll until it is done, its
 * final answer; then the test, as a kubelet would, writes the pod's status Succeeded and the controller
 * completes the session. Every check stays as it is: the gateway still reviews each token and finds the
 * pod and its session in its caches.
 *
 * Reported: the gateway's and the controller's peak RSS and CPU seconds, where their memory is
 * (process-memory.ts: RSS anonymous and file-backed, V8 heap used and reserved, young generation, code,
 * external and ArrayBuffers — sampled every 2 s, at the highest RSS and at the end of each phase), the
 * invoke rates the gateway
 * sustained, decisions and executions per second, reconciles per kind and per session (own status
 * writes included), API requests per session by client (the API server's audit log), Postgres rows and
 * bytes per session and the audit chain's size, serialized bytes per cached object, and the machine.
 *
 * Writes test/bench/results/scale.json (one entry per number of sessions, the others kept).
 *
 *   node test/bench/scale.ts [--sessions N] [--real R] [--concurrency C]   (default 1000, 100, 32)
 *     [--node-options "FLAGS"]  both components' NODE_OPTIONS instead of the chart's (test/e2e/
 *                               component-node-options.ts); "" for node's defaults on this machine
 *     [--node-flags "FLAGS"]    node's flags before the program instead of the image ENTRYPOINT's
 *                               (--optimize-for-size); "" for none
 *     [--label L]               kept as `<N>-sessions-<L>`, beside the plain run
 *     [--env KEY=VALUE]...      more environment of both components (e.g. MALLOC_ARENA_MAX=4); KEY= unsets
 *                               one the chart sets (MALLOC_ARENA_MAX=: glibc's default)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
} from "@kubernetes/client-node";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { imageNodeFlags } from "../e2e/component-node-options.ts";
import { coreNamespace, gatewayRequest, invokeAs, waitAs } from "../e2e/core-agent.ts";
import { deployCounter, toolName } from "../e2e/core-counter.ts";
import { startEnvironment } from "../e2e/environment.ts";
import { decisionPatch } from "../e2e/story.ts";
import { MemorySampler } from "./process-memory.ts";
import {
  cpuSeconds,
  growthPerSession,
  machine,
  peakRssMiB,
  reconcilesPer,
  requestsByClientIn,
  round,
  scrapeReconciles,
  serializedBytesPerObject,
  tableSizes,
} from "./scale-measure.ts";
import { type HistogramTotals, histogramTotals, stagesPerOp } from "./stage-breakdown.ts";

const RESULTS = fileURLToPath(new URL("./results/scale.json", import.meta.url));
const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const SESSIONS = flag("--sessions", 1_000);
const REAL = Math.min(SESSIONS, flag("--real", 100));
const CONCURRENCY = flag("--concurrency", 32);
/** Kept under `<N>-sessions-<label>` beside the plain run (a variant measured in the same sitting). */
const LABEL = (() => {
  const at = process.argv.indexOf("--label");
  return at >= 0 ? process.argv[at + 1] : undefined;
})();
/** NODE_OPTIONS of both components, e.g. to compare V8 flags in one sitting. */
const NODE_OPTIONS = (() => {
  const at = process.argv.indexOf("--node-options");
  return at >= 0 ? (process.argv[at + 1] ?? "") : undefined;
})();
/** node's flags before the program instead of the image's ENTRYPOINT's, e.g. to compare V8 flags. */
const NODE_FLAGS = (() => {
  const at = process.argv.indexOf("--node-flags");
  return at >= 0 ? (process.argv[at + 1] ?? "").split(/\s+/).filter(Boolean) : undefined;
})();
/** More environment of both components, e.g. glibc's tunables to compare in one sitting. */
const EXTRA_ENV: Record<string, string | undefined> = Object.fromEntries(
  process.argv.flatMap((arg, at) => {
    const pair = process.argv[at - 1] === "--env" ? /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(arg) : null;
    // spawn leaves out a variable whose value is undefined.
    return pair ? [[pair[1]!, pair[2] || undefined]] : [];
  }),
);
/** Real agent processes at once: each is a Node process on this 2-core machine. */
const REAL_BATCH = 25;
const WRITE = "bench.plan.publish";
const READ = "bench.echo.read";
const GROUP = { group: "gatehouse.dev", version: "v1alpha1" };

interface Session {
  metadata: { name: string; namespace: string; uid: string };
  status?: { phase?: string; podName?: string; podUID?: string };
}

const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** Runs `run` over `items`, `concurrency` at a time; seconds it took. */
async function pool<T>(items: T[], concurrency: number, run: (item: T, i: number) => Promise<void>) {
  const start = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) await run(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return (performance.now() - start) / 1000;
}

/** Polls `check` every second until it returns true, for at most `timeoutMs`. */
async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

const runStart = performance.now();
const plane = await startControlPlane();
const node = await startLocalNode(plane);
const env = await startEnvironment(plane, {
  chartNodeOptions: true,
  ...(NODE_FLAGS ? { nodeFlags: NODE_FLAGS } : {}),
  componentEnv: {
    LOG_LEVEL: "warn",
    // The local node offers the machine's CPUs: small requests, so a batch of real agents fits.
    AGENT_RESOURCES: JSON.stringify({ requests: { cpu: "5m", memory: "32Mi" } }),
    ...(NODE_OPTIONS !== undefined ? { NODE_OPTIONS } : {}),
    ...EXTRA_ENV,
  },
});
const clients = (context: string) => {
  const kc = new KubeConfig();
  kc.loadFromFile(env.cluster.kubeconfigPath);
  kc.setCurrentContext(context);
  return { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
};
const admin = clients("admin");
const alice = clients("alice");
try {
  const namespace = await coreNamespace(env, "scale");
  await deployCounter(
    env,
    namespace,
    "counter",
    [
      { id: READ, effect: "read", idempotency: "none" },
      { id: WRITE, effect: "write", idempotency: "key", target: true },
    ],
    { [WRITE]: { approval: "Required" } },
  );
  // Sessions are followed with one list and a watch: the API server logs every gatehouse.dev response
  // body, so polling lists of thousands of sessions would fill its audit log with them.
  const kc = new KubeConfig();
  kc.loadFromFile(env.cluster.kubeconfigPath);
  kc.setCurrentContext("admin");
  const informer = makeInformer<Session & KubernetesObject>(
    kc,
    `/apis/gatehouse.dev/v1alpha1/namespaces/${namespace}/agentsessions`,
    () =>
      admin.custom.listNamespacedCustomObject({ ...GROUP, namespace, plural: "agentsessions" }) as Promise<
        KubernetesListObject<Session & KubernetesObject>
      >,
  );
  let following = true;
  informer.on("error", () => {
    if (following) setTimeout(() => void informer.start(), 1000);
  });
  await informer.start();
  const listSessions = async () => informer.list() as Session[];
  const createSessions = (names: string[]) =>
    pool(names, CONCURRENCY, async (name) => {
      await alice.custom.createNamespacedCustomObject({
        ...GROUP,
        namespace,
        plural: "agentsessions",
        body: {
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "AgentSession",
          metadata: { name, namespace },
          spec: {
            subject: { user: "alice" },
            model: { name: "scripted/answer" },
            messages: [{ text: "Go." }],
          },
        },
      });
    });
  const terminal = (s: Session) => ["Completed", "Failed", "Cancelled"].includes(s.status?.phase ?? "");
  const phases = (sessions: Session[]) => {
    const counts: Record<string, number> = {};
    for (const s of sessions)
      counts[s.status?.phase ?? "none"] = (counts[s.status?.phase ?? "none"] ?? 0) + 1;
    return counts;
  };

  const metricsUrl = `${env.controller.healthUrl}/metrics`;
  /** The controller's port calls and work-queue waits so far: the execution phase's breakdown. */
  const scrapeStages = async () => {
    const text = await (await fetch(metricsUrl)).text();
    return {
      ports: histogramTotals(text, "gatehouse_port_call_duration_seconds"),
      queues: histogramTotals(text, "gatehouse_workqueue_queue_duration_seconds"),
    };
  };
  /** Mean wait of a key in each controller's work queue between two scrapes, in milliseconds. */
  const queueWaitMs = (before: HistogramTotals, after: HistogramTotals) =>
    Object.fromEntries(
      [...after].flatMap(([queue, end]) => {
        const start = before.get(queue) ?? { count: 0, sum: 0 };
        const count = end.count - start.count;
        return count > 0 ? [[queue, round(((end.sum - start.sum) * 1000) / count, 1)]] : [];
      }),
    );
  const gatewayPid = env.gateway.pid;
  const controllerPid = env.controller.pid;
  const cpuStart = { gateway: cpuSeconds(gatewayPid), controller: cpuSeconds(controllerPid) };
  const memory = {
    gateway: new MemorySampler(() => gatewayPid, `${env.gateway.healthUrl}/metrics`),
    controller: new MemorySampler(() => controllerPid, metricsUrl),
  };
  const mark = (name: string) => Promise.all([memory.gateway.mark(name), memory.controller.mark(name)]);
  await mark("started");
  memory.gateway.start();
  memory.controller.start();
  const tablesStart = await tableSizes(env.pool);

  // Real agents, in batches: each session's pod runs the agent runtime to its final answer.
  const realSince = Date.now();
  const realReconcilesBefore = await scrapeReconciles(metricsUrl);
  const realStart = performance.now();
  for (let from = 0; from < REAL; from += REAL_BATCH) {
    const names = Array.from({ length: Math.min(REAL_BATCH, REAL - from) }, (_, i) => `real-${from + i}`);
    await createSessions(names);
    await until(`real sessions ${from}… to finish`, 600_000, async () => {
      const done = (await listSessions()).filter((s) => names.includes(s.metadata.name) && terminal(s));
      return done.length === names.length;
    });
    log(`real sessions: ${from + names.length}/${REAL} finished`);
  }
  const realSeconds = (performance.now() - realStart) / 1000;
  const realReconciles = reconcilesPer(realReconcilesBefore, await scrapeReconciles(metricsUrl), REAL);
  const realUntil = Date.now();
  await mark("realAgentsDone");

  // Fake agents: pods that never run (the node is cordoned), the agent's part spoken over the gateway's API.
  await env.kubectl.ok("admin", ["cordon", node.nodeName]);
  const fakeCount = SESSIONS - REAL;
  const fakeNames = Array.from({ length: fakeCount }, (_, i) => `fake-${i}`);
  const fakeReconcilesBefore = await scrapeReconciles(metricsUrl);
  const createSeconds = await createSessions(fakeNames);
  log(`created ${fakeCount} sessions in ${round(createSeconds, 1)} s`);
  const podsStart = performance.now();
  let bound: Session[] = [];
  await until("every fake session's pod", 1_800_000, async () => {
    bound = (await listSessions()).filter((s) => s.metadata.name.startsWith("fake-") && s.status?.podUID);
    return bound.length === fakeCount;
  });
  const podsSeconds = (performance.now() - podsStart) / 1000 + createSeconds;
  log(`every fake session has its pod after ${round(podsSeconds, 1)} s`);
  await mark("fakeSessionsAndPodsCreated");

  const agents = bound.map((s) => ({ session: s, token: "", approval: "" }));
  const tokenSeconds = await pool(agents, CONCURRENCY, async (agent) => {
    const { podName, podUID } = agent.session.status ?? {};
    const request = await admin.core.createNamespacedServiceAccountToken({
      name: "gatehouse-agent",
      namespace,
      body: {
        spec: {
          audiences: ["gatehouse"],
          expirationSeconds: 3600,
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name: podName, uid: podUID },
        },
      },
    });
    agent.token = request.status?.token ?? "";
  });
  const invoke = (agent: (typeof agents)[number], position: number, tool: string, args: unknown) =>
    invokeAs(env, agent.token, {
      callId: `call-${position}`,
      turn: 0,
      position,
      tool: toolName(tool),
      arguments: JSON.stringify(args),
    });
  const readSeconds = await pool(agents, CONCURRENCY, async (agent, i) => {
    const reply = await invoke(agent, 0, READ, { n: i });
    if (reply.status !== 200 || reply.body.status !== "succeeded") {
      throw new Error(`read invoke answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    }
  });
  log(`${fakeCount} read invokes in ${round(readSeconds, 1)} s`);
  const writeSeconds = await pool(agents, CONCURRENCY, async (agent, i) => {
    const reply = await invoke(agent, 1, WRITE, { planId: `plan-${i}`, version: 1 });
    if (reply.status !== 200 || reply.body.status !== "pending_approval" || !reply.body.approval) {
      throw new Error(`write invoke answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    }
    agent.approval = reply.body.approval.name;
  });
  log(`${fakeCount} write invokes (Approvals created) in ${round(writeSeconds, 1)} s`);
  await mark("approvalsCreated");
  // From the first decision until every session is terminal: the executions and what they waited on.
  const stagesBefore = await scrapeStages();
  const decideSeconds = await pool(agents, CONCURRENCY, async (agent) => {
    await alice.custom.patchNamespacedCustomObject({
      ...GROUP,
      namespace,
      plural: "approvals",
      name: agent.approval,
      body: JSON.parse(decisionPatch("alice", "Approve")),
    });
  });
  const executeStart = performance.now();
  const finishSeconds = await pool(agents, CONCURRENCY, async (agent) => {
    for (;;) {
      const reply = await waitAs(env, agent.token, agent.approval, 20);
      if (reply.status !== 200)
        throw new Error(`wait answered ${reply.status}: ${JSON.stringify(reply.body)}`);
      if (reply.body.done) break;
    }
    const final = await gatewayRequest(env, agent.token, "POST", "/v1/session/events", {
      kind: "final_answer",
      turn: 0,
      text: "Published.",
    });
    if (final.status >= 300) throw new Error(`final answer answered ${final.status}`);
    // As the kubelet would once the agent exits: the pod has Succeeded.
    await admin.core.patchNamespacedPodStatus({
      name: agent.session.status?.podName ?? "",
      namespace,
      body: [{ op: "add", path: "/status/phase", value: "Succeeded" }],
    });
  });
  log(`decided in ${round(decideSeconds, 1)} s; executed and answered in ${round(finishSeconds, 1)} s`);
  let fakeSessions: Session[] = [];
  await until("every fake session to finish", 1_800_000, async () => {
    fakeSessions = (await listSessions()).filter((s) => s.metadata.name.startsWith("fake-"));
    return fakeSessions.every(terminal);
  });
  const terminalSeconds = (performance.now() - executeStart) / 1000;
  const stagesAfter = await scrapeStages();
  const fakeReconciles = reconcilesPer(fakeReconcilesBefore, await scrapeReconciles(metricsUrl), fakeCount);
  log(`every fake session finished: ${JSON.stringify(phases(fakeSessions))}`);
  await mark("allTerminal");
  memory.gateway.stop();
  memory.controller.stop();

  const cpu = { gateway: cpuSeconds(gatewayPid), controller: cpuSeconds(controllerPid) };
  const tablesEnd = await tableSizes(env.pool);
  const database = growthPerSession(tablesStart, tablesEnd, SESSIONS);
  const auditTable = [...tablesEnd].find(([name]) => name === "audit_log");

  // Both windows in one pass over the audit log: at 10 000 sessions it is gigabytes.
  const [realRequests = {}, fakeRequests = {}] = await requestsByClientIn(plane.auditLogPath, [
    { fromMs: realSince, toMs: realUntil },
    { fromMs: realUntil, toMs: Date.now() },
  ]);
  const perSession = (counts: Record<string, number>, sessions: number) =>
    Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, round(n / sessions, 1)]));
  const list = async (plural: string) =>
    (
      (await admin.custom.listNamespacedCustomObject({ ...GROUP, namespace, plural })) as {
        items: KubernetesObject[];
      }
    ).items;
  const pods = (await admin.core.listNamespacedPod({ namespace })).items as KubernetesObject[];
  const approvals = await list("approvals");

  const result = {
    benchmark: "scale",
    description:
      "one gateway and one controller: N AgentSessions and N Approvals through the API server to terminal phases; R sessions with real agent pods, the rest with pods that never run and a fake agent on the gateway's API",
    sessions: SESSIONS,
    realAgentSessions: REAL,
    approvals: approvals.length,
    concurrency: CONCURRENCY,
    machine: { ...machine(), note: "shared with other work; load averages at the end of the run" },
    phases: {
      real: phases((await listSessions()).filter((s) => s.metadata.name.startsWith("real-"))),
      fake: phases(fakeSessions),
    },
    nodeOptions: NODE_OPTIONS ?? null,
    // The V8 flags both components ran with: the image's ENTRYPOINT's (component-node-options.ts) by default.
    nodeFlags: NODE_FLAGS ?? imageNodeFlags(),
    // null: unset (glibc's or node's default).
    env: Object.fromEntries(Object.entries(EXTRA_ENV).map(([key, value]) => [key, value ?? null])),
    gateway: {
      peakRssMiB: peakRssMiB(gatewayPid),
      cpuSeconds: round(cpu.gateway - cpuStart.gateway, 1),
      memory: memory.gateway.report(),
    },
    controller: {
      peakRssMiB: peakRssMiB(controllerPid),
      cpuSeconds: round(cpu.controller - cpuStart.controller, 1),
      memory: memory.controller.report(),
    },
    realAgents: {
      seconds: round(realSeconds, 1),
      sessionsPerSecond: round(REAL / realSeconds, 2),
      reconciles: realReconciles,
      apiRequestsPerSession: perSession(realRequests, REAL),
    },
    fakeAgents: {
      sessionsCreatedPerSecond: round(fakeCount / createSeconds, 1),
      podsCreatedPerSecond: round(fakeCount / podsSeconds, 1),
      tokensPerSecond: round(fakeCount / tokenSeconds, 1),
      readInvokesPerSecond: round(fakeCount / readSeconds, 1),
      approvalInvokesPerSecond: round(fakeCount / writeSeconds, 1),
      decisionsPerSecond: round(fakeCount / decideSeconds, 1),
      executedAndAnsweredPerSecond: round(fakeCount / finishSeconds, 1),
      decisionToTerminalSeconds: round(terminalSeconds, 1),
      // Each phase's wall-clock seconds, in order, so a run's total at another size can be extrapolated.
      seconds: {
        create: round(createSeconds, 1),
        podsAfterCreate: round(podsSeconds - createSeconds, 1),
        tokens: round(tokenSeconds, 1),
        reads: round(readSeconds, 1),
        writes: round(writeSeconds, 1),
        decisions: round(decideSeconds, 1),
        executedAndAnswered: round(finishSeconds, 1),
        untilTerminal: round(terminalSeconds - finishSeconds, 1),
      },
      // From the first decision until every session was terminal: the controller's port calls per
      // Approval (the approval pass's steps as port "approval", Core's as theirs; the session polls'
      // are in it too) and how long keys waited in each work queue.
      executionStages: stagesPerOp(stagesBefore.ports, stagesAfter.ports, fakeCount),
      queueWaitMs: queueWaitMs(stagesBefore.queues, stagesAfter.queues),
      reconciles: fakeReconciles,
      apiRequestsPerSession: perSession(fakeRequests, fakeCount),
    },
    database,
    auditChain: auditTable
      ? { table: auditTable[0], rows: auditTable[1].rows, bytes: auditTable[1].bytes }
      : null,
    cachedObjectSerializedBytes: {
      AgentSession: serializedBytesPerObject((await listSessions()) as unknown as KubernetesObject[]),
      Approval: serializedBytesPerObject(approvals),
      Pod: serializedBytesPerObject(pods),
    },
    runSeconds: round((performance.now() - runStart) / 1000, 1),
    measuredAt: new Date().toISOString(),
  };
  // One entry per size, so `make bench`'s small run keeps `make bench-scale`'s full one beside it.
  let runs: Record<string, unknown> = {};
  try {
    runs = (JSON.parse(readFileSync(RESULTS, "utf8")) as { runs?: Record<string, unknown> }).runs ?? {};
  } catch {
    runs = {};
  }
  runs[`${SESSIONS}-sessions${LABEL ? `-${LABEL}` : ""}`] = result;
  writeFileSync(RESULTS, `${JSON.stringify({ benchmark: "scale", runs }, null, 2)}\n`);
  following = false;
  await informer.stop();
  log(JSON.stringify(result, null, 2));
  log(`wrote ${RESULTS}`);
} finally {
  await env.stop();
  await node.stop();
  await plane.stop();
}
