/**
 * Benchmark of approval → provider (`make bench`, not `make test`): on a fresh local control
 * plane with the operator running, a session (its agent pod played by the test, core-agent.ts) proposes
 * writes that need approval; for each of 50 Approvals, the time from starting `kubectl patch` (alice
 * appending her decision, exactly as the demo does it) to the provider receiving the call — the
 * counting provider (`gatehouse/provider-counter`, test/cluster/images/provider-counter.ts) stamps each
 * effect with `atMs` in its handler, after the provider SDK has verified the grant. The write declares
 * a target (plan, version), as the reference story's publish does, so each dispatch also asks the
 * provider for the target's version before it calls. Approvals are decided one at a time: each is
 * Succeeded before the next patch starts.
 *
 * Baseline, measured in the same run and interleaved with the approvals: a direct `kubectl patch`
 * round trip (a JSON patch of a ConfigMap's annotation, kubectl started the same way). It is the part
 * of the path no operator can avoid — a kubectl process and one admitted write — so the ratio says how
 * much Gatehouse adds on top of the human's own command.
 *
 * Operator share, per approval, from the API server's audit log (same host clock): the time from the
 * API server's answer to the decision patch until the provider received the call — the watch
 * delivering the decision, the operator's reconcile (the admission check, the decision's audit
 * records, the Executing status write beside the dispatch, the dispatch re-checks, the execution
 * claim, `execution.started`, the target query and the signed call) — over the whole. Of that share,
 * the operator's own API requests about the Approval that ended before the call (API server time)
 * are reported apart. The operator's `gatehouse_reconcile_time_seconds{controller="approval"}` over the run
 * is recorded beside it: it counts every reconcile of every Approval in the namespace
 * (the ones still Pending too) and the receipt's status write after the call.
 *
 * Stages (`breakdown.stages`, approval-timeline.ts): per approval, from the API server's answer, when a
 * watch of Approvals opened by the bench saw the decision (the watch's latency on this host), when the
 * controller's first request of its pass arrived (its admission check's reads), how long that check
 * took, its status writes before the call, and the rest to the provider. Beside them, from the
 * controller's /metrics over the measured stretch: the work queue's wait
 * (`gatehouse_workqueue_queue_duration_seconds{name="approval"}`) and every port call per approval
 * (`gatehouse_port_call_duration_seconds`: Postgres as `audit.*`/`executions.*`, the provider as
 * `providers.*`, the admission check as `admission.checkedSince`, the pass's own steps as
 * `approval.*`, which contain the others). The machine's load average is recorded before and after.
 *
 * Writes test/bench/results/approval-dispatch.json.
 *
 *   node test/bench/approval-dispatch.ts [--approvals N]    (default 50, after 5 warm-up approvals)
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { KubeConfig, Watch } from "@kubernetes/client-node";
import { CONTROLLER_USERNAME } from "../../operator/src/api/well-known.ts";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { coreNamespace, SLEEPER_IMAGE, startAgent } from "../e2e/core-agent.ts";
import { deployCounter, toolName } from "../e2e/core-counter.ts";
import { startEnvironment } from "../e2e/environment.ts";
import { decisionPatch, eventually } from "../e2e/story.ts";
import { readApiRequests } from "./api-audit-log.ts";
import { type ApprovalStages, approvalStages } from "./approval-timeline.ts";
import { p50p95, percentile, ratio } from "./percentiles.ts";
import { scrapeHistogram, stagesPerOp } from "./stage-breakdown.ts";

const RESULTS = fileURLToPath(new URL("./results/approval-dispatch.json", import.meta.url));
const flag = process.argv.indexOf("--approvals");
const count = flag >= 0 ? Number(process.argv[flag + 1]) : 50;
const WARMUP = 5;
const CAPABILITY = "bench.plan.publish";
const round2 = (n: number) => Math.round(n * 100) / 100;

/** One approval's timeline (epoch ms). */
interface Sample {
  approval: string;
  startMs: number;
  ackMs: number;
  providerMs: number;
  /** The bench's own watch saw alice's decision. */
  watchedMs: number | undefined;
}

/** Opens a watch of `namespace`'s Approvals; `seen(name)` is when it first saw a decision on `name`. */
async function watchDecisions(kubeconfigPath: string, namespace: string) {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const decidedAt = new Map<string, number>();
  const controller = await new Watch(config).watch(
    `/apis/gatehouse.dev/v1alpha1/namespaces/${namespace}/approvals`,
    {},
    (_phase, object: { metadata?: { name?: string }; spec?: { decisions?: unknown[] } }) => {
      const name = object.metadata?.name;
      if (name && (object.spec?.decisions?.length ?? 0) > 0 && !decidedAt.has(name)) {
        decidedAt.set(name, Date.now());
      }
    },
    () => undefined,
  );
  return { seen: (name: string) => decidedAt.get(name), stop: () => controller.abort() };
}

