/**
 * The AgentSession reconciler without a cluster, up to the agent pod: every lifecycle step, check and
 * run transition a session can take before its status is planned (plan.ts planAgentSession), a table
 * with one row each, run through the applier over the in-memory writer (plan-fixtures.ts). The pod's
 * side and the status's phases and reasons are plan-status.test.ts's table.
 */
import { describe, expect, it } from "vitest";
import {
  type AgentSessionPlanInput,
  EARLIER_POD_WAIT_MS,
  POLL_INTERVAL_MS,
  planAgentSession,
  RELEASE_WAIT_MS,
} from "./plan.ts";
import {
  approval,
  at,
  completed,
  NOW,
  pass,
  podOf,
  problemsOf,
  RECORD,
  type Row,
  RUNNING,
  SETTINGS,
  STAMP,
  sessionOf,
} from "./plan-fixtures.ts";

const ROWS: Row[] = [
  {
    name: "deleted with a Pending Approval: waits for it to be cancelled",
    session: sessionOf({ deleting: true }),
    approvals: [approval("Pending")],
    calls: [],
    requeueAfterMs: RELEASE_WAIT_MS,
    log: /waiting for its approvals/,
  },
  {
    name: "deleted, nothing Pending: the finalizer goes",
    session: sessionOf({ deleting: true }),
    approvals: [approval("Rejected")],
    calls: ["removeFinalizer"],
    log: /session released/,
  },
  {
    name: "deleted without the finalizer: nothing",
    session: sessionOf({ deleting: true, finalizer: false }),
    calls: [],
  },
  {
    name: "no finalizer: add it, then go on in the same pass with the session as written (its pod)",
    session: sessionOf({ finalizer: false }),
    calls: [
      "addFinalizer",
      "applyNetworkPolicy",
      "ensureServiceAccount",
      "createPod",
      "event:AgentPodCreated",
      "writeStatus",
    ],
    phase: "Pending",
    requeueAfterMs: POLL_INTERVAL_MS,
    poll: true,
    log: /agent pod created/,
  },
  {
    name: "Completed, a message appended: Pending MessageAppended, continuations+1",
    session: sessionOf({ status: completed(), generation: 2, messages: 2 }),
    record: { finalAnswers: 1, finalAnswer: "one" },
    calls: ["writeStatus", "event:SessionContinued"],
    phase: "Pending",
    conditions: [
      ["Complete", "False", "MessageAppended", /answered 1 of 2 messages/],
      ["Progressing", "True", "MessageAppended", /new agent pod for message 2/],
    ],
    status: { continuations: 1, observedGeneration: 2, runStartTime: STAMP },
    requeueAfterMs: 0,
  },
  {
    name: "Completed, spec changed but every message answered: observedGeneration only",
    session: sessionOf({ status: completed(), generation: 2 }),
    record: { finalAnswers: 1, finalAnswer: "one" },
    calls: ["writeStatus"],
    phase: "Completed",
    status: { observedGeneration: 2 },
  },
  {
    name: "Failed: terminal, nothing",
    session: sessionOf({ status: { phase: "Failed" }, generation: 2 }),
    calls: [],
  },
  {
    name: "namespace not served: Pending, Progressing=False NamespaceNotServed",
    session: sessionOf(),
    settings: { watchNamespaces: ["other"] },
    calls: ["writeStatus", "event:NamespaceNotServed"],
    phase: "Pending",
    conditions: [["Progressing", "False", "NamespaceNotServed", /plant-a/]],
  },
  {
    name: "no model endpoint of that name: Failed ModelEndpointNotFound",
    session: sessionOf({ endpointRef: "nope" }),
    calls: ["writeStatus", "event:ModelEndpointNotFound"],
    phase: "Failed",
    conditions: [["Failed", "True", "ModelEndpointNotFound", /no model endpoint of that name; it has ep1/]],
  },
  {
    name: "model not offered: Failed ModelNotOffered",
    session: sessionOf({ model: "m9" }),
    calls: ["writeStatus", "event:ModelNotOffered"],
    phase: "Failed",
    conditions: [["Failed", "True", "ModelNotOffered", /does not offer model m9; it offers m1/]],
  },
  {
    name: "someone else's pod under its name: Failed PodNameTaken",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Running", { owner: "foreign" }),
    calls: ["writeStatus", "event:PodNameTaken"],
    phase: "Failed",
    conditions: [["Failed", "True", "PodNameTaken", /not controlled by this session; it was not adopted/]],
  },
  {
    name: "an earlier session's pod under its name: wait for garbage collection",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Running", { owner: "earlier" }),
    calls: [],
    requeueAfterMs: EARLIER_POD_WAIT_MS,
  },
  {
    name: "database unavailable: Progressing=False DatabaseUnavailable, the error to the work queue",
    session: sessionOf(),
    record: "unavailable",
    calls: ["writeStatus"],
    phase: "Pending",
    conditions: [["Progressing", "False", "DatabaseUnavailable", /agent pod is started/]],
    throws: /ECONNREFUSED/,
  },
  {
    name: "pod failed, retries left, back-off not over: wait it out",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Failed", { finishedMsAgo: 500 }),
    calls: [],
    requeueAfterMs: 1_500,
  },
  {
    name: "pod failed, back-off over: attempt+1, AgentPodFailed",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Failed", { exitCode: 137 }),
    calls: ["writeStatus", "event:AgentPodFailed"],
    phase: "Running",
    status: {
      attempt: 2,
      podFailures: [{ podName: "s1-agent-1", reason: "Error", exitCode: 137, finishedAt: at(-120_000) }],
    },
    requeueAfterMs: 0,
  },
  {
    name: "released pod, every Approval decided: resumes+1, AgentResuming",
    session: sessionOf({ status: RUNNING }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    approvals: [approval("Rejected")],
    record: { releases: 1 },
    calls: ["writeStatus", "event:AgentResuming"],
    status: { resumes: 1 },
    requeueAfterMs: 0,
  },
  {
    name: "pod answered, another message waits: continuations+1, SessionContinued",
    session: sessionOf({ status: RUNNING, messages: 2 }),
    pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    record: { finalAnswers: 1, finalAnswer: "one" },
    calls: ["writeStatus", "event:SessionContinued"],
    status: { continuations: 1, runStartTime: STAMP },
    requeueAfterMs: 0,
  },
];

describe("an AgentSession's pass up to its pod, by transition and reason", () => {
  it.each(ROWS.map((row) => [row.name, row] as const))("%s", async (_name, row) => {
    expect(problemsOf(row, await pass(row))).toEqual([]);
  });

  it("asks for the record only past the checks that need none, and keeps the clock once it has it", () => {
    const input: AgentSessionPlanInput = {
      session: sessionOf(),
      settings: SETTINGS,
      now: NOW,
      approvals: [],
      pod: undefined,
    };
    expect(planAgentSession(input)).toMatchObject({ kind: "readRecord", clock: "same" });
    expect(planAgentSession({ ...input, record: RECORD })).toMatchObject({
      kind: "run",
      createPod: true,
      deletePod: undefined,
    });
    const appended = sessionOf({ status: completed(), generation: 2, messages: 2 });
    expect(planAgentSession({ ...input, session: appended })).toMatchObject({
      kind: "readRecord",
      clock: "again",
    });
    const cancelled = sessionOf({ status: RUNNING, cancel: true });
    const plan = planAgentSession({ ...input, session: cancelled, record: RECORD });
    expect(plan).toMatchObject({ kind: "run", createPod: false });
    expect(plan.kind === "run" ? plan.networkPolicy : "not run").toBeUndefined();
  });
});
