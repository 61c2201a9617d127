/**
 * The AgentSession reconciler without a cluster, from the agent pod on: creating it, and every phase
 * and condition reason of the status a pass writes (plan.ts planCreatedPod, planStatus; status.ts
 * statusFrom), a table with one row each over the in-memory writer (plan-fixtures.ts).
 */
import { describe, expect, it } from "vitest";
import type { AgentSession } from "../../api/kinds.ts";
import { defaultSessionCeilings } from "../../core/limits.ts";
import { POLL_INTERVAL_MS } from "./plan.ts";
import {
  approval,
  DRIFTED_POLICY,
  HOLDING_POLICY,
  pass,
  podOf,
  problemsOf,
  type Row,
  RUNNING,
  STAMP,
  sessionOf,
} from "./plan-fixtures.ts";

const ROWS: Row[] = [
  {
    name: "no pod: NetworkPolicy, ServiceAccount, pod (AgentPodCreated); Pending PodStarting",
    session: sessionOf(),
    calls: [
      "applyNetworkPolicy",
      "ensureServiceAccount",
      "createPod",
      "event:AgentPodCreated",
      "writeStatus",
    ],
    phase: "Pending",
    conditions: [
      ["Progressing", "True", "PodStarting", /Waiting for the agent pod/],
      ["AwaitingApproval", "False", "NoPendingApprovals"],
    ],
    status: { podName: "s1-agent-1", podUID: "pod-uid", startTime: STAMP },
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
    log: /agent pod created/,
  },
  {
    name: "the pod created is someone else's (409): Failed PodNameTaken",
    session: sessionOf(),
    existingPod: (s) => podOf(s, "Running", { owner: "foreign" }),
    calls: ["applyNetworkPolicy", "ensureServiceAccount", "createPod", "writeStatus", "event:PodNameTaken"],
    phase: "Failed",
    conditions: [["Failed", "True", "PodNameTaken", /already exists/]],
  },
  {
    name: "pod running, policy holds: Running PodRunning, poll",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Running"),
    policy: HOLDING_POLICY,
    calls: ["writeStatus"],
    phase: "Running",
    conditions: [["Progressing", "True", "PodRunning", /working/]],
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "pod running, policy drifted: restored, logged",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Running"),
    policy: DRIFTED_POLICY,
    calls: ["applyNetworkPolicy", "writeStatus"],
    phase: "Running",
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
    log: /had drifted; restored/,
  },
  {
    name: "pod running, an Approval Pending: AwaitingApproval ApprovalPending",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Running"),
    policy: HOLDING_POLICY,
    approvals: [approval("Pending")],
    calls: ["writeStatus"],
    phase: "AwaitingApproval",
    conditions: [
      ["Progressing", "True", "ApprovalPending", /apr-pending/],
      ["AwaitingApproval", "True", "ApprovalPending", /apr-pending/],
    ],
    status: { pendingApprovals: ["apr-pending"] },
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "pod released while an Approval is Pending: AwaitingApproval PodReleased",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    policy: HOLDING_POLICY,
    approvals: [approval("Pending")],
    record: { releases: 1 },
    calls: ["writeStatus"],
    phase: "AwaitingApproval",
    conditions: [["Progressing", "True", "PodReleased", /released/]],
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "pod released, its Approval approved and executing: Pending Resuming",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    policy: HOLDING_POLICY,
    approvals: [approval("Executing")],
    record: { releases: 1 },
    calls: ["writeStatus"],
    phase: "Pending",
    conditions: [["Progressing", "True", "Resuming", /decision was made/]],
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "answer posted: Completed AnswerPosted, SessionCompleted",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    policy: HOLDING_POLICY,
    record: { finalAnswers: 1, finalAnswer: "the answer" },
    calls: ["writeStatus", "event:SessionCompleted"],
    phase: "Completed",
    conditions: [
      ["Progressing", "False", "AnswerPosted", /final answer/],
      ["Complete", "True", "AnswerPosted"],
      ["AwaitingApproval", "False", "SessionEnded"],
    ],
    status: { result: "the answer", completionTime: STAMP },
  },
  {
    name: "pod failed, no retry left after earlier attempts: Failed RetriesExhausted",
    session: sessionOf({ status: { ...RUNNING, attempt: 3 } }),
    pod: (s) => podOf(s, "Failed"),
    policy: HOLDING_POLICY,
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "RetriesExhausted", /3 agent pods failed; no retries are left/]],
  },
  {
    name: "first pod failed, no retries configured: Failed AgentFailed",
    session: sessionOf({ status: RUNNING }),
    settings: { agentPodRetries: 0 },
    pod: (s) => podOf(s, "Failed", { exitCode: 1 }),
    policy: HOLDING_POLICY,
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "AgentFailed", /exit code 1/]],
  },
  {
    name: "the agent's final failure (exit 2) is not retried: Failed AgentFailed",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Failed", { exitCode: 2 }),
    policy: HOLDING_POLICY,
    record: { agentError: "the model refused" },
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "AgentFailed", /the model refused/]],
  },
  {
    name: "pod past its deadline: Failed TimedOut",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Failed", { reason: "DeadlineExceeded" }),
    policy: HOLDING_POLICY,
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "TimedOut", /DeadlineExceeded/]],
  },
  {
    name: "token budget used up: Failed TokenBudgetExceeded",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Failed"),
    policy: HOLDING_POLICY,
    record: { budgetExceeded: "Token budget 100 used up" },
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "TokenBudgetExceeded", /Token budget 100 used up\./]],
  },
  {
    name: "pod exited without an answer: Failed NoAnswer",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    policy: HOLDING_POLICY,
    calls: ["writeStatus", "event:SessionFailed"],
    phase: "Failed",
    conditions: [["Failed", "True", "NoAnswer", /without posting a final answer/]],
  },
  {
    name: "cancelled: the pod deleted, Cancelled, SessionCancelled",
    session: sessionOf({ status: RUNNING, cancel: true }),
    pod: (s) => podOf(s, "Running"),
    calls: ["deletePod", "writeStatus", "event:SessionCancelled"],
    phase: "Cancelled",
    conditions: [
      ["Progressing", "False", "Cancelled", /spec.cancel/],
      ["Failed", "True", "Cancelled"],
    ],
  },
  {
    name: "a limit above its ceiling: LimitLowered once, with the first status holding the limits",
    session: sessionOf({ status: RUNNING, limits: { maxTurns: 1_000 } }),
    pod: (s) => podOf(s, "Running"),
    policy: HOLDING_POLICY,
    calls: ["writeStatus", "event:LimitLowered"],
    phase: "Running",
    status: { effectiveLimits: defaultSessionCeilings },
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "spec.capabilities names one that does not exist: CapabilitiesResolved=False CapabilityNotFound",
    session: sessionOf({ status: RUNNING, capabilities: ["cap-a", "cap-x"] }),
    pod: (s) => podOf(s, "Running"),
    policy: HOLDING_POLICY,
    capabilities: ["cap-a"],
    calls: ["writeStatus"],
    phase: "Running",
    conditions: [["CapabilitiesResolved", "False", "CapabilityNotFound", /cap-x/]],
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
  {
    name: "spec.capabilities all exist: CapabilitiesResolved=True AllFound",
    session: sessionOf({ status: RUNNING, capabilities: ["cap-a"] }),
    pod: (s) => podOf(s, "Running"),
    policy: HOLDING_POLICY,
    capabilities: ["cap-a"],
    calls: ["writeStatus"],
    phase: "Running",
    conditions: [["CapabilitiesResolved", "True", "AllFound"]],
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
  },
];