const plane = await startControlPlane();
const node = await startLocalNode(plane);
const env = await startEnvironment(plane, {
  chartNodeOptions: true,
  componentEnv: {
    AGENT_IMAGE: SLEEPER_IMAGE,
    LOG_LEVEL: "warn",
    SESSION_CEILINGS: JSON.stringify({ maxToolCalls: 10_000, maxWrites: 10_000 }),
  },
});
try {
  const namespace = await coreNamespace(env, "bench-approval");
  const ledger = await deployCounter(
    env,
    namespace,
    "counter",
    [{ id: CAPABILITY, effect: "write", idempotency: "key", target: true }],
    { [CAPABILITY]: { approval: "Required" } },
  );
  const agent = await startAgent(env, namespace, "bench");
  const total = WARMUP + count;
  const approvals: string[] = [];
  for (let position = 0; position < total; position++) {
    const answer = await agent.invoke({
      turn: 0,
      position,
      tool: toolName(CAPABILITY),
      arguments: JSON.stringify({ planId: `plan-${position}`, version: 1 }),
    });
    if (answer.status !== "pending_approval" || !answer.approval) {
      throw new Error(`invoke answered ${answer.status}: ${answer.content}`);
    }
    approvals.push(answer.approval.name);
  }
  await env.kubectl.ok("admin", ["create", "configmap", "bench-baseline", "-n", namespace]);
  await eventually("every Approval Pending", 120_000, async () => {
    const list = await env.kubectl.json<{ items: Array<{ status?: { phase?: string } }> }>("admin", [
      "get",
      "approvals",
      "-n",
      namespace,
    ]);
    return list.items.filter((a) => a.status?.phase === "Pending").length === total ? true : undefined;
  });

  const samples: Sample[] = [];
  const baseline: number[] = [];
  const watcher = await watchDecisions(env.cluster.kubeconfigPath, namespace);
  const controllerMetrics = `${env.controller.healthUrl}/metrics`;
  const scrape = async () => ({
    reconcile: (await scrapeHistogram(controllerMetrics, "gatehouse_reconcile_time_seconds")).get(
      "approval",
    ) ?? {
      sum: 0,
      count: 0,
    },
    ports: await scrapeHistogram(controllerMetrics, "gatehouse_port_call_duration_seconds"),
    queue: (await scrapeHistogram(controllerMetrics, "gatehouse_workqueue_queue_duration_seconds")).get(
      "approval",
    ) ?? { sum: 0, count: 0 },
  });
  const loadBefore = loadavg();
  let metricsBefore = await scrape();
  let measuredFromMs = 0;
  for (const [i, approval] of approvals.entries()) {
    if (i === WARMUP) {
      metricsBefore = await scrape();
      measuredFromMs = Date.now();
    }
    // Baseline first: the same kubectl, one admitted write, nobody waiting for it.
    const baseStart = performance.now();
    await env.kubectl.ok("admin", [
      "patch",
      "configmap",
      "bench-baseline",
      "-n",
      namespace,
      "--type",
      "json",
      "-p",
      JSON.stringify([{ op: "add", path: "/metadata/annotations", value: { round: String(i) } }]),
    ]);
    const baseMs = performance.now() - baseStart;

    const mark = await ledger.mark();
    const startMs = Date.now();
    await env.kubectl.ok("alice", [
      "patch",
      "approval",
      approval,
      "-n",
      namespace,
      "--type",
      "json",
      "-p",
      decisionPatch("alice", "Approve"),
    ]);
    const ackMs = Date.now();
    const effect = await eventually(`the provider to receive ${approval}`, 60_000, async () => {
      const effects = (await mark.effects()) as Array<{ atMs?: number }>;
      return effects[0];
    });
    await env.kubectl.ok("admin", [
      "wait",
      "-n",
      namespace,
      "--for=jsonpath={.status.phase}=Succeeded",
      "--timeout=60s",
      `approval/${approval}`,
    ]);
    if (i < WARMUP) continue;
    baseline.push(baseMs);
    samples.push({
      approval,
      startMs,
      ackMs,
      providerMs: effect.atMs ?? Number.NaN,
      watchedMs: watcher.seen(approval),
    });
  }
  const metricsAfter = await scrape();
  const loadAfter = loadavg();
  watcher.stop();

  // Decompose each sample with the API server's own timestamps.
  const allRequests = readApiRequests(plane.auditLogPath, measuredFromMs - 1000);
  const requests = allRequests.filter((r) => r.resource === "approvals" && r.namespace === namespace);
  const totals: number[] = [];
  const kubectlToAnswer: number[] = [];
  const gatehouse: number[] = [];
  const operatorApi: number[] = [];
  const shares: number[] = [];
  const stages: ApprovalStages[] = [];
  for (const sample of samples) {
    const patch = requests.find(
      (r) => r.verb === "patch" && r.user === "alice" && r.name === sample.approval && !r.subresource,
    );
    if (!patch) throw new Error(`no audit record of alice's patch of ${sample.approval}`);
    const ownWrites = requests.filter(
      (r) =>
        r.user === CONTROLLER_USERNAME &&
        r.name === sample.approval &&
        r.receivedMs >= patch.completedMs &&
        r.completedMs <= sample.providerMs,
    );
    const total = sample.providerMs - sample.startMs;
    const afterAnswer = sample.providerMs - patch.completedMs;
    totals.push(total);
    kubectlToAnswer.push(patch.completedMs - sample.startMs);
    gatehouse.push(afterAnswer);
    operatorApi.push(ownWrites.reduce((sum, r) => sum + (r.completedMs - r.receivedMs), 0));
    shares.push((afterAnswer / total) * 100);
    stages.push(
      approvalStages(
        {
          approval: sample.approval,
          answeredMs: patch.completedMs,
          watchedMs: sample.watchedMs,
          providerMs: sample.providerMs,
        },
        allRequests,
        CONTROLLER_USERNAME,
      ),
    );
  }
  const stage = (pick: (s: ApprovalStages) => number | undefined) =>
    p50p95(stages.map(pick).filter((v): v is number => v !== undefined));
  const approvalToProvider = p50p95(totals);
  const baselinePatch = p50p95(baseline);
  // Over the run, of every Approval of the namespace (the pending ones are reconciled too).
  const reconciles = metricsAfter.reconcile.count - metricsBefore.reconcile.count;
  const reconcileMs = (metricsAfter.reconcile.sum - metricsBefore.reconcile.sum) * 1000;
  // The controller's port calls (store, API server, provider) per approval decided, by stage.
  const portStages = stagesPerOp(metricsBefore.ports, metricsAfter.ports, count);
  const reconcile = {
    reconciles,
    reconcilesPerApproval: Math.round((reconciles / count) * 10) / 10,
    reconcileMsPerApproval: Math.round((reconcileMs / count) * 10) / 10,
    meanMsPerReconcile: Math.round((reconcileMs / Math.max(1, reconciles)) * 100) / 100,
  };
  const result = {
    benchmark: "approval-dispatch",
    description:
      "kubectl patch appending an approver's decision → the provider's handler receiving the call (target check and signed grant included), one Approval at a time, vs a direct kubectl patch round trip of a ConfigMap in the same run",
    approvals: count,
    approvalToProvider,
    baselineKubectlPatch: baselinePatch,
    ratio: {
      p50: ratio(approvalToProvider.p50Ms, baselinePatch.p50Ms),
      p95: ratio(approvalToProvider.p95Ms, baselinePatch.p95Ms),
    },
    breakdown: {
      kubectlStartToApiAnswer: p50p95(kubectlToAnswer),
      apiAnswerToProvider: p50p95(gatehouse),
      operatorApiRequestsWithin: p50p95(operatorApi),
      stages: {
        apiAnswerToWatchSeen: stage((s) => s.watch),
        apiAnswerToControllerFirstRequest: stage((s) => s.toFirstRequest),
        workQueueWaitMeanMs:
          Math.round(
            ((metricsAfter.queue.sum - metricsBefore.queue.sum) * 1000 * 100) /
              Math.max(1, metricsAfter.queue.count - metricsBefore.queue.count),
          ) / 100,
        admissionCheck: stage((s) => s.admissionCheck),
        statusWritesBeforeProvider: stage((s) => s.statusWrites),
        statusWritesBeforeProviderCount: percentile(
          stages.map((s) => s.statusWritesBefore),
          0.5,
        ),
        admissionCheckToProvider: stage((s) => s.checkToProvider),
      },
      controllerPortCallsPerApproval: portStages,
    },
    operatorSharePercent: { p50: percentile(shares, 0.5), p95: percentile(shares, 0.95) },
    approvalReconcile: reconcile,
    machineLoad: { before: loadBefore.map(round2), after: loadAfter.map(round2) },
    measuredAt: new Date().toISOString(),
  };
  writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    `approval → provider over ${count} approvals: p50 ${approvalToProvider.p50Ms} ms, p95 ${approvalToProvider.p95Ms} ms; ` +
      `kubectl patch round trip p50 ${baselinePatch.p50Ms} ms, p95 ${baselinePatch.p95Ms} ms; ratio p50 ${result.ratio.p50}×; ` +
      `after the API server's answer (operator and gateway): p50 ${result.breakdown.apiAnswerToProvider.p50Ms} ms ` +
      `(p50 ${result.operatorSharePercent.p50} % of the whole), of which the operator's own API requests p50 ${result.breakdown.operatorApiRequestsWithin.p50Ms} ms; ` +
      `approval controller: ${reconcile.reconcilesPerApproval} reconciles and ${reconcile.reconcileMsPerApproval} ms of reconcile time per approval decided`,
  );
  console.log(`  stages: ${JSON.stringify(result.breakdown.stages)}`);
  for (const port of portStages) console.log(`  ${port.stage}: ${port.callsPerOp}× ${port.msPerOp} ms`);
  console.log(`  load ${JSON.stringify(result.machineLoad)}`);
  console.log(`wrote ${RESULTS}`);
} finally {
  await env.stop();
  await node.stop();
  await plane.stop();
}