describe("an AgentSession's pod and status, by phase and reason", () => {
  it.each(ROWS.map((row) => [row.name, row] as const))("%s", async (_name, row) => {
    expect(problemsOf(row, await pass(row))).toEqual([]);
  });

  it("a pi session's first pass creates a pod that runs pi, with its engine directory", async () => {
    const base = sessionOf();
    const outcome = await pass({
      ...ROWS[0]!,
      session: { ...base, spec: { ...base.spec, engine: "pi" } },
    });
    const created = outcome.writer.calls.flatMap((c) => (c.kind === "createPod" ? [c.pod] : []));
    expect(created).toHaveLength(1);
    const agent = created[0]!.spec!.containers[0]!;
    expect(agent.env).toEqual(
      expect.arrayContaining([
        { name: "GATEHOUSE_ENGINE", value: "pi" },
        { name: "GATEHOUSE_ENGINE_DIR", value: "/tmp/gatehouse-engine" },
      ]),
    );
    expect(created[0]!.spec!.volumes).toContainEqual({ name: "engine", emptyDir: { sizeLimit: "256Mi" } });
  });

  it("while transcript notices arrive a running session is not polled (its agent's post queues it); every other requeue stays", async () => {
    const polled = ROWS.filter((r) => r.poll);
    expect(polled.length).toBeGreaterThan(3);
    for (const row of ROWS.filter((r) => !r.throws)) {
      const [live, deaf] = [await pass(row, true), await pass(row, false)];
      expect(live.writer.calls, row.name).toEqual(deaf.writer.calls);
      const requeue = row.requeueAfterMs === undefined ? undefined : { requeueAfterMs: row.requeueAfterMs };
      expect(deaf.result, row.name).toEqual(row.poll ? { ...requeue, lowPriority: true } : requeue);
      expect(live.result, row.name).toEqual(row.poll ? undefined : requeue);
    }
  });

  it("a second pass on the status the first wrote writes nothing and says nothing again", async () => {
    for (const row of ROWS.filter((r) => r.requeueAfterMs === POLL_INTERVAL_MS && r.pod)) {
      const first = await pass(row);
      const status = first.writer.calls.flatMap((c) => (c.kind === "writeStatus" ? [c.status] : [])).at(-1);
      const again = await pass({ ...row, session: { ...row.session, status } as AgentSession });
      expect(
        again.writer.calls.filter((c) => c.kind !== "applyNetworkPolicy"),
        row.name,
      ).toEqual([]);
    }
  });
});
